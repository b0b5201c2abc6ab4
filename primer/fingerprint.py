"""What a trace's ``source_hash`` is: one fingerprint of the code that made it, the same in any checkout and venv.

A fingerprint hashes the normalised code (``code_digest``: comments, formatting and docstrings left out) of a
chapter, the runner and all they import of the author's own code (``CodeGraph``), followed through the imports
as written (``ast``, never imported); files are named by module, never by where they are. A module's imports and
digest are kept by its bytes' digest (in ``imports_cache`` too): a new process parses only what was edited.
"""

from __future__ import annotations

import ast
import hashlib
import importlib.util
import json
import os
import re
import stat
import sys
from collections.abc import Iterable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

from primer.files import digest_of, file_bytes, file_digest, write_if_changed

__all__ = ["RUNNER", "CodeGraph", "chapter_graph", "code_digest"]

#: The runner records every trace, so its code is every chapter's code.
RUNNER = "primer.runner"
#: Bump when what ``code_digest`` hashes changes (and the layout of ``imports_cache``).
_FORMAT, _FILE_FORMAT = 3, 5
_SCHEMA = re.compile(rb"^SCHEMA_VERSION = (\d+)$", re.MULTILINE)
_STDLIB = Path(os.__file__).resolve().parent  # where ``os`` is: sysconfig's answer took 1 ms a process

#: A module found: its file, its name in fingerprints (``primer/agent.py``), its imports, its code's digest.
#: The file as a string: a build finds every module of the graph, and a Path each took a tenth of the walk.
Module = tuple[str, str, list[str], str]


def _statements(tree: ast.AST) -> Iterator[ast.AST]:
    # The module and every statement in it, however nested. Imports and docstrings are statements: the
    # expressions (most of a tree) are not walked, which makes a cold build's fingerprints a fifth cheaper.
    todo = [tree]
    while todo:
        yield (node := todo.pop())
        for field in ("body", "orelse", "finalbody", "handlers", "cases"):
            todo += getattr(node, field, ())


def _tree_digest(tree: ast.AST, source: bytes) -> str:
    for node in _statements(tree):
        if isinstance(node, ast.Module | ast.FunctionDef | ast.AsyncFunctionDef) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and type(first.value.value) is str:
                node.body = node.body[1:] or [ast.Pass()]
    try:
        return hashlib.sha256(_dump(tree).encode()).hexdigest()
    except RecursionError:  # nested deeper than the walk's stack (an elif chain of a thousand): hashed as bytes
        return "bytes " + hashlib.sha256(source).hexdigest()


def _dump(tree: ast.AST) -> str:
    # ast.dump's text without line numbers and without the fields left empty (None, []): a newer Python adds
    # fields (3.12's type_params) and prints empty ones or not (3.13 does not), and a fingerprint must be the
    # same under any Python the book is built with. Written into one list, joined once: twice as fast as
    # ast.dump (a cold build dumps the author's whole library); each node type's pieces made once
    # (``_PIECES``), not formatted per node: 13 % less again.
    out: list[str] = []
    add, pieces = out.append, _PIECES

    def walk(node: object) -> None:
        kind = type(node)
        if isinstance(node, list):  # one test, as fast as ``type(node) is list``
            add("[")
            for index, item in enumerate(node):
                if index:
                    add(",")
                walk(item)
            add("]")
        elif (known := pieces.get(kind)) is not None or isinstance(node, ast.AST):
            head, fields = known or pieces.setdefault(kind, _pieces(kind))
            add(head)
            comma = False
            for name, first, later in fields:
                if (value := getattr(node, name, None)) is not None and value != []:
                    add(later if comma else first)
                    walk(value)
                    comma = True
            add(")")
        else:
            add(repr(node))

    walk(tree)
    return "".join(out)


#: Each node type's opening and, per field, its name as written first and after a comma.
_PIECES: dict[type, tuple[str, tuple[tuple[str, str, str], ...]]] = {}


def _pieces(kind: type) -> tuple[str, tuple[tuple[str, str, str], ...]]:
    return f"{kind.__name__}(", tuple((name, f"{name}=", f",{name}=") for name in kind._fields)  # type: ignore[attr-defined]


def code_digest(source: bytes) -> str:
    """A digest of Python source that only a change in what the code does can change.

    Comments, formatting and module and function docstrings are left out (a class docstring is a
    tool's description).

    >>> code_digest(b"x = 1  # one") == code_digest(b"x = (1)")
    True
    """
    try:
        return _tree_digest(ast.parse(source), source)
    except (SyntaxError, ValueError, RecursionError):  # hashed as bytes: running it shows the error
        return "bytes " + hashlib.sha256(source).hexdigest()


def _imports(name: str, path: str | Path, tree: ast.AST) -> list[str]:
    """The names a module imports, in any statement (a deferred import is a dependency too)."""
    package = name if os.path.basename(path) == "__init__.py" else name.rpartition(".")[0]
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
        self._excluded = tuple(f"{name}." for name in self.exclude)  # a name is left out if it is one or in one
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
        """The file of a followed module (None: not followed, or not found)."""
        found = self._where(name)
        return None if found is None else Path(found[0])

    def _where(self, name: str) -> tuple[str, str, os.stat_result] | None:
        # The module's file, its name in fingerprints, and the file's stat (for its digest: one stat a module).
        top, *rest = name.split(".")
        if top not in self._looked_up:
            self._looked_up.add(top)  # the interpreter's own are not looked for (a millisecond a build)
            if top not in sys.stdlib_module_names and (found := _found(top)) is not None and not _installed(found):
                self.roots[top] = found
        if top not in self.roots or f"{name}.".startswith(self._excluded):
            return None
        base = os.path.join(self.roots[top], *rest)
        for suffix in ("/__init__.py", ".py"):
            with suppress(OSError):
                if stat.S_ISREG((found_stat := os.stat(path := base + suffix)).st_mode):
                    return path, "/".join([top, *rest]) + suffix, found_stat
        return None

    def _module(self, name: str) -> Module | None:
        if name in self._memo:  # called within a snapshot
            return self._memo[name]
        # A name in a module (`from primer.loop import until_no_tool_calls`) is not looked for on disk.
        up = self._module(name.rpartition(".")[0]) if "." in name else None
        found, where = None, None if up and not up[1].endswith("__init__.py") else self._where(name)
        digest = file_digest(*where[::2]) if where is not None else None  # None: gone since, not a dependency now
        if where is not None and digest is not None:
            key = f"{name} {digest}"
            if (kept := self._load().get(key)) is None:
                key, kept = self._parse(name, where[0])
            if kept is not None:
                self._used.add(key)
                found = (where[0], where[1], *kept)
        self._memo[name] = found
        return found

    def _parse(self, name: str, path: str) -> tuple[str, tuple[list[str], str] | None]:
        # The module's imports and code digest, kept by the bytes parsed (saved again since its digest: so keyed).
        if (data := file_bytes(path)) is None:
            return "", None
        try:
            tree = ast.parse(data, filename=str(path))
            kept = (_imports(name, path, tree), _tree_digest(tree, data))
        except (SyntaxError, ValueError, RecursionError):
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
                    found |= {name: module, **self._closure([*module[2], *_parents(name)])[0]}
        return found

    def _closure(self, starts: list[str]) -> tuple[dict[str, Module], frozenset[str]]:
        # What a module's imports reach, and its lines in a fingerprint: walked once for the chapters importing alike.
        if (key := tuple(starts)) not in self._closures:
            seen: dict[str, Module | None] = {}
            todo = [*starts]
            while todo:
                if (name := todo.pop()) not in seen:
                    seen[name] = found = self._module(name)
                    todo += [*found[2], *_parents(name)] if found is not None else []
            closure = {name: found for name, found in seen.items() if found is not None}
            self._closures[key] = closure, frozenset(f"{m[1]} {m[3]}\n" for m in closure.values())
        return self._closures[key]

    def fingerprint(self, *modules: str) -> str:
        """One hash of the normalised code of the modules' dependencies, by name, and of the trace schema version."""
        with self.snapshot():
            lines: set[str] = set()
            for name in modules:
                if (module := self._module(name)) is not None:
                    lines |= {f"{module[1]} {module[3]}\n", *self._closure([*module[2], *_parents(name)])[1]}
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


def _parents(name: str) -> list[str]:
    # Importing ``a.b.c`` runs ``a/__init__.py`` and ``a/b/__init__.py`` first: their code is the module's too.
    parts = name.split(".")
    return [".".join(parts[:end]) for end in range(1, len(parts))]


def chapter_graph(package: str, *, imports_cache: Path | None = None) -> CodeGraph:
    """The graph a chapter of ``package`` is fingerprinted in (``fingerprint(module, RUNNER)``): its code and ours."""
    return CodeGraph([package, "primer"], imports_cache=imports_cache)
