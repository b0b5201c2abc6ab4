"""A book's configuration, read through MkDocs' own loader: what the commands need of ``mkdocs.yml``.

``python -m primer.book build`` and ``python -m primer``, run in a book's
folder, read its ``mkdocs.yml`` as MkDocs does (``INHERIT``, ``!ENV``, every
option validated, the ``trace-book`` plugin's included), so they know the
book they stand in::

    book = read_config(Path("mkdocs.yml"))
    book.docs_dir, book.chapters, book.traces_dir

The chapters' package is the plugin's ``chapters`` option, else the trace
extension's; ``PRIMER_CHAPTERS`` wins over both where the package is chosen
(``primer.variables.chapters_package``).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

from primer.errors import ConfigError

__all__ = ["BookConfig", "read_config"]

#: The trace extension's name in ``markdown_extensions``.
EXTENSION = "primer.book.markdown"
#: The plugin's name in ``plugins``.
PLUGIN = "trace-book"


@dataclass(frozen=True)
class BookConfig:
    """What the commands need of a book's configuration."""

    #: The configuration file, resolved.
    path: Path
    #: The book's root: the folder of the configuration file.
    root: Path
    docs_dir: Path
    #: The chapters' package the configuration names (the plugin's option, else the extension's), if it does.
    chapters: str | None
    #: The frozen live traces' folder.
    traces_dir: Path
    #: The machinery's cache folder.
    cache_dir: Path
    #: The plugin's options as defaults for the ``PRIMER_*`` settings (the environment wins over them).
    defaults: dict[str, str]
    #: Whether the build checks the book's rules (the plugin's ``rules`` option, else the extension's).
    rules: bool = True
    #: Whether the configuration turns the machinery on at all: the plugin, a hook file, or the extension.
    enabled: bool = True


def read_config(path: Path) -> BookConfig:
    """Read a book's configuration through MkDocs' loader; ``ConfigError`` naming the file if it cannot be."""
    from mkdocs.config import load_config
    from mkdocs.exceptions import MkDocsException

    from primer.book._plugin import TraceBookPlugin
    from primer.book._session import CACHE_DIR

    if not path.is_file():
        raise ConfigError(f"The book's configuration {path} is not there: run this from the book's folder, or give -f.")
    # MkDocs logs what is wrong with each option, as an error, before it gives up.
    said = _Said()
    logging.getLogger("mkdocs").addHandler(said)
    try:
        config = load_config(config_file=str(path))
    except MkDocsException as error:
        why = "; ".join(said.messages) or str(error)
        raise ConfigError(f"The book's configuration {path} is not valid: {why}") from None
    finally:
        logging.getLogger("mkdocs").removeHandler(said)
    root = path.resolve().parent
    docs = Path(config.docs_dir)
    plugin = next((p for p in config.plugins.values() if isinstance(p, TraceBookPlugin)), None)
    extension = config.mdx_configs.get(EXTENSION, {})
    chapters = (plugin.config.chapters if plugin is not None else None) or extension.get("chapters")
    rules = extension.get("rules", True) is not False
    if plugin is None:
        named = EXTENSION in config.markdown_extensions or bool(config.hooks)
        return BookConfig(path.resolve(), root, docs, chapters, docs / "traces", root / CACHE_DIR, {}, rules, named)
    return BookConfig(
        path.resolve(),
        root,
        docs,
        chapters,
        docs / plugin.config.traces_dir,
        root / plugin.config.cache_dir,
        plugin.defaults(),
        rules and plugin.config.rules,
    )


class _Said(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())
