"""The command line: run a chapter's scenarios and print what happened.

python -m primer run ch09_who_retries
python -m primer run ch09_who_retries --scenario service_is_busy --json
python -m primer list
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from primer.chapters import chapter_names, scenarios_of
from primer.errors import PrimerError
from primer.settings import Settings
from primer.summary import chapter_line, ending_line, model_line, scenario_line, tool_line, turn_line
from primer.trace import ChapterRun

__all__ = ["main", "summary_lines"]


def summary_lines(run: ChapterRun) -> list[str]:
    """Every summary line of a chapter run, indented by depth."""
    lines = [f"{run.chapter}", chapter_line(run)]
    for scenario in run.scenarios:
        lines.append(scenario_line(scenario))
        for turn in scenario.turns:
            lines.append("  " + turn_line(turn))
            lines.append("    " + model_line(turn.model_call))
            lines += ["    " + tool_line(tool) for tool in turn.tools]
        lines.append("  " + ending_line(scenario.ending))
    return lines


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m primer", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser("run", help="run a chapter's scenarios and print their summary lines")
    run.add_argument("chapter", help="a chapter module name, such as ch09_who_retries")
    run.add_argument("--scenario", help="run only this scenario")
    run.add_argument("--mode", choices=["mock", "live"], default="mock")
    run.add_argument("--json", action="store_true", help="print the trace JSON instead")
    commands.add_parser("list", help="list the chapters and their scenarios")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the exit status.

    0 when every scenario ran, 1 when one ended in ``scenario_error`` or
    ``provider_failure`` (its line is still printed), 2 for a usage error.
    """
    args = _parser().parse_args(argv)
    try:
        if args.command == "list":
            chapters = [f"{name}: {', '.join(s.name for s in scenarios_of(name))}" for name in chapter_names()]
            return _write("\n".join(chapters))
        from primer.runner import run_chapter

        settings = Settings.from_env()
        run = run_chapter(args.chapter, args.mode, only=args.scenario, settings=settings)
    except PrimerError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    text = run.model_dump_json(indent=2) if args.json else "\n".join(summary_lines(run))
    status = _write(text)
    broken = [s for s in run.scenarios if s.ending.failed]
    for scenario in broken:
        detail = scenario.ending.detail or scenario.ending.label
        print(f"error: {run.chapter} {scenario.name}: {detail}", file=sys.stderr)
    # A scenario that broke is the author's to fix: say so to scripts and CI too.
    return status or (1 if broken else 0)


def _write(text: str) -> int:
    # A reader piping into `head` closes the pipe early: that is not an error
    # worth a traceback. Python's own advice: point stdout at devnull so the
    # flush at exit does not fail again, and exit 1 quietly.
    try:
        print(text, flush=True)
    except BrokenPipeError:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 1
    return 0
