"""The books the benchmarks build, made in one place, and how they build them.

* ``copy_book``: a copy of a checkout's book (docs with the frozen live
  traces, mkdocs.yml, hooks, primer, tests) in a scratch folder, so the
  checkout's caches are left alone and edits touch only the copy;
* ``generate``: a synthetic book of N chapters x 4 scenarios (tool calls, a
  retried service call), one page per chapter with a marker per scenario,
  Material and the search plugin, with its own copy of ``primer`` (so a
  benchmark can edit the library or a template in it). ``FORMS`` names the
  ways it can take the machinery: the book's hook file, none at all
  (``bare``), and the ``trace-book`` plugin once the package has one;
* ``EDITS``: the after-edit builds (prose, comment, chapter, library,
  template), each a fresh edit of the book's files with a probe that says
  whether the built page shows it;
* ``build`` and ``callgrind``: one ``python -m ...`` in a book, timed (wall,
  CPU, peak RSS) or counted (instructions, under ``valgrind --tool=callgrind``).

The figures' statistics (pairs, medians, spreads) are in ``figures.py``.
"""

from __future__ import annotations

import functools
import importlib.metadata
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
COPIED = ["docs", "hooks", "primer", "tests", "mkdocs.yml", "README.md", "pyproject.toml"]
IGNORED = shutil.ignore_patterns("__pycache__", ".cache", "site", "node_modules", "*.pyc")
BUILT = re.compile(r"Documentation built in ([0-9.]+) seconds")
SHARE = re.compile(r"traces: the machinery's share of this build: ([0-9.]+) ms")
#: The chapters' own code in that line (importing and running their scenarios), counted apart.
OWN_CODE = re.compile(r"the chapters' own code ([0-9.]+) ms")
RAN = re.compile(r"traces: ran [^\n]*")


def has_plugin() -> bool:
    """Whether the installed package registers the ``trace-book`` MkDocs plugin (issue 21)."""
    return any(e.name == "trace-book" for e in importlib.metadata.entry_points(group="mkdocs.plugins"))


#: How a synthetic book takes the machinery: ``hook`` (the book's one-line hook
#: file and the extension), ``plugin`` (``plugins: [search, trace-book: ...]``,
#: where the package has it), ``bare`` (none: the marker lines stay text).
FORMS = ("hook", "plugin", "bare") if has_plugin() else ("hook", "bare")
#: The form a benchmark's synthetic book takes unless told otherwise.
MACHINERY = "plugin" if has_plugin() else "hook"


def scratch() -> tempfile.TemporaryDirectory[str]:
    """A scratch folder in memory (tmpfs) where there is one.

    On a shared machine, writing a site to disk now and then costs one build
    several times the kernel time of the next, and moves a ratio by more
    than the 2 % it measures. Every build writes the same, so none is favoured.
    """
    memory = "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None
    return tempfile.TemporaryDirectory(prefix="primer-bench-", dir=memory)


def copy_book(source: Path, target: Path) -> Path:
    """A copy of the book of the checkout at ``source`` in ``target``."""
    target.mkdir(parents=True, exist_ok=True)
    for name in COPIED:
        path = source / name
        if path.is_dir():
            shutil.copytree(path, target / name, ignore=IGNORED)
        elif path.exists():
            shutil.copy2(path, target / name)
    compile_library(target)
    return target


def chapters_of(checkout: Path) -> set[str]:
    """The chapters the book of ``checkout`` has pages for (``docs/ch*.md``, by name)."""
    return {page.stem for page in (checkout / "docs").glob("ch*.md")}


def keep_chapters(book: Path, kept: set[str]) -> None:
    """Leave only the chapters ``kept`` in the copy at ``book``: the others' pages, modules and traces removed, with
    the lines of ``mkdocs.yml`` and ``docs/index.md`` that name their pages (so that two checkouts build one book)."""
    for name in chapters_of(book) - kept:
        for path in [book / "docs" / f"{name}.md", book / "primer" / "chapters" / f"{name}.py"]:
            path.unlink()
        for path in (book / "docs" / "traces").glob(f"{name}.*"):
            path.unlink()
        for listing in (book / "mkdocs.yml", book / "docs" / "index.md"):
            lines = listing.read_text(encoding="utf-8").splitlines(keepends=True)
            listing.write_text("".join(line for line in lines if f"{name}.md" not in line), encoding="utf-8")


def compile_library(book: Path) -> None:
    """Write the bytecode of the book's ``primer`` once, as an installed wheel or an earlier import has it.

    The builds run with PYTHONDONTWRITEBYTECODE (nothing written into the
    books as they build): without this every build would compile the
    library's source anew, traces off included.
    """
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(book / "primer")], check=True)


CHAPTER = '''"""Synthetic chapter {n}: four scenarios, as a real chapter has them."""

from primer.loop import until_no_tool_calls
from primer.models.mock import ask, call, say
from primer.scenario import Scenario
from primer.shop import place_order, price_of

TOOLS = [place_order, price_of]

answers_at_once = Scenario(
    name="answers_at_once", prompt="Say hello to chapter {n}.", tools=TOOLS, mock=[say("Hello from chapter {n}.")]
)

one_lookup = Scenario(
    name="one_lookup",
    prompt="How much is milk?",
    tools=TOOLS,
    loop=until_no_tool_calls,
    mock=[ask(call("price_of", item="milk")), say("Milk is 1.20.")],
)

three_lookups = Scenario(
    name="three_lookups",
    prompt="Milk, eggs and bread?",
    tools=TOOLS,
    loop=until_no_tool_calls,
    mock=[
        ask(call("price_of", item="milk")),
        ask(call("price_of", item="eggs")),
        ask(call("price_of", item="bread")),
        say("Milk 1.20, eggs 2.50, bread 2.10."),
    ],
)

busy_then_answered = Scenario(
    name="busy_then_answered",
    prompt="How much is butter?",
    tools=TOOLS,
    loop=until_no_tool_calls,
    service=["/status/503", "/get"],
    mock=[ask(call("price_of", item="butter")), say("Butter is 2.40.")],
)
'''

PAGE = """# Chapter {n}

Prose about chapter {n}, enough to be a page: a model, a tool, a service that
is sometimes busy. {filler}

## Answered at once

::: trace {name} answers_at_once

## One lookup

::: trace {name} one_lookup

## Three lookups

::: trace {name} three_lookups

## Busy, then answered

::: trace {name} busy_then_answered
"""

CONFIG = """site_name: Synthetic trace book
site_url: http://127.0.0.1/
theme:
  name: material
  features: [navigation.instant]
{plugins}exclude_docs: |
  traces/*.live.json
{hook}markdown_extensions:
  - admonition
  - toc:
      permalink: true
  - pymdownx.details
  - pymdownx.superfences
{extension}"""

#: What each form adds to the configuration: (plugins, hooks, Markdown extension).
_FORM_CONFIG = {
    "hook": (
        "plugins: [search]\n",
        "hooks:\n  - hooks/traces.py\n",
        "  - primer.book.markdown:\n      chapters: synth\n",
    ),
    "plugin": ("plugins:\n  - search\n  - trace-book:\n      chapters: synth\n", "", ""),
    "bare": ("plugins: [search]\n", "", ""),
}


def chapter_name(n: int) -> str:
    """The module and page name of a synthetic book's chapter ``n``."""
    return f"ch{n:03d}_synthetic"


def generate(root: Path, chapters: int, *, form: str = MACHINERY, library: Path = ROOT) -> Path:
    """A book of ``chapters`` chapters x 4 scenarios in ``root``, taking the machinery as ``form`` says.

    The book holds its own copy of ``library``'s ``primer`` (first on the
    builds' ``PYTHONPATH``), so an edit of the library or of a template in it
    touches this book alone.
    """
    if form not in _FORM_CONFIG:
        raise SystemExit(f"no synthetic book of the form {form!r}: choose one of {', '.join(FORMS)}")
    package = root / "synth"
    package.mkdir(parents=True, exist_ok=True)
    (package / "__init__.py").write_text('"""The synthetic book\'s chapters."""\n')
    (root / "docs").mkdir(exist_ok=True)
    (root / "hooks").mkdir(exist_ok=True)
    # The checkout's own hook file, whatever its one line is today.
    shutil.copy2(library / "hooks" / "traces.py", root / "hooks" / "traces.py")
    if not (root / "primer").exists():
        shutil.copytree(library / "primer", root / "primer", ignore=IGNORED)
        compile_library(root)
    filler = "Words about agents. " * 40
    for n in range(1, chapters + 1):
        name = chapter_name(n)
        (package / f"{name}.py").write_text(CHAPTER.format(n=n))
        (root / "docs" / f"{name}.md").write_text(PAGE.format(n=n, name=name, filler=filler))
    (root / "docs" / "index.md").write_text("# Synthetic\n\nA book generated to measure the machinery.\n")
    plugins, hook, extension = _FORM_CONFIG[form]
    if form == "hook" and "primer.book.markdown" not in (library / "mkdocs.yml").read_text("utf-8"):
        extension = ""  # the checkout's hook adds the extension itself, as its own book has it
    (root / "mkdocs.yml").write_text(CONFIG.format(plugins=plugins, hook=hook, extension=extension))
    return root


#: A block markdown-exec runs in place of each trace marker (``generate_exec``).
EXEC_BLOCK = """```python exec="on"
prices = {{"milk": 1.20, "eggs": 2.50, "bread": 2.10}}
print(f"Chapter {n}, {name}: milk is {{prices['milk']:.2f}}.")
```"""

EXEC_CONFIG = """site_name: Synthetic markdown-exec book
site_url: http://127.0.0.1/
theme:
  name: material
  features: [navigation.instant]
plugins:
  - search
  - markdown-exec
markdown_extensions:
  - admonition
  - toc:
      permalink: true
  - pymdownx.details
  - pymdownx.superfences
"""


def _exec_block(n: int, marker: re.Match[str]) -> str:
    return EXEC_BLOCK.format(n=n, name=marker[2])


def generate_exec(root: Path, chapters: int) -> Path:
    """``generate``'s book as markdown-exec would have it: the same pages, a Python block run per marker.

    What the machinery is compared with (``dirty_serve.py``): markdown-exec
    runs each block in the build that renders its page, and caches nothing.
    """
    (root / "docs").mkdir(parents=True, exist_ok=True)
    filler = "Words about agents. " * 40
    marker = re.compile(r"^::: trace (\S+) (\S+)$", re.MULTILINE)
    for n in range(1, chapters + 1):
        page = PAGE.format(n=n, name=chapter_name(n), filler=filler)
        page = marker.sub(functools.partial(_exec_block, n), page)
        (root / "docs" / f"{chapter_name(n)}.md").write_text(page)
    (root / "docs" / "index.md").write_text("# Synthetic\n\nA book generated to measure markdown-exec.\n")
    (root / "mkdocs.yml").write_text(EXEC_CONFIG)
    return root


def has_markdown_exec() -> bool:
    """Whether markdown-exec is installed (``pip install markdown-exec``: the test group has it)."""
    return any(e.name == "markdown-exec" for e in importlib.metadata.entry_points(group="mkdocs.plugins"))


# -- building ----------------------------------------------------------------


def environment(book: Path, **extra: str) -> dict[str, str]:
    """The builds' environment: no ``PRIMER_*`` of the caller's (no key: no live run), the book first on the path."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PRIMER_")}
    env.update({"PYTHONPATH": str(book), "NO_MKDOCS_2_WARNING": "1", "PYTHONDONTWRITEBYTECODE": "1", **extra})
    return env


@dataclass
class Run:
    """One command: wall and CPU seconds (user + system), peak RSS (MiB), its log."""

    wall: float
    cpu: float
    rss: float
    log: str

    @property
    def inside(self) -> float:
        """The build time MkDocs itself logs (configuration loaded to last page), or not a number."""
        match = BUILT.search(self.log)
        return float(match[1]) if match else float("nan")

    @property
    def share(self) -> float | None:
        """The machinery's own share of the build in ms (logged at DEBUG: with ``--verbose``), if logged."""
        match = SHARE.search(self.log)
        return float(match[1]) if match else None

    @property
    def own_code(self) -> float | None:
        """The chapters' own code in ms (their imports, runs and replays), apart from the share, if logged."""
        match = OWN_CODE.search(self.log)
        return float(match[1]) if match else None

    @property
    def ran(self) -> str:
        """The machinery's summary line (what ran, what was verified), if logged."""
        match = RAN.search(self.log)
        return match[0] if match else ""


def build(book: Path, *command: str, **extra: str) -> Run:
    """Run ``python -m COMMAND`` in ``book``; raise SystemExit with its log if it fails."""
    # GNU time reports the one child's own peak RSS and CPU, which
    # getrusage(CHILDREN) would mix with earlier children's.
    wrapped = ["/usr/bin/time", "-f", "bench-time %M %U %S", sys.executable, "-m", *command]
    started = time.perf_counter()
    done = subprocess.run(
        wrapped, cwd=book, env=environment(book, **extra), capture_output=True, text=True, check=False
    )
    wall = time.perf_counter() - started
    log = done.stdout + done.stderr
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} in {book} failed:\n{log[-4000:]}")
    measured = re.search(r"bench-time (\d+) ([0-9.]+) ([0-9.]+)", log)
    if measured is None:
        return Run(wall, float("nan"), float("nan"), log)
    return Run(wall, float(measured[2]) + float(measured[3]), int(measured[1]) / 1024, log)


def mkdocs(book: Path, *args: str, **extra: str) -> Run:
    """One ``mkdocs build`` of ``book`` into its ``site`` folder, as an author runs it (no ``--verbose``)."""
    return build(book, "mkdocs", "build", "-d", str(book / "site"), *args, **extra)


def has_callgrind() -> bool:
    """Whether ``valgrind`` is installed (instruction counts need it)."""
    return shutil.which("valgrind") is not None


@dataclass
class Counted:
    """One command under callgrind: the instructions it executed, and its log."""

    instructions: int
    log: str

    @property
    def ran(self) -> str:
        """The machinery's summary line, as ``Run.ran``: which path the counted build took."""
        match = RAN.search(self.log)
        return match[0] if match else ""


def callgrind(book: Path, *command: str, **extra: str) -> Counted:
    """Instructions executed by ``python -m COMMAND`` in ``book``, counted by ``valgrind --tool=callgrind``.

    A count no other work on the machine can move, unlike a wall time;
    ``PYTHONHASHSEED=0`` keeps the interpreter's own hashing from varying it.
    It counts work, not waiting (disk, a page fault's cost): a check on the
    timed ratios, not a replacement.
    """
    with tempfile.TemporaryDirectory(prefix="primer-callgrind-") as folder:
        out = Path(folder) / "callgrind.out"
        wrapped = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", sys.executable, "-m", *command]
        env = environment(book, PYTHONHASHSEED="0", **extra)
        done = subprocess.run(wrapped, cwd=book, env=env, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise SystemExit(f"valgrind {' '.join(command)} in {book} failed:\n{done.stderr[-4000:]}")
        collected = re.search(r"Collected : (\d+)", done.stderr)
        if collected is None:
            raise SystemExit(f"valgrind printed no instruction count:\n{done.stderr[-2000:]}")
        return Counted(int(collected[1]), done.stdout + done.stderr)


# -- edits -------------------------------------------------------------------


@dataclass(frozen=True)
class Edit:
    """A change an author saves: in ``path``, ``old`` replaced by ``new(n)``; seen as ``probe(n)`` in ``page``.

    Each ``n`` makes a new edit, never one a cache has seen: a
    content-addressed cache would answer a revert from its entries, which
    measures a warm build, not an edit. ``probe`` is what the built page
    shows when the edit took effect where it should (empty: nothing the
    page shows changes). ``Editor`` saves them.
    """

    kind: str
    path: str
    old: str
    new: Callable[[int], str]
    probe: Callable[[int], str]
    page: str
    #: What the build should do, for the report.
    does: str

    def shown(self, book: Path, n: int, site: str = "site") -> bool | None:
        """Whether the built page shows the ``n``-th edit (None: the edit shows nothing)."""
        probe = self.probe(n)
        if not probe:
            return None
        return probe in (book / site / self.page / "index.html").read_text("utf-8")


class Editor:
    """Saves the edits of one book, each over the last of its kind (two kinds may share a file)."""

    def __init__(self, book: Path) -> None:
        self.book = book
        self._last: dict[str, str] = {}

    def apply(self, edit: Edit, n: int) -> None:
        """Save the ``n``-th edit of its kind: it replaces the one before, or the original text."""
        target = self.book / edit.path
        text = target.read_text("utf-8")
        before = self._last.get(edit.kind, edit.old)
        if before not in text:
            raise SystemExit(f"{edit.path}: the {edit.kind} edit looks for {before!r}, which is not there")
        # Saved whole, as editors that write a new file and rename it do: a file written in
        # place is empty for a moment, and a rebuild the truncation set off could read it so
        # (one save in seven, on a loaded machine, seemed "rebuilt without it", either book's).
        # The new file is written outside the watched folders: only the rename is seen.
        saved = self.book / ".editor-save.tmp"
        saved.write_text(text.replace(before, edit.new(n), 1), "utf-8")
        os.replace(saved, target)
        self._last[edit.kind] = edit.new(n)


def template(book: Path) -> str:
    """The chapter template of the book's ``primer`` (where it is today or after a reshuffle), relative to the book."""
    found = sorted((book / "primer" / "book").rglob("chapter.html.j2"))
    if not found:
        raise SystemExit(f"no chapter.html.j2 under {book / 'primer' / 'book'}: the template edit has nothing to edit")
    return str(found[0].relative_to(book))


# A probe the trace shows and the chapter's source listing cannot: the source
# spells "edit" with an escape (``\x65``), which Python reads as "e" and a
# listing shows as written. A probe found on the page is then the trace's.
def _escaped(n: int) -> str:
    return f" (\\x65dit {n})"


def _plain(n: int) -> str:
    return f" (edit {n})"


def prose_edit(path: str, page: str) -> Edit:
    """A sentence added to the page ``path`` (the book's ``page``): it renders that page, runs nothing."""
    return Edit(
        "prose",
        path,
        "\n\n",
        lambda n: f"\n\nProse edit {n}.\n\n",
        lambda n: f"Prose edit {n}.",
        page,
        "renders one page; runs nothing",
    )


def edits(book: Path, *, synthetic: bool) -> list[Edit]:
    """The after-edit builds of ``book`` (this book's copy, or a synthetic one)."""
    if synthetic:
        middle = chapter_name(max(1, len(list((book / "synth").glob("ch*.py"))) // 2))
        page, prose, module, reply = middle, f"docs/{middle}.md", f"synth/{middle}.py", "Milk is 1.20"
    else:
        page, prose = "ch05_loop_endings", "docs/ch05_loop_endings.md"
        module, reply = "primer/chapters/ch05_loop_endings.py", "there is only one left"
    return [
        prose_edit(prose, page),
        Edit(
            "comment",
            module,
            "\nfrom ",
            lambda n: f"\n# A comment, edit {n}.\nfrom ",
            # This book lists the chapter's source on its page; a synthetic one does not.
            (lambda n: "") if synthetic else (lambda n: f"A comment, edit {n}."),
            page,
            "runs nothing (comments are not behaviour)",
        ),
        Edit(
            "chapter",
            module,
            reply,
            lambda n: reply + _escaped(n),
            lambda n: reply + _plain(n),
            page,
            "runs that chapter",
        ),
        Edit(
            "library",
            "primer/loop.py",
            "\ndef ",
            lambda n: f"\ndef _unused_{n}() -> int:\n    return {n}\n\n\ndef ",
            (lambda n: "") if synthetic else (lambda n: f"_unused_{n}"),
            page,
            "runs every chapter that uses primer/loop.py" + ("" if synthetic else ", verifies the live traces"),
        ),
        Edit(
            "template",
            template(book),
            "\n",
            lambda n: f"\n<!-- template edit {n} -->\n",
            lambda n: f"<!-- template edit {n} -->",
            page,
            "renders every trace again; runs nothing",
        ),
    ]


# -- a diverged live trace ---------------------------------------------------

#: The chapter whose frozen live trace a benchmark makes diverge: this book's,
#: self-contained (it imports the library only), so a synthetic book can take it too.
LIVE_CHAPTER = "ch09_who_retries"
#: The prompt edited: the replayed request no longer matches the recorded one.
LIVE_PROMPT = 'prompt="How much is milk?"'
#: What the build that replays the edited chapter warns.
DIVERGED = re.compile(r"traces: the live trace \S+ no longer matches the code")

LIVE_PAGE = f"""# A chapter with a live trace

Borrowed from the book, with its frozen live trace.

::: trace {LIVE_CHAPTER}
"""


def add_live_chapter(book: Path, source: Path = ROOT) -> None:
    """Give a synthetic book ``source``'s ``LIVE_CHAPTER``: its module, its frozen live trace, a page showing it."""
    shutil.copy2(source / "primer" / "chapters" / f"{LIVE_CHAPTER}.py", book / "synth" / f"{LIVE_CHAPTER}.py")
    (book / "docs" / "traces").mkdir(parents=True, exist_ok=True)
    name = f"{LIVE_CHAPTER}.live.json"
    shutil.copy2(source / "docs" / "traces" / name, book / "docs" / "traces" / name)
    (book / "docs" / f"{LIVE_CHAPTER}.md").write_text(LIVE_PAGE, "utf-8")


def diverge(book: Path) -> None:
    """Edit ``LIVE_CHAPTER``'s first prompt in ``book``: its frozen live trace no longer matches the code."""
    found = [p for p in (book / "synth", book / "primer" / "chapters") if (p / f"{LIVE_CHAPTER}.py").exists()]
    if not found:
        raise SystemExit(f"{book}: no {LIVE_CHAPTER}.py to make diverge (books.add_live_chapter gives one)")
    module = found[0] / f"{LIVE_CHAPTER}.py"
    text = module.read_text("utf-8")
    if LIVE_PROMPT not in text:
        raise SystemExit(f"{module}: the diverging edit looks for {LIVE_PROMPT!r}, which is not there")
    module.write_text(text.replace(LIVE_PROMPT, 'prompt="How much is milk, please?"', 1), "utf-8")
