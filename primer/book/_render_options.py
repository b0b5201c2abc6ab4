"""What a book's configuration changes in how its traces are drawn, as one value with one key.

The renderer draws the same traces the same way for the same options, so a
cache of rendered HTML keys its entries by ``RenderOptions.key`` as well as by
the traces and the renderer's code: a price edited in ``mkdocs.yml`` renders
the pages again. Light to build (no trace models, no templates): the
Markdown extension makes one per build, traces off too.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from primer.book._prices import PriceTable, default_prices

__all__ = ["RenderOptions"]


@dataclass(frozen=True)
class RenderOptions:
    """The renderer's inputs besides the traces: the price table costs are worked out from."""

    prices: PriceTable = field(default_factory=default_prices)

    @property
    def key(self) -> str:
        """What stands for these options in a cache key."""
        return f"prices={self.prices.key}"
