"""Model adapters behind one small interface (see ``base``).

One module per adapter: ``mock`` (scripted replies, shipped as library code
so tests and the book can use it) and ``live`` (any OpenAI-compatible
endpoint through the ``openai`` SDK).
"""

from primer.models.base import SAMPLING_PARAMETERS, Model
from primer.models.mock import MockModel, MockReply, ask, call, cut, say

__all__ = ["SAMPLING_PARAMETERS", "MockModel", "MockReply", "Model", "ask", "call", "cut", "say"]
