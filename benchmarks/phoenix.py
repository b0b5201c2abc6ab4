"""What Phoenix shows of the book's traces: the trace list's input and output, the error spans, the time window.

    .venv/bin/python benchmarks/phoenix.py --phoenix /tmp/phoenix-venv/bin/phoenix

Phoenix (``arize-phoenix``, an OpenInference viewer) is too heavy for the
test suite (145 packages, 850 MB, minutes to install), so it is measured
here, from a virtual environment of its own (``python -m venv V &&
V/bin/pip install arize-phoenix``). It is started on 127.0.0.1 with a
working folder in a temporary directory, and sent, with the command a user
runs:

* ch09's frozen live run, ``--at now`` (``export otlp CHAPTER --mode live``);
* ch09's OTLP JSON as the book publishes it (mock runs at ``MOCK_EPOCH``,
  the live ones at their recording), ``--from FILE --at now``.

Then Phoenix's own REST API is asked for the spans of the project, as its
trace list shows them, within its default window (the last 7 days): the
root spans' ``input.value`` and ``output.value`` (the trace list's Input
and Output columns), their kinds, and the spans with the ``ERROR`` status.
Each is compared with the trace; printed: seconds to start Phoenix and to
send, what was found, and ``ok`` or what differs. Exits 1 on a difference.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
CHAPTER = "ch09_who_retries"
PROJECT = "trace-book"


def _port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _get(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=30) as answer:
        return json.load(answer)


def _spans(base: str, since: datetime) -> list[dict[str, Any]]:
    """Every span of the project that began after ``since``, as Phoenix's REST API gives them."""
    found: list[dict[str, Any]] = []
    cursor = ""
    while True:
        query = f"limit=1000&start_time={since.isoformat().replace('+00:00', 'Z')}" + (
            f"&cursor={cursor}" if cursor else ""
        )
        page = _get(f"{base}/v1/projects/{PROJECT}/spans?{query}")
        found += page["data"]
        cursor = page.get("next_cursor") or ""
        if not cursor:
            return found


def _export(*arguments: str) -> float:
    began = time.perf_counter()
    subprocess.run([sys.executable, "-m", "primer", "export", "otlp", *arguments], cwd=ROOT, check=True)
    return time.perf_counter() - began


def _expected(run: Any) -> tuple[list[tuple[str, str, str]], int]:
    """What the list should show of a run: (name, input, output) of each root; and how many spans failed."""
    roots = [
        (f"invoke_agent {s.name}", next(m.content for m in s.transcript if m.role == "human"), s.transcript[-1].content)
        for s in run.scenarios
    ]
    tools = [tool for s in run.scenarios for turn in s.turns for tool in turn.tools]
    errors = sum(t.failure is not None for t in tools)
    errors += sum(a.failure is not None and a.request is not None for t in tools for a in t.attempts)
    return roots, errors


def check(spans: list[dict[str, Any]], roots: list[tuple[str, str, str]], errors: int) -> list[str]:
    """What differs between the spans Phoenix lists and the trace."""
    problems = []
    listed = sorted(
        (s["name"], s["attributes"].get("input.value", ""), s["attributes"].get("output.value", ""))
        for s in spans
        if s["parent_id"] is None
    )
    if listed != sorted(roots):
        problems.append(f"the trace list shows {listed}, not {sorted(roots)}")
    kinds = {s["span_kind"] for s in spans if s["parent_id"] is None}
    if kinds != {"AGENT"}:
        problems.append(f"the roots' kinds are {kinds}")
    failed = [s for s in spans if s["status_code"] == "ERROR"]
    if len(failed) != errors:
        problems.append(f"{len(failed)} error spans, not {errors}")
    if any(not s["status_message"] for s in failed):
        problems.append("an error span without its message")
    return problems


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--phoenix", required=True, help="the phoenix command of a venv with arize-phoenix")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    from primer.book._publish import MOCK_EPOCH
    from primer.export.otlp import chapter_json
    from primer.replay import read_trace
    from primer.runner import run_chapter

    live, mock = read_trace(ROOT / "docs" / "traces" / f"{CHAPTER}.live.json"), run_chapter(CHAPTER)
    roots, errors = _expected(live)
    mock_roots, mock_errors = _expected(mock)
    port, grpc = _port(), _port()
    base = f"http://127.0.0.1:{port}"
    failed = False
    with tempfile.TemporaryDirectory(prefix="phoenix-") as folder:
        env = {
            **os.environ,
            "PHOENIX_WORKING_DIR": folder,
            "PHOENIX_HOST": "127.0.0.1",
            "PHOENIX_PORT": str(port),
            "PHOENIX_GRPC_PORT": str(grpc),
            "PHOENIX_TELEMETRY_ENABLED": "false",
        }
        log = Path(folder) / "phoenix.log"
        began = time.perf_counter()
        with log.open("w") as out:
            server = subprocess.Popen([args.phoenix, "serve"], env=env, stdout=out, stderr=subprocess.STDOUT)
        try:
            for _ in range(240):
                try:
                    with urllib.request.urlopen(f"{base}/healthz", timeout=2):
                        break
                except OSError:
                    time.sleep(0.5)
            else:
                print(log.read_text()[-2000:])
                return 1
            print(f"Phoenix started in {time.perf_counter() - began:.1f} s on {base}")
            window = datetime.now(UTC) - timedelta(days=7)

            sent = _export(CHAPTER, "--mode", "live", "--at", "now", "--endpoint", f"{base}/v1/traces")
            time.sleep(2)  # Phoenix writes what it is sent in the background
            spans = _spans(base, window)
            problems = check(spans, roots, errors)
            print(
                f"live run --at now: sent in {sent:.1f} s; {len(spans)} spans in the last 7 days, "
                f"{sum(s['status_code'] == 'ERROR' for s in spans)} errors: {'; '.join(problems) or 'ok'}"
            )
            failed |= bool(problems)

            path = Path(folder) / f"{CHAPTER}.otlp.json"
            path.write_text(chapter_json(mock, live, start=MOCK_EPOCH), encoding="utf-8")
            sent = _export("--from", str(path), "--at", "now", "--endpoint", f"{base}/v1/traces")
            time.sleep(2)
            later = [s for s in _spans(base, window) if s["id"] not in {old["id"] for old in spans}]
            problems = check(later, roots + mock_roots, errors + mock_errors)
            print(
                f"published file --from --at now: sent in {sent:.1f} s; {len(later)} more spans in the last 7 days, "
                f"{sum(s['parent_id'] is None for s in later)} traces, "
                f"{sum(s['status_code'] == 'ERROR' for s in later)} errors: {'; '.join(problems) or 'ok'}"
            )
            failed |= bool(problems)
        finally:
            server.terminate()
            server.wait(timeout=30)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
