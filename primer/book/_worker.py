"""Run chapters' mock scenarios in a fresh interpreter, or replay a frozen live trace, and print the result.

``mkdocs serve`` cannot re-import the library once its source changed (``importlib.reload`` would
leave two versions of each class), so the build runs such chapters in a new process::

    python -B -m primer.book._worker primer.chapters ch05_loop_endings ch09_who_retries
    python -B -m primer.book._worker --verify FILE PACKAGE CHAPTER

It prints a ``WorkerOutput`` (``primer.book._execute``) as JSON. ``-B``: no bytecode in watched folders.
"""

from __future__ import annotations

import sys
import traceback
from collections.abc import Sequence
from pathlib import Path

from primer.book._chapters import Chapters
from primer.book._execute import WorkerOutput, run_mock_chapter
from primer.replay import verify_chapter
from primer.settings import Settings
from primer.trace import ChapterRun
from primer.trace_file import read_trace

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> int:
    """Run each named chapter of the package in mock mode (or ``--verify``); print the runs as JSON."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["--verify"]:
        return _verify(Path(args[1]), args[2], args[3])
    package, *names = args
    chapters = Chapters(package)
    settings = Settings.from_env()
    redactor = settings.redactor()
    runs: list[ChapterRun] = []
    errors: dict[str, str] = {}
    for name in names:
        try:
            runs.append(run_mock_chapter(chapters, name, settings))
        except Exception as error:  # noqa: BLE001 - reported to the build, which shows it
            errors[name] = redactor.text("".join(traceback.format_exception(error)))
    sys.stdout.write(WorkerOutput(runs=runs, errors=errors).model_dump_json())
    return 0


def _verify(path: Path, package: str, chapter: str) -> int:
    output = WorkerOutput(runs=[], errors={})
    try:
        frozen = read_trace(path)
        output.checks[chapter] = verify_chapter(frozen, Chapters(package).scenarios(chapter)).model_dump(mode="json")
    except Exception as error:  # noqa: BLE001 - reported to the build, which warns naming the file
        redactor = Settings.from_env().redactor()
        output.errors[chapter] = redactor.text(f"{type(error).__name__}: {error}")
    sys.stdout.write(output.model_dump_json())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
