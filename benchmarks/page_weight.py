"""How heavy a chapter page's traces are, and how they grow with turns.

    .venv/bin/python benchmarks/page_weight.py

Prints the ch09 page's HTML size raw and gzipped (the chapter's mock runs, as
the standalone extension renders them, and with the live runs rebuilt from
the seeds' recorded provider traffic when the tests' fixtures are present),
then the growth ratio of a 40-turn scenario's HTML over a 2-turn one's (the
issue allows at most 25).
"""

from __future__ import annotations

import gzip
import sys
import time
from pathlib import Path

import markdown

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from primer.book.markdown import TraceExtension  # noqa: E402
from primer.book.source import ChapterTraces, LiveStatus  # noqa: E402
from primer.trace import ChapterRun  # noqa: E402


def measure(label: str, html: str) -> None:
    raw = html.encode("utf-8")
    print(f"{label:<44} {len(raw):>9,} bytes raw {len(gzip.compress(raw, 9)):>8,} gzipped")


def convert(text: str, **config: object) -> tuple[str, float]:
    started = time.perf_counter()
    html = markdown.Markdown(extensions=["tables", TraceExtension(**config)]).convert(text)
    return html, (time.perf_counter() - started) * 1000


def main() -> None:
    html, ms = convert("::: trace ch09_who_retries\n")
    measure(f"ch09 page, mock runs ({ms:.0f} ms)", html)
    try:
        from tests.test_render_data import FixtureSource, long_run
    except ImportError:  # an installed copy without the tests
        return
    html, ms = convert("::: trace ch09_who_retries\n", source=FixtureSource())
    measure(f"ch09 page, mock and live runs ({ms:.0f} ms)", html)

    class One:
        def __init__(self, turns: int) -> None:
            self.run = ChapterRun(chapter="long", mode="mock", scenarios=[long_run(turns)])

        def traces(self, chapter: str) -> ChapterTraces:
            return ChapterTraces(chapter, self.run, None, LiveStatus("missing", reason="no key yet"))

    sizes = {}
    for turns in (2, 40, 80):
        html, ms = convert("::: trace long\n", source=One(turns))
        sizes[turns] = len(html.encode("utf-8"))
        measure(f"{turns}-turn scenario ({ms:.0f} ms)", html)
    print(f"growth 40 turns / 2 turns: {sizes[40] / sizes[2]:.1f}x (at most 25x)")
    print(f"growth 80 turns / 40 turns: {sizes[80] / sizes[40]:.2f}x (linear is 2x)")


if __name__ == "__main__":
    main()
