"""Which source files a chapter's traces depend on, and one hash of their normalised code.

A trace is reused as long as the code that produced it is unchanged: the
chapter module, the runner, and every module they import, followed through
the import statements *as written* (read with ``ast``, never imported), in
the packages that make the book (``primer`` and the chapters' package) but
the book machinery (``primer.book``: drawing a trace differently does not
change what the run did).

What is hashed is the normalised code (``code_digest``): the syntax tree
without comments, formatting, or the docstrings of modules and functions.
Class docstrings stay in: a pydantic model's docstring is the description a
tool declares to the model. A module's imports and digest are kept by the
digest of its bytes, in memory and in ``imports_cache`` (JSON), so a new
process parses only what was edited; within ``snapshot()`` (one build's
fingerprints) each file is read and hashed once.
"""

from __future__ import annotations

import ast
import hashlib
import importlib.util
import json
import os
import re
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

from primer.book._atomic import write_if_changed

__all__ = ["CodeGraph", "code_digest"]

#: Bump when what ``code_digest`` hashes changes.
_FORMAT = 2
#: Bump when the layout of ``imports_cache`` changes.
_FILE_FORMAT = 3
_SCHEMA = re.compile(rb"^SCHEMA_VERSION = (\d+)$", re.MULTILINE)

#: A module found: its file, the path named in fingerprints, its imports and its code's digest.
Module = tuple[Path, str, list[str], str]


def _schema_version() -> str:
    """``primer.trace.SCHEMA_VERSION``, read from its source: a warm build does not import the models."""
    spec = importlib.util.find_spec("primer.trace")
    found = _SCHEMA.search(Path(spec.origin).read_bytes()) if spec is not None and spec.origin else None
    if found is None:
        from primer.trace import SCHEMA_VERSION

        return str(SCHEMA_VERSION)
    return found.group(1).decode()


def _tree_digest(tree: ast.AST) -> str:
    # Only modules' and functions' docstrings go: a class docstring may be a tool's description.
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.FunctionDef | ast.AsyncFunctionDef) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and type(first.value.value) is str:
                node.body = node.body[1:] or [ast.Pass()]
    # ast.dump leaves out line numbers and columns.
    return hashlib.sha256(ast.dump(tree).encode()).hexdigest()


def code_digest(source: bytes) -> str:
    """A digest of Python source that only a change in what the code does can change.

    Comments, formatting, and the docstrings of modules and functions are left
    out; class docstrings are kept. Source that does not parse is hashed as
    bytes: running it shows the error.

    >>> code_digest(b"x = 1  # one") == code_digest(b"x = (1)")
    True
    """
    try:
        return _tree_digest(ast.parse(source))
    except (SyntaxError, ValueError):
        return "bytes " + hashlib.sha256(source).hexdigest()


def _imports(name: str, path: Path, tree: ast.AST) -> list[str]:
    """The names a module imports, in any statement (a deferred import is a dependency too)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: list[str] = []
    for node in ast.walk(tree):
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


class CodeGraph:
    """The import graph of the packages that make a book, read from source."""

    def __init__(
        self, packages: Iterable[str], exclude: Iterable[str] = ("primer.book",), *, imports_cache: Path | None = None
    ) -> None:
        self.roots: dict[str, Path] = {}
        for top in sorted({name.split(".")[0] for name in packages}):
            spec = importlib.util.find_spec(top)  # found, not imported
            if spec is not None and spec.submodule_search_locations:
                self.roots[top] = Path(next(iter(spec.submodule_search_locations))).resolve()
        self.exclude = tuple(exclude)
        self.imports_cache = imports_cache
        # "name sha256-of-bytes" -> (imports, code digest); loaded from imports_cache when first needed.
        self._kept: dict[str, tuple[list[str], str]] | None = None
        self._used: set[str] = set()
        self._grown = False
        # Inside snapshot(): module name -> what it was found to be (None: not followed, or no file).
        self._memo: dict[str, Module | None] | None = None
        self._version: str | None = None

    @contextmanager
    def snapshot(self) -> Iterator[None]:
        """Within the block, each file is read once: a save during it is seen by the next."""
        outer = self._memo
        self._memo = outer if outer is not None else {}
        try:
            yield
        finally:
            self._memo = outer
            if outer is None:
                self._version = None
                self._save()

    def path_of(self, name: str) -> Path | None:
        """The source file of a module, if it is one of the followed packages."""
        found = self._where(name)
        return None if found is None else Path(found[0])

    def _where(self, name: str) -> tuple[str, str] | None:
        top, *rest = name.split(".")
        if top not in self.roots or any(name == ex or name.startswith(ex + ".") for ex in self.exclude):
            return None
        base = os.path.join(self.roots[top], *rest)
        # Named from the module's name, so a fingerprint is the same wherever the package is.
        for suffix, named in (("/__init__.py", "/__init__.py"), (".py", ".py")):
            if os.path.isfile(base + suffix):
                return base + suffix, "/".join([top, *rest]) + named
        return None

    def _module(self, name: str) -> Module | None:
        if self._memo is not None and name in self._memo:
            return self._memo[name]
        found: Module | None = None
        where = self._where(name)
        try:
            data = Path(where[0]).read_bytes() if where is not None else None
        except OSError:
            data = None  # gone since: not a dependency now
        if where is not None and data is not None:
            path = Path(where[0])
            # The name is part of the key: relative imports resolve from it.
            key = f"{name} {hashlib.sha256(data).hexdigest()}"
            kept = self._load().get(key)
            if kept is None:
                try:
                    tree = ast.parse(data, filename=str(path))
                except (SyntaxError, ValueError):  # hashed as bytes; running it shows the error
                    kept = ([], "bytes " + key.rpartition(" ")[2])
                else:
                    kept = (_imports(name, path, tree), _tree_digest(tree))
                self._load()[key] = kept
                self._grown = True
            self._used.add(key)
            found = (path, where[1], *kept)
        if self._memo is not None:
            self._memo[name] = found
        return found

    def modules(self, *modules: str) -> dict[str, Module]:
        """The followed modules the given ones import, transitively, themselves included, by name."""
        seen: dict[str, Module | None] = {}
        todo = list(modules)
        while todo:
            name = todo.pop()
            if name not in seen:
                seen[name] = found = self._module(name)
                if found is not None:
                    todo += found[2]
        if self._memo is None:
            self._save()
        return {name: found for name, found in seen.items() if found is not None}

    def files(self, *modules: str) -> list[Path]:
        """Every followed source file the modules import, transitively, themselves included."""
        return sorted(found[0] for found in self.modules(*modules).values())

    def fingerprint(self, *modules: str) -> str:
        """One hash of the normalised code of the modules' dependencies and of the trace schema version.

        Files are named by their module's name (``primer/agent.py``) and taken
        in that order, so the hash is the same in every checkout and wherever
        the virtual environment is.
        """
        lines = sorted(f"{named} {code}\n" for _, named, _, code in self.modules(*modules).values())
        head = f"schema {self._schema()} code {_FORMAT}\n"
        return hashlib.sha256((head + "".join(lines)).encode()).hexdigest()[:20]

    def _schema(self) -> str:
        if self._memo is None:
            return _schema_version()
        if self._version is None:
            self._version = _schema_version()
        return self._version

    def _load(self) -> dict[str, tuple[list[str], str]]:
        if self._kept is None:
            self._kept = {}
            try:
                data = json.loads(self.imports_cache.read_bytes()) if self.imports_cache is not None else {}
                if data.get("format") == _FILE_FORMAT:
                    self._kept = {key: (list(names), str(code)) for key, (names, code) in data["modules"].items()}
            except (OSError, ValueError, AttributeError, KeyError, TypeError):
                pass  # none yet, or unreadable: parsed again and rewritten
        return self._kept

    def _save(self) -> None:
        if not self._grown or self.imports_cache is None or self._kept is None:
            return
        # Only what this process used: entries of files edited away do not pile up.
        kept = {key: value for key, value in sorted(self._kept.items()) if key in self._used}
        try:
            write_if_changed(self.imports_cache, json.dumps({"format": _FILE_FORMAT, "modules": kept}))
            self._grown = False
        except OSError:
            pass  # a cache: the next process parses again
