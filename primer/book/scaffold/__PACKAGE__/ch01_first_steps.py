"""First steps: a model that answers at once, and one that calls a tool first.

Code: ``primer/loop.py`` (the loop) and ``primer/tools.py`` (declaring a tool).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from primer import Scenario, ToolContext, ask, call, say, tool


class Spell(BaseModel):
    """Spell a word out, letter by letter."""

    # A tool's name is its model's title (else the class name): the name a script calls.
    model_config = ConfigDict(title="spell")
    word: str = Field(description="the word to spell")


@tool(Spell)
def spell(args: Spell, ctx: ToolContext) -> str:
    """Spell the word, in capitals."""
    return "-".join(args.word.upper())


answers_at_once = Scenario(
    name="answers_at_once",
    about="No tools: the model answers in one call.",
    prompt="Say hello to the reader.",
    tools=[],
    mock=[say("Hello, reader.")],
)

calls_a_tool = Scenario(
    name="calls_a_tool",
    about="The model asks for a tool, the loop runs it, and the model answers with its result.",
    prompt="How do you spell 'trace'? Use the spell tool.",
    tools=[spell],
    mock=[ask(call("spell", word="trace")), say("It is spelt T-R-A-C-E.")],
)
