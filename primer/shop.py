"""The shop's tools, written once, in the two ways the chapters use them.

Off the shelf list: local, instant, and never failing::

    lowest_stock_item, shelf_price_of

Through the service: an HTTP call that can be busy, slow or refuse, made
with the retry rules of ``primer.service``. A lookup is a ``GET`` and
idempotent (safe to repeat); an order is a ``POST`` and not idempotent
(repeating it orders twice), so it carries an idempotency key::

    price_of, place_order, place_order_for_reference

``place_order_by_get`` sends the order as a ``GET`` instead, as chapter 9's
recorded live run did. HTTP promises that a GET is safe to repeat, and
proxies and clients may repeat one on their own: a real shop takes orders by
POST. It is kept so that recording still tells the truth about its code.

Each is declared from its pydantic model in ``primer.grocery``, so the
``price_of`` off the shelf and the one through the service look the same to
the model: what differs is what happens behind the declaration.
"""

from __future__ import annotations

from typing import Any

from primer.errors import ArgumentsRejected, quoted
from primer.grocery import MAX_ORDER, PRICES, STOCK, LowestStockItem, PlaceOrder, PriceOf
from primer.tools import ToolContext, tool

__all__ = [
    "check_quantity",
    "lowest_stock_item",
    "place_order",
    "place_order_by_get",
    "place_order_for_reference",
    "price_of",
    "shelf_price_of",
]


@tool(LowestStockItem)
def lowest_stock_item(args: LowestStockItem, ctx: ToolContext) -> str:
    """Look the stock up on the shelf list."""
    return min(STOCK, key=STOCK.__getitem__).value


@tool(PriceOf)
def shelf_price_of(args: PriceOf, ctx: ToolContext) -> str:
    """Look the price up on the shelf list."""
    return PRICES[args.item]


@tool(PriceOf)
def price_of(args: PriceOf, ctx: ToolContext) -> str:
    """Ask the service for the price; a lookup is idempotent, so safe to retry."""
    body = ctx.require_service().get({"item": args.item.value}, idempotent=True)
    # httpbin knows nothing of groceries: the shelf list answers for it live.
    price = body.get("price") if isinstance(body, dict) else None
    return str(price or PRICES[args.item])


def check_quantity(args: PlaceOrder) -> None:
    """Refuse a quantity outside 1..MAX_ORDER: the model can fix that."""
    if not 1 <= args.quantity <= MAX_ORDER:
        raise ArgumentsRejected(f"quantity {quoted(args.quantity)} must be between 1 and {MAX_ORDER}")


def _order(args: PlaceOrder, ctx: ToolContext) -> Any:
    check_quantity(args)
    return ctx.require_service().post({"item": args.item.value, "quantity": args.quantity}, idempotent=False)


@tool(PlaceOrder)
def place_order(args: PlaceOrder, ctx: ToolContext) -> str:
    """POST the order to the service; an order is not idempotent."""
    _order(args, ctx)
    return f"ordered {args.quantity} x {args.item.value}"


@tool(PlaceOrder)
def place_order_by_get(args: PlaceOrder, ctx: ToolContext) -> str:
    """Send the order as a GET, as chapter 9's live run recorded it (see the module's docstring)."""
    check_quantity(args)
    ctx.require_service().get({"item": args.item.value, "quantity": args.quantity}, idempotent=False)
    return f"ordered {args.quantity} x {args.item.value}"


@tool(PlaceOrder)
def place_order_for_reference(args: PlaceOrder, ctx: ToolContext) -> str:
    """Send the order to the service and return its reference."""
    body = _order(args, ctx)
    reference = body.get("reference") if isinstance(body, dict) else None
    # httpbin only echoes the order back: without a reference, say so.
    return f"ordered {args.quantity} x {args.item.value} (reference {reference or 'not given'})"
