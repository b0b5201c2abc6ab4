"""The command line: run a chapter's scenarios and print what happened.

python -m primer run ch09_who_retries
python -m primer run ch09_who_retries --scenario service_is_busy --json
python -m primer list
python -m primer verify [ch09_who_retries] [--all]
python -m primer export otlp ch09_who_retries [--mode mock|live] [-o FILE] [--endpoint URL] [--at now]
python -m primer export otlp --from site/traces/ch09_who_retries.otlp.json --endpoint URL [--at now]
python -m primer export inspect ch09_who_retries [--mode mock|live] [-o FILE]

The chapters are those of the package ``PRIMER_CHAPTERS`` names, else the
one the ``mkdocs.yml`` of the book it is run in names (read through MkDocs'
loader), else ``primer.chapters``; found by ``primer.locator``.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path

from primer.errors import ConfigError, NotFound, PrimerError
from primer.files import write_output
from primer.inert import inert
from primer.locator import ChapterLocator
from primer.prices import PriceTable, default_prices
from primer.script_check import unused_warnings
from primer.settings import Settings
from primer.spent import before, names, spent_line
from primer.streaming import stream_line
from primer.summary import (
    anomalies,
    chapter_line,
    count,
    ending_line,
    model_line,
    scenario_line,
    scenario_story,
    tool_line,
    trials,
    turn_line,
)
from primer.trace import ChapterRun

__all__ = ["main", "summary_lines"]


def summary_lines(run: ChapterRun, prices: PriceTable | None = None) -> list[str]:
    """Every summary line of a chapter run, indented by depth; under each scenario's line, its story and time.

    The time is by party, as the page's timeline legend has it; a ``note`` says what the model did that no
    tool could act on (a tool it was not given, arguments that are not JSON), as the build warns of it.

    A live run's lines end with what its tokens cost where ``prices`` knows the model, as the page's do.
    """
    prices = prices or default_prices()
    total = prices.cost(run.scenarios)  # None for a mock run: only live calls cost anything
    lines = [f"{run.chapter}", chapter_line(run, cost=total.text if total else None)]
    for scenario in run.scenarios:
        cost = prices.cost([scenario]) if total else None
        lines.append(scenario_line(scenario, cost=cost.text if cost else None))
        story = scenario_story(scenario)
        if story:  # what the page shows folded under the scenario's line
            lines.append(f"  story: {story}")
        lines += [f"  {spent}"] if (spent := spent_line(scenario)) else []  # the timeline's legend
        lines += [f"  note: the model {what}" for what in anomalies(scenario)]
        if first := before(scenario):  # the timeline's first stretch
            lines.append(f"  before the first turn · {first.ms:.1f}ms: {names(scenario.mode)[first.kind]}")
        # A repeated run's turns under each trial's line, as the page groups them.
        for trial, _, turns in trials(scenario) or [("", 0, scenario.turns)]:
            lines += [f"  {trial}"] if trial else []
            pad = "    " if trial else "  "
            for turn in turns:
                lines.append(pad + turn_line(turn))
                lines.append(f"{pad}  {model_line(turn.model_call)}")
                lines += [f"{pad}    stream: {stream}"] if (stream := stream_line(turn.model_call)) else []
                lines += [f"{pad}  {tool_line(tool, live=scenario.mode == 'live')}" for tool in turn.tools]
        lines.append("  " + ending_line(scenario.ending))
    return lines


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m primer", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser("run", help="run a chapter's scenarios and print their summary lines")
    run.add_argument("chapter", help="a chapter module name, such as ch09_who_retries")
    run.add_argument("--scenario", help="run only this scenario")
    run.add_argument(
        "--mode", choices=["mock", "live"], default="mock", help="mock: scripted, no key (default); live: a real model"
    )
    run.add_argument("--json", action="store_true", help="print the trace JSON instead")
    run.add_argument(
        "--time-limit", type=float, default=300.0, metavar="SECONDS", help="live: end a scenario not done by then"
    )
    commands.add_parser("list", help="list the chapters and their scenarios")
    verify = commands.add_parser(
        "verify", help="replay the frozen live traces against the code now; exit 1 if what is sent changed"
    )
    verify.add_argument("chapter", nargs="?", help="one chapter (default: every chapter)")
    verify.add_argument("--traces", help="the frozen live traces' folder (the book's: docs/traces)")
    verify.add_argument("--all", action="store_true", help="list the scenarios without a live trace too")
    export = commands.add_parser("export", help="write a chapter's traces for OpenTelemetry tools or Inspect AI")
    formats = export.add_subparsers(dest="format", required=True)
    otlp = formats.add_parser("otlp", help="OTLP JSON (GenAI spans, a trace per scenario), or sent to an endpoint")
    inspect = formats.add_parser("inspect", help="an Inspect AI eval log (a sample per scenario)")
    inspect.add_argument("chapter", help="a chapter module name, such as ch09_who_retries")
    otlp.add_argument("chapter", nargs="?", help="a chapter module name, such as ch09_who_retries")
    otlp.add_argument(
        "--from",
        dest="source",
        metavar="FILE",
        help="send (or write) this OTLP JSON file instead, such as the book's site/traces/CHAPTER.otlp.json",
    )
    otlp.add_argument(
        "--at",
        metavar="now|TIME",
        help="move the traces to now (or an ISO time with its zone), where a viewer's recent window shows them; "
        "live ones keep their recording moment as primer.recorded_at",
    )
    for each in (otlp, inspect):
        each.add_argument(
            "--mode", choices=["mock", "live"], default="mock", help="mock: run it now; live: the frozen live trace"
        )
        each.add_argument("--traces", help="the frozen live traces' folder (the book's: docs/traces)")
    target = otlp.add_mutually_exclusive_group()
    target.add_argument("-o", "--output", help="write to this file (default: print it)")
    target.add_argument("--endpoint", help="send over OTLP/HTTP to this URL, such as http://127.0.0.1:4318/v1/traces")
    inspect.add_argument("-o", "--output", help="write to this file: .json, or .eval (default: CHAPTER.MODE.json)")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the exit status.

    0 when every scenario ran, 1 when one ended in ``scenario_error`` or
    ``provider_failure`` (its line is still printed), 2 for a usage error.
    A mock script with replies the run never used is a warning on stderr.
    """
    args = _parser().parse_args(argv)
    try:
        settings = Settings.from_env(warn=_warning)
        configured, traces, prices = _book_here()
        chapters = ChapterLocator(settings.chapters_package(configured))
        # A book here with no traces folder yet has recorded nothing; elsewhere, a folder must be named.
        given = getattr(args, "traces", None) is not None or not Path("mkdocs.yml").is_file()
        args.traces = args.traces if getattr(args, "traces", None) is not None else traces
        if args.command == "verify":
            return _verify(chapters, args.chapter, Path(args.traces), every=args.all, given=given)
        if args.command == "export":
            return _export(args, chapters, settings)
        if args.command == "list":
            names = chapters.names()
            return _write(*(f"{name}: {', '.join(s.name for s in chapters.scenarios(name))}" for name in names))
        from primer.runner import run_chapter

        run = run_chapter(
            args.chapter,
            args.mode,
            only=args.scenario,
            settings=settings,
            chapters=chapters,
            time_limit=args.time_limit,
            progress=_progress,
        )
    except PrimerError as error:
        _error(str(error))
        return 2
    lines = run.model_dump_json(indent=2).split("\n") if args.json else summary_lines(run, prices)
    status = _write(*lines)
    for scenario in run.scenarios:
        for warning in unused_warnings(scenario):
            _warning(f"{run.chapter} {warning}")
    broken = [s for s in run.scenarios if s.ending.failed]
    for scenario in broken:
        detail = scenario.ending.detail or scenario.ending.label
        _error(f"{run.chapter} {scenario.name}: {detail}")
    # A scenario that broke is the author's to fix: say so to scripts and CI too.
    return status or (1 if broken else 0)


def _book_here() -> tuple[str | None, str, PriceTable]:
    """The chapters' package, frozen traces' folder and prices of the book in this folder, as ``mkdocs.yml`` has them.

    Read through MkDocs' own loader (``INHERIT``, ``!ENV``), as a build reads
    it (``primer.book._configuration``), and only where there is one: the
    library alone never loads MkDocs. ``PRIMER_CHAPTERS`` wins over the
    package named there; no book here nor in a folder above: ``primer.chapters``, ``docs/traces``.
    In a book's subfolder it is an error: run from the book's root, as MkDocs is.
    """
    path = Path("mkdocs.yml")
    if not path.is_file():
        if above := next((folder for folder in Path.cwd().parents if (folder / path).is_file()), None):
            raise ConfigError(f"This folder is inside the book at {above} (its mkdocs.yml): run this from there.")
        return None, "docs/traces", default_prices()
    # A front end's: the library's own code never imports it.
    from primer.book._configuration import book_prices, read_config

    config, plugin = read_config(path)
    traces = Path(config.docs_dir) / (plugin.config.traces_dir if plugin else "traces")
    chapters, prices = (plugin.config.chapters, book_prices(config, plugin.config)) if plugin else (None, None)
    shown = traces.relative_to(Path.cwd()) if traces.is_relative_to(Path.cwd()) else traces
    return chapters, str(shown), prices or default_prices()


def _export(args: argparse.Namespace, chapters: ChapterLocator, settings: Settings) -> int:
    """``export``: the chapter's traces as OTLP or an Inspect log; 1 if an endpoint refused them."""
    if args.format == "inspect":
        from primer.export.inspect_log import eval_log, write

        run = _exported_run(args.chapter, args.mode, Path(args.traces), chapters, settings)
        path = Path(args.output or f"{run.chapter}.{run.mode}.json")
        _save(path, lambda: write(run, path))
        samples = len(eval_log(run)["samples"])  # a sample per scenario, or per trial of an evaluation
        return _write(f"wrote {path}: {samples} samples ({run.mode} runs of {run.chapter})")
    try:
        at = _otlp_usage(args)
    except ValueError as error:
        _error(str(error))
        return 2
    return _export_otlp(args, at, chapters, settings)


def _save(path: Path, write: Callable[[], object]) -> None:
    """Write a command's output file; one that cannot be is a usage error naming it and why, not a traceback."""
    from primer.errors import ExportFailed

    try:
        write()
    except ValueError as error:  # what the name says is wrong (an Inspect log's ending)
        raise ExportFailed(str(error)) from error
    except OSError as error:
        folder = isinstance(error, FileExistsError | NotADirectoryError)  # a file where a folder must be
        why = f"{error.filename} is not a folder" if folder else error.strerror or error
        raise ExportFailed(f"{path} could not be written: {why}.") from error


def _otlp_usage(args: argparse.Namespace) -> datetime | None:
    """What ``export otlp`` was asked, checked before any work; the moment of ``--at``. ``ValueError`` if wrong."""
    from primer.export.otlp import traces_url

    if (args.chapter is None) == (args.source is None):
        raise ValueError("Give a chapter to export, or --from FILE to send an OTLP JSON file, not both.")
    if args.endpoint is not None:
        traces_url(args.endpoint)
    return _moment(args.at) if args.at is not None else None


def _export_otlp(args: argparse.Namespace, at: datetime | None, chapters: ChapterLocator, settings: Settings) -> int:
    """``export otlp``: a chapter's runs or a file's spans, written, printed or sent; 1 if an endpoint refused them."""
    from primer.errors import ExportFailed
    from primer.export.otlp import chapter_spans, file_spans, send_spans, shown_url, spans_json

    if args.source is not None:
        spans = file_spans(Path(args.source), at=at)
        what = f"from {args.source}"
    else:
        run = _exported_run(args.chapter, args.mode, Path(args.traces), chapters, settings)
        spans = chapter_spans(run, at=at)
        what = f"{run.mode} runs of {run.chapter}"
    traces = len({span.context.trace_id for span in spans if span.context is not None})
    if args.endpoint is None:
        text = spans_json(spans)
        if args.output is None:
            return _write(text.rstrip("\n"))
        _save(Path(args.output), lambda: write_output(Path(args.output), text))  # a reader never finds half of it
        return _write(f"wrote {args.output}: {traces} traces ({what})")
    try:
        sent = send_spans(spans, args.endpoint)
    except ExportFailed as error:
        _error(str(error))
        return 1
    return _write(f"sent {sent} spans in {traces} traces ({what}) to {shown_url(args.endpoint)}")


_EPOCH, _LAST = datetime(1970, 1, 1, tzinfo=UTC), datetime(2262, 1, 1, tzinfo=UTC)


def _moment(text: str) -> datetime:
    """``--at``: ``now``, or an ISO 8601 time that says its zone."""
    if text == "now":
        return datetime.now(UTC)
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        moment = None
    if moment is None or moment.tzinfo is None:
        raise ValueError(f"--at takes now or an ISO time with its zone, such as 2026-12-01T09:00+00:00, not {text!r}.")
    if not _EPOCH <= moment < _LAST:  # OTLP counts nanoseconds since 1970 in 64 bits
        raise ValueError(f"--at takes a time from 1970 to 2261 (OTLP's range), not {text!r}.")
    return moment


def _exported_run(chapter: str, mode: str, folder: Path, chapters: ChapterLocator, settings: Settings) -> ChapterRun:
    """What ``export`` exports: a mock run made now, or the frozen live trace (no key needed)."""
    if chapter not in chapters.names():
        raise NotFound(f"There is no chapter {chapter!r}. The chapters are: {', '.join(chapters.names())}.")
    if mode == "mock":
        from primer.runner import run_chapter

        return run_chapter(chapter, "mock", settings=settings, chapters=chapters)
    from primer.trace_file import read_trace

    path = folder / f"{chapter}.live.json"
    if not os.path.lexists(path):  # a link or a device is there, and refused by the reader
        elsewhere = "" if folder.is_dir() else "run this from the book's root, give --traces FOLDER, or "
        raise NotFound(f"There is no live trace of {chapter} at {path}: {elsewhere}export the mock run (--mode mock).")
    return read_trace(path)


def _write(*lines: str) -> int:
    # Each line is made inert on its own: what a model, tool or service said
    # stays inside its line and cannot drive the terminal (JSON stays JSON).
    text = "\n".join(inert(line) for line in lines)
    # A reader piping into `head` closes the pipe early: they have read what
    # they wanted, which is no error. Python's own advice: point stdout at
    # devnull so the flush at exit does not fail again, and end quietly.
    try:
        print(text, flush=True)
    except BrokenPipeError:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    return 0


def _error(message: str) -> None:
    # One line on stderr, whatever the message quotes.
    print(f"error: {inert(message)}", file=sys.stderr)


def _progress(line: str) -> None:
    # Live scenarios run four at a time: where they are, every second, on stderr (stdout is the lines or JSON).
    print(f"live runs: {line}", file=sys.stderr, flush=True)


def _warning(message: str) -> None:
    print(f"warning: {inert(message)}", file=sys.stderr)


def _verify(
    locator: ChapterLocator, chapter: str | None, folder: Path, *, every: bool = False, given: bool = True
) -> int:
    """``verify``: a line per scenario verified or not, then a summary; 1 if any diverged or broke, 2 for usage.

    Scenarios without a live trace are counted in the summary, and listed with ``every``. The book's own
    folder missing (not ``given``) is a book with nothing recorded yet; a folder given that is not there, an error.
    """
    from primer.replay import verify_chapter
    from primer.trace_file import read_trace

    try:
        if chapter is not None:
            locator.require(chapter)
        names = [chapter] if chapter else locator.names()
        if given and not folder.is_dir():
            raise NotFound(f"There is no folder {folder}: run this from the book's root, or give --traces FOLDER.")
        chapters = [(name, locator.scenarios(name)) for name in names]
    except PrimerError as error:
        _error(str(error))
        return 2
    from primer.fingerprint import RUNNER, chapter_graph

    graph = chapter_graph(locator.package)  # what the build keys a chapter's traces by
    lines: list[str] = []
    counts = {"verified": 0, "diverged": 0, "broken": 0, "unrecorded": 0, "earlier": 0}
    for name, scenarios in chapters:
        path = folder / f"{name}.live.json"
        if not os.path.lexists(path):  # a link or a device is there, and refused by the reader
            counts["unrecorded"] += len(scenarios)
            lines += [f"{name} {scenario.name}: no live trace" for scenario in scenarios] if every else []
            continue
        try:
            check = verify_chapter(frozen := read_trace(path), scenarios)
        except PrimerError as error:
            lines.append(f"{name}: not verified: {error}")
            counts["broken"] += 1
            continue
        except Exception as error:  # noqa: BLE001 - one chapter's broken replay is its line, not a traceback
            # The error may quote what the recording held: scrubbed as the divergences are.
            said = Settings.keys_redactor().text(str(error))
            lines.append(f"{name}: not verified: the replay broke: {type(error).__name__}: {said}")
            counts["broken"] += 1
            continue
        lines += [f"{name} {scenario.line()}" for scenario in check.scenarios]
        if check.scenarios and frozen.source_hash != graph.fingerprint(locator.module_name(name), RUNNER):
            counts["earlier"] += 1  # as the page says it: recorded from earlier code, replayed against the code now
        for scenario in check.scenarios:
            counts["verified" if scenario.verified else "diverged"] += 1
    lines.append(_verify_summary(counts, listed=every))
    # Nothing is written: the next book build re-stamps what verified.
    return _write(*lines) or (1 if counts["diverged"] or counts["broken"] else 0)


def _verify_summary(counts: dict[str, int], *, listed: bool) -> str:
    """``verified 9 scenarios · 1 diverged · 45 without a live trace (--all lists them)``."""
    parts = [f"verified {count(counts['verified'], 'scenario')}"]
    if counts["diverged"]:
        parts.append(f"{counts['diverged']} diverged")
    if counts["broken"]:
        parts.append(f"{count(counts['broken'], 'chapter')} not verified")
    if counts["unrecorded"]:
        parts.append(f"{counts['unrecorded']} without a live trace" + ("" if listed else " (--all lists them)"))
    if counts["earlier"]:
        # A build shows such a trace verified; `--stamp` records that it was, so no build replays it again.
        earlier = f"{count(counts['earlier'], 'chapter')} recorded from earlier code"
        parts.append(f"{earlier} (python -m primer.book build --stamp marks what verified as current)")
    return " · ".join(parts)
