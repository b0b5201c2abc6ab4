"""What the live pool saves: ch09's four scenarios live, sequential vs the pool, through a slow network.

    .venv/bin/python benchmarks/live_pool.py [--delay 0.4] [--repeat 3]

Everything is on 127.0.0.1: the tests' replay provider (answering with the
seed's recorded traffic) and a local httpbin, each behind a proxy that holds
every request ``--delay`` seconds before passing it on, as a distant
provider would. Each run is a new interpreter (``--child``), so the SDK's
import and set-up are counted as a book build pays them:

* ``sequential``: one scenario after the other, each with its own client
  (``primer.runner.run_scenario``);
* ``pool``: the build's live pool (``run_live_jobs``: 4 at a time, the SDK
  imported and the connections opened once, shared by the threads);
* ``pool of one NAME``: the same pool given one scenario only, for each
  scenario: the lower bound. A pool cannot end before its longest scenario
  run the same way (the same process start, imports and shared set-up); the
  longest scenario run *alone* that way is no bound, since it
  sets up its own client, which the pool does once.

Every mode runs once a round, in rotating order; prints the medians, the
pool's ratio to sequential (the median of the rounds' ratios; target
<= 0.47) and how far above its bound the pool ends. ``--quick``: a 50 ms
delay and one round, for CI (tests/test_benchmarks.py).
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import statistics
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit

from figures import ratios, turns

ROOT = Path(__file__).resolve().parent.parent
CHAPTER = "ch09_who_retries"


def delaying_proxy(upstream: str, delay: float) -> ThreadingHTTPServer:
    """A proxy on 127.0.0.1 that waits ``delay`` seconds, then forwards the request to ``upstream``."""
    target = urlsplit(upstream)

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def _forward(self) -> None:
            body = self.rfile.read(int(self.headers.get("content-length") or 0))
            time.sleep(delay)
            connection = http.client.HTTPConnection(target.hostname or "127.0.0.1", target.port, timeout=60)
            headers = {k: v for k, v in self.headers.items() if k.lower() not in ("host", "connection")}
            connection.request(self.command, self.path, body=body or None, headers=headers)
            answer = connection.getresponse()
            data = answer.read()
            self.send_response(answer.status)
            for key, value in answer.getheaders():
                if key.lower() not in ("transfer-encoding", "connection", "content-length"):
                    self.send_header(key, value)
            self.send_header("content-length", str(len(data)))
            try:
                self.end_headers()
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up first (a timeout the scenario is about)
            finally:
                connection.close()

        do_GET = do_POST = do_PUT = do_DELETE = _forward

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def child(mode: str) -> None:
    """Run the chapter's scenarios live, as ``mode`` says; print the seconds since this process started."""
    from primer.live_pool import run_live_jobs
    from primer.locator import ChapterLocator
    from primer.runner import run_scenario
    from primer.settings import Settings

    settings = Settings.from_env()
    scenarios = ChapterLocator().scenarios(CHAPTER)
    if mode == "sequential":
        runs = [run_scenario(scenario, "live", settings) for scenario in scenarios]
    else:  # "pool", or "one:NAME": the pool given that scenario alone (the bound)
        jobs = [(CHAPTER, s) for s in scenarios if mode == "pool" or s.name == mode.removeprefix("one:")]
        runs = run_live_jobs(jobs, settings, None, time_limit=120, progress=lambda _progress: None)
    failed = [run.name for run in runs if run.ending.failed]
    print(json.dumps({"seconds": time.perf_counter() - STARTED, "failed": failed}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--delay", type=float, default=0.4)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="a 50 ms delay, one round: for CI")
    parser.add_argument("--child")
    args = parser.parse_args()
    if args.quick:
        args.delay, args.repeat = 0.05, 1
    if args.child:
        child(args.child)
        return
    sys.path.insert(0, str(ROOT))
    from primer.chapters import scenarios_of
    from tests.servers.provider import ReplayProvider, scenario_file
    from tests.servers.service import start_httpbin

    httpbin = start_httpbin()
    with ReplayProvider() as provider:
        provider_proxy = delaying_proxy(provider.base_url, args.delay)
        service_proxy = delaying_proxy(httpbin.url, args.delay)
        path = urlsplit(provider.base_url).path
        env = {k: v for k, v in os.environ.items() if not k.startswith("PRIMER_")}
        # The book's own service timeout (2 s): the 400 ms a request waits in
        # the proxy is well inside it, and order_may_have_landed times out
        # after it as a reader's refresh would. A longer one only lengthens
        # that scenario, the pool's floor.
        env.update(
            PYTHONPATH=str(ROOT),
            PRIMER_API_KEY="sk-bench-0123456789",
            PRIMER_SERVICE_KEY="svc-bench-0123456789",
            PRIMER_MODEL="deepseek-flash",
            PRIMER_BASE_URL=f"http://127.0.0.1:{provider_proxy.server_address[1]}{path}",
            PRIMER_SERVICE_URL=f"http://127.0.0.1:{service_proxy.server_address[1]}",
        )
        seconds: dict[str, list[float]] = {"sequential": [], "pool": []}
        # Quick: the bound's path for one scenario only (CI checks that it runs, not what it says).
        bounded = scenarios_of(CHAPTER)[-1:] if args.quick else scenarios_of(CHAPTER)
        seconds |= {f"one:{s.name}": [] for s in bounded}
        for n in range(args.repeat):
            for mode in turns(list(seconds), n):
                provider.reset()
                for scenario in scenarios_of(CHAPTER):
                    provider.load(scenario_file(CHAPTER, scenario.name))
                started = time.perf_counter()
                done = subprocess.run(
                    [sys.executable, __file__, "--child", mode, "--delay", str(args.delay)],
                    env=env,
                    capture_output=True,
                    text=True,
                    check=False,
                )
                wall = time.perf_counter() - started
                if done.returncode != 0:
                    raise SystemExit(done.stderr)
                result = json.loads(done.stdout.strip().splitlines()[-1])
                if result["failed"]:
                    raise SystemExit(f"{mode}: scenarios failed: {result['failed']}\n{done.stderr}")
                seconds[mode].append(wall)
        sequential, pool = (statistics.median(seconds[m]) for m in ("sequential", "pool"))
        print(
            f"ch09's {len(scenarios_of(CHAPTER))} scenarios live, {args.delay * 1000:.0f} ms per request, "
            f"{args.repeat} rounds (wall seconds, medians, a new interpreter each)"
        )
        print(f"  sequential {sequential:6.2f} s")
        print(f"  pool       {pool:6.2f} s")
        ratio = ratios(seconds["pool"], seconds["sequential"])
        print(f"  pool / sequential {ratio.text()}   (target <= 0.47)")
        alone = {m[4:]: statistics.median(v) for m, v in seconds.items() if m.startswith("one:")}
        slowest = max(alone, key=alone.__getitem__)
        print(
            f"  the bound: the pool given its longest scenario alone ({slowest}) {alone[slowest]:.2f} s; "
            f"the pool ends {pool - alone[slowest]:+.2f} s after it"
        )
        others = ", ".join(f"{name} {value:.2f} s" for name, value in alone.items() if name != slowest)
        print(f"  (the pool given each other scenario alone: {others or 'not measured'})")
        provider_proxy.shutdown()
        service_proxy.shutdown()
    httpbin.stop()


STARTED = time.perf_counter()

if __name__ == "__main__":
    main()
