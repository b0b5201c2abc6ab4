"""The live model: any OpenAI-compatible endpoint through the ``openai`` SDK.

Placeholder until the live-mode work lands: live runs are not wired yet.
"""

from __future__ import annotations

from typing import Any

from primer.errors import ConfigError

__all__ = ["LiveModel"]


class LiveModel:
    """Not yet available."""

    @classmethod
    def from_settings(cls, settings: Any, **_: Any) -> LiveModel:
        """Refuse clearly: live mode is not wired yet."""
        raise ConfigError("Live mode is not available in this version yet; run with --mode mock.")

    def complete(self, context: Any, tools: Any, settings: Any) -> Any:
        """Never reached: ``from_settings`` refuses first."""
        raise NotImplementedError
