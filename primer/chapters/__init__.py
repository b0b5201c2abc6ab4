"""The book's chapters: one module per chapter, holding its scenarios.

A chapter is found by its module name (``ch09_who_retries``); its scenarios
are the module-level ``Scenario`` values, in the order they are written.
Adding a chapter is adding a module here: there is no registry to edit.
Pages, traces and the command line find a scenario by its name, so two
scenarios of one chapter with the same name are an error naming both.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
from collections.abc import Iterable
from types import ModuleType

from primer.errors import ChapterError, NotFound
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
    """The scenarios a chapter module declares, in the order written.

    Raises ``ChapterError`` naming both definitions when two have one name.
    """
    module = load_chapter(chapter) if isinstance(chapter, str) else chapter
    found = [(variable, value) for variable, value in vars(module).items() if isinstance(value, Scenario)]
    seen: dict[str, str] = {}
    for variable, scenario in found:
        if scenario.name in seen:
            raise ChapterError(_twice(module, scenario.name, seen[scenario.name], variable))
        seen[scenario.name] = variable
    return [scenario for _, scenario in found]


def _twice(module: ModuleType, name: str, first: str, second: str) -> str:
    lines = _definition_lines(module)

    def where(variable: str) -> str:
        return f"`{variable}`" + (f" (line {lines[variable]})" if variable in lines else "")

    source = f" ({module.__file__})" if module.__file__ else ""
    return (
        f"The chapter module {module.__name__}{source} declares two scenarios named {name!r}: "
        f"{where(first)} and {where(second)}. Pages, traces and the command line find a scenario "
        "by its name: give each its own."
    )


def _definition_lines(module: ModuleType) -> dict[str, int]:
    """Module-level name -> the line of its last binding (the one ``vars`` holds)."""
    try:
        tree = ast.parse(inspect.getsource(module))
    except (OSError, TypeError, SyntaxError):
        return {}  # no source to point into: the names alone still say which
    lines: dict[str, int] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                lines.update((n.id, node.lineno) for n in ast.walk(target) if isinstance(n, ast.Name))
        elif isinstance(node, ast.Import | ast.ImportFrom):
            lines.update(((alias.asname or alias.name).split(".")[0], node.lineno) for alias in node.names)
    return lines
