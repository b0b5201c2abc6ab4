"""Model adapters behind one small interface (see ``base``).

One module per adapter: ``mock`` (scripted replies, shipped as library code
so tests and the book can use it) and ``live`` (any OpenAI-compatible
endpoint through the ``openai`` SDK).
"""

from primer.models.base import SAMPLING_PARAMETERS, STREAM, Model
from primer.models.mock import MockModel, MockReply, Pacing, ask, call, cut, say

__all__ = ["SAMPLING_PARAMETERS", "STREAM", "MockModel", "MockReply", "Model", "Pacing", "ask", "call", "cut", "say"]
