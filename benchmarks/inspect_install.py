"""What an Inspect AI export costs a user to install: inspect-ai as a dependency, or the format written by hand.

    .venv/bin/python benchmarks/inspect_install.py [--repeat 1]

For each way, a fresh virtual environment in a temporary folder gets the
checkout installed (``pip install ROOT``, the base dependencies) and then
what that way needs to write an eval log: nothing more for the log written
from Inspect's published schema (``primer.export.inspect_log`` as it is now),
``inspect-ai`` for the log made with Inspect's own classes. Printed side by
side: the time the installs took (pip's cache is used, as a user's second
install would; the network is the registry this machine reaches), the
packages in the environment, its ``site-packages`` on disk, and the time to
import the export in a new process and to write ch16's log with the command
(for the other way, the import of the ``inspect_ai`` modules its exporter
imported: what it paid before any work). Installs are interleaved, taking
turns at going first, and each figure is a median over ``--repeat`` rounds.
"""

from __future__ import annotations

import argparse
import math
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NAN = float("nan")
INSPECT = "inspect-ai>=0.3.285,<0.4"

#: The two ways, and what each installs on top of the base.
WAYS = {"written from the schema": [], "with inspect-ai": [INSPECT]}


def _size(folder: Path) -> int:
    return sum(path.stat().st_size for path in folder.rglob("*") if path.is_file() and not path.is_symlink())


def _site(venv: Path) -> Path:
    [site] = list((venv / "lib").glob("python3*/site-packages"))
    return site


def _run(*command: str | Path) -> float:
    began = time.perf_counter()
    subprocess.run([str(part) for part in command], check=True, capture_output=True, text=True, timeout=1800)
    return time.perf_counter() - began


def measure(way: str, extra: list[str], scratch: Path) -> dict[str, float]:
    venv = scratch / way.replace(" ", "-")
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    python = venv / "bin" / "python"
    base = _run(python, "-m", "pip", "install", "-q", str(ROOT))
    base_packages = len(list(_site(venv).glob("*.dist-info")))
    base_size = _size(_site(venv))
    more = _run(python, "-m", "pip", "install", "-q", *extra) if extra else 0.0
    packages = len(list(_site(venv).glob("*.dist-info")))
    size = _size(_site(venv))
    if extra:
        imported = _run(python, "-c", "import inspect_ai.log, inspect_ai.model, inspect_ai.event")
    else:
        imported = _run(python, "-c", "import primer.export.inspect_log")
    out = scratch / f"{venv.name}.json"
    # The other way's export is not in this checkout: what it paid first is the import above.
    written = _run(python, "-m", "primer", "export", "inspect", "ch16_evaluation", "-o", out) if not extra else NAN
    return {
        "base install, s": base,
        "export's own install, s": more,
        "packages, base": base_packages,
        "packages added": packages - base_packages,
        "site-packages, MB": size / 1e6,
        "added on disk, MB": (size - base_size) / 1e6,
        "import, s": imported,
        "export ch16 (command), s": written,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args()
    rounds: dict[str, list[dict[str, float]]] = {way: [] for way in WAYS}
    with tempfile.TemporaryDirectory(prefix="inspect-install-") as folder:
        for number in range(args.repeat):
            order = list(WAYS) if number % 2 == 0 else list(reversed(WAYS))
            for way in order:
                rounds[way].append(measure(way, WAYS[way], Path(folder) / str(number)))
    keys = list(next(iter(rounds.values()))[0])
    print(f"{'':28}" + "".join(f"{way:>26}" for way in WAYS))
    for key in keys:
        cells = [statistics.median(r[key] for r in rounds[way]) for way in WAYS]
        print(f"{key:28}" + "".join(f"{'-':>26}" if math.isnan(cell) else f"{cell:>26.2f}" for cell in cells))


if __name__ == "__main__":
    main()
