"""What having the machinery costs a warm build of 10 and of 100 chapters, and what each front end takes.

    .venv/bin/python benchmarks/scale.py [--chapters 10 100] [--pairs 21] [--callgrind] [--no-front-ends]

Generates synthetic books (``books.generate``: N chapters x 4 scenarios, a
marker per scenario, Material and the search plugin) in memory, and
measures, for each size, the path where every trace is cached and nothing
runs (the cold and after-edit builds are ``build.py``'s, at 17 and 100
chapters):

* ``warm``: ``mkdocs build`` with traces (one row per form the package
  offers: the hook file, and the ``trace-book`` plugin where it exists);
* ``off``: the same book with ``PRIMER_TRACES=off`` (placeholders);
* ``bare``: the same book with no machinery in ``mkdocs.yml`` (the marker
  lines stay text): what a build costs without it.

Each round runs every kind once, back to back, rotating which goes first,
so the machine's drift touches all alike. Printed: each kind's median and
peak RSS; warm/off (the machinery's whole cost; target <= 1.05 at 100
chapters, issue 21) and off/bare (what merely having it costs: imports, a
look for malformed markers, the placeholders' words; target <= 1.02) as
medians of the rounds' ratios with their 95 % interval and IQR
(``figures.py``), and whether that interval is narrow enough to tell the
target apart; warm - off beside the machinery's own timing line (logged at
DEBUG, read from a ``--verbose`` warm build in the first rounds, outside the
ratios: ``--verbose`` logs a line for every event on every page, which would
measure MkDocs' debug logging).

``--callgrind`` counts each kind's instructions under ``valgrind
--tool=callgrind`` (``--callgrind-runs`` times each): a ratio no other work
on a shared machine can move, to check the timed ones by (it counts work,
not waiting on the disk).

Then, unless ``--no-front-ends``, the three front ends on the hook-form book,
in interleaved rounds (medians, IQR): ``mkdocs build``, ``properdocs build``,
``zensical build`` (its own page cache filled, and with ``--clean``).

``--quick``: two chapters, one round, a figure of each kind: for CI, so the
script cannot rot (tests/test_benchmarks.py); its figures mean nothing.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
from collections.abc import Callable
from pathlib import Path

from books import FORMS, MACHINERY, Run, build, callgrind, generate, has_callgrind, mkdocs, scratch
from figures import counted, differences, ratios, spread, turns

#: Targets at 100 chapters (issue 21): warm with traces over off, off over no machinery.
WARM_OFF, OFF_BARE = 1.05, 1.02
#: The ``--verbose`` builds read for the machinery's timing line, in the first rounds.
LINE_ROUNDS = 3


#: Each measured kind: the book it builds and its environment.
Kinds = dict[str, tuple[Path, dict[str, str]]]


def kinds(work: Path, size: int) -> Kinds:
    """Each measured kind: the book it builds and its environment."""
    books = {form: generate(work / f"{form}{size}", size, form=form) for form in FORMS}
    found: Kinds = {}
    for form in FORMS:
        if form != "bare":
            found["warm" if form == MACHINERY else f"warm ({form})"] = (books[form], {})
    found["off"] = (books[MACHINERY], {"PRIMER_TRACES": "off"})
    found["bare"] = (books["bare"], {})
    return found


def measure(size: int, pairs: int, measured: Kinds) -> tuple[dict[str, list[Run]], list[Run]]:
    """``pairs`` rounds of every kind, and the ``--verbose`` warm builds for the timing line."""
    for book, env in measured.values():
        mkdocs(book, **env)  # fills the caches: every later build is warm
    runs: dict[str, list[Run]] = {kind: [] for kind in measured}
    lines: list[Run] = []
    for n in range(pairs):
        for kind in turns(list(measured), n):
            book, env = measured[kind]
            runs[kind].append(mkdocs(book, **env))
        if n < LINE_ROUNDS:
            lines.append(mkdocs(measured["warm"][0], "--verbose"))
        print(f"  {size} chapters: round {n + 1}/{pairs}", file=sys.stderr)
    return runs, lines


def report(size: int, runs: dict[str, list[Run]], lines: list[Run]) -> None:
    """Print one size's figures."""
    print(f"\n{size} chapters x 4 scenarios, {len(runs['warm'])} interleaved rounds (wall seconds)")
    for kind, values in runs.items():
        s, rss = spread([r.wall for r in values]), max(r.rss for r in values)
        print(f"  {kind:14} {s.value:6.3f} s  (IQR {s.q1:.3f}-{s.q3:.3f})   peak RSS {rss:6.1f} MiB")
    wall = {kind: [r.wall for r in values] for kind, values in runs.items()}
    for kind in (k for k in runs if k.startswith("warm")):
        print(f"  {kind + ' / off':16} {ratios(wall[kind], wall['off']).against(WARM_OFF)}")
    print(f"  {'off / bare':16} {ratios(wall['off'], wall['bare']).against(OFF_BARE)}")
    cpu = {kind: [r.cpu for r in values] for kind, values in runs.items()}
    print(f"  warm / off, CPU time (user + system) {ratios(cpu['warm'], cpu['off']).text()}")
    print(f"  off / bare, CPU time (user + system) {ratios(cpu['off'], cpu['bare']).text()}")
    measured = differences(wall["warm"], wall["off"])
    shares = [r.share for r in lines if r.share is not None]
    line = f"{statistics.median(shares):.0f} ms" if shares else "not logged"
    print(f"  warm - off measured {measured.text(3, ' s')}; the machinery's timing line says {line}")


def count(size: int, measured: Kinds, runs: int) -> None:
    """Instructions of each kind under callgrind, and their ratios.

    The books the timed rounds built, not made again: a book written anew
    (the same bytes, new file times) sends every later warm build to hash
    its files, as an author's checkout never does.
    """
    for book, env in measured.values():
        mkdocs(book, **env)  # the caches filled (a no-op after the timed rounds)
    lines: dict[str, str] = {}
    counts: dict[str, list[float]] = {kind: [] for kind in measured}
    for n in range(runs):
        for kind in turns(list(measured), n):
            book, env = measured[kind]
            one = callgrind(book, "mkdocs", "build", "-d", str(book / "site"), **env)
            counts[kind].append(one.instructions)
            lines[kind] = one.ran
            print(f"  {size} chapters: callgrind {kind} {n + 1}/{runs}", file=sys.stderr)
    print(f"\n{size} chapters, instructions (valgrind --tool=callgrind, {runs} run(s) each, PYTHONHASHSEED=0)")
    for kind, values in counts.items():
        low, high = min(values) / 1e9, max(values) / 1e9
        line = lines.get(kind) or "(no machinery line)"
        print(f"  {kind:14} {statistics.median(values) / 1e9:8.3f} G   (min-max {low:.3f}-{high:.3f})   {line}")
    for kind in (k for k in counts if k.startswith("warm")):
        if not lines.get(kind, "").startswith("traces: ran 0,"):  # the path counted must be the warm one
            raise SystemExit(f"the counted {kind} build ran scenarios: {lines.get(kind)!r}; it is not warm")
        print(f"  {kind + ' / off':16} {counted(counts[kind], counts['off'], WARM_OFF)}")
    print(f"  {'off / bare':16} {counted(counts['off'], counts['bare'], OFF_BARE)}")


def front_ends(size: int, work: Path, rounds: int) -> None:
    """The three front ends on the hook-form book, in interleaved rounds."""
    book = work / f"hook{size}"

    def zensical(*args: str) -> Run:
        return build(book, "zensical", "build", *args)

    ways: dict[str, Callable[[], Run]] = {
        "mkdocs": lambda: build(book, "mkdocs", "build", "-d", "site_mkdocs"),
        "properdocs": lambda: build(book, "properdocs", "build", "-f", "mkdocs.yml", "-d", "site_properdocs"),
        "zensical (cached pages)": zensical,
        "zensical --clean": lambda: zensical("--clean"),
    }
    shutil.rmtree(book / "site", ignore_errors=True)
    build(book, "zensical", "build")  # Zensical's own page cache filled, as a second build of an author's has it
    found: dict[str, list[Run]] = {name: [] for name in ways}
    for n in range(rounds):
        for name in turns(list(ways), n):
            found[name].append(ways[name]())
    print(f"  front ends, warm, {rounds} interleaved rounds (wall seconds, medians; peak RSS):")
    for name, values in found.items():
        s = spread([r.wall for r in values])
        print(f"    {name:24} {s.value:6.3f} s  (IQR {s.q1:.3f}-{s.q3:.3f})   {max(r.rss for r in values):6.1f} MiB")


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--chapters", type=int, nargs="+", default=[10, 100])
    parser.add_argument("--pairs", type=int, default=21, help="interleaved rounds of every kind")
    parser.add_argument("--callgrind", action="store_true", help="count instructions too (needs valgrind)")
    parser.add_argument("--callgrind-runs", type=int, default=2)
    parser.add_argument("--no-timed", action="store_true", help="skip the timed rounds (with --callgrind)")
    parser.add_argument("--no-front-ends", action="store_true")
    parser.add_argument("--front-end-rounds", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="a round of each at 2 chapters, for CI")
    args = parser.parse_args()
    if args.quick:
        args.chapters, args.pairs, args.front_end_rounds, args.callgrind_runs = [2], 1, 1, 1
    if args.callgrind and not has_callgrind():
        raise SystemExit("--callgrind needs valgrind (apt-get install valgrind)")
    print(f"forms of the machinery: {', '.join(FORMS)}; 'warm' and 'off' are the {MACHINERY} form")
    with scratch() as folder:
        work = Path(folder)
        for size in args.chapters:
            measured = kinds(work, size)
            if not args.no_timed:
                report(size, *measure(size, args.pairs, measured))
                if not args.no_front_ends:
                    front_ends(size, work, args.front_end_rounds)
            if args.callgrind:
                count(size, measured, args.callgrind_runs)


if __name__ == "__main__":
    main()
