"""A scenario: a prompt, tools, a loop and a script for the mock model.

A chapter module declares its scenarios as module-level ``Scenario`` values;
they are found by looking, not by registering::

    service_is_busy = Scenario(
        name="service_is_busy",
        prompt="How much is milk?",
        tools=[place_order, price_of],
        loop=until_no_tool_calls,
        service=["/status/429", "/get"],
        mock=[ask(call("price_of", item="milk")), say("Milk is 1.20.")],
    )

``settings={"stream": True}`` asks for every reply as a stream (chapter 11):
the same replies, in pieces, each timed as it arrives.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from primer.approval import Decision
from primer.errors import ChapterError
from primer.loop import DEFAULT_MAX_TURNS, Loop, until_no_tool_calls
from primer.models.base import STREAM
from primer.models.mock import MockReply
from primer.service import RetryPolicy
from primer.tool_choice import choice_problems
from primer.tools import Tool

__all__ = ["SYSTEM", "Scenario"]

#: The system prompt every seed scenario uses.
SYSTEM = "You answer briefly and plainly. Use the tools you are given."


@dataclass(frozen=True)
class Scenario:
    """Everything needed to run one story, in mock mode or live."""

    name: str
    prompt: str
    tools: Sequence[Tool[Any]]
    #: The mock model's replies, in order.
    mock: Sequence[MockReply]
    loop: Loop = until_no_tool_calls
    system: str = SYSTEM
    #: Sampling settings sent to the model (``{"max_tokens": 24}``), and
    #: ``"stream": True`` to have the replies streamed.
    settings: Mapping[str, Any] = field(default_factory=dict)
    #: The service paths the tool's attempts go to, in order (httpbin's
    #: ``/status/429`` makes it busy, ``/delay/10`` makes it slow); none:
    #: each attempt goes to httpbin's endpoint for its method (``/get``, ``/post``).
    service: Sequence[str] = ()
    #: The service client's retry policy, when not the default (chapter 8's
    #: ``attempt_deadline``, chapter 13's ``trust_idempotency_keys``). Live,
    #: ``PRIMER_SERVICE_TIMEOUT`` sets its ``timeout``.
    policy: RetryPolicy | None = None
    max_turns: int = DEFAULT_MAX_TURNS
    #: One line saying what the scenario shows.
    about: str = ""
    #: The approver's answers, in order, for tools that ``needs_approval``
    #: (``approve()``, ``refuse("why")``): the person is scripted, mock and live.
    approvals: Sequence[Decision] = ()
    #: Tool names the mock script calls on purpose without declaring them
    #: (chapter 7's model asking for a tool that does not exist): not warned about.
    undeclared: Sequence[str] = ()

    def __post_init__(self) -> None:
        stream = self.settings.get(STREAM, False)
        if not isinstance(stream, bool):
            raise ChapterError(
                f"Scenario {self.name!r} sets {STREAM!r} to {stream!r}: set it to True to stream the replies, "
                "or leave it out."
            )
        problems = choice_problems(self.settings, [tool.name for tool in self.tools])
        if problems:
            raise ChapterError(f"Scenario {self.name!r}: {'; '.join(problems)}.")

    @property
    def streams(self) -> bool:
        """Whether the scenario asks for its replies as streams."""
        return bool(self.settings.get(STREAM, False))
