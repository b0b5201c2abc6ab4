"""What a run's tokens cost: a price table, the package's own extended by the book's.

The package ships ``prices.toml``: per model, US dollars per million input,
cached input and output tokens, and the day the figures were read from the
provider's page. A book's configuration extends or overrides it, a whole
entry per model (``prices`` of the ``trace-book`` plugin, or of the Markdown
extension, which is what Zensical reads)::

    table = default_prices().extended(
        {"my-model": {"input": 0.5, "cached_input": 0.05, "output": 1.5, "read": "2026-11-01"}},
        where="mkdocs.yml, the trace-book plugin's prices",
    )
    cost = table.cost(live_run.scenarios)       # None: not every call's price is known
    cost.text                                   # "$0.0012"

A cost is only ever worked out for live calls: a mock model's token counts
are scripted, and nobody is billed for them. A run with a call whose model
is not in the table has no cost (not a smaller one): a total that leaves a
call out would be wrong without saying so.
"""

from __future__ import annotations

import datetime
import hashlib
import json
import math
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from functools import cache, cached_property
from importlib.resources import files
from typing import TYPE_CHECKING, Any

from primer.errors import ConfigError

if TYPE_CHECKING:
    from primer.trace import ModelCall, ScenarioRun

__all__ = ["Cost", "Price", "PriceTable", "default_prices", "dollars"]

_FIELDS = {"input", "cached_input", "output", "read", "note", "source"}
_EXAMPLE = "{input: 0.5, cached_input: 0.05, output: 1.5, read: 2026-11-01}"


@dataclass(frozen=True)
class Price:
    """One model's price: US dollars per million tokens, and when it was read."""

    model: str
    input: float
    #: None: the provider gives cached input no price of its own (billed as input).
    cached_input: float | None
    output: float
    #: The day the figures were read (``2026-11-01``).
    read: str
    note: str | None = None
    source: str | None = None

    def of(self, call: ModelCall) -> float:
        """What the call's tokens cost, in dollars (0 for a call that reported none)."""
        usage = call.usage
        if usage is None:
            return 0.0
        cached = min(usage.cached_tokens or 0, usage.input_tokens)
        cached_price = self.input if self.cached_input is None else self.cached_input
        # Reasoning tokens are output tokens already (they are counted in them).
        per_million = (
            (usage.input_tokens - cached) * self.input + cached * cached_price + usage.output_tokens * self.output
        )
        return per_million / 1_000_000

    @property
    def described(self) -> str:
        """``deepseek-flash at $0.30 in, $0.006 cached, $1.20 out per million tokens (read 2026-12-01; ...)``."""
        cached = "" if self.cached_input is None else f", ${self.cached_input:g} cached"
        note = f"; {self.note}" if self.note else ""
        return (
            f"{self.model} at ${self.input:.2f} in{cached}, ${self.output:.2f} out per million tokens "
            f"(read {self.read}{note})"
        )


@dataclass(frozen=True)
class Cost:
    """What some calls cost, and the prices it was worked out from."""

    dollars: float
    prices: tuple[Price, ...]

    @property
    def text(self) -> str:
        """``$0.0012``: two significant figures below a dollar, cents above."""
        return dollars(self.dollars)

    @property
    def read(self) -> str:
        """``prices read 2026-12-01`` (the dates of every price used)."""
        return "prices read " + ", ".join(sorted({p.read for p in self.prices}))

    @property
    def described(self) -> str:
        """Each price used, in words, for a tooltip."""
        return "; ".join(p.described for p in self.prices)


def dollars(amount: float) -> str:
    """``$0.00017``, ``$0.0012``, ``$0.12``, ``$3.40``: enough figures to tell costs this small apart."""
    if amount <= 0:
        return "$0"
    if amount >= 1:
        return f"${amount:,.2f}"
    decimals = max(2, 1 - math.floor(math.log10(amount)))
    return f"${amount:.{decimals}f}"


@dataclass(frozen=True)
class PriceTable:
    """Prices by model name; ``key`` stands for the whole table in a cache key."""

    prices: tuple[Price, ...] = ()

    def get(self, model: str | None) -> Price | None:
        """The model's price, or None if it is not in the table."""
        return next((p for p in self.prices if p.model == model), None)

    @cached_property
    def key(self) -> str:
        """A digest of every figure, so a changed price renders the pages again (made once: every marker asks)."""
        data = json.dumps([asdict(p) for p in self.prices], sort_keys=True)
        return hashlib.sha256(data.encode()).hexdigest()[:16]

    def extended(self, entries: Mapping[str, Any] | None, *, where: str) -> PriceTable:
        """The table with ``entries`` (model name → its figures) added, each in place of the same model's.

        Raises ``ConfigError`` naming ``where`` and the model for an entry that is not a price.
        """
        if not entries:
            return self
        if not isinstance(entries, Mapping):
            raise ConfigError(
                f"{where}: the prices must be a mapping of model names to their prices, "
                f"such as `my-model: {_EXAMPLE}`, not {type(entries).__name__}."
            )
        given = {str(model): _price(str(model), figures, where) for model, figures in entries.items()}
        kept = [p for p in self.prices if p.model not in given]
        return PriceTable((*kept, *given.values()))

    def cost(self, runs: Iterable[ScenarioRun]) -> Cost | None:
        """What the live calls of ``runs`` cost; None if none reported tokens, or one's price is not known."""
        total, used = 0.0, {}
        for run in runs:
            for turn in run.turns:
                call = turn.model_call
                if call.kind != "live" or call.usage is None:
                    continue
                price = self.get(call.model)
                if price is None:
                    return None
                total += price.of(call)
                used[price.model] = price
        return Cost(total, tuple(used.values())) if used else None


def _price(model: str, figures: Any, where: str) -> Price:
    def wrong(problem: str) -> ConfigError:
        return ConfigError(
            f"{where}: the price of `{model}` {problem}. Write it as `{model}: {_EXAMPLE}` "
            "(US dollars per million tokens, and the day you read them from the provider's page)."
        )

    if not isinstance(figures, Mapping):
        raise wrong(f"is {type(figures).__name__}, not a mapping")
    unknown = sorted(set(map(str, figures)) - _FIELDS)
    if unknown:
        raise wrong(f"has {', '.join(unknown)}, which a price does not have (it has {', '.join(sorted(_FIELDS))})")

    def amount(name: str, *, required: bool = True) -> float | None:
        value = figures.get(name)
        if value is None and not required:
            return None
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
            raise wrong(f"has {name} {value!r}: it must be a number of dollars, 0 or more")
        return float(value)

    read = figures.get("read")
    if isinstance(read, datetime.datetime):
        read = read.date()
    if isinstance(read, datetime.date):
        read = read.isoformat()
    try:
        datetime.date.fromisoformat(str(read))
    except ValueError:
        raise wrong(f"has read {read!r}: it must be the day the price was read, such as 2026-11-01") from None
    texts = {}
    for name in ("note", "source"):
        value = figures.get(name)
        if value is not None and not isinstance(value, str):
            raise wrong(f"has {name} {value!r}: it must be text")
        texts[name] = value
    return Price(
        model=model,
        input=amount("input") or 0.0,
        cached_input=amount("cached_input", required=False),
        output=amount("output") or 0.0,
        read=str(read),
        note=texts["note"],
        source=texts["source"],
    )


@cache
def default_prices() -> PriceTable:
    """The package's own table (``prices.toml``), read once."""
    text = files("primer.book").joinpath("prices.toml").read_text(encoding="utf-8")
    return PriceTable().extended(tomllib.loads(text), where="primer/book/prices.toml")
