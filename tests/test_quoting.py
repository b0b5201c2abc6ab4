"""Messages that could carry a key: configuration values and a broken replay's error are never quoted raw."""

from __future__ import annotations

from pathlib import Path

import pytest

import primer.replay
from primer.cli import main
from primer.errors import ConfigError
from primer.variables import chapters_package, package_name

KEY = "sk-live-0123456789abcdefABCDEF"
ROOT = Path(__file__).resolve().parent.parent


def test_a_chapters_option_that_is_not_a_package_is_described_not_quoted() -> None:
    with pytest.raises(ConfigError) as raised:
        chapters_package(f"https://example.test/ {KEY}", environ={})
    assert "chapters option must name a Python package" in str(raised.value)
    assert KEY not in str(raised.value)
    assert "sk-live" not in str(raised.value)


def test_a_short_plain_word_is_still_quoted_back() -> None:
    with pytest.raises(ConfigError) as raised:
        package_name("PRIMER_CHAPTERS", "no/such!")
    assert "no/such!" not in str(raised.value)
    with pytest.raises(ConfigError, match=r", not '12'\."):
        package_name("PRIMER_CHAPTERS", "12")


def test_a_broken_replay_is_reported_without_the_key_it_quotes(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def broken(*_args: object, **_kwargs: object) -> object:
        raise RuntimeError(f"the recording held Authorization: Bearer {KEY}")

    monkeypatch.setenv("PRIMER_API_KEY", KEY)
    monkeypatch.setattr(primer.replay, "verify_chapter", broken)
    status = main(["verify", "ch09_who_retries", "--traces", str(ROOT / "docs" / "traces")])
    out = capsys.readouterr()
    said = out.out + out.err
    assert "ch09_who_retries: not verified: the replay broke: RuntimeError" in said
    assert KEY not in said
    assert status != 0
