"""The book's chapters: found in a package, imported fresh when their source changed.

The chapters are the modules of one package, found by the one locator
(``primer.locator.ChapterLocator``); which package is the settings' to say
(``Settings.chapters_package``: ``PRIMER_CHAPTERS``, the trace extension's
``chapters`` option, ``primer.chapters``).

``mkdocs serve`` keeps one Python process for hours while the author edits
code. A chapter module, or a helper module of the chapters' package, whose
file changed since it was imported is re-imported (``importlib.reload``)
before it runs, so the trace shows the code as saved. Library modules
(``primer`` itself) cannot be reloaded safely (classes would exist twice), so
``stale_library`` tells the build which changed, and the build runs the
chapters that depend on them in a fresh interpreter instead.

"Changed since it was imported" needs the source as it was *when imported*,
not when first asked about: a file already edited by then would look
unchanged, its old code would run, and its trace would be stored under the
new code's fingerprint. So the source of every module of the book's packages
is kept as it is executed: by a finder on ``sys.meta_path`` for what is
imported from now on, read at once for what is imported already.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import os
import sys
from collections.abc import Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

from primer.book.depends import CodeGraph, code_digest
from primer.locator import DEFAULT_PACKAGE, ChapterLocator, scenarios_of

if TYPE_CHECKING:
    from primer.scenario import Scenario

__all__ = ["DEFAULT_PACKAGE", "Chapters"]

#: Module name -> the source it was executed from, for the whole process:
#: sys.modules is process-wide, and so is what it holds.
_LOADED: dict[str, bytes | None] = {}
#: Top-level packages whose modules' sources are kept.
_WATCHED: set[str] = set()


def _read(path: str | None) -> bytes | None:
    try:
        return Path(path).read_bytes() if path else None
    except OSError:
        return None


class _KeepingLoader(importlib.machinery.SourceFileLoader):
    """The usual loader of a ``.py`` file, keeping the source as it executes the module."""

    def exec_module(self, module: ModuleType) -> None:
        """Keep the file's content, then run it."""
        _LOADED[module.__name__] = _read(self.path)
        super().exec_module(module)


class _KeepingFinder(importlib.abc.MetaPathFinder):
    """Finds the watched packages' modules as Python would, with a ``_KeepingLoader``."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        """The spec ``PathFinder`` gives, its loader swapped when it loads source."""
        if fullname.partition(".")[0] not in _WATCHED:
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path, target)
        if spec is not None and type(spec.loader) is importlib.machinery.SourceFileLoader:
            spec.loader = _KeepingLoader(spec.loader.name, spec.loader.path)
        return spec


def _watch(package: str) -> None:
    """Keep the sources of a top-level package's modules, from now on and those imported already."""
    top = package.partition(".")[0]
    if top in _WATCHED:
        return
    _WATCHED.add(top)
    if not any(isinstance(finder, _KeepingFinder) for finder in sys.meta_path):
        sys.meta_path.insert(0, _KeepingFinder())
    for name, module in list(sys.modules.items()):
        if name.partition(".")[0] == top and name not in _LOADED:
            # Imported moments ago, as this module was: read as they are now.
            _LOADED[name] = _read(getattr(module, "__file__", None))


def _changed(name: str, path: Path) -> bool:
    """Whether a module's file now differs in code from the source it was executed from."""
    if name not in _LOADED:
        return True  # imported unseen: it cannot be known to be current
    loaded, current = _LOADED[name], _read(str(path))
    if loaded == current:
        return False
    # A comment or a docstring changes nothing that runs (the fingerprint's rule).
    return loaded is None or current is None or code_digest(loaded) != code_digest(current)


_watch("primer")


class Chapters:
    """The chapter modules of one package, and the code each depends on."""

    def __init__(self, package: str = DEFAULT_PACKAGE, *, imports_cache: Path | None = None) -> None:
        self.package = package
        self.locator = ChapterLocator(package)
        _watch(self.package)
        # The runner records every trace, so its code is every chapter's code.
        self.graph = CodeGraph([self.package, "primer"], imports_cache=imports_cache)

    def snapshot(self) -> AbstractContextManager[None]:
        """Several fingerprints (a build's) sharing one look at the files: ``CodeGraph.snapshot``."""
        return self.graph.snapshot()

    def names(self) -> list[str]:
        """Every chapter module's name, sorted (the modules are not imported)."""
        return self.locator.names()

    def module_name(self, chapter: str) -> str:
        """The chapter's full module name."""
        return self.locator.module_name(chapter)

    def dependencies(self, chapter: str) -> list[Path]:
        """Source files whose content a chapter's traces depend on."""
        return self.graph.files(self.module_name(chapter), "primer.runner")

    def fingerprint(self, chapter: str) -> str:
        """Hash of those files (and of the schema version): the traces' cache key."""
        return self.graph.fingerprint(self.module_name(chapter), "primer.runner")

    def _own(self, path: Path) -> bool:
        package_dir = self.graph.path_of(self.package)
        return package_dir is not None and path.is_relative_to(package_dir.parent)

    def stale_library(self, chapter: str) -> list[Path]:
        """Library files this process imported that changed on disk since."""
        stale = []
        for path in self.dependencies(chapter):
            if self._own(path):
                continue
            name = self.graph.name_of(path)
            # Never imported here: it will be read fresh when it is.
            if name in sys.modules and _changed(name, path):
                stale.append(path)
        return stale

    def load(self, chapter: str) -> ModuleType:
        """Import a chapter, re-importing what of its package changed since; raises what importing raises."""
        self.locator.require(chapter)
        name = self.module_name(chapter)
        own = [self.graph.name_of(path) for path in self.dependencies(chapter) if self._own(path)]
        # Helpers first, the chapter last. Once one module is re-imported, so
        # is every one after it: the chapter built its scenarios from the
        # helpers' values at the time it was imported.
        executed = False
        for module_name in [*(n for n in own if n != name), name]:
            executed = self._fresh(module_name, force=executed) or executed
        return sys.modules[name]

    @staticmethod
    def _fresh(name: str, *, force: bool = False) -> bool:
        """Import a module, or re-import it if its file changed (or ``force``); whether it ran."""
        module = sys.modules.get(name)
        if module is None:
            module = importlib.import_module(name)
            ran = True
        else:
            # Any saved byte: a reload is cheap, and keeps tracebacks' line numbers true.
            ran = force or _LOADED.get(name) != _read(module.__file__)
            if ran:
                # No .pyc: a bytecode file appearing in a watched folder would
                # make `mkdocs serve` rebuild a second time.
                dont_write, sys.dont_write_bytecode = sys.dont_write_bytecode, True
                try:
                    _LOADED.pop(name, None)  # recorded anew as it executes
                    importlib.reload(module)
                finally:
                    sys.dont_write_bytecode = dont_write
        if name not in _LOADED:  # loaded by other means than the finder: as good as now
            _LOADED[name] = _read(module.__file__)
        return ran

    def scenarios(self, chapter: str) -> list[Scenario]:
        """A chapter's scenarios, in the order written."""
        return scenarios_of(self.load(chapter))

    def watched_dirs(self) -> list[Path]:
        """The package folders holding the book's code, the book machinery's own left out."""
        excluded = {
            self.graph.roots[ex.split(".")[0]].joinpath(*ex.split(".")[1:])
            for ex in self.graph.exclude
            if ex.split(".")[0] in self.graph.roots
        }
        dirs = []
        for root in self.graph.roots.values():
            for folder, subdirs, _files in os.walk(root):
                subdirs[:] = sorted(
                    d
                    for d in subdirs
                    if (Path(folder) / d / "__init__.py").is_file() and Path(folder) / d not in excluded
                )
                dirs.append(Path(folder))
        return dirs
