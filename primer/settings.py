"""Settings from the environment, validated, with a clear word when wrong.

``PRIMER_API_KEY``          the provider key; its presence turns live runs on
``PRIMER_BASE_URL``         an OpenAI-compatible endpoint (default OpenAI's)
``PRIMER_MODEL``            the model name
``PRIMER_SERVICE_URL``      the service the tools call (default httpbin.org)
``PRIMER_SERVICE_KEY``      the bearer token sent to the service
``PRIMER_LIVE``             ``auto`` (default), ``off`` or ``refresh``
``PRIMER_TRACES``           ``on`` (default) or ``off``: the whole machinery
``PRIMER_MODEL_TIMEOUT``    seconds to wait for the provider's answer (60)
``PRIMER_SERVICE_TIMEOUT``  seconds to wait for the service's answer (2)
``PRIMER_CHAPTERS``         the chapters' package (``primer.chapters``)
``PRIMER_SERVICES``         live URLs of a code scenario's services: ``weather=https://...,shop=https://...``

Every ``PRIMER_*`` variable is read here and nowhere else (their names are
in ``primer.variables``, with the one switch a build reads before loading
anything: ``PRIMER_TRACES=off``). A name that is none of these
(``PRIMER_API_KY``) is reported with the closest known one: a typo would
otherwise quietly leave a setting at its default.

Every problem is a ``ConfigError`` naming the variable and what is wrong,
and never repeating a value that could be a secret (a key pasted into the
wrong variable): an error message may end up in a log. Only a short word
or number is quoted back (``PRIMER_LIVE must be one of auto, off, refresh,
not 'sometimes'``). A variable set to
nothing (or to spaces) is one of them: unset it to get the default, since
``PRIMER_MODEL=`` quietly meaning ``gpt-4o-mini`` would hide a mistake.
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
from collections.abc import Callable, Mapping
from typing import Any, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, SecretStr, ValidationInfo, field_validator

from primer.errors import ConfigError
from primer.locator import DEFAULT_PACKAGE
from primer.redact import MIN_SECRET_LENGTH, Redactor
from primer.variables import VARIABLES, package_name, unknown_variables
from primer.variables import quoted as _not

__all__ = ["DEFAULT_SERVICE_KEY", "VARIABLES", "Settings"]

DEFAULT_SERVICE_KEY = "primer-demo-key"


#: Where an unknown ``PRIMER_*`` name is reported when the caller gives no other place.
log = logging.getLogger("primer.settings")


def _url(variable: str, value: str) -> str:
    value = value.strip()
    example = "https://api.openai.com/v1" if variable == "PRIMER_BASE_URL" else "https://httpbin.org"
    # The value is never quoted: a URL can carry a key (a pasted "https://host/v1 sk-..."), and this may be logged.
    wrong = f"{variable} must be an http(s) URL such as {example}"
    if any(c.isspace() for c in value):
        raise ConfigError(f"{wrong}: it contains a space.")
    try:
        parts = urlsplit(value)
        port = parts.port  # raises for a port that is not a number from 0 to 65535
    except ValueError:
        raise ConfigError(f"{wrong}: it is not a URL that can be read (check its host and port).") from None
    if parts.scheme not in ("http", "https"):
        raise ConfigError(f"{wrong}: it does not start with http:// or https://.")
    if not parts.hostname:
        raise ConfigError(f"{wrong}: it names no host.")
    if parts.username is not None or parts.password is not None:
        # A URL is recorded in every trace: credentials do not belong in it.
        raise ConfigError(
            f"{variable} must not carry a user or password; put the key in "
            f"{'PRIMER_API_KEY' if variable == 'PRIMER_BASE_URL' else 'PRIMER_SERVICE_KEY'} instead."
        )
    if port == 0:
        raise ConfigError(f"{wrong}: port 0 is not a port one can connect to.")
    if parts.query or parts.fragment:
        raise ConfigError(f"{wrong}: it must not have a query (?...) or a fragment (#...).")
    return value.rstrip("/")


def _choice(variable: str, value: str, choices: tuple[str, ...]) -> str:
    if value.strip().lower() not in choices:
        raise ConfigError(f"{variable} must be one of {', '.join(choices)}{_not(value.strip())}.")
    return value.strip().lower()


def _secret(variable: str, value: str) -> str:
    # Never quote the value: this message may be printed or logged.
    if len(value) < MIN_SECRET_LENGTH:
        raise ConfigError(
            f"{variable} is shorter than {MIN_SECRET_LENGTH} characters: a value that short could not be "
            "told apart from ordinary text, so it could not be kept out of the traces. Use the real key."
        )
    if not value.isascii() or not value.isprintable() or any(c.isspace() for c in value):
        raise ConfigError(
            f"{variable} contains a space, a control character or a non-ASCII character, which cannot be sent "
            "in an HTTP header: check it was copied whole and alone."
        )
    return value


def _seconds(variable: str, value: Any) -> float:
    try:
        seconds = float(value)
    except (TypeError, ValueError):
        raise ConfigError(
            f"{variable} must be a number of seconds such as 2 or 0.5{_not(str(value).strip())}."
        ) from None
    if not math.isfinite(seconds) or seconds <= 0:
        raise ConfigError(f"{variable} must be a positive number of seconds{_not(str(value).strip())}.")
    return seconds


class Settings(BaseModel):
    """What a run needs to know about the outside world.

    Built from the environment by ``from_env``, or directly in tests; either
    way every value is checked, and a bad one is a ``ConfigError`` that names
    its variable.
    """

    model_config = ConfigDict(frozen=True)

    api_key: SecretStr | None = None
    base_url: str = "https://api.openai.com/v1"
    model: str = "gpt-4o-mini"
    service_url: str = "https://httpbin.org"
    service_key: SecretStr = SecretStr(DEFAULT_SERVICE_KEY)
    live: Literal["auto", "off", "refresh"] = "auto"
    traces: Literal["on", "off"] = "on"
    #: Seconds to wait for the provider (a reasoning model can think for long).
    model_timeout: float = 60.0
    #: Seconds to wait for the service (the seeds' 2 s, which is what makes
    #: httpbin's ``/delay/10`` a timeout).
    service_timeout: float = 2.0
    #: The chapters' package (``chapters_package`` says which one a book uses).
    chapters: str = DEFAULT_PACKAGE
    #: Where a code scenario's named services live in live runs (``primer.services``).
    services: dict[str, str] = {}

    @field_validator("base_url", "service_url", mode="before")
    @classmethod
    def _check_url(cls, value: Any, info: ValidationInfo) -> str:
        return _url(VARIABLES[info.field_name or ""], str(value))

    @field_validator("api_key", "service_key", mode="before")
    @classmethod
    def _check_secret(cls, value: Any, info: ValidationInfo) -> Any:
        if value is None:
            return None
        raw = value.get_secret_value() if isinstance(value, SecretStr) else str(value)
        return SecretStr(_secret(VARIABLES[info.field_name or ""], raw))

    @field_validator("model", mode="before")
    @classmethod
    def _check_model(cls, value: Any) -> str:
        name = str(value).strip()
        if not name or any(c.isspace() for c in name):
            raise ConfigError("PRIMER_MODEL must be a model name such as gpt-4o-mini: it contains a space.")
        return name

    @field_validator("live", "traces", mode="before")
    @classmethod
    def _check_choice(cls, value: Any, info: ValidationInfo) -> str:
        field = info.field_name or ""
        choices = ("auto", "off", "refresh") if field == "live" else ("on", "off")
        return _choice(VARIABLES[field], str(value), choices)

    @field_validator("chapters", mode="before")
    @classmethod
    def _check_package(cls, value: Any) -> str:
        return package_name("PRIMER_CHAPTERS", value)

    @field_validator("services", mode="before")
    @classmethod
    def _check_services(cls, value: Any) -> dict[str, str]:
        if isinstance(value, Mapping):
            pairs = [(str(name), str(url)) for name, url in value.items()]
        else:
            pairs = []
            for part in str(value).replace(",", " ").split():
                name, equals, url = part.partition("=")
                if not equals or not name:
                    raise ConfigError(
                        f"PRIMER_SERVICES must be name=URL pairs such as weather=http://127.0.0.1:8001, "
                        f"separated by commas; {part!r} is not one."
                    )
                pairs.append((name, url))
        return {name.strip(): _url("PRIMER_SERVICES", url) for name, url in pairs}

    @field_validator("model_timeout", "service_timeout", mode="before")
    @classmethod
    def _check_seconds(cls, value: Any, info: ValidationInfo) -> float:
        return _seconds(VARIABLES[info.field_name or ""], value)

    @classmethod
    def from_env(
        cls, environ: Mapping[str, str] | None = None, *, warn: Callable[[str], object] | None = None
    ) -> Settings:
        """Read and validate the ``PRIMER_*`` variables; one set but empty is an error naming it.

        A ``PRIMER_*`` name that is not one of them is passed to ``warn``
        (by default a warning of the ``primer.settings`` logger), with the
        closest known name: see ``unknown_variables``.
        """
        env = os.environ if environ is None else environ
        for message in cls.unknown_variables(env):
            (warn or log.warning)(message)

        def get(field: str) -> str | None:
            variable = VARIABLES[field]
            if variable not in env:
                return None
            value = env[variable].strip()
            if not value:
                raise ConfigError(f"{variable} is set but empty. {cls._unset(field)}")
            return value

        # Only what is set: the rest keeps its default, and is validated the
        # same way as a value given directly (Settings(base_url=...)).
        values = {field: value for field in VARIABLES if (value := get(field)) is not None}
        return cls(**values)

    @classmethod
    def without_live(cls, environ: Mapping[str, str] | None = None) -> Settings:
        """The settings a build can still use when ``from_env`` failed: live runs off.

        Each variable that is valid on its own is kept (``PRIMER_TRACES``,
        ``PRIMER_CHAPTERS``, ...), the key never: whatever was wrong, this
        build runs no live scenario.
        """
        env = os.environ if environ is None else environ
        values: dict[str, Any] = {}
        for field, variable in VARIABLES.items():
            if field == "api_key" or not env.get(variable, "").strip():
                continue
            try:
                cls(**{field: env[variable].strip()})
            except (ConfigError, ValueError):
                continue
            values[field] = env[variable].strip()
        return cls(**values)

    @classmethod
    def keys_from_env(cls, environ: Mapping[str, str] | None = None) -> dict[str, str]:
        """The keys the environment sets, by field (``api_key``, ``service_key``): those valid as keys.

        Never an error, whatever else is wrong: for a replay, which must
        scrub what the recording scrubbed whether or not it could run live.
        """
        env = os.environ if environ is None else environ
        keys = {}
        for field in ("api_key", "service_key"):
            value = env.get(VARIABLES[field], "").strip()
            with contextlib.suppress(ConfigError):
                keys[field] = _secret(VARIABLES[field], value)
        return keys

    @classmethod
    def keys_redactor(cls, environ: Mapping[str, str] | None = None) -> Redactor:
        """A redactor of the keys the environment sets (``keys_from_env``), whatever else is wrong in it."""
        return Redactor(cls.keys_from_env(environ).values())

    @staticmethod
    def unknown_variables(environ: Mapping[str, str]) -> list[str]:
        """One sentence for each ``PRIMER_*`` name no setting reads (``primer.variables.unknown_variables``)."""
        return unknown_variables(environ)

    @classmethod
    def _unset(cls, field: str) -> str:
        # What unsetting the variable gives. No secret's default is quoted:
        # the message may be logged.
        if field == "api_key":
            return "Set it to the provider's key, or unset it to build without live runs."
        if field == "service_key":
            return "Set it to the service's token, or unset it for the book's demo key."
        default = cls.model_fields[field].default
        shown = f"{default:g} seconds" if isinstance(default, float) else default
        return f"Give it a value, or unset it for the default ({shown})."

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

    def redactor(self) -> Redactor:
        """A redactor that keeps every secret of these settings out of what it is given."""
        return Redactor(self.secrets())

    def chapters_package(self, configured: str | None = None) -> str:
        """The chapters' package a book uses: ``PRIMER_CHAPTERS`` if set, else ``configured``, else the default.

        ``configured`` is what the book's own configuration names (the trace
        extension's ``chapters`` option in ``mkdocs.yml``): the environment
        wins, as it does over every setting, so one build can point a book
        at another package without editing its configuration.
        """
        if "chapters" in self.model_fields_set or not configured:
            return self.chapters
        return package_name("The trace extension's chapters option", configured)
