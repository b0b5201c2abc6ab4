"""What the browser tests share: headless Chromium on pages served from 127.0.0.1.

Two sites (tests/browser/conftest.py): ``site``, a small Material book built with the
extension given the tests' ``FixtureSource``; ``book``, this book as published. Every
request to another host is refused. Screenshots go to /tmp/screens.
"""

from __future__ import annotations

import contextlib
import functools
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]

CHROMIUM = Path("/usr/bin/chromium")

AXE = ROOT / "tests" / "node_modules" / "axe-core" / "axe.min.js"

SCREENS = Path("/tmp/screens")

WIDTHS = [320, 390, 768, 1280]

SCHEMES = ["light", "dark"]

ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


MKDOCS_YML = """\
site_name: Trace book test
site_url: http://127.0.0.1/
theme:
  name: material
  font: false
  features: [navigation.instant, content.code.copy]
  palette:
    - media: "(prefers-color-scheme: light)"
      scheme: default
      primary: teal
      accent: amber
      toggle: {icon: material/weather-night, name: Switch to dark mode}
    - media: "(prefers-color-scheme: dark)"
      scheme: slate
      primary: teal
      accent: amber
      toggle: {icon: material/weather-sunny, name: Switch to light mode}
plugins: [search]
extra_css: [assets/traces.css]
extra_javascript: [assets/traces.js]
nav: [index.md, ch05.md, ch09.md, hostile.md]
"""

PAGES = {
    "index.md": "# Home\n\n[A turn of arguments_are_wrong](ch09.md#ch09_who_retries-arguments_are_wrong-mock-turn-2)\n",
    "ch05.md": (
        "# Loop endings\n\nWhen does the loop stop?\n\n::: trace ch05_loop_endings within_token_limit\n\n"
        "And when tokens run out:\n\n::: trace ch05_loop_endings tokens_exhausted\n"
    ),
    "ch09.md": "# Who retries\n\nWho acts after a failure?\n\n::: trace ch09_who_retries\n",
    "hostile.md": "# Hostile\n\n::: trace hostile\n",
}


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


@contextlib.contextmanager
def serving(directory: Path) -> Iterator[str]:
    """``directory`` served on 127.0.0.1 while the block runs; its URL, without a final slash."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(directory)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


@dataclass(frozen=True)
class Book:
    """The book as published, served: its URL and the paths of its pages."""

    url: str
    pages: list[str]

    @property
    def trace_pages(self) -> list[str]:
        return [p for p in self.pages if p.startswith("ch")]


@dataclass
class Watched:
    """A page and everything that went wrong on it."""

    page: Any
    errors: list[str] = field(default_factory=list)
    dialogs: list[str] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)


def open_page(
    browser: Any, site: str, path: str, scheme: str = "light", *, width: int = 1280, javascript: bool = True
) -> Watched:
    context = browser.new_context(
        viewport={"width": width, "height": 1000}, color_scheme=scheme, java_script_enabled=javascript
    )
    page = context.new_page()
    watched = Watched(page)

    def guard(route: Any) -> None:
        if route.request.url.startswith(site):
            route.continue_()
        else:
            watched.refused.append(route.request.url)
            route.abort()

    context.route("**/*", guard)
    page.on("console", lambda message: watched.errors.append(message.text) if message.type == "error" else None)
    page.on("pageerror", lambda error: watched.errors.append(str(error)))

    def dialog(d: Any) -> None:
        watched.dialogs.append(d.message)
        d.dismiss()

    page.on("dialog", dialog)
    page.goto(site + path)
    if javascript and page.locator(".tr").count():
        page.wait_for_selector(".tr-switch:not([hidden])")
    return watched


# Opens every folded <details> of the traces; done once each one's toggle handler has run
# (colours, copied rows, rebuilt bodies) and the frame after the last (traces.js makes long
# blocks reachable there). A fixed wait was too short under load: axe then found blocks
# not yet reachable from the keyboard.
OPEN_ALL = """() => new Promise(done => {
  const settled = () => requestAnimationFrame(() => requestAnimationFrame(done));
  const closed = [...document.querySelectorAll(".tr details:not([open])")];
  let left = closed.length;
  if (!left) settled();
  for (const details of closed) {
    details.addEventListener("toggle", () => { if (--left === 0) settled(); }, {once: true});
    details.open = true;
  }
})"""


def open_everything(page: Any) -> None:
    """Open every <details> of the traces, as a reader who clicked them all would."""
    page.evaluate(OPEN_ALL)
    # The payloads are filled in from the chapter's payload page: then open what they hold.
    page.wait_for_function("!document.querySelector('a.tr-load')")
    page.evaluate(OPEN_ALL)


def is_open(page: Any, anchor: str) -> bool:
    return bool(page.evaluate("id => document.getElementById(id).open", anchor))
