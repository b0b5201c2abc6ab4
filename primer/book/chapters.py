"""The book's chapters: found in a package, imported fresh when their source changed.

The chapters are the modules of one package (``primer.chapters`` unless the
environment variable ``PRIMER_CHAPTERS`` names another, as a test book or a
second book does). Nothing is registered by hand: a module whose name does
not start with ``_`` is a chapter, its ``Scenario`` values are its scenarios.

``mkdocs serve`` keeps one Python process for hours while the author edits
code. A chapter module, or a helper module of the chapters' package, whose
file changed since it was imported is re-imported (``importlib.reload``)
before it runs, so the trace shows the code as saved. Library modules
(``primer`` itself) cannot be reloaded safely (classes would exist twice), so
``stale_library`` tells the build which changed, and the build runs the
chapters that depend on them in a fresh interpreter instead.
"""

from __future__ import annotations

import hashlib
import importlib
import os
import sys
from contextlib import AbstractContextManager
from pathlib import Path
from types import ModuleType

from primer.book.depends import CodeGraph
from primer.chapters import chapter_names, scenarios_of
from primer.errors import NotFound
from primer.scenario import Scenario

__all__ = ["DEFAULT_PACKAGE", "Chapters"]

#: The book's own chapters.
DEFAULT_PACKAGE = "primer.chapters"

#: Module name -> digest of the source it was loaded from, for the whole
#: process: sys.modules is process-wide, and so is what it holds.
_LOADED: dict[str, str] = {}


def _digest(path: Path) -> str:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return "missing"


class Chapters:
    """The chapter modules of one package, and the code each depends on."""

    def __init__(self, package: str | None = None, *, imports_cache: Path | None = None) -> None:
        self.package = package or os.environ.get("PRIMER_CHAPTERS", "").strip() or DEFAULT_PACKAGE
        # The runner records every trace, so its code is every chapter's code.
        self.graph = CodeGraph([self.package, "primer"], imports_cache=imports_cache)

    def snapshot(self) -> AbstractContextManager[None]:
        """Several fingerprints (a build's) sharing one look at the files: ``CodeGraph.snapshot``."""
        return self.graph.snapshot()

    def _package(self) -> ModuleType:
        return importlib.import_module(self.package)

    def names(self) -> list[str]:
        """Every chapter module's name, sorted (the modules are not imported)."""
        return chapter_names(self._package().__path__)

    def module_name(self, chapter: str) -> str:
        """The chapter's full module name."""
        return f"{self.package}.{chapter}"

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
            if name in sys.modules and _LOADED.setdefault(name, _digest(path)) != _digest(path):
                stale.append(path)
        return stale

    def load(self, chapter: str) -> ModuleType:
        """Import a chapter, re-importing what of its package changed since; raises what importing raises."""
        if chapter not in self.names():
            raise NotFound(f"There is no chapter {chapter!r}. The chapters are: {', '.join(self.names())}.")
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
            current = _digest(Path(module.__file__ or ""))
            ran = force or _LOADED.get(name, current) != current
            if ran:
                # No .pyc: a bytecode file appearing in a watched folder would
                # make `mkdocs serve` rebuild a second time.
                dont_write, sys.dont_write_bytecode = sys.dont_write_bytecode, True
                try:
                    importlib.reload(module)
                finally:
                    sys.dont_write_bytecode = dont_write
        _LOADED[name] = _digest(Path(module.__file__ or ""))
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
