"""Shared pytest fixtures for the test suite."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.books import copy_the_book
from tests.servers.provider import provider_fixture
from tests.servers.service import httpbin_fixture
from tests.wheel import build_wheel, unpack

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


@pytest.fixture(scope="session")
def installed_wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """This checkout's wheel, built once a session and unpacked: a folder to put first on ``PYTHONPATH``."""
    wheel = build_wheel(tmp_path_factory.mktemp("wheels"))
    return unpack(wheel, tmp_path_factory.mktemp("site-packages"))


@pytest.fixture(scope="session")
def built_book(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """This repository's book, copied and built once a session: its site folder and the build's log.

    ``mkdocs build --strict`` in mock mode (no ``PRIMER_`` variable: the frozen
    live traces), in a copy, since the build writes caches and may re-stamp
    frozen live traces, never in the repository. For the tests that only read
    the site (tests/test_book.py, tests/test_browser.py): one build, not one each.
    """
    book = copy_the_book(tmp_path_factory.mktemp("book"))
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
        timeout=300,
        check=False,
    )
    log = result.stdout + result.stderr
    assert result.returncode == 0, log
    return book / "site", log
