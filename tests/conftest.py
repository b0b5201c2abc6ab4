"""Shared pytest fixtures for the test suite."""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.books import copy_the_book
from tests.servers.provider import provider_fixture
from tests.servers.service import httpbin_fixture
from tests.wheel import build_wheel, unpack

#: The files that take longest, slowest first (the CPU of each file's tests in a whole
#: ``slow or browser`` run: wall time on a shared machine says more of the load than of the
#: tests). They start first (tests/run.sh: ``--no-loadscope-reorder``, or pytest-xdist would
#: order files by how many tests they hold), so that the many short files fill the two
#: workers' ends instead of one long file running alone at the end.
LONG_POLES = (
    "test_axe.py",
    "test_benchmarks.py",
    "test_published.py",
    "test_build.py",
    "test_verify_build.py",
    "test_front_ends.py",
    "test_book_of_your_own.py",
    "test_authors_example.py",
    "test_reader.py",
    "test_secrets_paths.py",
    "test_serve.py",
    "test_malformed_input.py",
    "test_plugin.py",
    "test_inert.py",
    "test_tamper.py",
    "test_hostile_traces.py",
    "test_book.py",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The long poles' files first, each file's tests in their own order."""
    rank = {name: place for place, name in enumerate(LONG_POLES)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))


# A fresh local fake provider per test: `replay_provider.base_url` is what the SDK talks to.
replay_provider = pytest.fixture(name="replay_provider")(provider_fixture)

# A real httpbin on loopback for the whole session (its state is per request).
httpbin = pytest.fixture(name="httpbin", scope="session")(httpbin_fixture)


@pytest.fixture
def sleeps(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """Fail on any real sleep, remembering what was asked for."""
    asked: list[float] = []

    def refuse(seconds: float) -> None:
        asked.append(seconds)
        raise AssertionError(f"time.sleep({seconds}) was called in mock mode")

    monkeypatch.setattr(time, "sleep", refuse)
    return asked


def made_once(
    config: pytest.Config, tmp_path_factory: pytest.TempPathFactory, name: str, make: Callable[[Path], None]
) -> Path:
    """A folder ``make`` fills once a run, shared by every pytest-xdist worker.

    Under xdist each worker has a session of its own; a session fixture
    alone would make it once per worker (two book builds when test_book.py
    and the browser tests run on different workers). The first worker to ask
    makes it under a lock in the run's temporary folder; the others wait and
    read it. A ``make`` that failed leaves no mark: the next to ask tries again.
    """
    root = tmp_path_factory.getbasetemp()
    # Asked of this process's own config, not of PYTEST_XDIST_WORKER, which a pytest a test
    # starts inherits (test_authors_example.py): that one must make its own, in its own folder.
    if hasattr(config, "workerinput"):
        root = root.parent  # the run's folder; each worker's own is popen-gwN inside it
    folder, made = root / name, root / f"{name}.made"
    with (root / f"{name}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes, a failed make included
        if not made.exists():
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir()
            make(folder)
            made.touch()
    return folder


@pytest.fixture(scope="session")
def installed_wheel(pytestconfig: pytest.Config, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """This checkout's wheel, built once a run and unpacked: a folder to put first on ``PYTHONPATH``."""

    def make(folder: Path) -> None:
        unpack(build_wheel(folder / "wheels"), folder / "site-packages")

    return made_once(pytestconfig, tmp_path_factory, "wheel", make) / "site-packages"


@pytest.fixture(scope="session")
def built_book(pytestconfig: pytest.Config, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """This repository's book, copied and built once a run: its site folder and the build's log.

    ``mkdocs build --strict`` in mock mode (no ``PRIMER_`` variable: the frozen
    live traces), in a copy, since the build writes caches and may re-stamp
    frozen live traces, never in the repository. For the tests that only read
    the site (tests/test_book.py, tests/browser/): one build, not one each.
    """

    def make(book: Path) -> None:
        copy_the_book(book)
        env = {k: v for k, v in os.environ.items() if not k.startswith("PRIMER_")}
        # Unset, as in a fresh shell: the book's mkdocs.yml turns Material's notice off itself (test_book.py).
        env.pop("NO_MKDOCS_2_WARNING", None)
        env["PYTHONPATH"] = str(book)
        result = subprocess.run(
            [sys.executable, "-m", "mkdocs", "build", "--strict"],
            capture_output=True,
            text=True,
            cwd=book,
            env=env,
            timeout=1800,  # a hang guard: a cold build of every chapter took over 300 s at a load of 22
            check=False,
        )
        log = result.stdout + result.stderr
        assert result.returncode == 0, log
        (book / "build.log").write_text(log, encoding="utf-8")

    book = made_once(pytestconfig, tmp_path_factory, "book", make)
    return book / "site", (book / "build.log").read_text(encoding="utf-8")
