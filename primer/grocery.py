"""The grocery shop every chapter's scenarios talk about.

The shelf (prices and stock) is local data. The argument models are shared by
the chapters; each chapter writes its own tool functions, since what a tool
does behind its declaration (look it up here, or ask a service) is what the
chapter teaches.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, GetJsonSchemaHandler
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import CoreSchema

__all__ = ["MAX_ORDER", "PRICES", "STOCK", "GroceryItem", "LowestStockItem", "PlaceOrder", "PriceOf"]

#: The most of one item a single order may ask for.
MAX_ORDER = 12


class GroceryItem(StrEnum):
    """The four things the shop sells."""

    bread = "bread"
    butter = "butter"
    chips = "chips"
    milk = "milk"

    @classmethod
    def __get_pydantic_json_schema__(cls, core_schema: CoreSchema, handler: GetJsonSchemaHandler) -> JsonSchemaValue:
        # The model only needs the choices: the class name and its docstring
        # would be noise in every declaration the model reads.
        schema: dict[str, Any] = handler(core_schema)
        schema.pop("title", None)
        schema.pop("description", None)
        return schema


PRICES = {
    GroceryItem.bread: "1.45",
    GroceryItem.butter: "3.10",
    GroceryItem.chips: "0.95",
    GroceryItem.milk: "1.20",
}

STOCK = {
    GroceryItem.bread: 14,
    GroceryItem.butter: 1,
    GroceryItem.chips: 31,
    GroceryItem.milk: 9,
}


class PriceOf(BaseModel):
    """The current shelf price of one of an item, in pounds."""

    model_config = ConfigDict(title="price_of")
    item: GroceryItem


class PlaceOrder(BaseModel):
    """Order a quantity of an item. Placing an order twice orders it twice."""

    model_config = ConfigDict(title="place_order")
    item: GroceryItem
    quantity: int


class LowestStockItem(BaseModel):
    """Which item there is least of in stock."""

    model_config = ConfigDict(title="lowest_stock_item")
