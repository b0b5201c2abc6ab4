"""Which source files a chapter's traces depend on, and one hash of them all.

A trace is reused as long as the code that produced it is unchanged. That
code is the chapter module, the runner that runs it, and every module either
of them imports, followed through the import statements *as written* (read
with ``ast``, never imported, so an edited file is hashed as it is on disk,
before anything runs it). Only modules of the packages that make the book are
followed (``primer`` and the chapters' package); the book machinery itself
(``primer.book``) is left out: rendering a trace differently does not change
what the run did.

What is hashed is the *normalised* code (``code_digest``): the syntax tree
without comments, formatting, or the docstrings of modules and functions, so
an edit that cannot change what a run does runs nothing. Class docstrings
stay in: a pydantic model's docstring is the description a tool declares to
the model (``primer.tools``), and so part of what every request sends.

    >>> graph = CodeGraph(["primer"])                          # doctest: +SKIP
    >>> graph.files("primer.chapters.ch09_who_retries")        # doctest: +SKIP
    [.../primer/agent.py, .../primer/chapters/ch09_who_retries.py, ...]
    >>> graph.fingerprint("primer.chapters.ch09_who_retries", "primer.runner")  # doctest: +SKIP
    '3f0c9a1e77b2d45c8e01'

Every build fingerprints every chapter, so what this costs is kept small:

* reading a module's imports and normalising it means parsing it, the
  largest part of the cost; both are kept by the digest of the file's bytes,
  in memory and, with ``imports_cache``, in a JSON file, so a new process
  parses only what was edited since;
* ``snapshot()`` lets several fingerprints share one look at the file
  system (which module names are files, and their sizes and times):
  chapters import mostly the same library modules.
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

#: Bump when what ``code_digest`` hashes, or the cache file's layout, changes.
_FORMAT = 2


def _package_dir(top: str) -> Path | None:
    # find_spec on a top-level name locates it without importing it.
    spec = importlib.util.find_spec(top)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations))).resolve()


#: The trace schema's version as ``primer.trace`` states it, read from its source.
_SCHEMA = re.compile(rb"^SCHEMA_VERSION = (\d+)$", re.MULTILINE)


def _schema_version() -> str:
    """``primer.trace.SCHEMA_VERSION``, read from the file: a warm build must not import the models (pydantic)."""
    spec = importlib.util.find_spec("primer.trace")
    found = _SCHEMA.search(Path(spec.origin).read_bytes()) if spec is not None and spec.origin else None
    if found is None:  # laid out otherwise: imported, then
        from primer.trace import SCHEMA_VERSION

        return str(SCHEMA_VERSION)
    return found.group(1).decode()


def _statements(tree: ast.AST) -> Iterator[ast.AST]:
    todo = [tree]
    while todo:
        node = todo.pop()
        yield node
        for _field, value in ast.iter_fields(node):
            if isinstance(value, list):
                todo += [item for item in value if isinstance(item, ast.stmt | ast.excepthandler | ast.match_case)]


def _without_docstrings(tree: ast.AST) -> ast.AST:
    # Modules' and functions' docstrings only: a class docstring may be data
    # (a tool's description), and a string statement elsewhere is left as is.
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.FunctionDef | ast.AsyncFunctionDef) and node.body:
            first = node.body[0]
            if (
                isinstance(first, ast.Expr)
                and isinstance(first.value, ast.Constant)
                and isinstance(first.value.value, str)
            ):
                node.body = node.body[1:] or [ast.Pass()]
    return tree


def _tree_digest(tree: ast.AST) -> str:
    # No line numbers or columns: ast.dump leaves attributes out by default.
    return hashlib.sha256(ast.dump(_without_docstrings(tree)).encode()).hexdigest()


def code_digest(source: bytes) -> str:
    """A digest of Python source that only a change in what the code does can change.

    Comments, blank lines, formatting, and the docstrings of modules and
    functions are left out; class docstrings are kept (see the module's
    docstring). Source that does not parse is hashed as it is: running it
    shows the error, and every edit to it counts.

    >>> code_digest(b"x = 1  # one") == code_digest(b"x = (1)")
    True
    >>> code_digest(b"x = 1") == code_digest(b"x = 2")
    False
    """
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return "bytes " + hashlib.sha256(source).hexdigest()
    return _tree_digest(tree)


class CodeGraph:
    """The import graph of the packages that make a book, read from source."""

    def __init__(
        self,
        packages: Iterable[str],
        exclude: Iterable[str] = ("primer.book",),
        *,
        imports_cache: Path | None = None,
    ) -> None:
        tops = {name.split(".")[0] for name in packages}
        self.roots = {top: path for top in sorted(tops) if (path := _package_dir(top)) is not None}
        self.exclude = tuple(exclude)
        # Keyed by (mtime_ns, size): a serve session re-reads only what was saved.
        self._digests: dict[Path, tuple[tuple[int, int], str]] = {}
        self._names_of: dict[Path, str] = {}
        # "module-name digest" -> the names the module imports, and digest of
        # the bytes -> digest of the normalised code; loaded from
        # imports_cache on first use, written back when they grew.
        self.imports_cache = imports_cache
        self._known: dict[str, list[str]] | None = None
        self._codes: dict[str, str] = {}
        self._used: set[str] = set()
        self._grown = False
        # Set only inside snapshot(): name -> file, path -> (mtime_ns, size).
        self._paths: dict[str, Path | None] | None = None
        self._stats: dict[Path, tuple[int, int]] | None = None
        # Within a snapshot, (module, file) -> what _parsed gave: the library's
        # modules are shared by every chapter, and their files do not change.
        self._seen: dict[tuple[str, Path], tuple[list[str], str]] | None = None
        # Within a snapshot, the schema version and the closure of the module every chapter
        # shares (primer.runner): walked once a build, not once per chapter.
        self._shared: dict[str, dict[str, Path | None]] | None = None
        self._schema: str | None = None

    @contextmanager
    def snapshot(self) -> Iterator[None]:
        """Within the block, take the files as they were when first looked at.

        For several fingerprints of one build: each file's existence, size
        and time are looked up once. Outside a snapshot every call looks
        again (a ``serve`` session must see each save).
        """
        if self._paths is not None:  # already inside one
            yield
            return
        self._paths, self._stats, self._seen, self._shared = {}, {}, {}, {}
        try:
            yield
        finally:
            self._paths = self._stats = self._seen = self._shared = self._schema = None
            self._save_imports()

    def _followed(self, name: str) -> bool:
        if any(name == ex or name.startswith(ex + ".") for ex in self.exclude):
            return False
        return name.split(".", maxsplit=1)[0] in self.roots

    def path_of(self, name: str) -> Path | None:
        """The source file of a module, if it is one of the followed packages."""
        if self._paths is not None and name in self._paths:
            return self._paths[name]
        found = self._path_of(name)
        if self._paths is not None:
            self._paths[name] = found
        return found

    def _path_of(self, name: str) -> Path | None:
        if not self._followed(name):
            return None
        top, *rest = name.split(".")
        base = os.path.join(self.roots[top], *rest)
        for candidate in (os.path.join(base, "__init__.py"), base + ".py"):
            if os.path.isfile(candidate):
                return Path(candidate)
        return None

    def _stat(self, path: Path) -> tuple[int, int]:
        if self._stats is not None and path in self._stats:
            return self._stats[path]
        stat = path.stat()
        key = (stat.st_mtime_ns, stat.st_size)
        if self._stats is not None:
            self._stats[path] = key
        return key

    def name_of(self, path: Path) -> str:
        """The module name of a source file under one of the followed packages (``""`` if none)."""
        for top, root in self.roots.items():
            if path.is_relative_to(root):
                parts = [top, *path.relative_to(root).with_suffix("").parts]
                return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        return ""

    def _imports(self, name: str, path: Path) -> list[str]:
        return self._parsed(name, path)[0]

    def _parsed(self, name: str, path: Path) -> tuple[list[str], str]:
        """The module's imports and its normalised code's digest, parsed only when not kept."""
        if self._seen is not None and (name, path) in self._seen:
            return self._seen[name, path]
        found_code = self._parse_kept(name, path)
        if self._seen is not None:
            self._seen[name, path] = found_code
        return found_code

    def _parse_kept(self, name: str, path: Path) -> tuple[list[str], str]:
        raw = self._digest(path)
        # The module's name is part of the key: relative imports resolve from it.
        key = f"{name} {raw}"
        known = self._load_imports()
        self._used.add(key)
        if key in known and raw in self._codes:
            return known[key], self._codes[raw]
        data = path.read_bytes()
        # Kept under the digest of the bytes parsed, which a save since the
        # stat above may have changed: an entry never pairs two versions.
        raw = hashlib.sha256(data).hexdigest()
        key = f"{name} {raw}"
        try:
            tree = ast.parse(data, filename=str(path))
        except (SyntaxError, ValueError):
            # Still hashed, as bytes; running it will show the error.
            found, code = [], "bytes " + raw
        else:
            found = self._names(name, path, tree)
            code = _tree_digest(tree)  # after _names: it strips docstrings in place
        self._used.add(key)
        known[key] = found
        self._codes[raw] = code
        self._grown = True
        return found, code

    def code_of(self, name: str, path: Path) -> str:
        """The digest of a module's normalised code (``code_digest``), from the cache when kept."""
        return self._parsed(name, path)[1]

    def _load_imports(self) -> dict[str, list[str]]:
        if self._known is None:
            self._known = {}
            if self.imports_cache is not None:
                try:
                    data = json.loads(self.imports_cache.read_bytes())
                except (OSError, ValueError):
                    data = {}  # none yet, or unreadable: parsed again and rewritten
                # Another layout (an older one) is not read: parsed again and rewritten.
                if isinstance(data, dict) and data.get("format") == _FORMAT:
                    imports, codes = data.get("imports"), data.get("code")
                    if isinstance(imports, dict) and isinstance(codes, dict):
                        self._known = {
                            k: v
                            for k, v in imports.items()
                            if isinstance(v, list) and all(isinstance(n, str) for n in v)
                        }
                        self._codes = {k: v for k, v in codes.items() if isinstance(v, str)}
        return self._known

    def _save_imports(self) -> None:
        if not self._grown or self.imports_cache is None or self._known is None:
            return
        # Only what this process used: entries of files edited away do not pile up.
        kept = {key: names for key, names in sorted(self._known.items()) if key in self._used}
        raws = {key.rpartition(" ")[2] for key in kept}
        codes = {raw: code for raw, code in sorted(self._codes.items()) if raw in raws}
        try:
            write_if_changed(
                self.imports_cache,
                json.dumps({"format": _FORMAT, "imports": kept, "code": codes}, separators=(",", ":")),
            )
            self._grown = False
        except OSError:
            pass  # a cache: the next process parses again

    @staticmethod
    def _names(name: str, path: Path, tree: ast.AST) -> list[str]:
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        found: list[str] = []
        # Every statement, nested ones too (imports deferred into functions,
        # like the live model's, are dependencies), but no expression: imports
        # are statements, and expressions are most of a tree.
        for node in _statements(tree):
            if isinstance(node, ast.Import):
                found += [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    parts = package.split(".")
                    anchor = ".".join(parts[: len(parts) - node.level + 1])
                    base = f"{anchor}.{node.module}" if node.module else anchor
                else:
                    base = node.module or ""
                found.append(base)
                # `from package import module` names a module, not an attribute.
                found += [f"{base}.{alias.name}" for alias in node.names if alias.name != "*"]
        return found

    def files(self, *modules: str) -> list[Path]:
        """Every followed source file the modules import, transitively, themselves included."""
        return sorted(self._modules(*modules))

    def _modules(self, *modules: str) -> dict[Path, str]:
        """The followed source files the modules import, transitively, with their module names."""
        seen: dict[str, Path | None] = {}
        todo = list(modules)
        if self._shared is not None and len(modules) > 1:
            # What the last module imports is walked once a snapshot; a module found in it
            # imports nothing outside it, so the walk from the others stops there.
            *todo, shared = modules
            if shared not in self._shared:
                self._shared[shared] = self._modules_named(shared)
            seen = dict(self._shared[shared])
        while todo:
            name = todo.pop()
            if name in seen:
                continue
            seen[name] = path = self.path_of(name)
            if path is not None:
                todo += self._imports(name, path)
        if self._paths is None:
            self._save_imports()
        return {path: name for name, path in seen.items() if path is not None}

    def _modules_named(self, module: str) -> dict[str, Path | None]:
        return {name: path for path, name in self._modules(module).items()}

    def fingerprint(self, *modules: str) -> str:
        """One hash of the modules' dependency files' normalised code and of the trace schema version.

        Files are named relative to their package's parent folder, and
        taken in the order of those names, so the hash is the same in every
        checkout of the project and wherever the virtual environment is (a
        book's chapters beside ``mkdocs.yml``, the library in a venv that
        sorts before or after them).
        """
        if self._shared is None or self._schema is None:
            self._schema = _schema_version()  # once a snapshot
        digest = hashlib.sha256(f"schema {self._schema} code {_FORMAT}\n".encode())
        found = self._modules(*modules)
        for relative, path in sorted((self._relative(path), path) for path in found):
            digest.update(f"{relative} {self.code_of(found[path], path)}\n".encode())
        return digest.hexdigest()[:20]

    def _digest(self, path: Path) -> str:
        key = self._stat(path)
        cached = self._digests.get(path)
        if cached is None or cached[0] != key:
            cached = self._digests[path] = (key, hashlib.sha256(path.read_bytes()).hexdigest())
        return cached[1]

    def _relative(self, path: Path) -> str:
        # A function of the path alone, and pathlib's relative_to is slow.
        if path not in self._names_of:
            self._names_of[path] = next(
                (path.relative_to(root.parent).as_posix() for root in self.roots.values() if path.is_relative_to(root)),
                path.name,
            )
        return self._names_of[path]
