"""How heavy the ch09 page is as built and served, and how it grows with turns.

    .venv/bin/python benchmarks/page_weight.py [--browser] [--baseline DIR] [--runs 5]

1. The page as the publisher builds it: a copy of the book (docs with the
   frozen live traces, hooks, primer, tests, mkdocs.yml) in a temporary
   folder, ``python -m mkdocs build --strict``, no key. Prints
   ``site/ch09_who_retries/index.html`` raw and gzipped (level 9 and 6, the
   usual server setting), what it is made of (the traces, the code listings
   the chapter includes, the rest: Material's page), and its element count.
2. Growth with turns on built pages: a small Material book with the book's
   theme and extensions, one page per generated scenario (2, 40 and 80
   turns); the 40-turn page may weigh at most 25 times the 2-turn one. Its
   payload blocks link to a payload page, as the book's do (that page is
   weighed, not written: this book publishes nothing).
3. With ``--browser``: the ch09 page and a plain Material page of about the
   same size (prose, built in the same book) in headless Debian Chromium at
   a 4x CPU slowdown (Lighthouse's mobile setting), served from 127.0.0.1:
   elements, DOMContentLoaded, load, and the total blocking time (the part
   of each long task over 50 ms, until load and a second after), as the
   median of ``--runs`` loads.

``--baseline DIR`` measures another checkout the same way (parts 1 and 3)
and prints it in a second column: before and after a change in one run
(``git archive HEAD | tar -x -C DIR``).
"""

from __future__ import annotations

import argparse
import functools
import gzip
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass, field
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

COPIED = ["docs", "hooks", "primer", "tests", "mkdocs.yml", "README.md", "pyproject.toml"]
PAGE = "ch09_who_retries/index.html"
PAYLOADS = "traces/ch09_who_retries.payloads.html"
PLAIN = "plain_page"
CHROMIUM = Path("/usr/bin/chromium")
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
# Every long task, from the start: registered before the page's own scripts run.
LONG_TASKS = """
window.__longTasks = [];
new PerformanceObserver(list => {
  for (const entry of list.getEntries()) window.__longTasks.push(entry.duration);
}).observe({type: "longtask", buffered: true});
"""
PARAGRAPH = (
    "A plain paragraph of prose, as a chapter has many, with a [link](#top) and some `inline code` in it, "
    "long enough to wrap on a phone and on a desktop screen alike, so that the page is about as heavy "
    "as the chapter it stands beside, without a single trace on it.\n\n"
)


@dataclass
class Weight:
    """One built page: its bytes and what they are made of."""

    raw: int = 0
    gzip9: int = 0
    gzip6: int = 0
    parts: dict[str, tuple[int, int]] = field(default_factory=dict)
    elements: int = 0


def gz(data: bytes, level: int = 9) -> int:
    return len(gzip.compress(data, level))


def _blocks(html: str, opening: str, tag: str) -> list[str]:
    # Each element that starts with `opening`, to its matching closing tag.
    found, pattern = [], re.compile(rf"<{tag}\b|</{tag}>")
    start = html.find(opening)
    while start >= 0:
        depth = 0
        for match in pattern.finditer(html, start):
            depth += 1 if match.group() != f"</{tag}>" else -1
            if depth == 0:
                found.append(html[start : match.end()])
                break
        start = html.find(opening, start + 1 if depth else match.end())
    return found


def weigh(path: Path) -> Weight:
    data = path.read_bytes()
    html = data.decode("utf-8")
    traces = _blocks(html, '<div class="tr tr-chapter"', "div")
    listings = _blocks(html, '<div class="highlight"><span class="filename">', "div")
    rest = html
    for piece in [*traces, *listings]:
        rest = rest.replace(piece, "", 1)

    def both(pieces: list[str]) -> tuple[int, int]:
        joined = "".join(pieces).encode("utf-8")
        return len(joined), gz(joined)

    return Weight(
        raw=len(data),
        gzip9=gz(data),
        gzip6=gz(data, 6),
        parts={"traces": both(traces), "code listings": both(listings), "the rest": both([rest])},
        elements=len(re.findall(r"<[a-zA-Z][^\s>/]*", html)),
    )


def copy_book(source: Path, target: Path) -> None:
    for name in COPIED:
        path = source / name
        if path.is_dir():
            shutil.copytree(path, target / name, ignore=shutil.ignore_patterns("__pycache__", ".cache", "site"))
        elif path.exists():
            shutil.copy2(path, target / name)


def build_book(source: Path, target: Path, plain_bytes: int = 0) -> Path:
    """Build a copy of the book at ``source`` in ``target``; its site folder."""
    copy_book(source, target)
    if plain_bytes:
        paragraphs = max(1, plain_bytes // len(PARAGRAPH.encode()))
        (target / "docs" / f"{PLAIN}.md").write_text(f"# A plain page\n\n{PARAGRAPH * paragraphs}", "utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith("PRIMER_")}
    env["NO_MKDOCS_2_WARNING"] = "1"
    # From the copy, so its own primer is imported (the current folder comes first on sys.path).
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-q"],
        cwd=target,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"the build of {source} failed:\n{done.stderr[-3000:]}")
    return target / "site"


# -- growth with turns, on built pages ---------------------------------------


def growth_sizes(turns: tuple[int, ...]) -> tuple[dict[int, Weight], dict[int, int]]:
    """The built page of each scenario, and the bytes of its payload page."""
    from mkdocs.commands.build import build
    from mkdocs.config import load_config

    from primer.book.assets import install
    from primer.book.render import render_payloads
    from primer.book.source import ChapterTraces, LiveStatus
    from primer.book.store import TraceStore
    from primer.trace import ChapterRun
    from tests.test_render_data import long_run

    class Long:
        def traces(self, chapter: str) -> ChapterTraces:
            run = ChapterRun(chapter=chapter, mode="mock", scenarios=[long_run(int(chapter.split("_")[1]))])
            status = LiveStatus("missing", reason="no key yet")
            return ChapterTraces(chapter, run, None, status, payloads_url=TraceStore.payloads_url(chapter))

    with tempfile.TemporaryDirectory() as folder:
        book = Path(folder)
        docs = book / "docs"
        install(docs)  # the trace stylesheet and script, which the book's hook would add
        shutil.copytree(ROOT / "docs" / "stylesheets", docs / "stylesheets")  # the book's palette
        for n in turns:
            (docs / f"long_{n}.md").write_text(f"# {n} turns\n\n::: trace long_{n}\n", "utf-8")
        config = (ROOT / "mkdocs.yml").read_text("utf-8")
        config = re.sub(r"(?ms)^hooks:.*?^\n", "", config)  # no book machinery: the source is given
        config = re.sub(r"(?ms)^watch:.*?^\n", "", config)  # the book's folders: not in this one
        config = re.sub(r"(?ms)^nav:.*", f"nav: [{', '.join(f'long_{n}.md' for n in turns)}]\n", config)
        (book / "mkdocs.yml").write_text(config, "utf-8")
        extension = {"primer.book.markdown": {"source": Long()}}
        build(load_config(str(book / "mkdocs.yml"), markdown_extensions=[*_extensions(config), extension]))
        pages = {n: weigh(book / "site" / f"long_{n}" / "index.html") for n in turns}
        return pages, {n: len(render_payloads(Long().traces(f"long_{n}")).encode()) for n in turns}


def _extensions(config: str) -> list[Any]:
    # The book's Markdown extensions but the trace one, which is given its source.
    import yaml

    class Loader(yaml.SafeLoader):
        pass

    Loader.add_multi_constructor("!", lambda loader, suffix, node: str(ROOT))
    listed = yaml.load(config, Loader=Loader)["markdown_extensions"]
    return [e for e in listed if e != "primer.book.markdown"]


# -- in Chromium -------------------------------------------------------------


@dataclass
class Load:
    elements: float
    dom_content_loaded: float
    load: float
    blocking: float


def browse(site: Path, paths: list[str], runs: int) -> dict[str, Load]:
    from playwright.sync_api import sync_playwright

    handler = functools.partial(_Quiet, directory=str(site))
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{server.server_port}/"
    results: dict[str, list[Load]] = {path: [] for path in paths}
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
            for _ in range(runs):
                for path in paths:  # interleaved: the machine's drift hits both alike
                    context = browser.new_context(viewport={"width": 390, "height": 844})
                    page = context.new_page()
                    page.add_init_script(LONG_TASKS)
                    cdp = context.new_cdp_session(page)
                    cdp.send("Emulation.setCPUThrottlingRate", {"rate": 4})
                    page.goto(url + path, wait_until="load")
                    page.wait_for_timeout(1000)
                    figures = page.evaluate(
                        """() => {
                        const nav = performance.getEntriesByType("navigation")[0];
                        return {
                          elements: document.getElementsByTagName("*").length,
                          dcl: nav.domContentLoadedEventEnd, load: nav.loadEventEnd,
                          blocking: window.__longTasks.reduce((sum, d) => sum + Math.max(0, d - 50), 0),
                        };
                    }"""
                    )
                    results[path].append(
                        Load(figures["elements"], figures["dcl"], figures["load"], figures["blocking"])
                    )
                    context.close()
            browser.close()
    finally:
        server.shutdown()
        server.server_close()
    return {
        path: Load(
            statistics.median(x.elements for x in loads),
            statistics.median(x.dom_content_loaded for x in loads),
            statistics.median(x.load for x in loads),
            statistics.median(x.blocking for x in loads),
        )
        for path, loads in results.items()
    }


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


# -- the report --------------------------------------------------------------


def row(label: str, *values: str) -> None:
    print(f"{label:<40}" + "".join(f"{value:>28}" for value in values))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--browser", action="store_true", help="load the pages in Chromium too")
    parser.add_argument("--baseline", type=Path, help="another checkout, measured the same way")
    parser.add_argument("--runs", type=int, default=5, help="page loads per page, for --browser")
    args = parser.parse_args()

    books = {"this checkout": ROOT}
    if args.baseline:
        books = {"baseline": args.baseline.resolve(), **books}
    weights: dict[str, Weight] = {}
    payloads: dict[str, tuple[int, int]] = {}
    loads: dict[str, dict[str, Load]] = {}
    with tempfile.TemporaryDirectory() as folder:
        for name, source in books.items():
            target = Path(folder) / name.replace(" ", "_")
            site = build_book(source, target)
            weights[name] = weigh(site / PAGE)
            data = (site / PAYLOADS).read_bytes() if (site / PAYLOADS).exists() else b""
            payloads[name] = (len(data), gz(data))
            if args.browser:
                site = build_book(source, Path(folder) / f"{name}_plain".replace(" ", "_"), weights[name].raw)
                loads[name] = browse(site, ["ch09_who_retries/", f"{PLAIN}/"], args.runs)

    names = list(books)
    row("ch09 page as built", *names)
    row("  bytes raw", *(f"{weights[n].raw:,}" for n in names))
    row("  gzipped (level 9 / 6)", *(f"{weights[n].gzip9:,} / {weights[n].gzip6:,}" for n in names))
    for part in weights[names[0]].parts:
        row(
            f"  {part} (raw / gzipped)",
            *(f"{weights[n].parts[part][0]:,} / {weights[n].parts[part][1]:,}" for n in names),
        )
    row("  elements", *(f"{weights[n].elements:,}" for n in names))
    row(
        "payload page (raw / gzipped)",
        *(f"{payloads[n][0]:,} / {payloads[n][1]:,}" if payloads[n][0] else "none" for n in names),
    )
    print("targets: at most 200,000 bytes raw and 30,000 gzipped")
    if args.browser:
        print()
        row("in Chromium, 4x slower CPU, 390 px", *(f" {n}: ch09 / plain" for n in names))
        for label, attribute, unit in (
            ("  elements", "elements", ""),
            ("  DOMContentLoaded", "dom_content_loaded", " ms"),
            ("  load", "load", " ms"),
            ("  total blocking time", "blocking", " ms"),
        ):
            row(
                label,
                *(
                    f"{getattr(loads[n]['ch09_who_retries/'], attribute):,.0f} / "
                    f"{getattr(loads[n][f'{PLAIN}/'], attribute):,.0f}{unit}"
                    for n in names
                ),
            )
        print(f"plain page: {weights[names[-1]].raw:,} bytes of prose as built, the same size as the ch09 page")

    print()
    sizes, payload_pages = growth_sizes((2, 40, 80))
    for n, weight in sizes.items():
        row(
            f"{n}-turn scenario, built page",
            f"{weight.raw:,} raw",
            f"{weight.gzip9:,} gzipped",
            f"payload page {payload_pages[n]:,}",
        )
    print(f"growth 40 turns / 2 turns: {sizes[40].raw / sizes[2].raw:.1f}x (at most 25x)")
    print(f"growth 80 turns / 40 turns: {sizes[80].raw / sizes[40].raw:.2f}x (linear is 2x)")


if __name__ == "__main__":
    main()
