"""The ``trace-book`` plugin for ProperDocs: the MkDocs plugin, made a ProperDocs plugin too.

ProperDocs (a continuation of MkDocs 1.x) loads plugins from its own
``properdocs.plugins`` entry points as well as MkDocs', and accepts only
subclasses of its own ``BasePlugin``: this class is both, with the same
options and events (``primer.book._plugin``).
"""

from __future__ import annotations

from properdocs.plugins import BasePlugin as ProperDocsBasePlugin

from primer.book._plugin import TraceBookPlugin

__all__ = ["ProperDocsTraceBookPlugin"]


# Untyped in ProperDocs as in MkDocs (__init_subclass__); the options are TraceBookPlugin's.
class ProperDocsTraceBookPlugin(TraceBookPlugin, ProperDocsBasePlugin):  # type: ignore[misc, no-untyped-call, type-arg]
    """``TraceBookPlugin`` as ProperDocs loads it."""
