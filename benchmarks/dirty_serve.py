"""``mkdocs serve --dirty`` at 100 chapters: a prose save to the served page, the trace book's against markdown-exec's.

    .venv/bin/python benchmarks/dirty_serve.py [--chapters 100] [--saves 15] [--wait 60]

Two books of the same pages (``books.generate``: N chapters, four markers
each, Material and the search plugin), in memory: one with the machinery
(the ``trace-book`` plugin, or the hook where the package has none), and one
where markdown-exec (``pip install markdown-exec``; the test group has it)
runs a Python block in place of each marker (``books.generate_exec``),
which is what an author would use instead. Both are served at once with
``mkdocs serve --dirty`` (no ``-v``); ``--saves`` rounds each save a new
sentence into the middle chapter's page of one and then of the other
(rotating which goes first), each with both servers at rest, and time the
save to the page being served with it (``serving.timed_save``: MkDocs holds
the request until the rebuild ends). A save comes at a random point of
MkDocs' half-second poll, which is MkDocs' wait and alike for both books:
the target is read from the time after the poll saw the save.

Printed: each book's median (IQR) and its rebuild figure as MkDocs logs
it, and ours over markdown-exec's as the median of the rounds' ratios with
its 95 % interval (``figures.py``) against issue 21's target (no slower:
<= 1). ``--quick``: 2 chapters, one save each, for CI; its figures mean
nothing.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from books import (
    MACHINERY,
    Editor,
    chapter_name,
    generate,
    generate_exec,
    has_markdown_exec,
    mkdocs,
    prose_edit,
    scratch,
)
from figures import median, ratios, spread, turns
from serving import Saves, Serve, missed, timed_save

#: Issue 21: a prose save under ``serve --dirty`` no slower than markdown-exec's.
TARGET = 1.0


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--chapters", type=int, default=100)
    parser.add_argument("--saves", type=int, default=15, help="saves of each book")
    parser.add_argument("--wait", type=float, default=60, help="seconds a save may take to show")
    parser.add_argument("--quick", action="store_true", help="2 chapters, one save each: for CI")
    args = parser.parse_args()
    quiet = 1.0
    if args.quick:
        args.chapters, args.saves, args.wait, quiet = 2, 1, 20, 0.3
    if not has_markdown_exec():
        raise SystemExit("dirty_serve.py needs markdown-exec: pip install markdown-exec (the test group has it)")
    middle = chapter_name(max(1, args.chapters // 2))
    edit = prose_edit(f"docs/{middle}.md", middle)
    with scratch() as folder:
        work = Path(folder)
        books = {
            f"trace book ({MACHINERY})": generate(work / "ours", args.chapters),
            "markdown-exec": generate_exec(work / "exec", args.chapters),
        }
        mkdocs(books[f"trace book ({MACHINERY})"])  # the cache filled: the server starts warm, as an author's does
        servers: dict[str, Serve] = {}
        try:
            for name, book in books.items():
                servers[name] = Serve(book, "--dirty")
                servers[name].get(edit.page + "/")
            editors = {name: Editor(book) for name, book in books.items()}
            saves = {name: Saves() for name in books}
            for n in range(args.saves):
                for name in turns(list(books), n):
                    for server in servers.values():  # the other one at rest too
                        server.idle(quiet)
                    timed_save(
                        servers[name], editors[name], edit, n + 1, wait=args.wait, record=saves[name], quiet=quiet
                    )
                print(f"  round {n + 1}/{args.saves}", file=sys.stderr)
        finally:
            for server in servers.values():
                server.stop()
    what = f"{args.chapters} chapters: save a sentence -> page served with it ({args.saves} rounds)"
    print(f"\nmkdocs serve --dirty, {what}")
    for name, record in saves.items():
        s = spread(record.seconds)
        shown = sum(1 for x in record.seconds if x == x)  # noqa: PLR0124 - NaN: not shown
        print(
            f"  {name:22} {s.value:6.2f} s (IQR {s.q1:.2f}-{s.q3:.2f})   its rebuild {median(record.rebuild):5.2f} s"
            f"   shown {shown}/{len(record.seconds)}   rebuilds per save <= {max(record.rebuilds, default=0)}"
            f"{missed(record)}"
        )
    for name, record in saves.items():
        seen, after = median(record.seen), median(record.after)
        print(f"  {name:22} of which: seen by MkDocs' poll {seen:.2f} s, then {after:.2f} s")
    ours, theirs = (saves[name] for name in books)
    # The poll's wait is MkDocs' and the same for both (random: about a quarter of a second either way);
    # what a book changes is from there to the page, which the target is read from.
    print(f"  {'ours / markdown-exec':22} {ratios(ours.seconds, theirs.seconds).text()}")
    print(f"  {'  from the poll on':22} {ratios(ours.after, theirs.after).against(TARGET)}")


if __name__ == "__main__":
    main()
