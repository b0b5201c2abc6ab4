"""The ``trace-book`` plugin for ProperDocs, which loads subclasses of its own ``BasePlugin`` only: this is both."""

from properdocs.plugins import BasePlugin as ProperDocsBasePlugin

from primer.book._plugin import TraceBookPlugin


# Untyped in ProperDocs as in MkDocs (__init_subclass__); the options are TraceBookPlugin's.
class ProperDocsTraceBookPlugin(TraceBookPlugin, ProperDocsBasePlugin):  # type: ignore[misc, no-untyped-call, type-arg]
    """``TraceBookPlugin`` as ProperDocs loads it."""
