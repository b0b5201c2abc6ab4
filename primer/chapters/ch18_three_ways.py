"""One shop agent, three ways: the book's own loop, pydantic-ai, and the OpenAI Agents SDK.

The same prompt, the same system prompt, the same two tools (a price looked
up and an order placed at the shop's service), the same script. The book's
loop is a ``Scenario``; the two frameworks run as the author's own code, a
``CodeScenario``, recorded at the HTTP seam (``primer/seam.py``) and rebuilt
from the wire (``primer/from_wire.py``): what each framework sends for you is
in its requests.

The frameworks are the optional extra ``frameworks``
(``pip install 'trace-book[frameworks]'``) and are imported only when their
scenario runs. Code: ``primer/code_scenario.py``, ``primer/code_runner.py``,
``primer/scripted_provider.py``, ``primer/services.py``.
"""

from __future__ import annotations

from typing import Any

import httpx

from primer.clock import VirtualClock
from primer.code_scenario import CodeScenario, Reach
from primer.errors import MissingExtra
from primer.grocery import PRICES, GroceryItem, PlaceOrder, PriceOf
from primer.mock_service import GroceryService
from primer.models.mock import ask, call, say
from primer.scenario import SYSTEM, Scenario
from primer.services import Service
from primer.shop import place_order, price_of

PROMPT = "How much is milk? If it is under 1.50, order two."

#: The tools' descriptions: the same words primer's declarations send.
PRICE_OF = PriceOf.__doc__ or ""
PLACE_ORDER = PlaceOrder.__doc__ or ""

SCRIPT = [
    ask(call("price_of", item="milk")),
    ask(call("place_order", item="milk", quantity=2)),
    say("Milk is 1.20, under 1.50, so I ordered two."),
]


def shop(request: httpx.Request) -> httpx.Response:
    """The shop's service as the book's mock plays it: httpbin's ``/get`` and ``/post``, with groceries."""
    # A fresh one per request: the same answers every run (orders are ord-8812).
    return GroceryService(VirtualClock()).handle(request)


#: Where the frameworks' tools send their requests: httpbin, as the book's own service client does.
SHOP = Service("shop", mock=shop, url="https://httpbin.org")


def shop_client(reach: Reach) -> httpx.Client:
    """One client to the shop for the whole run: its connections and certificates are set up once."""
    return httpx.Client(base_url=reach.service("shop"), timeout=10)


def shop_price(shop: httpx.Client, item: str) -> str:
    """``GET /get?item=...``; httpbin knows no prices, so the shelf list answers for it live."""
    body = shop.get("/get", params={"item": item}).json()
    return str(body.get("price") or PRICES[GroceryItem(item)])


def shop_order(shop: httpx.Client, item: str, quantity: int) -> str:
    """``POST /post`` with the order as JSON."""
    shop.post("/post", json={"item": item, "quantity": quantity})
    return f"ordered {quantity} x {item}"


async def with_pydantic_ai(reach: Reach) -> None:
    """The shop agent on pydantic-ai: an ``Agent`` with two plain tools, on the reach's async client."""
    try:
        from pydantic_ai import Agent
        from pydantic_ai.models.openai import OpenAIChatModel
        from pydantic_ai.providers.openai import OpenAIProvider
    except ImportError as missing:
        raise MissingExtra("Chapter 18's pydantic-ai scenario", "frameworks", missing) from None

    model = OpenAIChatModel(reach.model, provider=OpenAIProvider(openai_client=reach.async_openai))
    agent = Agent(model, system_prompt=SYSTEM)
    shop = shop_client(reach)

    @agent.tool_plain(name="price_of", description=PRICE_OF)
    def price(item: GroceryItem) -> str:
        return shop_price(shop, item.value)

    @agent.tool_plain(name="place_order", description=PLACE_ORDER)
    def order(item: GroceryItem, quantity: int) -> str:
        return shop_order(shop, item.value, quantity)

    with shop:
        await agent.run(PROMPT)


async def with_agents_sdk(reach: Reach) -> None:
    """The shop agent on the OpenAI Agents SDK, configured for chat completions (see the chapter)."""
    try:
        from agents import Agent, OpenAIChatCompletionsModel, Runner, function_tool, set_tracing_disabled
    except ImportError as missing:
        raise MissingExtra("Chapter 18's Agents SDK scenario", "frameworks", missing) from None

    # Its tracing would post every run to OpenAI's own trace store: a host that is not this scenario's.
    set_tracing_disabled(True)

    shop = shop_client(reach)

    @function_tool(name_override="price_of", description_override=PRICE_OF)
    def price(item: GroceryItem) -> str:
        return shop_price(shop, item.value)

    @function_tool(name_override="place_order", description_override=PLACE_ORDER)
    def order(item: GroceryItem, quantity: int) -> str:
        return shop_order(shop, item.value, quantity)

    model = OpenAIChatCompletionsModel(model=reach.model, openai_client=reach.async_openai)
    agent: Any = Agent(name="shop", instructions=SYSTEM, tools=[price, order], model=model)
    with shop:
        await Runner.run(agent, PROMPT)


own_loop = Scenario(
    name="own_loop",
    about="The book's own loop: primer's Agent, its tools declared from pydantic models.",
    prompt=PROMPT,
    tools=[price_of, place_order],
    mock=SCRIPT,
)

pydantic_ai = CodeScenario(
    name="pydantic_ai",
    about="pydantic-ai's Agent with the same two tools, recorded at the HTTP seam.",
    code=with_pydantic_ai,
    services=[SHOP],
    mock=SCRIPT,
)

agents_sdk = CodeScenario(
    name="agents_sdk",
    about="The OpenAI Agents SDK's Runner with the same two tools, on chat completions.",
    code=with_agents_sdk,
    services=[SHOP],
    mock=SCRIPT,
)
