"""Finding a book's chapters and scenarios: the one locator every front end uses.

The chapters are the modules of one package (``primer.chapters``, this
book's, unless ``PRIMER_CHAPTERS`` or the Markdown extension's ``chapters``
option names another: ``Settings.chapters_package`` decides). Nothing is
registered by hand: a module whose name does not start with ``_`` is a
chapter, and its module-level ``Scenario`` values are its scenarios, in the
order written::

    chapters = ChapterLocator("primer.chapters")
    chapters.names()                                  # ['ch01_one_call', ...]
    chapters.scenario("ch09_who_retries", "service_is_busy")

The command line (``python -m primer``), the runner, the book's build, its
Markdown extension and the tests all ask this class, so a chapter that one
of them finds, all of them find. Pages, traces and the command line find a
scenario by its name: two scenarios of one chapter with the same name are a
``ChapterError`` naming both definitions. A chapter or scenario name is an
identifier of lower-case letters, digits and underscores (``NAME``), since
it becomes file names, anchors and log lines: any other is a ``ChapterError``
naming the module. Asking for what does not exist is
a ``NotFound`` listing what does (``no_chapter``, ``no_scenario``; pages
phrase the same check with ``unknown``).
"""

from __future__ import annotations

import ast
import difflib
import importlib
import importlib.util
import inspect
import re
import sys
from collections.abc import Iterable, Mapping, Sequence
from types import ModuleType
from typing import TYPE_CHECKING

from primer.errors import ChapterError, ConfigError, NotFound

if TYPE_CHECKING:
    from primer.scenario import Scenario

__all__ = [
    "DEFAULT_PACKAGE",
    "NAME",
    "ChapterLocator",
    "chapter_names_in",
    "no_chapter",
    "no_scenario",
    "scenarios_of",
    "unknown",
]

#: The book's own chapters.
DEFAULT_PACKAGE = "primer.chapters"


#: What a chapter's or a scenario's name is made of: it names files under
#: ``site/traces/``, anchors on the page and lines in a log, so nothing that
#: could mean something there (an escape, a newline, a quote, a ``<``, a ``/``).
NAME = re.compile(r"[a-z0-9_]+")


def chapter_names_in(path: Iterable[str]) -> list[str]:
    """Every chapter module's name in a package's ``__path__``, sorted (nothing is imported).

    Raises ``ChapterError`` naming a module whose name is not made of
    lower-case letters, digits and underscores.
    """
    import pkgutil  # only when chapters are listed: MkDocs loads the locator with traces off too

    names = sorted(info.name for info in pkgutil.iter_modules(path) if not info.name.startswith("_"))
    for name in names:
        if not NAME.fullmatch(name):
            folders = ", ".join(path)
            raise ChapterError(
                f"The chapter module {name!r} in {folders} has a name that is not made of lower-case letters, "
                "digits and underscores: a chapter's name becomes file names and anchors, so rename the module "
                "(or start its name with _ if it is not a chapter)."
            )
    return names


def nearest(name: str, names: Iterable[str]) -> str:
    """`` Did you mean NAME?`` for the one name a typo most likely meant (0.8 of difflib's ratio at least), or ""."""
    close = difflib.get_close_matches(name, list(names), n=1, cutoff=0.8)
    return f" Did you mean {close[0]}?" if close else ""


def no_chapter(chapter: str, names: Sequence[str]) -> NotFound:
    """The error for a chapter that does not exist, naming those that do (and the one it likely meant)."""
    listed = ", ".join(names) or "none"
    return NotFound(f"There is no chapter {chapter!r}. The chapters are: {listed}.{nearest(chapter, names)}")


def no_scenario(chapter: str, scenario: str, names: Sequence[str]) -> NotFound:
    """The error for a scenario a chapter does not have, naming those it has (and the one it likely meant)."""
    listed = ", ".join(names) or "none"
    return NotFound(
        f"Chapter {chapter} has no scenario {scenario!r}. Its scenarios are: {listed}.{nearest(scenario, names)}"
    )


def unknown(chapter: str, scenario: str | None, known: Mapping[str, Sequence[str] | None]) -> str | None:
    """What a reference to ``chapter`` (and ``scenario``) names that does not exist, or None.

    ``known`` maps each chapter to its scenario names (None when they are
    not known, because the chapter could not be imported: nothing is said
    about its scenarios then). The answer ends a sentence that begins with
    the reference: ``the marker `::: trace ch_a three` names no scenario
    of ch_a. Its scenarios are: one, two.``
    """
    if chapter not in known:
        return f"names no chapter. The chapters are: {', '.join(sorted(known)) or 'none'}.{nearest(chapter, known)}"
    names = known[chapter]
    if scenario is not None and names is not None and scenario not in names:
        listed = ", ".join(names) or "none"
        return f"names no scenario of {chapter}. Its scenarios are: {listed}.{nearest(scenario, names)}"
    return None


def scenarios_of(module: ModuleType) -> list[Scenario]:
    """The scenarios a chapter module declares, in the order written.

    Raises ``ChapterError`` naming both definitions when two have one name.
    """
    # Here, not at the top: pages and the hook use this module with the library unloaded.
    from primer.scenario import Scenario

    found = [(variable, value) for variable, value in vars(module).items() if isinstance(value, Scenario)]
    seen: dict[str, str] = {}
    for variable, scenario in found:
        if not isinstance(scenario.name, str) or not NAME.fullmatch(scenario.name):
            raise ChapterError(
                f"The chapter module {module.__name__} declares a scenario (`{variable}`) named "
                f"{scenario.name!r}: a scenario's name is made of lower-case letters, digits and underscores, "
                "since it becomes anchors and file names. Rename it."
            )
        if scenario.name in seen:
            raise ChapterError(_twice(module, scenario.name, seen[scenario.name], variable))
        seen[scenario.name] = variable
    return [scenario for _, scenario in found]


class ChapterLocator:
    """The chapter modules of one package, found by name."""

    def __init__(self, package: str = DEFAULT_PACKAGE) -> None:
        self.package = package

    def __repr__(self) -> str:
        return f"ChapterLocator({self.package!r})"

    def _package(self) -> ModuleType:
        try:
            module = importlib.import_module(self.package)
        except Exception as error:  # an ImportError, or what its __init__ raised
            raise ConfigError(
                f"The chapters' package {self.package} could not be imported ({type(error).__name__}: {error}). Name a "
                "package on the import path: the trace-book plugin's chapters option (or the trace extension's), or "
                "PRIMER_CHAPTERS."
            ) from error
        if not hasattr(module, "__path__"):
            raise ConfigError(f"{self.package} is a module, not a package: the chapters are a package's modules.")
        return module

    def names(self) -> list[str]:
        """Every chapter module's name, sorted (neither the chapters nor their package are imported)."""
        # Found, not imported: a warm build of the book imports none of its code.
        imported = sys.modules.get(self.package)
        if imported is not None and hasattr(imported, "__path__"):
            return chapter_names_in(imported.__path__)
        try:
            spec = importlib.util.find_spec(self.package)
        except (ImportError, ValueError):
            spec = None
        if spec is None or spec.submodule_search_locations is None:
            return chapter_names_in(self._package().__path__)  # raises what is wrong, naming it
        return chapter_names_in(spec.submodule_search_locations)

    def module_name(self, chapter: str) -> str:
        """The chapter's full module name."""
        return f"{self.package}.{chapter}"

    def require(self, chapter: str) -> None:
        """Raise ``NotFound`` naming the chapters unless ``chapter`` is one."""
        names = self.names()
        if chapter not in names:
            raise no_chapter(chapter, names)

    def load(self, chapter: str) -> ModuleType:
        """Import a chapter module (``NotFound``: there is none; ``ChapterError`` naming the line, if it raises)."""
        self.require(chapter)
        try:
            return importlib.import_module(self.module_name(chapter))
        except Exception as error:  # the author's to fix: one sentence, not a traceback through the import system
            from primer.trace import ErrorInfo  # the trace core (pydantic) only once one failed

            info = ErrorInfo.of(error)
            raise ChapterError(
                f"The chapter module {self.module_name(chapter)} could not be imported: {info}{info.where()}."
            ) from error

    def scenarios(self, chapter: str) -> list[Scenario]:
        """A chapter's scenarios, in the order written."""
        return scenarios_of(self.load(chapter))

    def scenario(self, chapter: str, name: str) -> Scenario:
        """One scenario of a chapter, or ``NotFound`` naming those it has."""
        scenarios = self.scenarios(chapter)
        for scenario in scenarios:
            if scenario.name == name:
                return scenario
        raise no_scenario(chapter, name, [s.name for s in scenarios])


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
