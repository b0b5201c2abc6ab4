"""What a run's tokens cost: a price table, the package's own (``prices.toml``) extended by the book's.

Per model: US dollars per million input, cached input and output tokens, and the day they were read.
Only live calls cost anything (a mock's token counts are scripted); a run with a call whose model is
not in the table has no cost, not a smaller one.
"""

from __future__ import annotations

import contextlib
import datetime
import hashlib
import math
from collections.abc import Iterable, Mapping
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from primer.errors import ConfigError

if TYPE_CHECKING:
    from primer.trace import ModelCall, ScenarioRun


_EXAMPLE = "{input: 0.5, cached_input: 0.05, output: 1.5, read: 2026-11-01}"


class Price(NamedTuple):  # not a dataclass: made at every import, and a dataclass takes 6x the instructions
    """One model's price: US dollars per million tokens, and the day it was read."""

    model: str
    input: float
    output: float
    read: str  # the day, as 2026-11-01
    cached_input: float | None = None  # None: billed as input
    note: str | None = None
    source: str | None = None

    def of(self, call: ModelCall) -> float:
        """What the call's tokens cost, in dollars (0 for a call that reported none)."""
        usage = call.usage
        if usage is None:
            return 0.0
        cached = min(usage.cached_tokens or 0, usage.input_tokens)
        cached_price = self.input if self.cached_input is None else self.cached_input
        # Reasoning tokens are counted in the output tokens already.
        uncached = (usage.input_tokens - cached) * self.input
        return (uncached + cached * cached_price + usage.output_tokens * self.output) / 1_000_000

    @property
    def described(self) -> str:
        """``deepseek-flash at $0.30 in, $0.006 cached, $1.20 out per million tokens (read 2026-12-01; ...)``."""
        cached = "" if self.cached_input is None else f", ${self.cached_input:g} cached"
        prices = f"${self.input:.2f} in{cached}, ${self.output:.2f} out per million tokens"
        return f"{self.model} at {prices} (read {self.read}{f'; {self.note}' if self.note else ''})"


class Cost(NamedTuple):
    """What some calls cost: the dollars, as ``$0.0012``, ``prices read 2026-12-01``, each price used in words."""

    dollars: float
    text: str
    read: str
    described: str


def dollars(amount: float) -> str:
    """``$0.00017``, ``$0.0012``, ``$0.12``, ``$3.40``: enough figures to tell costs this small apart."""
    if amount <= 0:
        return "$0"
    if amount >= 1:
        return f"${amount:,.2f}"
    return f"${amount:.{max(2, 1 - math.floor(math.log10(amount)))}f}"


_FILE = Path(__file__).with_name("prices.toml")
_NAMES = Price._fields[1:]


def _day(value: Any) -> str | None:  # 2026-11-01, from a date (YAML's, TOML's) or its text
    with contextlib.suppress(ValueError, TypeError):
        return (value if isinstance(value, datetime.date) else datetime.date.fromisoformat(value)).isoformat()[:10]
    return None


def _price(model: str, figures: Any, where: str) -> Price:
    def wrong(problem: str) -> ConfigError:
        return ConfigError(
            f"{where}: the price of `{model}` {problem}. Write it as `{model}: {_EXAMPLE}` "
            "(US dollars per million tokens, and the day you read them from the provider's page)."
        )

    if not isinstance(figures, Mapping):
        raise wrong(f"is {type(figures).__name__}, not a mapping")
    if extra := sorted(set(figures) - set(_NAMES)):
        raise wrong(f"has {extra[0]}, which a price does not have (it has {', '.join(sorted(_NAMES))})")
    given: dict[str, Any] = {name: figures.get(name) for name in _NAMES}
    for name, value in given.items():
        if name == "read":
            ok, what = _day(value) is not None, "the day the price was read, such as 2026-11-01"
        elif name in {"note", "source"}:
            ok, what = value is None or isinstance(value, str), "text"
        else:
            number = type(value) in {int, float} and math.isfinite(value) and value >= 0
            ok, what = number or (value is None and name == "cached_input"), "a number of dollars, 0 or more"
        if not ok:
            raise wrong(f"has {name} {value!r}: it must be {what}")
    return Price(model, **{**given, "read": _day(given["read"])})


class PriceTable(NamedTuple):
    """Prices by model name: ``own`` over the package's table (read on first use) if ``package``."""

    own: tuple[Price, ...] = ()
    package: bool = False

    @property
    def prices(self) -> tuple[Price, ...]:
        """Every price: the package's (if ``package``) but those ``own`` names again, then ``own``."""
        named = {p.model for p in self.own}
        return (*(p for p in (_package_prices() if self.package else ()) if p.model not in named), *self.own)

    def get(self, model: str | None) -> Price | None:
        """The model's price, or None: it costs what is not known."""
        return next((p for p in self.prices if p.model == model), None)

    @property
    def key(self) -> str:
        """A digest of the table, so a changed price renders the pages again.

        The package's own table is named, not read: ``prices.toml`` is one of the files ``renderer_version`` hashes.
        """
        return hashlib.sha256(repr((self.own, self.package)).encode()).hexdigest()[:16]

    def extended(self, entries: Mapping[str, Any] | None, *, where: str) -> PriceTable:
        """The table with ``entries`` (model → figures) over its own (``ConfigError`` naming ``where``: not prices)."""
        if not entries:
            return self
        if not isinstance(entries, Mapping):
            raise ConfigError(
                f"{where}: the prices must be a mapping of model names to their prices, "
                f"such as `my-model: {_EXAMPLE}`, not {type(entries).__name__}."
            )
        given = {str(model): _price(str(model), figures, where) for model, figures in entries.items()}
        return PriceTable((*(p for p in self.own if p.model not in given), *given.values()), self.package)

    def cost(self, runs: Iterable[ScenarioRun]) -> Cost | None:
        """What the live calls of ``runs`` cost; None if none reported tokens, or one's price is not known."""
        calls = [t.model_call for run in runs for t in run.turns if t.model_call.kind == "live" and t.model_call.usage]
        priced = [(price, call) for call in calls if (price := self.get(call.model)) is not None]
        if not calls or len(priced) < len(calls):
            return None
        total, used = sum(price.of(call) for price, call in priced), {price.model: price for price, _ in priced}
        read = "prices read " + ", ".join(sorted({p.read for p in used.values()}))
        return Cost(total, dollars(total), read, "; ".join(p.described for p in used.values()))


def default_prices() -> PriceTable:
    """The package's own table (``prices.toml``)."""
    return PriceTable(package=True)


def _package_prices() -> tuple[Price, ...]:
    # Read again once edited: under ``mkdocs serve`` the edit is a new key (``renderer_files``), so a new page.
    found = _FILE.stat()
    return _read_package(_FILE, found.st_size, found.st_mtime_ns)


@lru_cache(maxsize=1)
def _read_package(path: Path, size: int, mtime_ns: int) -> tuple[Price, ...]:
    import tomllib  # a warm build renders nothing, and reads no price

    return PriceTable().extended(tomllib.loads(path.read_text("utf-8")), where="primer/prices.toml").own
