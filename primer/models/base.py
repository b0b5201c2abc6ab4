"""The model interface: context and tools in, one recorded ModelCall out.

A model returns the whole record of the call (what was sent, what came back,
how long it took) rather than just the reply, so the loop cannot forget to
record anything. A failed call is a ModelCall with ``error`` set and no reply.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from primer.tools import Tool
from primer.trace import Message, ModelCall

__all__ = ["REQUEST_OPTIONS", "SAMPLING_PARAMETERS", "STREAM", "Model"]

#: Sampling parameters a caller may set; those left unset are recorded as
#: "defaulted", so a reader sees what the provider chose.
SAMPLING_PARAMETERS = ("temperature", "max_tokens", "top_p", "stop", "seed", "tool_choice")

#: Settings that shape the reply rather than sample it (chapter 12): sent as
#: the API names them, and not listed as defaulted when left out.
REQUEST_OPTIONS = ("parallel_tool_calls", "response_format")

#: The setting that asks for the reply as a stream (``{"stream": True}``):
#: the same reply, in pieces, each timed as it arrives (``primer.streaming``).
STREAM = "stream"


class Model(Protocol):
    """Anything that can be asked for the next message."""

    def complete(
        self,
        context: Sequence[Message],
        tools: Sequence[Tool[Any]],
        settings: Mapping[str, Any],
    ) -> ModelCall:
        """Send the context and tools; return the record of the call."""
        ...
