"""The stylesheet and script trace blocks need, shipped in the package.

``primer/book/assets/traces.css`` and ``traces.js`` are part of the wheel:
a book gets them from the machinery, not by copying them. The site serves
them under ``assets/trace-book/``::

    stylesheets()     ['assets/trace-book/traces.css']
    scripts()         ['assets/trace-book/traces.js']
    sources()         {'assets/trace-book/traces.css': Path(.../primer/book/assets/traces.css), ...}

How each front end adds them: the MkDocs hook (MkDocs, ProperDocs) adds
them to ``extra_css`` and ``extra_javascript`` itself and serves the files
straight from the package. Zensical runs no hook and reads ``extra_css``
only from ``mkdocs.yml``, so a book built with it names them there, and
``install`` (called whenever the extension or the command prepares a book)
writes them into ``docs/assets/trace-book/``, a generated folder to leave
out of version control, from where Zensical copies them as it copies any
file of the docs (and, on a book's first build, into the site as well:
``primer.book._session.Session.ready``).
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["FOLDER", "SITE_FOLDER", "install", "scripts", "sources", "stylesheets"]

#: Where the files are in the package.
FOLDER = Path(__file__).resolve().parent / "assets"
#: Where the site serves them, relative to its root.
SITE_FOLDER = "assets/trace-book"
_FILES = ("traces.css", "traces.js")


def sources() -> dict[str, Path]:
    """Each asset's path in the site, and its file in the package."""
    return {f"{SITE_FOLDER}/{name}": FOLDER / name for name in _FILES}


def stylesheets() -> list[str]:
    """The stylesheets' paths in the site."""
    return [path for path in sources() if path.endswith(".css")]


def scripts() -> list[str]:
    """The scripts' paths in the site."""
    return [path for path in sources() if path.endswith(".js")]


def install(root: Path) -> list[Path]:
    """Write the assets under ``root``, the docs or the site (only what changed), at their site paths."""
    # Here, not at the top: a build with traces off links the stylesheet, and writes nothing.
    from primer.book._atomic import write_if_changed

    written = []
    for site_path, source in sources().items():
        target = root / site_path
        # Bytes as they are: newline translation would make a copy differ.
        if write_if_changed(target, source.read_bytes(), durable=False):
            written.append(target)
    return written
