"""Settings come from PRIMER_* variables; a bad one is a ConfigError that names it."""

from __future__ import annotations

import pytest

from primer.errors import ConfigError
from primer.settings import DEFAULT_SERVICE_KEY, VARIABLES, Settings

KEY = "sk-settings-3f8a1c"


def test_defaults_without_any_variable() -> None:
    settings = Settings.from_env({})
    assert settings.api_key is None
    assert settings.live_enabled is False
    assert settings.base_url == "https://api.openai.com/v1"
    assert settings.service_url == "https://httpbin.org"
    assert settings.service_key.get_secret_value() == DEFAULT_SERVICE_KEY
    assert (settings.live, settings.traces) == ("auto", "on")
    assert settings.service_timeout == 2.0  # the seeds' timeout
    assert settings.model_timeout == 60.0


def test_every_variable_is_read_and_tidied() -> None:
    settings = Settings.from_env(
        {
            "PRIMER_API_KEY": f"  {KEY}\n",
            "PRIMER_BASE_URL": "http://127.0.0.1:8000/v1/",
            "PRIMER_MODEL": " deepseek-flash ",
            "PRIMER_SERVICE_URL": "http://127.0.0.1:9000",
            "PRIMER_SERVICE_KEY": "svc-key-1234",
            "PRIMER_LIVE": "Refresh",
            "PRIMER_TRACES": "OFF",
            "PRIMER_MODEL_TIMEOUT": "30",
            "PRIMER_SERVICE_TIMEOUT": "0.25",
        }
    )
    assert settings.api_key is not None
    assert settings.api_key.get_secret_value() == KEY
    assert settings.base_url == "http://127.0.0.1:8000/v1"
    assert settings.model == "deepseek-flash"
    assert settings.service_url == "http://127.0.0.1:9000"
    assert settings.service_key.get_secret_value() == "svc-key-1234"
    assert (settings.live, settings.traces) == ("refresh", "off")
    assert (settings.model_timeout, settings.service_timeout) == (30.0, 0.25)
    assert sorted(settings.secrets()) == sorted([KEY, "svc-key-1234"])


@pytest.mark.parametrize("variable", VARIABLES.values())
@pytest.mark.parametrize("empty", ["", "  "])
def test_an_empty_variable_is_an_error_naming_it(variable: str, empty: str) -> None:
    # Empty is not unset: PRIMER_MODEL= quietly meaning the default model would hide a mistake.
    with pytest.raises(ConfigError, match=rf"^{variable} is set but empty\. .* unset it"):
        Settings.from_env({variable: empty})


@pytest.mark.parametrize(
    ("live", "key", "enabled"),
    [("auto", KEY, True), ("refresh", KEY, True), ("off", KEY, False), ("auto", None, False)],
)
def test_live_needs_a_key_and_not_off(live: str, key: str | None, enabled: bool) -> None:
    settings = Settings.from_env({"PRIMER_LIVE": live, **({"PRIMER_API_KEY": key} if key else {})})
    assert settings.live_enabled is enabled


@pytest.mark.parametrize(
    ("variable", "value", "expected"),
    [
        ("PRIMER_BASE_URL", "api.openai.com/v1", "PRIMER_BASE_URL must be an http(s) URL"),
        ("PRIMER_BASE_URL", "ftp://example.test/v1", "PRIMER_BASE_URL must be an http(s) URL"),
        ("PRIMER_BASE_URL", "http://", "PRIMER_BASE_URL must be an http(s) URL"),
        ("PRIMER_BASE_URL", "http://example.test:99999/v1", "PRIMER_BASE_URL must be an http(s) URL"),
        ("PRIMER_BASE_URL", "http://exa mple.test/v1", "it contains a space"),
        ("PRIMER_BASE_URL", "https://example.test/v1?key=1", "must not have a query"),
        ("PRIMER_SERVICE_URL", "http://[::1", "PRIMER_SERVICE_URL must be an http(s) URL"),
        ("PRIMER_SERVICE_URL", "httpbin.org", "PRIMER_SERVICE_URL must be an http(s) URL such as https://httpbin.org"),
        ("PRIMER_LIVE", "sometimes", "PRIMER_LIVE must be one of auto, off, refresh, not 'sometimes'."),
        ("PRIMER_TRACES", "maybe", "PRIMER_TRACES must be one of on, off, not 'maybe'."),
        ("PRIMER_SERVICE_TIMEOUT", "soon", "PRIMER_SERVICE_TIMEOUT must be a number of seconds"),
        ("PRIMER_SERVICE_TIMEOUT", "0", "PRIMER_SERVICE_TIMEOUT must be a positive number of seconds"),
        ("PRIMER_MODEL_TIMEOUT", "nan", "PRIMER_MODEL_TIMEOUT must be a positive number of seconds"),
        ("PRIMER_MODEL", "deepseek flash", "PRIMER_MODEL must be a model name"),
    ],
)
def test_a_malformed_variable_is_named(variable: str, value: str, expected: str) -> None:
    with pytest.raises(ConfigError) as caught:
        Settings.from_env({variable: value})
    assert expected in str(caught.value)
    assert str(caught.value).startswith(variable)


@pytest.mark.parametrize(
    ("variable", "value", "expected"),
    [
        ("PRIMER_API_KEY", "abc", "shorter than 4 characters"),
        ("PRIMER_API_KEY", "sk-with space", "contains a space"),
        ("PRIMER_API_KEY", "sk-caf\u00e9-1234", "non-ASCII"),
        ("PRIMER_SERVICE_KEY", "svc\x00key1", "control character"),
    ],
)
def test_a_bad_secret_is_named_but_never_repeated(variable: str, value: str, expected: str) -> None:
    with pytest.raises(ConfigError) as caught:
        Settings.from_env({variable: value})
    message = str(caught.value)
    assert message.startswith(variable)
    assert expected in message
    assert value.strip() not in message


def test_a_password_in_a_url_is_refused_without_being_repeated() -> None:
    with pytest.raises(ConfigError) as caught:
        Settings.from_env({"PRIMER_SERVICE_URL": "https://me:hunter2-pw@example.test"})
    assert "PRIMER_SERVICE_URL must not carry a user or password; put the key in PRIMER_SERVICE_KEY" in str(
        caught.value
    )
    assert "hunter2" not in str(caught.value)
    with pytest.raises(ConfigError) as caught:
        Settings.from_env({"PRIMER_BASE_URL": "https://me:hunter2-pw@example.test:99999/v1"})
    assert "hunter2" not in str(caught.value)


def test_direct_construction_is_checked_the_same_way() -> None:
    with pytest.raises(ConfigError, match=r"^PRIMER_BASE_URL must be an http"):
        Settings(base_url="localhost:8000")
    with pytest.raises(ConfigError, match=r"^PRIMER_LIVE must be one of"):
        Settings(live="always")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match=r"^PRIMER_SERVICE_TIMEOUT"):
        Settings(service_timeout=-1)
    settings = Settings(api_key=KEY, base_url="http://127.0.0.1:1234/v1/")  # type: ignore[arg-type]
    assert settings.base_url == "http://127.0.0.1:1234/v1"
    assert settings.api_key is not None
    assert settings.api_key.get_secret_value() == KEY
    assert KEY not in repr(settings)  # a secret does not print
