"""The book's code: its chapters, imported fresh when their source changed, and the fingerprint of what they use.

A fingerprint hashes the normalised code (``code_digest``) of the chapter, the runner and all they
import of the author's own code (``CodeGraph``), followed through the imports as written (``ast``, never
imported), ``primer.book`` left out;
files are named by module, so it is the same in any checkout and venv. A module's imports and digest
are kept by its bytes' digest (in ``imports_cache`` too): a new process parses only what was edited.
Under ``mkdocs serve`` an edited chapter or helper is re-imported; a library module cannot be.
"""

from __future__ import annotations

import ast
import hashlib
import importlib.util
import json
import os
import re
import sys
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

from primer.book._atomic import write_if_changed
from primer.book._files import digest_of, file_bytes, file_digest
from primer.locator import DEFAULT_PACKAGE, ChapterLocator, scenarios_of

if TYPE_CHECKING:
    from primer.scenario import Scenario

__all__ = ["DEFAULT_PACKAGE", "Chapters", "CodeGraph", "code_digest"]

#: Bump when what ``code_digest`` hashes changes (and the layout of ``imports_cache``).
_FORMAT, _FILE_FORMAT = 3, 5
_EMPTY: tuple[object, ...] = (None, [])
_SCHEMA = re.compile(rb"^SCHEMA_VERSION = (\d+)$", re.MULTILINE)
_STDLIB = Path(os.__file__).resolve().parent  # where ``os`` is: sysconfig's answer took 1 ms a process

#: A module found: its file, its name in fingerprints (``primer/agent.py``), its imports, its code's digest.
Module = tuple[Path, str, list[str], str]


def _statements(tree: ast.AST) -> Iterator[ast.AST]:
    # The module and every statement in it, however nested. Imports and docstrings are statements: the
    # expressions (most of a tree) are not walked, which makes a cold build's fingerprints a fifth cheaper.
    todo = [tree]
    while todo:
        yield (node := todo.pop())
        for field in ("body", "orelse", "finalbody", "handlers", "cases"):
            todo += getattr(node, field, ())


def _tree_digest(tree: ast.AST) -> str:
    for node in _statements(tree):
        if isinstance(node, ast.Module | ast.FunctionDef | ast.AsyncFunctionDef) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and type(first.value.value) is str:
                node.body = node.body[1:] or [ast.Pass()]
    return hashlib.sha256(_dump(tree).encode()).hexdigest()


def _dump(node: object) -> str:
    # ast.dump's text without line numbers and without the fields left empty (None, []): a newer Python adds
    # fields (3.12's type_params) and prints empty ones or not (3.13 does not), and a fingerprint must be the
    # same under any Python the book is built with. A third faster than ast.dump, too.
    if isinstance(node, ast.AST):
        values = ((name, getattr(node, name, None)) for name in node._fields)
        fields = [f"{name}={_dump(value)}" for name, value in values if value not in _EMPTY]
        return f"{type(node).__name__}({','.join(fields)})"
    if isinstance(node, list):
        return f"[{','.join(map(_dump, node))}]"
    return repr(node)


def code_digest(source: bytes) -> str:
    """A digest of Python source that only a change in what the code does can change.

    Comments, formatting and module and function docstrings are left out (a class docstring is a
    tool's description).

    >>> code_digest(b"x = 1  # one") == code_digest(b"x = (1)")
    True
    """
    try:
        return _tree_digest(ast.parse(source))
    except (SyntaxError, ValueError):  # hashed as bytes: running it shows the error
        return "bytes " + hashlib.sha256(source).hexdigest()


def _imports(name: str, path: Path, tree: ast.AST) -> list[str]:
    """The names a module imports, in any statement (a deferred import is a dependency too)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: list[str] = []
    for node in _statements(tree):
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                anchor = ".".join(parts[: len(parts) - node.level + 1])
                base = f"{anchor}.{base}" if base else anchor
            # `from package import module` names a module, not an attribute.
            found += [base, *(f"{base}.{alias.name}" for alias in node.names if alias.name != "*")]
    return found


def _found(top: str) -> Path | None:
    # A top-level package's folder, or a module's path less ``.py``: found, not imported.
    with suppress(ImportError, ValueError):
        spec = importlib.util.find_spec(top)
        if spec is not None and spec.submodule_search_locations:
            return Path(next(iter(spec.submodule_search_locations))).resolve()
        if spec is not None and spec.origin and spec.origin.endswith(".py"):
            return Path(spec.origin).resolve().with_suffix("")
    return None


def _installed(path: Path) -> bool:
    # The interpreter's own library, or an installed distribution (its version is in every chapter's key).
    return "site-packages" in path.parts or "dist-packages" in path.parts or path.is_relative_to(_STDLIB)


class CodeGraph:
    """The import graph of the packages that make a book, read from source.

    It follows the packages given and any other an import names that is the author's own: not the
    interpreter's library nor installed (an agent package beside the book, or installed editable).
    """

    def __init__(
        self, packages: Iterable[str], exclude: Iterable[str] = ("primer.book",), *, imports_cache: Path | None = None
    ) -> None:
        given = {top: _found(top) for top in sorted({name.split(".")[0] for name in packages})}
        self.roots: dict[str, Path] = {top: path for top, path in given.items() if path is not None}
        self._looked_up = set(given)  # the top-level names looked for (once a process)
        self.exclude = tuple(exclude)
        self.imports_cache = imports_cache
        # "name blake2b-of-bytes" -> (imports, code digest): the name too, as relative imports resolve from it.
        self._kept: dict[str, tuple[list[str], str]] | None = None
        self._used: set[str] = set()
        self._grown = False
        # Within a snapshot: each module found (None: not followed), each one's closure, the schema version.
        self._open = False
        self._memo: dict[str, Module | None] = {}
        self._closures: dict[tuple[str, ...], tuple[dict[str, Module], frozenset[str]]] = {}
        self._schema: str | None = None

    @contextmanager
    def snapshot(self) -> Iterator[None]:
        """Within the block, each file is read once: a save during it is seen by the next."""
        if self._open:  # inside one already
            yield
            return
        self._open = True
        try:
            yield
        finally:
            self._open, self._memo, self._closures, self._schema = False, {}, {}, None
            self._save()

    def path_of(self, name: str) -> Path | None:
        found = self._where(name)
        return None if found is None else found[0]

    def _where(self, name: str) -> tuple[Path, str] | None:
        top, *rest = name.split(".")
        if top not in self._looked_up:
            self._looked_up.add(top)  # the interpreter's own are not looked for (a millisecond a build)
            if top not in sys.stdlib_module_names and (found := _found(top)) is not None and not _installed(found):
                self.roots[top] = found
        if top not in self.roots or any(name == ex or name.startswith(ex + ".") for ex in self.exclude):
            return None
        base = os.path.join(self.roots[top], *rest)
        for suffix in ("/__init__.py", ".py"):
            if os.path.isfile(base + suffix):
                return Path(base + suffix), "/".join([top, *rest]) + suffix
        return None

    def _module(self, name: str) -> Module | None:
        if name in self._memo:  # called within a snapshot
            return self._memo[name]
        # A name in a module (`from primer.loop import until_no_tool_calls`) is not looked for on disk.
        up = self._module(name.rpartition(".")[0]) if "." in name else None
        found, where = None, None if up and not up[1].endswith("__init__.py") else self._where(name)
        digest = file_digest(str(where[0])) if where is not None else None  # None: gone since, not a dependency now
        if where is not None and digest is not None:
            key = f"{name} {digest}"
            if (kept := self._load().get(key)) is None:
                key, kept = self._parse(name, where[0])
            if kept is not None:
                self._used.add(key)
                found = (*where, *kept)
        self._memo[name] = found
        return found

    def _parse(self, name: str, path: Path) -> tuple[str, tuple[list[str], str] | None]:
        # The module's imports and code digest, kept by the bytes parsed (saved again since its digest: so keyed).
        if (data := file_bytes(path)) is None:
            return "", None
        try:
            tree = ast.parse(data, filename=str(path))
            kept = (_imports(name, path, tree), _tree_digest(tree))
        except (SyntaxError, ValueError):
            kept = ([], code_digest(data))
        key = f"{name} {digest_of(data)}"
        self._load()[key], self._grown = kept, True
        return key, kept

    def modules(self, *modules: str) -> dict[str, Module]:
        """The followed modules the given ones import, transitively, themselves included, by name."""
        found: dict[str, Module] = {}
        with self.snapshot():
            for name in modules:
                if (module := self._module(name)) is not None:
                    found |= {name: module, **self._closure(module[2])[0]}
        return found

    def _closure(self, starts: list[str]) -> tuple[dict[str, Module], frozenset[str]]:
        # What a module's imports reach, and its lines in a fingerprint: walked once for the chapters importing alike.
        if (key := tuple(starts)) not in self._closures:
            seen: dict[str, Module | None] = {}
            todo = [*starts]
            while todo:
                if (name := todo.pop()) not in seen:
                    seen[name] = found = self._module(name)
                    todo += found[2] if found is not None else []
            closure = {name: found for name, found in seen.items() if found is not None}
            self._closures[key] = closure, frozenset(f"{m[1]} {m[3]}\n" for m in closure.values())
        return self._closures[key]

    def fingerprint(self, *modules: str) -> str:
        """One hash of the normalised code of the modules' dependencies, by name, and of the trace schema version."""
        with self.snapshot():
            lines: set[str] = set()
            for module in filter(None, map(self._module, modules)):
                lines |= {f"{module[1]} {module[3]}\n", *self._closure(module[2])[1]}
            if self._schema is None:  # read from its source: a warm build does not import the models
                spec = importlib.util.find_spec("primer.trace")
                found = _SCHEMA.search(file_bytes(spec.origin if spec else None) or b"")
                self._schema = found.group(1).decode() if found else "?"
            head = f"schema {self._schema} code {_FORMAT}\n"
            return hashlib.sha256((head + "".join(sorted(lines))).encode()).hexdigest()[:20]

    def _load(self) -> dict[str, tuple[list[str], str]]:
        if self._kept is None:
            self._kept = {}
            with suppress(OSError, ValueError, AttributeError, KeyError, TypeError):  # parsed again and rewritten
                data = json.loads(self.imports_cache.read_bytes()) if self.imports_cache is not None else {}
                if data.get("format") == _FILE_FORMAT:
                    self._kept = {key: (list(names), str(code)) for key, (names, code) in data["modules"].items()}
        return self._kept

    def _save(self) -> None:
        if self._grown and self.imports_cache is not None and self._kept is not None:
            # Only what this process used: entries of files edited away do not pile up.
            kept = {key: value for key, value in sorted(self._kept.items()) if key in self._used}
            with suppress(OSError):  # a cache: the next process parses again
                write_if_changed(self.imports_cache, json.dumps({"format": _FILE_FORMAT, "modules": kept}))
                self._grown = False


class Chapters:
    """The chapter modules of one package, the code each depends on, and the source each module ran from."""

    def __init__(self, package: str = DEFAULT_PACKAGE, *, imports_cache: Path | None = None) -> None:
        self.package = package
        self.locator = ChapterLocator(package)
        # The runner records every trace, so its code is every chapter's code.
        self.graph = CodeGraph([self.package, "primer"], imports_cache=imports_cache)
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
        return self.graph.fingerprint(self.module_name(chapter), "primer.runner")

    def fingerprints(self, chapters: Iterable[str]) -> dict[str, str]:
        """Each chapter's ``fingerprint``, as the files are at one moment: each read once."""
        with self.graph.snapshot():
            return {chapter: self.fingerprint(chapter) for chapter in chapters}

    def _dependencies(self, chapter: str) -> list[tuple[str, Path, bool]]:
        found = self.graph.modules(self.module_name(chapter), "primer.runner").items()
        own = [(name, module[0], f"{name}.".startswith(f"{self.package}.")) for name, module in found]
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
