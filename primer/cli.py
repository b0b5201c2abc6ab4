"""The command line: run a chapter's scenarios and print what happened.

python -m primer run ch09_who_retries
python -m primer run ch09_who_retries --scenario service_is_busy --json
python -m primer list
"""

from __future__ import annotations

import argparse
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
    """Entry point; returns the exit status (2 for a usage error)."""
    args = _parser().parse_args(argv)
    try:
        if args.command == "list":
            for name in chapter_names():
                print(f"{name}: {', '.join(s.name for s in scenarios_of(name))}")
            return 0
        from primer.runner import run_chapter

        settings = Settings.from_env()
        run = run_chapter(args.chapter, args.mode, only=args.scenario, settings=settings)
    except PrimerError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    if args.json:
        print(run.model_dump_json(indent=2))
    else:
        print("\n".join(summary_lines(run)))
    return 0
