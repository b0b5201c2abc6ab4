"""The stylesheet and script trace blocks need, shipped in the package and served under ``assets/trace-book/``.

The plugin links them and serves them from the package. Zensical runs no plugin: a book built with it names
them in ``mkdocs.yml``, and ``install`` writes them into the docs (a generated folder), from where it copies them.
"""

from __future__ import annotations

from pathlib import Path

#: Where the files are in the package.
FOLDER = Path(__file__).resolve().parent / "assets"
#: The machinery's folders whose files change every page: the assets and the templates (in every chapter's key).
PAGE_FOLDERS = (FOLDER, FOLDER.parent / "templates")
#: Their paths in the site.
STYLESHEETS, SCRIPTS = ("assets/trace-book/traces.css",), ("assets/trace-book/traces.js",)
#: Each asset's path in the site, and its file in the package.
SOURCES = {path: FOLDER / path.rpartition("/")[2] for path in (*STYLESHEETS, *SCRIPTS)}


def install(root: Path) -> list[Path]:
    """Write the assets at their site paths under ``root`` (the docs or the site), only what changed."""
    from primer.files import write_if_changed  # here: a build with traces off writes nothing

    return [
        root / path for path, file in SOURCES.items() if write_if_changed(root / path, file.read_bytes(), durable=False)
    ]
