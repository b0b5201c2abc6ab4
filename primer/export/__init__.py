"""Traces in the formats other tools read: OpenTelemetry and Inspect AI.

* ``primer.export.otlp``: each scenario as one OpenTelemetry trace of GenAI
  spans, written as OTLP JSON or sent to an OTLP/HTTP endpoint (needs the
  ``otel`` extra: ``pip install 'trace-book[otel]'``);
* ``primer.export.inspect_log``: a chapter as an Inspect AI eval log, a
  sample per scenario (needs the ``inspect`` extra).

Both read a ``ChapterRun`` as the store keeps it, already redacted: an
export adds no secret, and quotes nothing the trace does not hold. Their
packages are optional, so this package imports neither until asked; a
missing one is a ``primer.errors.MissingExtra`` naming the extra to install.
"""

from __future__ import annotations

import importlib.util
from functools import cache

__all__ = ["otlp_available"]

#: What the OTLP export imports, one module of each package the ``otel`` extra brings.
_OTLP_NEEDS = (
    "google.protobuf.json_format",
    "opentelemetry.sdk.trace",
    "opentelemetry.exporter.otlp.proto.http",
    "opentelemetry.semconv",
    "openinference.semconv.trace",
)


@cache
def otlp_available() -> bool:
    """Whether the ``otel`` extra is installed, so ``primer.export.otlp`` can be imported.

    Found without importing the exporter (a fifth of a second): the book asks
    this before it links a chapter's OTLP JSON, which it publishes only then.
    """
    try:
        return all(importlib.util.find_spec(name) is not None for name in _OTLP_NEEDS)
    except ImportError:  # a parent package missing
        return False
