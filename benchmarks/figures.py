"""The benchmarks' statistics: medians of paired ratios, with the spread that says what they resolve.

A ratio of two builds is measured as pairs (the two run back to back in one
round, taking turns at going first), so the machine's drift touches both
alike; the figure is the median of the pairs' ratios, given with

* its 95 % confidence interval, from the order statistics of the pairs
  (distribution-free: ranks from the binomial distribution, no normality
  assumed), and
* the interquartile range of the pairs, the spread of one pair.

``against`` says where the interval lies against a target: within it, above
it (missed), or across it: not resolved, and then (``needs``) about how many
pairs would resolve it, from this run's spread, or that instruction counts
(``--callgrind``) would.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeVar

T = TypeVar("T")


def median(values: Sequence[float]) -> float:
    """The median of the values that are numbers (a page that never showed an edit is not one)."""
    numbers = [v for v in values if not math.isnan(v)]
    return statistics.median(numbers) if numbers else float("nan")


def _ranks(n: int, level: float = 0.95) -> tuple[int, int] | None:
    # The widest-first pair of ranks (k, n - 1 - k) whose interval holds the
    # median with probability >= level, under Binomial(n, 1/2).
    best = None
    for k in range(n // 2):
        inside = sum(math.comb(n, i) for i in range(k + 1, n - k)) / 2**n
        if inside >= level:
            best = (k, n - 1 - k)
        else:
            break
    return best


#: What resolves a ratio that timing cannot, where the command can run under valgrind.
COUNTED = "instruction counts (--callgrind), which load cannot move"


@dataclass(frozen=True)
class Spread:
    """A median of pairs' values, its 95 % interval and the pairs' interquartile range."""

    value: float
    low: float
    high: float
    q1: float
    q3: float
    n: int
    #: False where too few pairs give a 95 % interval (fewer than 6): low/high are then min/max.
    exact: bool

    @property
    def half_width(self) -> float:
        """Half the interval's width: how far the median may be off."""
        return (self.high - self.low) / 2

    def text(self, digits: int = 3, unit: str = "") -> str:
        """``1.012 [0.998-1.020] (IQR 0.990-1.031, 15 pairs)``, the interval being min-max when not exact."""
        what = "95 %" if self.exact else "min-max"
        f = f"{{:.{digits}f}}"
        return (
            f"{f.format(self.value)}{unit} ({what} {f.format(self.low)}-{f.format(self.high)}, "
            f"IQR {f.format(self.q1)}-{f.format(self.q3)}, n={self.n})"
        )

    def against(self, target: float, digits: int = 3, *, counted: str = COUNTED, samples: str = "pairs") -> str:
        """The text, the target, and whether this many ``samples`` resolve it (if not, what would: ``counted`` too)."""
        if self.exact and self.high <= target:
            verdict = "the interval is within it"
        elif self.exact and self.low > target:
            verdict = "the interval is above it: missed"
        else:
            verdict = f"not resolved: {self.needs(target, counted, samples)}"
        return f"{self.text(digits)}   target <= {target:g}; {verdict}"

    def needs(self, target: float, counted: str = COUNTED, samples: str = "pairs") -> str:
        """What would resolve ``target``: about how many ``samples``, the spread of one being what it is here."""
        # The interval narrows as 1/sqrt(n): to fit between the median and the
        # target it must shrink by |median - target| / half-width.
        gap = abs(self.value - target)
        if not self.exact or self.half_width == 0 or math.isnan(gap):
            return f"too few {samples} for a 95 % interval (6 at least)"
        if gap == 0:
            return f"the median is the target: no number of {samples} tells it apart; {counted}"
        more = math.ceil(self.n * (self.half_width / gap) ** 2)
        return (
            f"the 95 % interval is +-{self.half_width:.3g}, the median {gap:.3g} from the target: about {more} "
            f"{samples} would tell it apart, or {counted}"
        )


def spread(values: Sequence[float]) -> Spread:
    """The median of ``values`` (e.g. pairs' ratios) with its interval and IQR."""
    data = sorted(v for v in values if not math.isnan(v))
    if not data:
        nan = float("nan")
        return Spread(nan, nan, nan, nan, nan, 0, exact=False)
    ranks = _ranks(len(data))
    low, high = (data[ranks[0]], data[ranks[1]]) if ranks else (data[0], data[-1])
    q1, q3 = (statistics.quantiles(data, n=4)[0::2]) if len(data) > 1 else (data[0], data[0])
    return Spread(statistics.median(data), low, high, q1, q3, len(data), exact=ranks is not None)


def ratios(upper: Sequence[float], lower: Sequence[float]) -> Spread:
    """The spread of the pairs' ratios ``upper[i] / lower[i]``."""
    return spread([a / b for a, b in zip(upper, lower, strict=True)])


def differences(upper: Sequence[float], lower: Sequence[float]) -> Spread:
    """The spread of the pairs' differences ``upper[i] - lower[i]``."""
    return spread([a - b for a, b in zip(upper, lower, strict=True)])


def turns(items: Sequence[T], n: int) -> list[T]:
    """``items`` rotated by round ``n``: each takes its turn at going first, so none always runs after the same one."""
    k = n % len(items)
    return [*items[k:], *items[:k]]


def counted(upper: Sequence[float], lower: Sequence[float], target: float | None = None) -> str:
    """The ratio of two kinds' instruction counts, with how much a kind's runs differ, against ``target``.

    A count moves by no more than the interpreter's own variation (hash
    seeds fixed): the runs of one kind agree to a few parts in a million, so
    one run of each resolves a target whose margin is far wider than that.
    """
    ratio = median(upper) / median(lower)
    if min(len(upper), len(lower)) < 2:  # two runs show a spread
        # Measured here: two warm builds of 10 chapters, 2,958,263,048 and 2,958,263,180.
        wobble, said = 1e-6, "one run each; a kind's runs repeat to 1e-6"
    else:
        wobble = max((max(v) - min(v)) / min(v) for v in (upper, lower))
        said = f"{len(upper)}+{len(lower)} runs; a kind's differ by {wobble:.1e}"
    low, high = ratio * (1 - wobble), ratio * (1 + wobble)
    text = f"{ratio:.4f} ({low:.4f}-{high:.4f}: {said})"
    if target is None:
        return text
    if high <= target:
        verdict = "within it"
    elif low > target:
        verdict = "above it: missed"
    else:
        verdict = "not resolved: the runs differ by more than the target's margin"
    return f"{text}   target <= {target:g}; {verdict}"
