"""Traces in the formats other tools read: OpenTelemetry and Inspect AI.

* ``primer.export.otlp``: each scenario as one OpenTelemetry trace of GenAI
  and OpenInference spans, written as OTLP JSON or sent to an OTLP/HTTP
  endpoint (needs the ``otel`` extra: ``pip install 'trace-book[otel]'``);
* ``primer.export.inspect_log``: a chapter as an Inspect AI eval log, a
  sample per scenario (an epoch per trial of an evaluation, scored), written
  from Inspect's schema with the standard library: no extra.

Both read a ``ChapterRun`` as the store keeps it, already redacted: an
export adds no secret, and quotes nothing the trace does not hold. The OTLP
packages are optional, so this package imports none until asked; a missing
one is a ``primer.errors.MissingExtra`` naming the extra to install.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
from functools import cache
from pathlib import Path

__all__ = ["otlp_available", "otlp_version"]

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


#: The distributions whose code decides what the OTLP export writes, besides this package's own.
_OTLP_DISTRIBUTIONS = (
    "opentelemetry-sdk",
    "opentelemetry-exporter-otlp-proto-common",
    "opentelemetry-proto",
    "protobuf",
    "opentelemetry-semantic-conventions",
    "openinference-semantic-conventions",
)


@cache
def otlp_version() -> str:
    """What the OTLP JSON of a run depends on besides the run: the export's code and its packages' versions.

    A digest, found without importing the exporter, so a book can keep a
    chapter's OTLP JSON by it: a new version of the export makes it again.
    """
    digest = hashlib.sha256()
    here = Path(__file__).parent
    for name in ("__init__.py", "_runs.py", "otlp.py", "otlp_json.py"):
        digest.update(hashlib.sha256((here / name).read_bytes()).digest())
    for distribution in _OTLP_DISTRIBUTIONS:
        try:
            digest.update(f"{distribution} {importlib.metadata.version(distribution)}\n".encode())
        except importlib.metadata.PackageNotFoundError:
            digest.update(f"{distribution} none\n".encode())
    return digest.hexdigest()[:16]
