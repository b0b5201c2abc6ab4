"""The book's chapters: one module per chapter, holding its scenarios.

A chapter is found by its module name (``ch09_who_retries``); its scenarios
are the module-level ``Scenario`` values, in the order they are written.
Adding a chapter is adding a module here: there is no registry to edit.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Iterable
from types import ModuleType

from primer.errors import NotFound
from primer.scenario import Scenario

__all__ = ["chapter_names", "load_chapter", "scenarios_of"]


def chapter_names(path: Iterable[str] | None = None) -> list[str]:
    """Every chapter module's name in a package's ``path`` (this one's by default), sorted."""
    found = pkgutil.iter_modules(__path__ if path is None else path)
    return sorted(info.name for info in found if not info.name.startswith("_"))


def load_chapter(name: str) -> ModuleType:
    """Import a chapter module, or say which chapters exist."""
    if name not in chapter_names():
        raise NotFound(f"There is no chapter {name!r}. The chapters are: {', '.join(chapter_names())}.")
    return importlib.import_module(f"{__name__}.{name}")


def scenarios_of(chapter: ModuleType | str) -> list[Scenario]:
    """The scenarios a chapter module declares, in the order written."""
    module = load_chapter(chapter) if isinstance(chapter, str) else chapter
    return [value for value in vars(module).values() if isinstance(value, Scenario)]
