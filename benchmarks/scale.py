"""What traces cost a book of 10 and of 100 chapters, and what each front end takes.

    .venv/bin/python benchmarks/scale.py [--chapters 10 100] [--pairs 7] [--no-front-ends]

Generates a synthetic book (``generate``): N chapters of 4 scenarios each
(tool calls, a retried service call, a turn limit), one page per chapter with
a marker per scenario, Material, the search plugin, the book's hook and
extension, in a temporary folder. For each size it measures, interleaved
(each round runs the three builds back to back, taking turns at going first,
so the machine's drift touches all alike), with every trace cached:

* ``warm``: ``mkdocs build`` with traces;
* ``off``: the same with ``PRIMER_TRACES=off`` (placeholders instead of traces);
* ``bare``: the same book with no hook and no trace extension in ``mkdocs.yml``
  (the marker lines stay text): what a build costs without the machinery;

and prints the medians, the medians of the per-round ratios (warm/off, the
machinery's whole cost; off/bare, what merely having it costs: its imports,
a look at each page for malformed markers, and the placeholders, one
paragraph each, against the marker lines a bare build shows as text),
the peak RSS of each, and the machinery's own timing line (``traces: the
machinery's share``, logged at DEBUG) beside the measured warm - off
difference. The measured builds run as an author runs them, without
``--verbose``: with it, MkDocs logs a line for every event a hook takes on
every page, which would measure MkDocs' debug logging. The timing line is
read from one more warm build a round, with ``--verbose``, outside the ratios
(``--verbose`` here measures every build with it, as this benchmark first did).
Then, once per size, the three front ends side by side on the same book:
``mkdocs build``, ``properdocs build``, ``zensical build`` (with ``--clean``,
so Zensical's own page cache does not hide the work), each warm.

Targets (issue 10): warm ≤ 1.10 x off at 10 and at 100 chapters; off ≤ 1.02 x
bare; the timing line agreeing with the measured difference.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHARE = re.compile(r"traces: the machinery's share of this build: ([0-9.]+) ms")

CHAPTER = '''"""Synthetic chapter {n}: four scenarios, as a real chapter has them."""

from primer.loop import until_no_tool_calls
from primer.models.mock import ask, call, say
from primer.scenario import Scenario
from primer.shop import place_order, price_of

TOOLS = [place_order, price_of]

answers_at_once = Scenario(
    name="answers_at_once", prompt="Say hello to chapter {n}.", tools=TOOLS, mock=[say("Hello from chapter {n}.")]
)

one_lookup = Scenario(
    name="one_lookup",
    prompt="How much is milk?",
    tools=TOOLS,
    loop=until_no_tool_calls,
    mock=[ask(call("price_of", item="milk")), say("Milk is 1.20.")],
)

three_lookups = Scenario(
    name="three_lookups",
    prompt="Milk, eggs and bread?",
    tools=TOOLS,
    loop=until_no_tool_calls,
    mock=[
        ask(call("price_of", item="milk")),
        ask(call("price_of", item="eggs")),
        ask(call("price_of", item="bread")),
        say("Milk 1.20, eggs 2.50, bread 2.10."),
    ],
)

busy_then_answered = Scenario(
    name="busy_then_answered",
    prompt="How much is butter?",
    tools=TOOLS,
    loop=until_no_tool_calls,
    service=["/status/503", "/get"],
    mock=[ask(call("price_of", item="butter")), say("Butter is 2.40.")],
)
'''

PAGE = """# Chapter {n}

Prose about chapter {n}, enough to be a page: a model, a tool, a service that
is sometimes busy. {filler}

## Answered at once

::: trace {name} answers_at_once

## One lookup

::: trace {name} one_lookup

## Three lookups

::: trace {name} three_lookups

## Busy, then answered

::: trace {name} busy_then_answered
"""

CONFIG = """site_name: Synthetic trace book
site_url: http://127.0.0.1/
theme:
  name: material
  features: [navigation.instant]
plugins: [search]
exclude_docs: |
  traces/*.live.json
{hook}markdown_extensions:
  - admonition
  - toc:
      permalink: true
  - pymdownx.details
  - pymdownx.superfences
{extension}"""


def generate(root: Path, chapters: int, *, machinery: bool = True) -> Path:
    """A book of ``chapters`` chapters x 4 scenarios in ``root``; ``machinery=False``: no hook, no extension."""
    package = root / "synth"
    package.mkdir(parents=True, exist_ok=True)
    (package / "__init__.py").write_text('"""The synthetic book\'s chapters."""\n')
    (root / "docs").mkdir(exist_ok=True)
    (root / "hooks").mkdir(exist_ok=True)
    (root / "hooks" / "traces.py").write_text("from primer.book.mkdocs_hook import *  # noqa: F403\n")
    filler = "Words about agents. " * 40
    for n in range(1, chapters + 1):
        name = f"ch{n:03d}_synthetic"
        (package / f"{name}.py").write_text(CHAPTER.format(n=n))
        (root / "docs" / f"{name}.md").write_text(PAGE.format(n=n, name=name, filler=filler))
    (root / "docs" / "index.md").write_text("# Synthetic\n\nA book generated to measure the machinery.\n")
    hook = "hooks:\n  - hooks/traces.py\n" if machinery else ""
    extension = "  - primer.book.markdown:\n      chapters: synth\n" if machinery else ""
    (root / "mkdocs.yml").write_text(CONFIG.format(hook=hook, extension=extension))
    return root


@dataclass
class Run:
    """One build: wall seconds, peak RSS (MiB), and the machinery's own share (ms), if logged."""

    wall: float
    rss: float
    share: float | None


def build(book: Path, *command: str, **extra: str) -> Run:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PRIMER_")}
    env.update(PYTHONPATH=str(book), NO_MKDOCS_2_WARNING="1", PYTHONDONTWRITEBYTECODE="1", **extra)
    # GNU time's %M is the peak RSS of the one child, which getrusage(CHILDREN) would mix with earlier runs.
    wrapped = ["/usr/bin/time", "-f", "peak-rss-kb %M", sys.executable, "-m", *command]
    started = time.perf_counter()
    done = subprocess.run(wrapped, cwd=book, env=env, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - started
    log = done.stdout + done.stderr
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed:\n{log}")
    rss = re.search(r"peak-rss-kb (\d+)", log)
    share = SHARE.search(log)
    return Run(wall, int(rss[1]) / 1024 if rss else float("nan"), float(share[1]) if share else None)


def mkdocs(book: Path, *, verbose: bool = False, **extra: str) -> Run:
    return build(book, "mkdocs", "build", *(["--verbose"] if verbose else []), "-d", "site", **extra)


def measure(size: int, pairs: int, work: Path, *, verbose: bool = False) -> dict[str, list[Run]]:
    book = generate(work / f"book{size}", size)
    bare = generate(work / f"bare{size}", size, machinery=False)
    mkdocs(book)  # fills the caches: every later build is warm
    mkdocs(bare)
    runs: dict[str, list[Run]] = {"warm": [], "off": [], "bare": [], "line": []}
    kinds = [("warm", book, {}), ("off", book, {"PRIMER_TRACES": "off"}), ("bare", bare, {})]
    for n in range(pairs):
        for kind, where, env in kinds[n % 3 :] + kinds[: n % 3]:
            runs[kind].append(mkdocs(where, verbose=verbose, **env))
        runs["line"].append(mkdocs(book, verbose=True))  # for the timing line only
        print(f"  {size} chapters: round {n + 1}/{pairs}", file=sys.stderr)
    return runs


def front_ends(size: int, work: Path) -> dict[str, Run]:
    book = work / f"book{size}"
    found = {
        "mkdocs": build(book, "mkdocs", "build", "-d", "site_mkdocs"),
        "properdocs": build(book, "properdocs", "build", "-f", "mkdocs.yml", "-d", "site_properdocs"),
    }
    shutil.rmtree(book / "site", ignore_errors=True)
    build(book, "zensical", "build")  # fills Zensical's own page cache, as a second build of an author's has
    found["zensical (cached pages)"] = build(book, "zensical", "build")
    found["zensical --clean"] = build(book, "zensical", "build", "--clean")
    return found


def ratio(upper: list[Run], lower: list[Run]) -> float:
    return statistics.median(a.wall / b.wall for a, b in zip(upper, lower, strict=True))


def report(size: int, runs: dict[str, list[Run]]) -> None:
    med = {kind: statistics.median(r.wall for r in values) for kind, values in runs.items()}
    rss = {kind: max(r.rss for r in values) for kind, values in runs.items()}
    shares = [r.share for r in runs["line"] if r.share is not None]
    print(f"\n{size} chapters x 4 scenarios, {len(runs['warm'])} interleaved rounds (wall seconds, medians)")
    for kind in ("warm", "off", "bare"):
        print(f"  {kind:5} {med[kind]:6.3f} s   peak RSS {rss[kind]:6.1f} MiB")
    print(f"  warm / off  {ratio(runs['warm'], runs['off']):.3f}   (target ≤ 1.10)")
    print(f"  off / bare  {ratio(runs['off'], runs['bare']):.3f}   (target ≤ 1.02)")
    measured = statistics.median(a.wall - b.wall for a, b in zip(runs["warm"], runs["off"], strict=True))
    line = statistics.median(shares) / 1000 if shares else float("nan")
    print(f"  warm - off measured {measured * 1000:6.0f} ms; the machinery's timing line says {line * 1000:6.0f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chapters", type=int, nargs="+", default=[10, 100])
    parser.add_argument("--pairs", type=int, default=7)
    parser.add_argument("--no-front-ends", action="store_true")
    parser.add_argument(
        "--verbose", action="store_true", help="measure every build with --verbose, as this benchmark first did"
    )
    args = parser.parse_args()
    # The builds run with PYTHONDONTWRITEBYTECODE (no bytecode written into the
    # generated books): the library's own is written once here, as any earlier
    # import in the checkout or an installed wheel has it, so that no build
    # compiles the library's source anew (which a fresh checkout would make
    # every build of this benchmark do, traces off included).
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(ROOT / "primer")], check=True)
    # The books in memory (tmpfs) where there is one: on a shared machine,
    # writing a site to disk now and then costs one build several times the
    # kernel time of the next, and moves a ratio by more than the 2 % it
    # measures. Every build writes the same, so none is favoured.
    memory = "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None
    with tempfile.TemporaryDirectory(prefix="scale-", dir=memory) as folder:
        work = Path(folder)
        for size in args.chapters:
            runs = measure(size, args.pairs, work, verbose=args.verbose)
            report(size, runs)
            if not args.no_front_ends:
                print("  front ends, warm (wall seconds, peak RSS):")
                for name, run in front_ends(size, work).items():
                    print(f"    {name:24} {run.wall:6.3f} s   {run.rss:6.1f} MiB")


if __name__ == "__main__":
    main()
