"""The book's chapters, imported fresh when their source changed, and what each one's code is.

A chapter's fingerprint is ``primer.fingerprint``'s: the normalised code of the chapter, the runner and all
they import of the author's own code, ``primer.book`` left out. Under ``mkdocs serve`` an edited chapter or
helper is re-imported; a library module cannot be (``stale_library``).
"""

from __future__ import annotations

import importlib
import os
import sys
import time
from collections.abc import Iterable
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

from primer.files import file_bytes
from primer.fingerprint import RUNNER, chapter_graph, code_digest
from primer.locator import DEFAULT_PACKAGE, ChapterLocator, scenarios_of

if TYPE_CHECKING:
    from primer.scenario import Scenario

__all__ = ["DEFAULT_PACKAGE", "Chapters"]


class Chapters:
    """The chapter modules of one package, the code each depends on, and the source each module ran from."""

    def __init__(self, package: str = DEFAULT_PACKAGE, *, imports_cache: Path | None = None) -> None:
        self.package = package
        self.locator = ChapterLocator(package)
        self.graph = chapter_graph(self.package, imports_cache=imports_cache)
        #: The source each module of the followed packages was executed from (None: not known, so changed).
        self.sources: dict[str, bytes | None] = {}
        # When the last look began (ns; None before the first: what is imported already is taken as it is).
        self._looked: int | None = None
        self._names: set[str] = set()
        self._look()

    def _look(self) -> None:
        # The source of every followed module imported since the last look, but the chapters' (re-imported
        # when next loaded, which is always safe): no import hook.
        looked, self._looked = self._looked, time.time_ns()
        new = sys.modules.keys() - self._names  # asked before every chapter's import: only what is new
        self._names |= new
        for name in new:
            own = f"{name}.".startswith(f"{self.package}.")
            if name not in self.sources and name.partition(".")[0] in self.graph.roots and not own:
                self.sources[name] = file_bytes(getattr(sys.modules.get(name), "__file__", None), saved_before=looked)

    def names(self) -> list[str]:
        return self.locator.names()

    def module_name(self, chapter: str) -> str:
        return self.locator.module_name(chapter)

    def fingerprint(self, chapter: str) -> str:
        return self.graph.fingerprint(self.module_name(chapter), RUNNER)

    def fingerprints(self, chapters: Iterable[str]) -> dict[str, str]:
        """Each chapter's ``fingerprint``, as the files are at one moment: each read once."""
        with self.graph.snapshot():
            return {chapter: self.fingerprint(chapter) for chapter in chapters}

    def _dependencies(self, chapter: str) -> list[tuple[str, Path, bool]]:
        found = self.graph.modules(self.module_name(chapter), RUNNER).items()
        own = [(name, Path(module[0]), f"{name}.".startswith(f"{self.package}.")) for name, module in found]
        return sorted(own, key=lambda dependency: dependency[1])

    def stale_library(self, chapter: str) -> list[Path]:
        """Library files this process imported whose code changed on disk since (not only comments)."""
        self._look()
        dependencies = self._dependencies(chapter)
        return [p for n, p, own in dependencies if not own and n in sys.modules and self._changed(n, p)]

    def _changed(self, name: str, path: Path) -> bool:
        loaded, current = self.sources.get(name), file_bytes(path)
        if loaded is None or current is None:
            return True
        return loaded != current and code_digest(loaded) != code_digest(current)

    def load(self, chapter: str) -> ModuleType:
        """Import a chapter, re-importing what of its package changed since; raises what importing raises."""
        self.locator.require(chapter)
        name = self.module_name(chapter)
        self._look()  # what was imported by other means since the last look
        own = []
        for module, path, is_own in self._dependencies(chapter):
            if is_own:
                own.append(module)
            elif module not in sys.modules:  # its import may come now: read it before it executes
                self.sources[module] = file_bytes(path)
        # Helpers first, the chapter last; once one is re-imported, so is every one after it
        # (the chapter built its scenarios from the helpers' values when it was imported).
        executed = False
        for module in [*(n for n in own if n != name), name]:
            executed = self._fresh(module, force=executed) or executed
        return sys.modules[name]

    def _fresh(self, name: str, *, force: bool = False) -> bool:
        module, path = sys.modules.get(name), self.graph.path_of(name)
        if module is not None and not force and name in self.sources and self.sources[name] == file_bytes(path):
            return False
        self.sources[name] = file_bytes(path)
        if module is None:
            importlib.import_module(name)
            return True
        # No .pyc: a bytecode file appearing in a watched folder would make `mkdocs serve` rebuild again.
        dont_write, sys.dont_write_bytecode = sys.dont_write_bytecode, True
        try:
            importlib.reload(module)
        finally:
            sys.dont_write_bytecode = dont_write
        return True

    def scenarios(self, chapter: str) -> list[Scenario]:
        return scenarios_of(self.load(chapter))

    def watched_dirs(self) -> list[Path]:
        """The package folders holding the book's code, the book machinery's own left out."""
        roots, names = self.graph.roots, [ex.split(".") for ex in self.graph.exclude]
        excluded = {roots[top].joinpath(*rest) for top, *rest in names if top in roots}
        dirs = []
        for root in roots.values():
            for folder, subdirs, _files in os.walk(root):
                found = (Path(folder) / name for name in sorted(subdirs))
                subdirs[:] = [d.name for d in found if (d / "__init__.py").is_file() and d not in excluded]
                dirs.append(Path(folder))
        return dirs
