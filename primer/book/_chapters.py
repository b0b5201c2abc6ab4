"""The book's chapters: found in a package, imported fresh when their source changed.

The chapters are the modules of one package (``primer.locator.ChapterLocator``).
``mkdocs serve`` keeps one process for hours while the author edits code: a
chapter, or a helper of the chapters' package, whose file changed since it
was imported is re-imported before it runs. Library modules cannot be
reloaded safely (classes would exist twice): ``stale_library`` names those
that changed, and the build runs their chapters in a fresh interpreter.

"Changed since imported" needs the source as it was *when imported*.
``Executed`` keeps it without hooking the import system: before a chapter is
imported, the files of its dependencies not imported yet are read; a module
imported by other means is read at the next look, and counts as unknown (so
changed) if its file was saved since the look before.
"""

from __future__ import annotations

import importlib
import os
import sys
import time
from contextlib import AbstractContextManager
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

from primer.book._depends import CodeGraph, code_digest
from primer.locator import DEFAULT_PACKAGE, ChapterLocator, scenarios_of

if TYPE_CHECKING:
    from primer.scenario import Scenario

__all__ = ["DEFAULT_PACKAGE", "Chapters", "Executed"]

# How much earlier than a look a file must have been saved for its bytes to be those executed
# after the look: file systems stamp coarsely (FAT: 2 s).
_MARGIN_NS = 2_000_000_000


def _read(path: str | Path | None, *, saved_before: int | None = None) -> bytes | None:
    """A file's bytes; None if unreadable, or saved after ``saved_before`` (ns, less the margin)."""
    try:
        if not path or (saved_before is not None and os.stat(path).st_mtime_ns > saved_before - _MARGIN_NS):
            return None
        return Path(path).read_bytes()
    except OSError:
        return None


class Executed:
    """The source each module of some top-level packages was executed from (None: not known, so changed).

    The modules of ``reloaded`` (the chapters' package) are kept only as this
    process imports them: one imported otherwise is re-imported when next
    loaded, which is always safe.
    """

    def __init__(self, *tops: str, reloaded: str) -> None:
        self.tops = set(tops)
        self._reloaded = reloaded
        self.sources: dict[str, bytes | None] = {}
        # When the last look began (ns; None before the first: what is imported already is taken as it is).
        self._looked: int | None = None
        self._names: set[str] = set()

    def look(self) -> None:
        """Keep the source of every module of the packages imported since the last look (but ``reloaded``'s)."""
        looked, self._looked = self._looked, time.time_ns()
        new = sys.modules.keys() - self._names  # asked before every chapter's import: only what is new
        self._names |= new
        for name in new:
            own = name == self._reloaded or name.startswith(f"{self._reloaded}.")
            if name not in self.sources and name.partition(".")[0] in self.tops and not own:
                self.sources[name] = _read(getattr(sys.modules.get(name), "__file__", None), saved_before=looked)

    def before(self, name: str, path: Path | None) -> None:
        """Keep the source of a module this process is about to execute (import, or re-import)."""
        self.sources[name] = _read(path)

    def changed(self, name: str, path: Path) -> bool:
        """Whether a module's file now differs in code (not only comments) from the source it was executed from."""
        loaded, current = self.sources.get(name), _read(path)
        if loaded == current:
            return loaded is None
        return loaded is None or current is None or code_digest(loaded) != code_digest(current)


class Chapters:
    """The chapter modules of one package, and the code each depends on."""

    def __init__(self, package: str = DEFAULT_PACKAGE, *, imports_cache: Path | None = None) -> None:
        self.package = package
        self.locator = ChapterLocator(package)
        # The runner records every trace, so its code is every chapter's code.
        self.graph = CodeGraph([self.package, "primer"], imports_cache=imports_cache)
        self.executed = Executed(*self.graph.roots, reloaded=package)
        self.executed.look()

    def snapshot(self) -> AbstractContextManager[None]:
        """One build's fingerprints, each file read once (``CodeGraph.snapshot``)."""
        return self.graph.snapshot()

    def names(self) -> list[str]:
        """Every chapter module's name, sorted (the modules are not imported)."""
        return self.locator.names()

    def module_name(self, chapter: str) -> str:
        """The chapter's full module name."""
        return self.locator.module_name(chapter)

    def fingerprint(self, chapter: str) -> str:
        """The hash of the code the chapter's traces depend on (``CodeGraph.fingerprint``)."""
        return self.graph.fingerprint(self.module_name(chapter), "primer.runner")

    def _dependencies(self, chapter: str) -> list[tuple[str, Path, bool]]:
        """Each module the chapter depends on, sorted by file: its name, its file, whether it is the book's own."""
        found = self.graph.modules(self.module_name(chapter), "primer.runner").items()
        own = [(name, module[0], f"{name}.".startswith(f"{self.package}.")) for name, module in found]
        return sorted(own, key=lambda dependency: dependency[1])

    def stale_library(self, chapter: str) -> list[Path]:
        """Library files this process imported that changed on disk since."""
        self.executed.look()
        return [
            path
            for name, path, own in self._dependencies(chapter)
            if not own and name in sys.modules and self.executed.changed(name, path)
        ]

    def load(self, chapter: str) -> ModuleType:
        """Import a chapter, re-importing what of its package changed since; raises what importing raises."""
        self.locator.require(chapter)
        name = self.module_name(chapter)
        self.executed.look()  # what was imported by other means since the last look
        own = []
        for module, path, is_own in self._dependencies(chapter):
            if is_own:
                own.append(module)
            elif module not in sys.modules:  # its import may come now: read it before it executes
                self.executed.before(module, path)
        # Helpers first, the chapter last; once one is re-imported, so is every one after it
        # (the chapter built its scenarios from the helpers' values when it was imported).
        executed = False
        for module in [*(n for n in own if n != name), name]:
            executed = self._fresh(module, force=executed) or executed
        return sys.modules[name]

    def _fresh(self, name: str, *, force: bool = False) -> bool:
        """Import a module, or re-import it if its file changed (or ``force``); whether it ran."""
        module, path = sys.modules.get(name), self.graph.path_of(name)
        if module is None:
            self.executed.before(name, path)
            importlib.import_module(name)
            return True
        if not force and name in self.executed.sources and self.executed.sources[name] == _read(path):
            return False
        # No .pyc: a bytecode file appearing in a watched folder would make `mkdocs serve` rebuild again.
        dont_write, sys.dont_write_bytecode = sys.dont_write_bytecode, True
        try:
            self.executed.before(name, path)
            importlib.reload(module)
        finally:
            sys.dont_write_bytecode = dont_write
        return True

    def scenarios(self, chapter: str) -> list[Scenario]:
        """A chapter's scenarios, in the order written."""
        return scenarios_of(self.load(chapter))

    def watched_dirs(self) -> list[Path]:
        """The package folders holding the book's code, the book machinery's own left out."""
        roots = self.graph.roots
        excluded = {
            roots[top].joinpath(*rest) for top, *rest in (ex.split(".") for ex in self.graph.exclude) if top in roots
        }
        dirs = []
        for root in roots.values():
            for folder, subdirs, _files in os.walk(root):
                found = (Path(folder) / name for name in sorted(subdirs))
                subdirs[:] = [d.name for d in found if (d / "__init__.py").is_file() and d not in excluded]
                dirs.append(Path(folder))
        return dirs
