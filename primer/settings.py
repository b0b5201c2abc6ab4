"""Settings from the environment, validated, with a clear word when wrong.

``PRIMER_API_KEY``      the provider key; its presence turns live runs on
``PRIMER_BASE_URL``     an OpenAI-compatible endpoint (default OpenAI's)
``PRIMER_MODEL``        the model name
``PRIMER_SERVICE_URL``  the service the tools call (default httpbin.org)
``PRIMER_SERVICE_KEY``  the bearer token sent to the service
``PRIMER_LIVE``         ``auto`` (default), ``off`` or ``refresh``
``PRIMER_TRACES``       ``on`` (default) or ``off``: the whole machinery
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, SecretStr

from primer.errors import ConfigError

__all__ = ["DEFAULT_SERVICE_KEY", "Settings"]

DEFAULT_SERVICE_KEY = "primer-demo-key"


def _url(variable: str, value: str) -> str:
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ConfigError(f"{variable} must be an http(s) URL such as https://api.openai.com/v1, not {value!r}.")
    return value.rstrip("/")


def _choice(variable: str, value: str, choices: tuple[str, ...]) -> str:
    if value not in choices:
        raise ConfigError(f"{variable} must be one of {', '.join(choices)}, not {value!r}.")
    return value


class Settings(BaseModel):
    """What a run needs to know about the outside world."""

    model_config = ConfigDict(frozen=True)

    api_key: SecretStr | None = None
    base_url: str = "https://api.openai.com/v1"
    model: str = "gpt-4o-mini"
    service_url: str = "https://httpbin.org"
    service_key: SecretStr = SecretStr(DEFAULT_SERVICE_KEY)
    live: Literal["auto", "off", "refresh"] = "auto"
    traces: Literal["on", "off"] = "on"

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Settings:
        """Read and validate the ``PRIMER_*`` variables."""
        env = os.environ if environ is None else environ
        key = env.get("PRIMER_API_KEY", "").strip()
        return cls(
            api_key=SecretStr(key) if key else None,
            base_url=_url("PRIMER_BASE_URL", env.get("PRIMER_BASE_URL", cls.model_fields["base_url"].default)),
            model=env.get("PRIMER_MODEL", "").strip() or cls.model_fields["model"].default,
            service_url=_url(
                "PRIMER_SERVICE_URL", env.get("PRIMER_SERVICE_URL", cls.model_fields["service_url"].default)
            ),
            service_key=SecretStr(env.get("PRIMER_SERVICE_KEY", "").strip() or DEFAULT_SERVICE_KEY),
            live=_choice("PRIMER_LIVE", env.get("PRIMER_LIVE", "auto").strip() or "auto", ("auto", "off", "refresh")),
            traces=_choice("PRIMER_TRACES", env.get("PRIMER_TRACES", "on").strip() or "on", ("on", "off")),
        )

    @property
    def live_enabled(self) -> bool:
        """Whether live runs may happen: a key is set and live is not off."""
        return self.api_key is not None and self.live != "off"

    def secrets(self) -> list[str]:
        """Every secret value, for the redactor."""
        values = [self.service_key.get_secret_value()]
        if self.api_key is not None:
            values.append(self.api_key.get_secret_value())
        return values
