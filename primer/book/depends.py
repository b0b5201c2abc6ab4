"""Which source files a chapter's traces depend on, and one hash of them all.

A trace is reused as long as the code that produced it is unchanged. That
code is the chapter module, the runner that runs it, and every module either
of them imports, followed through the import statements *as written* (read
with ``ast``, never imported, so an edited file is hashed as it is on disk,
before anything runs it). Only modules of the packages that make the book are
followed (``primer`` and the chapters' package); the book machinery itself
(``primer.book``) is left out: rendering a trace differently does not change
what the run did.

    >>> graph = CodeGraph(["primer"])                          # doctest: +SKIP
    >>> graph.files("primer.chapters.ch09_who_retries")        # doctest: +SKIP
    [.../primer/agent.py, .../primer/chapters/ch09_who_retries.py, ...]
    >>> graph.fingerprint("primer.chapters.ch09_who_retries", "primer.runner")  # doctest: +SKIP
    '3f0c9a1e77b2d45c8e01'
"""

from __future__ import annotations

import ast
import hashlib
import importlib.util
from collections.abc import Iterable, Iterator
from pathlib import Path

from primer.trace import SCHEMA_VERSION

__all__ = ["CodeGraph"]


def _package_dir(top: str) -> Path | None:
    # find_spec on a top-level name locates it without importing it.
    spec = importlib.util.find_spec(top)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations))).resolve()


def _statements(tree: ast.AST) -> Iterator[ast.AST]:
    todo = [tree]
    while todo:
        node = todo.pop()
        yield node
        for _field, value in ast.iter_fields(node):
            if isinstance(value, list):
                todo += [item for item in value if isinstance(item, ast.stmt | ast.excepthandler | ast.match_case)]


class CodeGraph:
    """The import graph of the packages that make a book, read from source."""

    def __init__(self, packages: Iterable[str], exclude: Iterable[str] = ("primer.book",)) -> None:
        tops = {name.split(".")[0] for name in packages}
        self.roots = {top: path for top in sorted(tops) if (path := _package_dir(top)) is not None}
        self.exclude = tuple(exclude)
        # Keyed by (mtime_ns, size): a serve session re-reads only what was saved.
        self._parsed: dict[Path, tuple[tuple[int, int], list[str]]] = {}
        self._digests: dict[Path, tuple[tuple[int, int], str]] = {}

    def _followed(self, name: str) -> bool:
        if any(name == ex or name.startswith(ex + ".") for ex in self.exclude):
            return False
        return name.split(".", maxsplit=1)[0] in self.roots

    def path_of(self, name: str) -> Path | None:
        """The source file of a module, if it is one of the followed packages."""
        if not self._followed(name):
            return None
        top, *rest = name.split(".")
        base = self.roots[top].joinpath(*rest)
        for candidate in (base / "__init__.py", base.with_suffix(".py")):
            if candidate.is_file():
                return candidate
        return None

    def name_of(self, path: Path) -> str:
        """The module name of a source file under one of the followed packages (``""`` if none)."""
        for top, root in self.roots.items():
            if path.is_relative_to(root):
                parts = [top, *path.relative_to(root).with_suffix("").parts]
                return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        return ""

    def _imports(self, name: str, path: Path) -> list[str]:
        stat = path.stat()
        key = (stat.st_mtime_ns, stat.st_size)
        cached = self._parsed.get(path)
        if cached is not None and cached[0] == key:
            return cached[1]
        try:
            tree = ast.parse(path.read_bytes(), filename=str(path))
        except SyntaxError:
            # The file is still hashed; running it will show the error.
            found: list[str] = []
        else:
            found = self._names(name, path, tree)
        self._parsed[path] = (key, found)
        return found

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
        seen: dict[str, Path | None] = {}
        todo = list(modules)
        while todo:
            name = todo.pop()
            if name in seen:
                continue
            seen[name] = path = self.path_of(name)
            if path is not None:
                todo += self._imports(name, path)
        return sorted({path for path in seen.values() if path is not None})

    def fingerprint(self, *modules: str) -> str:
        """One hash of the modules' dependency files and of the trace schema version.

        Files are named relative to their package's parent folder, so the
        hash is the same in every checkout of the project.
        """
        digest = hashlib.sha256(f"schema {SCHEMA_VERSION}\n".encode())
        for path in self.files(*modules):
            digest.update(f"{self._relative(path)} {self._digest(path)}\n".encode())
        return digest.hexdigest()[:20]

    def _digest(self, path: Path) -> str:
        stat = path.stat()
        key = (stat.st_mtime_ns, stat.st_size)
        cached = self._digests.get(path)
        if cached is None or cached[0] != key:
            cached = self._digests[path] = (key, hashlib.sha256(path.read_bytes()).hexdigest())
        return cached[1]

    def _relative(self, path: Path) -> str:
        for root in self.roots.values():
            if path.is_relative_to(root):
                return path.relative_to(root.parent).as_posix()
        return path.name
