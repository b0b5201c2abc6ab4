"""A warm build's short way (``primer.book.manifest``): taken when nothing changed, and only then."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import markdown
import pytest

from primer.book import manifest
from primer.book.build import Book
from primer.book.chapters import Chapters
from primer.book.markdown import TraceExtension
from primer.variables import VARIABLES
from tests.books import ALPHA, BROKEN, PAGE, SmallBook, edit, make_book

pytestmark = pytest.mark.slow  # every test here builds a book


@pytest.fixture
def book(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> SmallBook:
    for name in VARIABLES.values():
        monkeypatch.delenv(name, raising=False)
    made = make_book(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    return made


def opened(book: SmallBook) -> Book:
    """The book as a new process opens it (nothing in memory), with the session's layout."""
    cache = book.root / ".cache" / "trace-book"
    chapters = Chapters(book.package, imports_cache=cache / "traces" / "imports.json")
    return Book(book.docs, cache / "traces", chapters=chapters, html_dir=cache / "html")


def page(source: Book) -> str:
    extension = TraceExtension(source=source.store, cache=source.rendered, warn_missing=False)
    return markdown.markdown(PAGE, extensions=[extension])


def short(built: Book) -> bool:
    """Whether the last prepare took the short way: every chapter shown by its summary."""
    return all(built.store.summary(chapter) is not None for chapter in ["ch_alpha", "ch_beta"])


def settled(book: SmallBook) -> tuple[Book, str]:
    first = opened(book)
    assert first.prepare().line() == "traces: ran 3, reused 0"
    html = page(first)
    first.publish(book.root / "full")
    return first, html


def test_a_build_with_nothing_changed_reads_no_trace_and_shows_the_same(
    book: SmallBook, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, full = settled(book)
    assert (book.root / ".cache" / "trace-book" / "traces" / manifest.NAME).is_file()
    with monkeypatch.context() as patched:
        patched.setattr("primer.book.store.parse", lambda data, path: pytest.fail(f"{path} was parsed"))
        warm = opened(book)
        assert warm.prepare().line() == "traces: ran 0, reused 3"
        assert short(warm)
        assert warm.scenario_names == {"ch_alpha": ["asks_price", "answers_at_once"], "ch_beta": ["greets"]}
        assert page(warm) == full
        assert warm.rendered.rendered == 0
        warm.publish(book.root / "warm")
    # The payload pages too, from the cache: no run was read to publish them.
    for name in ("ch_alpha.json", "ch_beta.json", "ch_alpha.payloads.html", "ch_beta.payloads.html"):
        published = [(book.root / folder / "traces" / name).read_bytes() for folder in ("warm", "full")]
        assert published[0] == published[1]


def test_a_missing_piece_of_the_cache_is_made_again_from_that_chapters_runs(book: SmallBook) -> None:
    _, full = settled(book)
    cache = book.root / ".cache" / "trace-book"
    for path in [*(cache / "html").glob("ch_beta-*.html"), *(cache / "traces" / "published").glob("ch_beta.*")]:
        path.unlink()
    warm = opened(book)
    warm.prepare()
    assert short(warm)
    assert page(warm) == full
    assert warm.rendered.rendered == 1
    warm.publish(book.root / "warm")
    published = json.loads((book.root / "warm" / "traces" / "ch_beta.json").read_text())
    assert published["mock"]["scenarios"][0]["name"] == "greets"
    payloads = [(book.root / folder / "traces" / "ch_beta.payloads.html").read_bytes() for folder in ("warm", "full")]
    assert payloads[0] == payloads[1]  # rendered again from its runs


def test_an_edited_chapter_module_is_run_again(book: SmallBook) -> None:
    settled(book)
    edit(book.chapter("ch_alpha"), "Milk is <b>1.20</b>", "Milk costs <b>1.20</b>")
    warm = opened(book)
    assert warm.prepare().line() == "traces: ran 2, reused 1"
    assert not short(warm)
    assert "Milk costs" in page(warm)


def test_files_rewritten_byte_for_byte_are_the_same_inputs(book: SmallBook) -> None:
    settled(book)
    # As a checkout or a copy leaves them: new times (and a new inode), the same bytes.
    for path in [book.chapter("ch_alpha"), book.root / ".cache" / "trace-book" / "traces" / "ch_beta.mock.json"]:
        data = path.read_bytes()
        path.unlink()
        path.write_bytes(data)
    warm = opened(book)
    assert warm.prepare().line() == "traces: ran 0, reused 3"
    assert short(warm)


def test_a_new_module_in_the_chapters_package_is_noticed(book: SmallBook) -> None:
    settled(book)
    book.write_chapter("ch_gamma", ALPHA.replace("Chapter alpha", "Chapter gamma"))
    warm = opened(book)
    assert warm.prepare().line() == "traces: ran 2, reused 3"


def test_a_trace_file_replaced_with_the_same_size_and_time_is_read(book: SmallBook) -> None:
    settled(book)
    path = book.root / ".cache" / "trace-book" / "traces" / "ch_beta.mock.json"
    stat = path.stat()
    path.write_bytes(path.read_bytes().replace(b"Beta says hi.", b"Beta says HI."))
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert path.stat().st_size == stat.st_size
    warm = opened(book)
    assert warm.prepare().line() == "traces: ran 0, reused 3"  # still the code's trace: shown as it is now
    assert not short(warm)
    assert "Beta says HI." in page(warm)


def test_a_deleted_trace_file_is_run_again(book: SmallBook) -> None:
    settled(book)
    (book.root / ".cache" / "trace-book" / "traces" / "ch_alpha.mock.json").unlink()
    warm = opened(book)
    assert warm.prepare().line() == "traces: ran 2, reused 1"


def test_a_live_trace_that_appears_is_read(book: SmallBook, caplog: pytest.LogCaptureFixture) -> None:
    settled(book)
    (book.docs / "traces").mkdir()
    (book.docs / "traces" / "ch_beta.live.json").write_text("{not json")
    warm = opened(book)
    warm.prepare()
    assert not short(warm)
    assert any("ch_beta.live.json could not be read" in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize(
    ("variable", "value"),
    [("PRIMER_MODEL", "another-model"), ("PRIMER_LIVE", "refresh"), ("PRIMER_SERVICE_KEY", "a-service-token-0123")],
)
def test_a_changed_setting_or_a_secret_takes_the_full_way(
    book: SmallBook, monkeypatch: pytest.MonkeyPatch, variable: str, value: str
) -> None:
    settled(book)
    monkeypatch.setenv(variable, value)
    warm = opened(book)
    assert warm.prepare().line() == "traces: ran 0, reused 3"
    assert not short(warm)
    record = book.root / ".cache" / "trace-book" / "traces" / manifest.NAME
    if variable == "PRIMER_SERVICE_KEY":  # a build with a secret set is not recorded: no trace of it is kept
        assert not record.exists()
    else:  # recorded as it is now: the next build takes the short way
        assert json.loads(record.read_text())["environment"] == {variable: value}
        again = opened(book)
        again.prepare()
        assert short(again)


def test_the_record_names_no_secret_and_only_a_clean_build_is_recorded(
    book: SmallBook, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    record = book.root / ".cache" / "trace-book" / "traces" / manifest.NAME
    monkeypatch.setenv("PRIMER_MODLE", "typo")  # warned about by every build alike: still clean
    settled(book)
    assert json.loads(record.read_text())["environment"] == {}
    caplog.clear()
    opened(book).prepare()
    assert sum("PRIMER_MODLE is set" in r.getMessage() for r in caplog.records) == 1
    book.write_chapter("ch_broken", BROKEN)
    first = opened(book)
    first.prepare()
    assert not record.exists()  # the failure is warned about again by the next build
    caplog.clear()
    again = opened(book)
    again.prepare()
    assert not short(again)
    assert any("ch_broken / explodes (mock) failed" in r.getMessage() for r in caplog.records)


def test_a_book_given_its_settings_takes_the_full_way(book: SmallBook) -> None:
    from primer.settings import Settings

    settled(book)
    given = opened(book)
    given.settings = Settings()
    given.prepare()
    assert not short(given)


def test_a_warm_mkdocs_build_loads_neither_pydantic_nor_the_trace_models(tmp_path: Path) -> None:
    built = make_book(tmp_path)
    assert built.build().returncode == 0
    probe = (
        "import sys\nfrom mkdocs.__main__ import cli\n"
        "try:\n    cli(['build', '-q'])\nexcept SystemExit:\n    pass\n"
        "print(sorted(m for m in ('pydantic', 'primer.trace', 'primer.book.render') if m in sys.modules))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], cwd=built.root, env=built.env(), capture_output=True, text=True, check=True
    )
    assert done.stdout.strip().splitlines()[-1] == "[]", done.stdout + done.stderr
    warm = built.page()
    (tmp_path / ".cache" / "trace-book" / "traces" / manifest.NAME).unlink()
    assert built.build().returncode == 0
    # The same page but the theme's build time, which it writes into every page.
    assert re.sub(r"Build Date UTC : .*", "", built.page()) == re.sub(r"Build Date UTC : .*", "", warm)
