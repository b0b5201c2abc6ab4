"""Shared pytest fixtures for the test suite."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

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
