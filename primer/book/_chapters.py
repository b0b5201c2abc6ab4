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
new code's fingerprint. ``Executed`` keeps it, on the ``Chapters`` (which a
book keeps for the life of its process), without hooking the import system:
before a chapter is imported, the files of the modules it depends on that
are not imported yet are read (its import, or its run, executes them after);
a module imported by other means is read when next looked for, and counts
as unknown (so changed) if its file was saved since the look before, which
it was imported after.
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

# How much earlier than a look a file must have been saved for its bytes then to be those
# a module imported after the look executed: file systems stamp coarsely (FAT: 2 s).
_MARGIN_NS = 2_000_000_000


def _read(path: str | Path | None, *, saved_before: int | None = None) -> bytes | None:
    """A file's bytes; None if it cannot be read, or was saved after ``saved_before`` (ns, less the margin)."""
    try:
        file = Path(path) if path else None
        if file is None or (saved_before is not None and file.stat().st_mtime_ns > saved_before - _MARGIN_NS):
            return None
        return file.read_bytes()
    except OSError:
        return None


class Executed:
    """The source each module of some top-level packages was executed from, as far as this process can tell.

    None stands for a source not known (a file unread, or saved since the
    look before the one that found its module): such a module counts as
    changed. The modules of ``reloaded`` (the chapters' package) are kept
    only as this process imports them: one imported by other means is
    re-imported when it is next loaded, which is always safe.
    ``sys.modules`` is the process's, so what this holds is right for as
    long as the process runs; nothing is forgotten but a module about to be
    re-imported (``before``).
    """

    def __init__(self, *tops: str, reloaded: str) -> None:
        self.tops = set(tops)
        # The package whose modules are re-imported when in doubt: a look leaves them out.
        self._reloaded = reloaded
        self.sources: dict[str, bytes | None] = {}
        # When the last look began (ns); None before the first, when what is imported already
        # (at start-up, moments ago) is taken as it is now.
        self._looked: int | None = None
        # Every name in sys.modules at the last look, of any package.
        self._names: set[str] = set()

    def look(self) -> None:
        """Keep the source of every module of the packages imported since the last look (but ``reloaded``'s)."""
        looked, self._looked = self._looked, time.time_ns()
        # Asked before every chapter's import: only the names new since the last look are read.
        new = sys.modules.keys() - self._names
        self._names |= new
        for name in new:
            if name in self.sources or name.partition(".")[0] not in self.tops:
                continue
            if name != self._reloaded and not name.startswith(f"{self._reloaded}."):
                file = getattr(sys.modules.get(name), "__file__", None)
                self.sources[name] = _read(file, saved_before=looked)

    def before(self, name: str, path: Path | None) -> None:
        """Keep the source of a module this process is about to execute (import, or re-import)."""
        self.sources[name] = _read(path)

    def changed(self, name: str, path: Path) -> bool:
        """Whether a module's file now differs in code from the source it was executed from."""
        loaded, current = self.sources.get(name), _read(path)
        if loaded == current:
            return loaded is None  # unknown, or unreadable, is never current
        # A comment or a docstring changes nothing that runs (the fingerprint's rule).
        return loaded is None or current is None or code_digest(loaded) != code_digest(current)


class Chapters:
    """The chapter modules of one package, and the code each depends on."""

    def __init__(self, package: str = DEFAULT_PACKAGE, *, imports_cache: Path | None = None) -> None:
        self.package = package
        self.locator = ChapterLocator(package)
        # The runner records every trace, so its code is every chapter's code.
        self.graph = CodeGraph([self.package, "primer"], imports_cache=imports_cache)
        #: The sources the book's modules were executed from: those imported already, as they are now.
        self.executed = Executed(*self.graph.roots, reloaded=package)
        self.executed.look()

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
        self.executed.look()
        stale = []
        for path in self.dependencies(chapter):
            if self._own(path):
                continue
            name = self.graph.name_of(path)
            # Never imported here: it will be read fresh when it is.
            if name in sys.modules and self.executed.changed(name, path):
                stale.append(path)
        return stale

    def load(self, chapter: str) -> ModuleType:
        """Import a chapter, re-importing what of its package changed since; raises what importing raises."""
        self.locator.require(chapter)
        name = self.module_name(chapter)
        own = []
        self.executed.look()  # what was imported by other means since the last look
        for path in self.dependencies(chapter):
            module = self.graph.name_of(path)
            if self._own(path):
                own.append(module)
            elif module not in sys.modules:
                # The chapter's import, or its run, may import it: read it now, before it executes.
                self.executed.before(module, path)
        # Helpers first, the chapter last. Once one module is re-imported, so
        # is every one after it: the chapter built its scenarios from the
        # helpers' values at the time it was imported.
        executed = False
        for module_name in [*(n for n in own if n != name), name]:
            executed = self._fresh(module_name, force=executed) or executed
        return sys.modules[name]

    def _fresh(self, name: str, *, force: bool = False) -> bool:
        """Import a module, or re-import it if its file changed (or ``force``); whether it ran."""
        module = sys.modules.get(name)
        path = self.graph.path_of(name)
        if module is None:
            self.executed.before(name, path)
            importlib.import_module(name)
            return True
        # Any saved byte: a reload is cheap, and keeps tracebacks' line numbers true.
        if not force and name in self.executed.sources and self.executed.sources[name] == _read(path):
            return False
        # No .pyc: a bytecode file appearing in a watched folder would
        # make `mkdocs serve` rebuild a second time.
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
