"""The stylesheet and script trace blocks need, shipped in the package and served under ``assets/trace-book/``.

The MkDocs plugin adds them to ``extra_css`` and ``extra_javascript`` and
serves them from the package. Zensical runs no plugin: a book built with it
names them in ``mkdocs.yml``, and ``install`` writes them into the docs (a
generated folder, left out of version control), from where it copies them.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["FOLDER", "SITE_FOLDER", "install", "scripts", "sources", "stylesheets"]

#: Where the files are in the package, and where the site serves them.
FOLDER = Path(__file__).resolve().parent / "assets"
SITE_FOLDER = "assets/trace-book"


def sources() -> dict[str, Path]:
    """Each asset's path in the site, and its file in the package."""
    return {f"{SITE_FOLDER}/{name}": FOLDER / name for name in ("traces.css", "traces.js")}


def stylesheets() -> list[str]:
    """The stylesheets' paths in the site."""
    return [path for path in sources() if path.endswith(".css")]


def scripts() -> list[str]:
    """The scripts' paths in the site."""
    return [path for path in sources() if path.endswith(".js")]


def install(root: Path) -> list[Path]:
    """Write the assets at their site paths under ``root`` (the docs or the site), only what changed."""
    from primer.book._atomic import write_if_changed  # here: a build with traces off writes nothing

    found = {root / site_path: source for site_path, source in sources().items()}
    return [target for target, source in found.items() if write_if_changed(target, source.read_bytes(), durable=False)]
