"""First steps: one agent written twice, on the book's library and on the openai SDK by hand (recorded over HTTP)."""

import json
from typing import Any

import httpx
from pydantic import BaseModel, ConfigDict, Field

from primer import CodeScenario, Reach, Scenario, Service, ToolContext, ask, call, say, tool

# -- on the book's library: primer's Agent runs the loop -----------------------------------


class Spell(BaseModel):
    """Spell a word out, letter by letter."""

    # A tool's name is its model's title (else the class name): the name a script calls.
    model_config = ConfigDict(title="spell")
    word: str = Field(description="the word to spell")


@tool(Spell)
def spell(args: Spell, ctx: ToolContext) -> str:
    """Spell the word, in capitals."""
    return "-".join(args.word.upper())


calls_a_tool = Scenario(
    name="calls_a_tool",
    about="The model asks for a tool, the loop runs it, and the model answers with its result.",
    prompt="How do you spell 'trace'? Use the spell tool.",
    tools=[spell],
    mock=[ask(call("spell", word="trace")), say("It is spelt T-R-A-C-E.")],
)

# -- on the openai SDK by hand, with a service of its own ------------------------------------

# The tool as the SDK takes it: a JSON schema of its arguments.
CITY = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
WEATHER = {"name": "weather_in", "description": "Today's weather in a city.", "parameters": CITY}
WEATHER_IN = {"type": "function", "function": WEATHER}


def weather(request: httpx.Request) -> httpx.Response:
    """The weather service in mock runs: sunny everywhere."""
    return httpx.Response(200, json={"city": request.url.params["city"], "sky": "sunny"})


def weather_agent(reach: Reach) -> None:
    """A loop of its own: ask the model, call the service for each tool call, send the results back."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": "What is the weather in Paris?"}]
    for _turn in range(4):
        reply = reach.openai.chat.completions.create(model=reach.model, messages=messages, tools=[WEATHER_IN])
        message = reply.choices[0].message.model_dump(exclude_none=True)
        messages.append(message)
        if not message.get("tool_calls"):
            return
        for tool_call in message["tool_calls"]:
            city = json.loads(tool_call["function"]["arguments"])["city"]
            answer = httpx.get(f"{reach.service('weather')}/today", params={"city": city})
            messages.append({"role": "tool", "tool_call_id": tool_call["id"], "content": answer.json()["sky"]})


weather_by_hand = CodeScenario(
    name="weather_by_hand",
    about="The same kind of agent on the raw SDK: the trace is rebuilt from what crossed HTTP.",
    code=weather_agent,
    services=[Service("weather", mock=weather, url="https://weather.example")],
    mock=[ask(call("weather_in", city="Paris")), say("It is sunny in Paris.")],
)
