"""The teaching library does not know the book exists.

``primer`` is what a reader opens next to a chapter; ``primer.book`` (the
engine and the renderer) and the MkDocs plugin are built on it, never the other
way round. Only the plugin imports MkDocs (and ProperDocs): the adapters
``primer.book._plugin``, its ProperDocs twin and the hook form the book's
``hooks/traces.py`` re-exports, which nothing else in the package imports,
and beside them the plugin's options and the reader of a book's configuration.
Checked two ways: every import statement in the source (so a deferred import
inside a function is caught too), and what is really loaded when the library
runs a chapter.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import primer

PACKAGE = Path(primer.__file__).resolve().parent
ROOT = PACKAGE.parent


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports(source: str, module: str, *, is_package: bool = False) -> Iterator[tuple[int, str]]:
    """Every module a source file imports, relative imports resolved: (line, dotted name)."""
    package = module if is_package else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join([*anchor, *([node.module] if node.module else [])])
            else:
                base = node.module or ""
            yield node.lineno, base
            # `from primer import book` imports the module primer.book.
            for alias in node.names:
                yield node.lineno, f"{base}.{alias.name}"
        elif isinstance(node, ast.Call) and node.args:
            # importlib.import_module("...") and __import__("...") with a literal name.
            func = node.func
            called = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
            first = node.args[0]
            literal = first.value if isinstance(first, ast.Constant) and isinstance(first.value, str) else ""
            if called in ("import_module", "__import__") and literal and not literal.startswith("."):
                yield node.lineno, literal


def within(name: str, top: str) -> bool:
    return name == top or name.startswith(top + ".")


def library_files() -> list[Path]:
    # The scaffold is a new book's files, which the package ships as data (primer.book._new_book): not its code.
    return sorted(path for path in PACKAGE.rglob("*.py") if "scaffold" not in path.relative_to(PACKAGE).parts)


#: The hook form of the plugin, which the book's hook file re-exports.
ADAPTER = "primer.book.mkdocs_hook"
#: The modules of the package that may import MkDocs and ProperDocs: the plugin, its twin, its hook form,
#: and its options with the reader of a book's configuration through MkDocs' loader (the commands').
ADAPTERS = ("primer.book._plugin", "primer.book._properdocs_plugin", ADAPTER, "primer.book._configuration")
#: The one module outside the machinery that reaches into it: the command line, run in a book's folder,
#: reads the book's configuration (deferred, only where there is a mkdocs.yml).
CLI = "primer.cli"


def violations(*, forbidden: str, skip_book: bool, allowed: tuple[str, ...] = ()) -> list[str]:
    found = []
    for path in library_files():
        module = module_name(path)
        if (skip_book and within(module, "primer.book")) or module in allowed:
            continue
        source = path.read_text(encoding="utf-8")
        for line, name in imports(source, module, is_package=path.name == "__init__.py"):
            if within(name, forbidden):
                found.append(f"{path.relative_to(ROOT)}:{line} imports {name}")
    return found


def _printed(script: str, timeout: int = 60) -> Any:
    """What a script run in a fresh interpreter printed, as JSON: what importing and running loads, seen alone."""
    result = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=timeout, check=True
    )
    return json.loads(result.stdout)


def test_the_scan_sees_the_whole_library() -> None:
    modules = {module_name(path) for path in library_files()}
    assert {"primer", "primer.agent", "primer.service", "primer.models.mock", "primer.book._source"} <= modules


def test_the_library_outside_primer_book_never_imports_the_book() -> None:
    assert violations(forbidden="primer.book", skip_book=True, allowed=(CLI,)) == []
    # The command line imports the configuration reader (the book's prices too), and nothing else of the machinery.
    cli = PACKAGE / "cli.py"
    reached = {name for _, name in imports(cli.read_text(encoding="utf-8"), CLI) if within(name, "primer.book")}
    assert reached == {f"primer.book._configuration{name}" for name in ("", ".read_config", ".book_prices")}


@pytest.mark.slow
def test_nothing_in_primer_but_the_plugin_imports_mkdocs() -> None:
    for forbidden in ("mkdocs", "properdocs"):
        assert violations(forbidden=forbidden, skip_book=False, allowed=ADAPTERS) == []
    assert all((PACKAGE / "book" / f"{name.rpartition('.')[2]}.py").is_file() for name in ADAPTERS)


@pytest.mark.slow
def test_only_the_hook_file_imports_the_adapters() -> None:
    # The engine never sees MkDocs: nothing of the package reaches the adapters.
    # (The package's public names include the plugin's, imported on first use: primer.book.__getattr__.)
    for adapter in ADAPTERS[:3]:
        assert violations(forbidden=adapter, skip_book=False, allowed=(*ADAPTERS, "primer.book")) == []
    hook = ROOT / "hooks" / "traces.py"
    assert ADAPTER in {name for _, name in imports(hook.read_text(encoding="utf-8"), "hooks.traces")}


@pytest.mark.parametrize(
    ("source", "module", "caught"),
    [
        ("import mkdocs", "primer.agent", "mkdocs"),
        ("from mkdocs.plugins import get_plugin_logger", "primer.agent", "mkdocs.plugins"),
        ("def f():\n    import mkdocs.config\n", "primer.agent", "mkdocs.config"),
        ("from primer import book", "primer.agent", "primer.book"),
        ("from primer.book._source import MARKER", "primer.agent", "primer.book._source"),
        ("from .book import source", "primer.agent", "primer.book"),
        ("from ..book._source import MARKER", "primer.models.mock", "primer.book._source"),
        ("from . import book", "primer", "primer.book"),
        (
            "import importlib\nimportlib.import_module('mkdocs.commands.build')",
            "primer.runner",
            "mkdocs.commands.build",
        ),
        ("__import__('primer.book.markdown')", "primer.runner", "primer.book.markdown"),
    ],
)
def test_the_scan_catches_every_way_of_importing(source: str, module: str, caught: str) -> None:
    names = [name for _, name in imports(source, module, is_package=module == "primer")]
    assert caught in names


def test_running_a_chapter_loads_neither_mkdocs_nor_the_book() -> None:
    script = (
        "import json, sys\n"
        "from primer.runner import run_chapter\n"
        "from primer.cli import summary_lines\n"
        "summary_lines(run_chapter('ch09_who_retries'))\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in ('mkdocs', 'material', 'primer'))))\n"
    )
    loaded = _printed(script)
    assert "primer.runner" in loaded
    assert [m for m in loaded if within(m, "mkdocs") or within(m, "material") or within(m, "primer.book")] == []


def test_a_chapter_of_agent_scenarios_runs_without_the_seam_for_code_scenarios() -> None:
    # The runner tells a CodeScenario apart without importing its module: a book with none never loads
    # the HTTP seam, its services and httpx2 (about 30 ms of every cold build). One with some still runs them.
    script = (
        "import json, sys\n"
        "from primer.runner import run_chapter\n"
        "plain = run_chapter('ch09_who_retries')\n"
        "before = sorted(m for m in sys.modules if m.split('.')[0] in ('primer', 'httpx2'))\n"
        "code = run_chapter('ch18_three_ways')\n"
        "print(json.dumps([before, [s.ending.failed for s in plain.scenarios + code.scenarios], "
        "[m for m in ('primer.seam', 'primer.code_scenario') if m in sys.modules]]))\n"
    )
    before, failed, after = _printed(script, timeout=120)
    assert "primer.runner" in before
    assert [m for m in before if m in ("primer.seam", "primer.services", "primer.code_scenario", "httpx2")] == []
    assert after == ["primer.seam", "primer.code_scenario"]  # ch18's code scenarios ran through the seam
    assert failed == [False] * 7  # ch09's four and ch18's three ended as they do


#: What the machinery must never import: the agent, the loop, the models, the grocery shop, a book's chapters.
#: It is built on the trace core (schema, recorder, redaction, replay, clock, settings) and runs any code.
NOT_THE_CORE = ("primer.agent", "primer.loop", "primer.models", "primer.grocery", "primer.shop", "primer.chapters")


def test_the_machinery_depends_on_the_trace_core_only() -> None:
    found = []
    for path in library_files():
        module = module_name(path)
        if not within(module, "primer.book"):
            continue
        for line, name in imports(path.read_text(encoding="utf-8"), module, is_package=path.name == "__init__.py"):
            if any(within(name, forbidden) for forbidden in NOT_THE_CORE):
                found.append(f"{path.relative_to(ROOT)}:{line} imports {name}")
    assert found == []


def test_loading_the_machinery_loads_none_of_it_either() -> None:
    # Through the trace core too: a module the machinery imports must not import the models for it.
    book = sorted(module_name(p) for p in library_files() if within(module_name(p), "primer.book"))
    script = (
        "import importlib, json, sys\n"
        f"for name in {[name for name in book if not name.endswith('__main__')]!r}: importlib.import_module(name)\n"
        "print(json.dumps(sorted(sys.modules)))\n"
    )
    loaded = _printed(script)
    assert "primer.book._steps" in loaded
    assert "primer.trace" in loaded
    assert [m for m in loaded if any(within(m, forbidden) for forbidden in NOT_THE_CORE)] == []


@pytest.mark.slow
def test_the_machinery_has_no_import_cycle_at_module_level() -> None:
    # Imports at the top of each module of primer.book (deferred ones inside functions are
    # how a module reaches one that needs it only on one path, and are not cycles at import time).
    graph: dict[str, set[str]] = {}
    for path in library_files():
        module = module_name(path)
        if not within(module, "primer.book"):
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        top = ast.Module(
            body=[node for node in tree.body if isinstance(node, ast.Import | ast.ImportFrom)], type_ignores=[]
        )
        names = {name for _, name in imports(ast.unparse(top), module, is_package=path.name == "__init__.py")}
        graph[module] = {name for name in names if name in {module_name(p) for p in library_files()}} - {module}
    assert "primer.book._configuration" in graph["primer.book._plugin"], "the scan sees the imports"
    cycles = []
    for start, reached in graph.items():
        todo, seen = list(reached), set()
        while todo:
            name = todo.pop()
            if name == start:
                cycles.append(start)
                break
            if name not in seen and name in graph:
                seen.add(name)
                todo += graph[name]
    assert cycles == []


def test_the_public_api_is_curated() -> None:
    import primer.book

    assert sorted(primer.book.__all__) == primer.book.__all__
    for name in primer.book.__all__:
        assert getattr(primer.book, name).__name__ == name
    with pytest.raises(AttributeError):
        _ = primer.book.no_such_name


def test_the_implementation_modules_are_private() -> None:
    # The public modules are what an author names: the package's curated names, the Markdown
    # extension (`markdown_extensions: [primer.book.markdown]`), the hook file's one line and
    # `python -m primer.book`. Everything else is implementation, named with a leading underscore
    # as httpx names its own, so that moving code between modules breaks no author's book.
    public = {"__init__", "__main__", "markdown", "mkdocs_hook"}
    names = {path.stem for path in (PACKAGE / "book").glob("*.py")}
    assert public <= names
    assert sorted(name for name in names - public if not name.startswith("_")) == []
