"""The one cache: one key per chapter, an entry per key, and a build without it that gives the same site."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from primer.book._cache import KEEP, TraceCache, build_key, chapter_key, environ_options

from .books import REPO, make_book


def _site(root: Path, *, numbers: bool = True) -> dict[str, bytes]:
    """The built pages and published files, but the date MkDocs writes into every page.

    ``numbers`` False: every number as 0. A mock run measures the library's
    own time, so runs made again differ in their durations only.
    """
    site = root / "site"
    return {
        path.relative_to(site).as_posix(): _numbers(
            re.sub(rb"Build Date UTC : [^\n]*", b"", path.read_bytes()), numbers
        )
        for path in sorted(site.rglob("*"))
        if path.is_file() and path.suffix in {".html", ".json"} and "sitemap" not in path.name
    }


def _numbers(data: bytes, keep: bool) -> bytes:
    # A number whole, fraction and all: a timeline's widths are written with %g, so 50% and 12.5% differ in digits.
    return data if keep else re.sub(rb"[0-9]+(?:\.[0-9]+)?(?:e-?[0-9]+)?", b"0", data)


def test_the_key_changes_with_each_of_its_inputs_and_nothing_else() -> None:
    def key_of(chapter: str, code: str, frozen: bytes | None, options: dict[str, str], renderer: str) -> str:
        return chapter_key(chapter, code, frozen, build_key(options, renderer))

    base = {"chapter": "ch", "code": "c1", "frozen": b"{}", "options": {"PRIMER_LIVE": "off"}, "renderer": "r1"}
    key = key_of(**base)  # type: ignore[arg-type]
    assert key_of(**base) == key  # type: ignore[arg-type]
    for name, other in [
        ("chapter", "ch2"),
        ("code", "c2"),
        ("frozen", b"{ }"),
        ("frozen", None),
        ("options", {"PRIMER_LIVE": "auto"}),
        ("options", {"PRIMER_LIVE": "off", "price table": "2026-12"}),
        ("renderer", "r2"),
    ]:
        assert key_of(**{**base, name: other}) != key, name  # type: ignore[arg-type]


def test_the_options_name_a_secret_only_as_set() -> None:
    options = environ_options({"PRIMER_API_KEY": "sk-secret-1234567890", "PRIMER_MODEL": "m", "HOME": "/root"})
    assert options == {"PRIMER_API_KEY": "set", "PRIMER_MODEL": "m"}
    assert "sk-secret" not in repr(options)


def test_prune_keeps_what_the_build_used_and_the_last_few_of_each_chapter(tmp_path: Path) -> None:
    cache = TraceCache(tmp_path)
    for number in range(KEEP + 3):
        entry = cache.entry("ch", f"k{number}")
        entry.write("shown.json", "{}")
        os.utime(tmp_path / "ch" / f"k{number}", ns=(number * 10**9, number * 10**9))
    cache.entry("gone", "g1").write("shown.json", "{}")
    cache.reset()
    cache.entry("ch", "k0")  # the oldest, used by this build
    cache.prune(["ch"])
    left = sorted(path.name for path in (tmp_path / "ch").iterdir())
    assert left == sorted(["k0", *(f"k{n}" for n in range(3, KEEP + 3))])
    assert not (tmp_path / "gone").exists(), "a chapter no longer shown"


def test_prune_keeps_the_last_few_of_each_kind(tmp_path: Path) -> None:
    # A build shown from its key's entry uses neither the mock run nor the verdict it was made from: newer keys
    # (edits undone since) must not push them out, or the next full build runs and replays again for nothing.
    cache = TraceCache(tmp_path)
    names = [f"{kind}{n}" for n in range(KEEP + 2) for kind in ("k", "mock-c", "verdict-v")]
    for age, name in enumerate(names):
        cache.entry("ch", name).write("x.json", "{}")
        os.utime(tmp_path / "ch" / name, ns=(age * 10**9, age * 10**9))
    cache.reset()
    cache.entry("ch", "k0")
    cache.prune(["ch"])
    left = {path.name for path in (tmp_path / "ch").iterdir()}
    newest = {f"{kind}{n}" for n in range(2, KEEP + 2) for kind in ("k", "mock-c", "verdict-v")}
    assert left == {"k0", *newest}


def test_a_cache_that_is_off_keeps_nothing(tmp_path: Path) -> None:
    cache = TraceCache(tmp_path / "c", enabled=False)
    entry = cache.entry("ch", "k")
    entry.write("shown.json", "{}")
    assert entry.read("shown.json") is None
    assert not (tmp_path / "c").exists()


def test_a_warm_build_serves_every_page_from_the_entries_and_a_build_without_the_cache_gives_the_same(
    tmp_path: Path,
) -> None:
    book = make_book(tmp_path)
    cold = book.build()
    assert cold.returncode == 0, cold.log
    made = _site(book.root)
    entries = book.root / ".cache" / "trace-book" / "entries"
    assert sorted(p.name for p in entries.iterdir()) == ["ch_alpha", "ch_beta"]
    warm = book.build("--verbose")
    assert warm.returncode == 0, warm.log
    assert warm.count() == "traces: ran 0, reused 3"
    [share] = warm.lines("the machinery's share")
    assert "markers rendered 0" in share
    assert _site(book.root) == made
    # A later plugin that edits a published file in place edits the site's copy, never the cache's (no links).
    with (book.root / "site" / "traces" / "ch_alpha.json").open("r+b") as published:
        published.write(b"EDITED IN PLACE")
    assert not any(b"EDITED IN PLACE" in p.read_bytes() for p in entries.rglob("*") if p.is_file())
    # Off: everything computed (run again, so only the measured durations differ), nothing read or kept.
    done = book.build("--verbose", PRIMER_CACHE="off")
    assert done.returncode == 0, done.log
    assert done.count() == "traces: ran 3, reused 0"
    [share] = done.lines("the machinery's share")
    assert "reused 0" in share
    # (Its OTLP span ids are made from the runs' times: left out.)
    again = {name: data for name, data in _site(book.root, numbers=False).items() if "otlp" not in name}
    assert again == {name: _numbers(data, False) for name, data in made.items() if "otlp" not in name}


def test_changed_code_names_the_renderers_modules_this_process_runs_as_they_were() -> None:
    import primer.book._render
    import primer.summary  # noqa: F401 - imported: this process runs them
    from primer.book._cache import changed_code, renderer_files

    first = renderer_files()
    assert "book/_render.py" in first
    assert "summary.py" in first
    assert "book/templates/chapter.html.j2" in first
    assert changed_code(first, first) == []
    edited = dict.fromkeys(("book/_render.py", "book/__init__.py", "summary.py"), "other")
    # A template is read again at every render; a module not imported yet will be imported as it is now.
    edited |= {"book/templates/chapter.html.j2": "other", "book/not_imported_yet.py": "other"}
    later = {**first, **edited}
    assert changed_code({**first, "book/not_imported_yet.py": "x"}, later) == [
        "primer/book/__init__.py",
        "primer/book/_render.py",
        "primer/summary.py",
    ]


NEEDS_AN_EXTRA = '''"""A chapter whose loop needs an optional package, as a framework's scenario does."""

from primer.loop import until_no_tool_calls
from primer.models.mock import say
from primer.scenario import Scenario


def framed(agent, context, max_turns):
    import {extra}  # noqa: F401 - installed with the book's extra, or not

    return until_no_tool_calls(agent, context, max_turns)


answers = Scenario(name="answers", prompt="Go.", tools=[], loop=framed, mock=[say("Framed and answered.")])
'''


@pytest.mark.slow
def test_a_mock_run_is_made_again_once_the_packages_it_ran_with_change(tmp_path: Path) -> None:
    # A mock run depends on the installed packages as well as the code: one that failed for want of
    # an extra was shown failed still after the extra was installed (kept by the code alone).
    extra = f"an_extra_{os.getpid()}"
    site = tmp_path / "venv" / "lib" / "site-packages"  # as an installed distribution lies
    site.mkdir(parents=True)
    book = make_book(tmp_path, {"ch_alpha": NEEDS_AN_EXTRA.format(extra=extra)})
    path = os.pathsep.join([str(book.root), str(REPO), str(site)])
    first = book.build(PYTHONPATH=path)
    assert "No module named" in first.log
    (site / f"{extra}.py").write_text("")
    (site / f"{extra}-1.0.dist-info").mkdir()
    (site / f"{extra}-1.0.dist-info" / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {extra}\nVersion: 1.0\n")
    second = book.build(PYTHONPATH=path)
    assert "traces: ran 1, reused 0" in second.log, second.log
    assert "Framed and answered." in book.shown()
    assert "traces: ran 0, reused 1" in book.build(PYTHONPATH=path).log
