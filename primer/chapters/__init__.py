"""The book's chapters: one module per chapter, holding its scenarios.

A chapter is found by its module name (``ch09_who_retries``); its scenarios
are the module-level ``Scenario`` values, in the order they are written.
Adding a chapter is adding a module here: there is no registry to edit.

Finding them is ``primer.locator.ChapterLocator``'s job, for this package or
any other a book names (``PRIMER_CHAPTERS``); the three functions here are
that locator for this package, kept for code that names this book's
chapters directly.
"""

from __future__ import annotations

from collections.abc import Iterable
from types import ModuleType

from primer.locator import ChapterLocator, chapter_names_in
from primer.locator import scenarios_of as _scenarios_of
from primer.scenario import Scenario

__all__ = ["chapter_names", "load_chapter", "scenarios_of"]

_THIS = ChapterLocator(__name__)


def chapter_names(path: Iterable[str] | None = None) -> list[str]:
    """Every chapter module's name in a package's ``path`` (this one's by default), sorted."""
    return chapter_names_in(__path__ if path is None else path)


def load_chapter(name: str) -> ModuleType:
    """Import one of this package's chapter modules, or say which chapters exist."""
    return _THIS.load(name)


def scenarios_of(chapter: ModuleType | str) -> list[Scenario]:
    """The scenarios a chapter module (or this package's chapter of that name) declares, in order.

    Raises ``ChapterError`` naming both definitions when two have one name.
    """
    return _THIS.scenarios(chapter) if isinstance(chapter, str) else _scenarios_of(chapter)
