"""Fingerprints of normalised code: comments, docstrings and formatting change nothing a trace shows.

A chapter's traces are keyed by ``CodeGraph.fingerprint``, which hashes the code's syntax tree, not its
bytes. What can change a run (code, and class docstrings, which are the
descriptions tools declare to the model) must change them.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from primer.fingerprint import CodeGraph, _imports, code_digest
from primer.grocery import PriceOf
from primer.tools import tool
from tests.books import copy_library, edit, make_book

LIB = '''"""A library module."""

import json  # for dumps


def value() -> int:
    """The value."""
    return 1


class Args:
    """The tool's description, sent to the model."""

    count: int
'''


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("import json  # for dumps\n", "import json\n"),
        ("def value() -> int:\n", "\n\ndef value() -> int:\n"),
        ('    """The value."""\n', '    """The value, documented better."""\n'),
        ('"""A library module."""\n', '"""A library module, described again."""\n'),
        ("    return 1\n", "    return (\n        1\n    )\n"),
    ],
    ids=["comment", "blank-lines", "function-docstring", "module-docstring", "formatting"],
)
def test_what_cannot_change_a_run_keeps_the_digest(old: str, new: str) -> None:
    assert code_digest(LIB.replace(old, new).encode()) == code_digest(LIB.encode())


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("    return 1\n", "    return 2\n"),
        ('    """The tool\'s description, sent to the model."""\n', '    """Another description."""\n'),
        ("    count: int\n", "    count: int = 0\n"),
    ],
    ids=["code", "class-docstring", "field"],
)
def test_what_can_change_a_run_changes_the_digest(old: str, new: str) -> None:
    assert code_digest(LIB.replace(old, new).encode()) != code_digest(LIB.encode())


def test_a_class_docstring_is_what_a_tool_declares() -> None:
    # Why class docstrings count: this is the description the model is sent.
    assert tool(PriceOf)(lambda args, ctx: "").description == PriceOf.__doc__


NESTED = """
import os

if os.name:
    try:
        from json import dumps
    except ImportError:
        from pickle import dumps
    else:
        import csv
    finally:
        import abc


def outer():
    \"\"\"Outer.\"\"\"

    async def inner(x):
        \"\"\"Inner.\"\"\"
        async with x as f:
            import glob
        match f:
            case 1:
                import heapq
        return [lambda: dumps]

    return inner


class K:
    \"\"\"Kept: a class docstring.\"\"\"

    def method(self):
        \"\"\"A method.\"\"\"
        while False:
            pass
        else:
            from . import sibling
"""


def test_imports_and_docstrings_are_found_however_deeply_statements_nest() -> None:
    # Only statements are walked (never expressions): every place a statement can sit must be reached.
    tree = ast.parse(NESTED)
    found = set(_imports("pkg.mod", Path("pkg/mod.py"), tree))
    assert found >= {"os", "json", "json.dumps", "pickle", "csv", "abc", "glob", "heapq", "pkg", "pkg.sibling"}
    for docstring in ('"""Outer."""', '"""Inner."""', '"""A method."""'):
        assert code_digest(NESTED.replace(docstring, '"""Said otherwise."""').encode()) == code_digest(NESTED.encode())
    kept = NESTED.replace("Kept: a class docstring.", "Another description.")
    assert code_digest(kept.encode()) != code_digest(NESTED.encode())
    assert code_digest(NESTED.replace("return [lambda: dumps]", "return [lambda: abc]").encode()) != code_digest(
        NESTED.encode()
    )


def test_source_that_does_not_parse_is_hashed_as_bytes() -> None:
    assert code_digest(b"def broken(:\n") != code_digest(b"def broken(:  \n")
    assert code_digest(b"def broken(:\n").startswith("bytes ")


@pytest.fixture
def package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[str, Path]:
    name = f"pkg_fp_{os.getpid()}_{time.monotonic_ns()}"
    root = tmp_path / name
    (root / "chapters").mkdir(parents=True)
    (root / "__init__.py").write_text("")
    (root / "lib.py").write_text(LIB)
    (root / "chapters" / "__init__.py").write_text("")
    (root / "chapters" / "ch_one.py").write_text("from .. import lib\nVALUE = lib.value()\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    return name, root


def test_a_chapters_fingerprint_ignores_comments_and_docstrings_of_what_it_imports(
    package: tuple[str, Path], tmp_path: Path
) -> None:
    name, root = package
    cache = tmp_path / "imports.json"
    module = f"{name}.chapters.ch_one"
    key = CodeGraph([name], imports_cache=cache).fingerprint(module)
    edit(root / "lib.py", "import json  # for dumps\n", "import json  # for json.dumps, and nothing else\n")
    edit(root / "lib.py", '    """The value."""\n', '    """The value: one."""\n')
    assert CodeGraph([name], imports_cache=cache).fingerprint(module) == key
    edit(root / "lib.py", "    return 1\n", "    return 2\n")
    assert CodeGraph([name], imports_cache=cache).fingerprint(module) != key


def test_a_new_process_takes_normalised_digests_from_the_cache(
    package: tuple[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import ast

    name, _root = package
    cache = tmp_path / "imports.json"
    module = f"{name}.chapters.ch_one"
    key = CodeGraph([name, "primer"], imports_cache=cache).fingerprint(module)

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("parsed again, though no byte changed")

    monkeypatch.setattr(ast, "parse", refuse)
    assert CodeGraph([name, "primer"], imports_cache=cache).fingerprint(module) == key


# -- the renderer's version, in every chapter's key --------------------------------------


def version_of(root: Path) -> str:
    """``renderer_version`` in a new process that imports the library copy in ``root``."""
    code = "from primer.book._cache import renderer_version as v; print(v())"
    done = subprocess.run(
        [sys.executable, "-c", code],
        env={**os.environ, "PYTHONPATH": str(root)},
        cwd=root,  # `python -c` puts the working folder first on the path
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    return done.stdout.strip()


@pytest.mark.slow
def test_the_renderers_version_is_the_same_wherever_the_library_is_and_follows_its_bytes(tmp_path: Path) -> None:
    first, second = copy_library(tmp_path / "a"), copy_library(tmp_path / "z" / "deeper")
    version = version_of(first.parent)
    assert version_of(second.parent) == version
    edit(second / "book" / "templates" / "chapter.html.j2", "\n", "\n<!-- an edit -->\n")
    assert version_of(second.parent) != version
    edit(first / "book" / "assets" / "traces.css", "\n", "\n/* an edit */\n")
    assert version_of(first.parent) != version
    # Any module the pages are drawn with, whatever its name: the search text's, the price table's
    # module, the redactor the reply check uses (each once left out of a list of render modules).
    for module in ("book/markdown.py", "prices.py", "redact.py"):
        before = version_of(second.parent)
        edit(second / module, "\n", "\n# an edit\n")
        assert version_of(second.parent) != before, module


def test_a_fingerprint_is_the_same_wherever_the_library_is_installed(tmp_path: Path) -> None:
    # A laptop's ./.venv and a CI runner's venv sit on opposite sides of the book's
    # folder: the library sorting before the chapters or after them changes nothing.
    book = make_book(tmp_path / "m_book")
    script = (
        "import sys, primer\n"
        "from pathlib import Path\n"
        "from primer.fingerprint import CodeGraph\n"
        "graph = CodeGraph(['primer', sys.argv[1]])\n"
        "files = [Path(module[0]) for module in graph.modules(sys.argv[1] + '.ch_alpha').values()]\n"
        "print(primer.__file__, len({f.parts[:-2] for f in files}), graph.fingerprint(sys.argv[1] + '.ch_alpha'))\n"
    )
    printed = {}
    for venv in ("a_venv", "z_venv"):
        library = copy_library(tmp_path / venv)
        done = subprocess.run(
            [sys.executable, "-c", script, book.package],
            cwd=tmp_path,
            env={**os.environ, "PYTHONPATH": os.pathsep.join([str(library.parent), str(book.root)])},
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        )
        where, roots, fingerprint = done.stdout.split()
        assert Path(where).is_relative_to(library), "the copy is the library imported"
        assert int(roots) >= 2, "the chapter's files and the library's are both hashed"
        printed[venv] = fingerprint
    assert printed["a_venv"] == printed["z_venv"]


def test_a_digest_is_the_same_under_a_python_that_adds_an_empty_field() -> None:
    # Python 3.12 gave FunctionDef a `type_params` field that ast.dump prints empty (`type_params=[]`),
    # and 3.13's ast.dump leaves every empty field out: a fingerprint hashing ast.dump's text differed
    # from one Python to the next, and every frozen live trace read as recorded from other code.
    newer = type("FunctionDef", (ast.FunctionDef,), {"_fields": (*ast.FunctionDef._fields, "type_params")})
    tree = ast.parse(LIB)
    digest = code_digest(LIB.encode())
    for index, node in enumerate(tree.body):
        if isinstance(node, ast.FunctionDef):
            tree.body[index] = newer(**{name: getattr(node, name) for name in ast.FunctionDef._fields}, type_params=[])
    assert "type_params=[]" in ast.dump(tree)  # as 3.12 prints it
    from primer.fingerprint import _tree_digest

    assert _tree_digest(tree, LIB.encode()) == digest
    # A field that holds something still counts.
    next(node for node in tree.body if isinstance(node, newer)).type_params = [ast.Name(id="T")]
    assert _tree_digest(tree, LIB.encode()) != digest


AGENT_CHAPTER = '''"""A chapter whose agent is the author's own package, beside the book."""

from {agent} import REPLY

from primer.models.mock import say
from primer.scenario import Scenario

answers = Scenario(name="answers", prompt="Say it.", tools=[], mock=[say(REPLY)])
'''


@pytest.mark.slow
def test_an_edit_to_the_authors_own_agent_package_runs_its_chapters_again(tmp_path: Path) -> None:
    # The author's agent code lives in a package of its own (beside mkdocs.yml, or installed editable): a
    # fingerprint that followed only the chapters' package and primer missed it, and a build after an edit
    # there showed the trace of the code before.
    agent = f"agent_{os.getpid()}_{time.monotonic_ns()}"
    (tmp_path / agent).mkdir()
    (tmp_path / agent / "__init__.py").write_text('"""The author\'s agent."""\n\nREPLY = "The first reply."\n')
    book = make_book(tmp_path, {"ch_alpha": AGENT_CHAPTER.format(agent=agent)})
    assert book.build().returncode == 0
    assert "The first reply." in book.shown()
    (tmp_path / agent / "__init__.py").write_text('"""The author\'s agent."""\n\nREPLY = "The second reply."\n')
    done = book.build()
    assert done.returncode == 0, done.log
    assert "traces: ran 1, reused 0" in done.log
    assert "The second reply." in book.shown()
    # A comment there changes nothing a run does: the trace is reused.
    edit(tmp_path / agent / "__init__.py", "REPLY =", "# said once\nREPLY =")
    assert "traces: ran 0, reused 1" in book.build().log


def test_the_graph_follows_the_authors_own_packages_and_no_installed_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    stamp = f"{os.getpid()}_{time.monotonic_ns()}"
    agent, chapters = f"agentpkg_{stamp}", f"chpkg_{stamp}"
    for package, body in ((agent, 'REPLY = "one"\n'), (chapters, "")):
        (tmp_path / package).mkdir()
        (tmp_path / package / "__init__.py").write_text(body)
    (tmp_path / f"helper_{stamp}.py").write_text("SIZE = 1\n")  # a module of its own, beside the book
    (tmp_path / chapters / "ch_x.py").write_text(
        f"import json\nimport pydantic\nfrom {agent} import REPLY\nimport helper_{stamp}\n\nSAID = REPLY\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    from primer.book._chapters import Chapters

    book = Chapters(chapters)
    first = book.fingerprint("ch_x")
    assert {agent, chapters, f"helper_{stamp}", "primer"} <= set(book.graph.roots)
    assert not {"json", "pydantic"} & set(book.graph.roots)
    assert tmp_path / agent in book.watched_dirs()
    edit(tmp_path / agent / "__init__.py", '"one"', '"two"')
    second = book.fingerprint("ch_x")
    edit(tmp_path / f"helper_{stamp}.py", "1", "2")
    assert len({first, second, book.fingerprint("ch_x")}) == 3


def test_a_file_saved_again_within_its_time_stamp_is_hashed_again(tmp_path: Path) -> None:
    # Hashed once a process while size and time stay; a coarse stamp (FAT's 2 s) cannot tell two saves
    # within it apart, so a file saved in the last two seconds is hashed each time.
    from primer.files import file_digest

    path = tmp_path / "helper.py"
    stamp = time.time_ns()
    path.write_text("X = 1\n")
    os.utime(path, ns=(stamp, stamp))
    first = file_digest(str(path))
    path.write_text("X = 2\n")  # the same size, and the same time
    os.utime(path, ns=(stamp, stamp))
    assert file_digest(str(path)) != first
    assert file_digest(str(tmp_path / "gone.py")) is None


def test_code_nested_deeper_than_the_walk_still_has_a_digest() -> None:
    # Python compiles an elif chain of a thousand branches; the digest's walk recursed past the stack and the
    # build ended in a RecursionError. Now such a file is hashed as bytes: its comments count, nothing fails.
    source = (
        "def route(x):\n    if x == 0:\n        return 0\n"
        + "".join(f"    elif x == {i}:\n        return {i}\n" for i in range(1, 1000))
    ).encode()
    compile(source, "m.py", "exec")
    assert code_digest(source) == code_digest(source)
    assert code_digest(source) != code_digest(source + b"# a comment\n")  # hashed as bytes
    assert code_digest(source.replace(b"return 999", b"return 998")) != code_digest(source)


def test_a_package_init_the_import_runs_is_part_of_the_fingerprint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # `from qlib.tools import greet` runs qlib/__init__.py first, which may change what greet returns: an edit
    # there left the fingerprint as it was, and the build showed the trace of the code before it. A module that
    # nests deeper than the digest's walk is followed too (its imports read; its code hashed as bytes).
    monkeypatch.syspath_prepend(str(tmp_path))
    deep = "def route(x):\n    if x == 0:\n        return 0\n" + "".join(
        f"    elif x == {i}:\n        return {i}\n" for i in range(1, 1000)
    )
    files = {
        "qbook/__init__.py": "",
        "qbook/ch1.py": "from qlib.tools import greet\n",
        "qlib/__init__.py": "from qlib import tools\ntools.G = 1\n",
        "qlib/tools.py": "from qlib import deep\nG = 0\ndef greet():\n    return G\n",
        "qlib/deep.py": deep,
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
        os.utime(tmp_path / name, ns=(10**9, 10**9))  # saved long ago: its digest may be kept
    graph = CodeGraph(["qbook", "primer"])
    assert {"qlib", "qlib.tools", "qlib.deep"} <= set(graph.modules("qbook.ch1"))
    before = graph.fingerprint("qbook.ch1")
    for name, added in (("qlib/__init__.py", "tools.G = 2\n"), ("qlib/deep.py", "\n# a comment\n")):
        (tmp_path / name).write_text(files[name] + added)
        assert CodeGraph(["qbook", "primer"]).fingerprint("qbook.ch1") != before, name
        before = CodeGraph(["qbook", "primer"]).fingerprint("qbook.ch1")
