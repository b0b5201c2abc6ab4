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
