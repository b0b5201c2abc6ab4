"""Small books for the build tests: mkdocs.yml, pages and a chapters package in a temporary folder.

Each book gets a chapters package of its own name, so books built in the
same test process never share modules, and builds run the repository's real
hook (``hooks/traces.py``) through ``python -m mkdocs``.
"""

from __future__ import annotations

import importlib.util
import itertools
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from primer.book._markers import Marker
    from primer.book._plugin import TraceBookPlugin
    from primer.book._source import ChapterTraces, Shown

REPO = Path(__file__).resolve().parents[1]
HOOK = REPO / "hooks" / "traces.py"


def shown_of(traces: ChapterTraces, key: str = "", code: str = "") -> Shown:
    """What a build shows of ``traces``, made from them (as ``primer.book._steps`` makes a chapter's)."""
    from primer.book._source import Shown

    mock = tuple(s.name for s in traces.mock.scenarios) if traces.mock is not None else ()
    live = tuple(s.name for s in traces.live.scenarios) if traces.live is not None else None
    return Shown(traces.chapter, key, code, mock, live, traces.live_status)


#: The renderer is built concurrently; books use it once it can be imported.
RENDERER = "primer.book.markdown"
HAS_RENDERER = importlib.util.find_spec(RENDERER) is not None

ALPHA = '''"""Chapter alpha: a price, asked and answered."""

from primer.grocery import PRICES, PriceOf
from primer.models.mock import ask, call, say
from primer.scenario import Scenario
from primer.tools import ToolContext, tool


@tool(PriceOf)
def price_of(args: PriceOf, ctx: ToolContext) -> str:
    """Look the price up on the shelf list."""
    return PRICES[args.item]


asks_price = Scenario(
    name="asks_price",
    prompt="How much is milk?",
    tools=[price_of],
    mock=[ask(call("price_of", item="milk")), say("Milk is <b>1.20</b> & fresh.")],
)

answers_at_once = Scenario(
    name="answers_at_once",
    prompt="Say hello.",
    tools=[price_of],
    mock=[say("Hello from alpha.")],
)
'''

BETA = '''"""Chapter beta: one scenario."""

from primer.models.mock import say
from primer.scenario import Scenario

greets = Scenario(name="greets", prompt="Greet me.", tools=[], mock=[say("Beta says hi.")])
'''

BROKEN = '''"""Chapter broken: a scenario whose loop raises."""

from primer.models.mock import say
from primer.scenario import Scenario


def explode(agent, context, max_turns):
    raise RuntimeError("the <scenario> broke on purpose")


explodes = Scenario(name="explodes", prompt="Go.", tools=[], loop=explode, mock=[say("never")])
'''

PAGE = """# The book

Some prose.

::: trace ch_alpha

## Beta

::: trace ch_beta greets

An example of the marker, which is not a request:

```
::: trace CHAPTER SCENARIO
```
"""

_numbers = itertools.count()


@dataclass
class Build:
    """One finished ``mkdocs build``."""

    returncode: int
    log: str

    def lines(self, text: str) -> list[str]:
        """Log lines containing ``text``."""
        return [line for line in self.log.splitlines() if text in line]

    def count(self) -> str:
        """The ``traces: ran N, reused M`` line's text (from ``traces:``)."""
        found = self.lines("traces: ran") or self.lines("traces: off")
        assert len(found) == 1, self.log
        return found[0][found[0].index("traces:") :]


@dataclass
class SmallBook:
    """A book in a folder: ``root/mkdocs.yml``, ``root/docs``, ``root/<package>``."""

    root: Path
    package: str

    @property
    def docs(self) -> Path:
        """The docs folder."""
        return self.root / "docs"

    def chapter(self, name: str) -> Path:
        """A chapter module's file."""
        return self.root / self.package / f"{name}.py"

    def write_chapter(self, name: str, source: str) -> Path:
        """Add or replace a chapter module."""
        path = self.chapter(name)
        save(path, source)
        return path

    def entry(self, chapter: str, cache: str = ".cache/trace-book", pattern: str = "[0-9a-f]*") -> Path:
        """The chapter's newest entry in the book's cache (``primer.book._cache``), by key."""
        entries = (self.root / cache / "entries" / chapter).glob(pattern)
        return max(entries, key=lambda path: path.stat().st_mtime_ns)

    def mock_file(self, chapter: str, cache: str = ".cache/trace-book") -> Path:
        """The chapter's newest mock trace in the cache, kept by its code."""
        return self.entry(chapter, cache, "mock-*") / "mock.json"

    def env(self, **extra: str) -> dict[str, str]:
        """The environment a build runs in: no key, this book's chapters."""
        env = {k: v for k, v in os.environ.items() if not k.startswith("PRIMER_")}
        env.update(
            PRIMER_CHAPTERS=self.package,
            PYTHONPATH=os.pathsep.join([str(self.root), str(REPO)]),
            NO_MKDOCS_2_WARNING="1",
        )
        # As an author's shell has it: bytecode is written, and must not make serve rebuild twice.
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env.update(extra)
        return env

    def build(self, *args: str, **env: str) -> Build:
        """Run ``mkdocs build`` on the book."""
        done = subprocess.run(
            [sys.executable, "-m", "mkdocs", "build", *args],
            cwd=self.root,
            env=self.env(**env),
            capture_output=True,
            text=True,
            timeout=1800,  # a cold build of every chapter on a loaded machine takes minutes; a hang still ends
            check=False,
        )
        return Build(done.returncode, done.stdout + done.stderr)

    def page(self, name: str = "index") -> str:
        """A built page's HTML."""
        path = self.root / "site" / ("index.html" if name == "index" else f"{name}/index.html")
        return path.read_text()

    def shown(self, name: str = "index") -> str:
        """A built page's HTML and its chapters' payload pages, which hold each run's turns and calls."""
        page = self.page(name)
        urls = dict.fromkeys(re.findall(r'data-tr-payloads="([^"]+)"', page))
        return page + "".join((self.root / "site" / url).read_text() for url in urls)


def save(path: Path, text: str) -> None:
    """Write a file in one step, as an editor that saves by renaming does.

    Written in place, a file is first emptied, then filled: MkDocs' poller (every half second) can see both
    states and rebuild twice, which a test that counts rebuilds would blame on the machinery. The text is
    written outside every watched folder, in the system's temporary folder (pytest's too), and renamed in.
    """
    handle, temporary = tempfile.mkstemp(prefix="saved-", suffix=path.suffix)
    with os.fdopen(handle, "w") as file:
        file.write(text)
    os.chmod(temporary, path.stat().st_mode if path.exists() else 0o644)  # mkstemp's file is the owner's alone
    os.replace(temporary, path)


def edit(path: Path, old: str, new: str) -> None:
    """Replace text in a file, as an editor saving it would (one step, a new file and modification time)."""
    text = path.read_text()
    assert old in text, f"{old!r} is not in {path}"
    save(path, text.replace(old, new))


def make_book(
    tmp_path: Path,
    chapters: dict[str, str] | None = None,
    pages: dict[str, str] | None = None,
    *,
    theme: str = "mkdocs",
    renderer: bool = HAS_RENDERER,
    plugin: str | None = None,
) -> SmallBook:
    """A book with the given chapters (alpha and beta by default) and pages.

    ``renderer=False`` leaves the Markdown extension out of ``mkdocs.yml``:
    the hook then adds it itself, as the plugin does. ``plugin`` (the options' YAML, "" for none)
    configures the book the plugin way instead, as an author does: no hook,
    no extension named (the plugin adds it).
    """
    package = f"book{next(_numbers)}_{os.getpid()}_chapters"
    book = SmallBook(tmp_path, package)
    (tmp_path / package).mkdir(parents=True)
    (tmp_path / package / "__init__.py").write_text('"""The test book\'s chapters."""\n')
    for name, source in (chapters or {"ch_alpha": ALPHA, "ch_beta": BETA}).items():
        book.write_chapter(name, source)
    book.docs.mkdir()
    for name, text in (pages or {"index": PAGE}).items():
        (book.docs / f"{name}.md").write_text(text)
    # Its chapters and pages are laid out as no author's book is (ch_alpha's traces on
    # index.md): the book's rules (primer.book._markers) are turned off.
    extensions = f"\nmarkdown_extensions:\n  - {RENDERER}:\n      rules: false\n" if renderer else ""
    front = f"hooks:\n  - {HOOK}\n{extensions}"
    if plugin is not None:
        if "rules:" not in plugin:
            plugin = f"{plugin}\nrules: false".strip()
        options = "".join(f"\n      {line}" for line in plugin.splitlines())
        front = f"plugins:\n  - search\n  - trace-book:{options or ' {}'}\n"
    # The raw frozen live traces are the book's store, not the site's: every front end reads exclude_docs.
    (tmp_path / "mkdocs.yml").write_text(
        f"site_name: A small book\ntheme:\n  name: {theme}\nexclude_docs: |\n  traces/*.live.json\n{front}"
    )
    return book


def copy_library(root: Path) -> Path:
    """A copy of the ``primer`` package in ``root``, for a test that edits library code.

    A book's builds put ``root`` first on the import path (``SmallBook.env``),
    so the copy is the library they run: the repository's own is never touched.
    """
    target = root / "primer"
    shutil.copytree(REPO / "primer", target, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    return target


def copy_the_book(target: Path) -> Path:
    """A copy of this repository's book in ``target``: what its own ``mkdocs.yml`` builds from.

    ``mkdocs.yml``, the docs (with the frozen live traces), the hook, the
    library (the chapters include its source) and the one test file chapter
    10 shows. A build of the copy writes its caches, its re-stamped live
    traces and its generated files there, never into the repository. The
    files the machinery generates into the docs are left behind, so a build
    starts as from a fresh clone.
    """
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", ".cache", "site")
    for name in ("docs", "hooks", "primer"):
        shutil.copytree(REPO / name, target / name, ignore=ignore)
    shutil.copy(REPO / "mkdocs.yml", target / "mkdocs.yml")
    (target / "tests").mkdir()
    shutil.copy(REPO / "tests" / "test_ch10_example.py", target / "tests" / "test_ch10_example.py")
    for generated in (target / "docs" / "traces").glob("*.json"):
        if not generated.name.endswith(".live.json"):
            generated.unlink()
    shutil.rmtree(target / "docs" / "assets" / "trace-book", ignore_errors=True)
    return target


def hook_plugin() -> TraceBookPlugin:
    """The hook's plugin instance (``hooks/traces.py`` re-exports its events), for in-process builds.

    A test sets a ``Book`` of its own as its ``book`` (one with a live runner that stands
    in for the network): the plugin keeps the book it holds for its docs folder.
    """
    from primer.book import mkdocs_hook

    return mkdocs_hook.on_config.__self__  # type: ignore[attr-defined, no-any-return]


def placeholder(marker: Marker) -> str:
    """The note a marker becomes with traces off, as the extension writes it."""
    import html

    from primer.book._markers import OFF_CLASS, off_note

    return f'<p class="{OFF_CLASS}">{html.escape(off_note(marker))}</p>'
