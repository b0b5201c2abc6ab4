"""Running a chapter's mock scenarios, or replaying its frozen live trace, in a new interpreter.

The worker (``main``, ``in_worker``, ``verify_in_worker``) is for ``mkdocs serve``, which cannot
re-import library code changed on disk (``importlib.reload`` would leave two versions of each class).
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field

from primer.errors import ConfigError
from primer.settings import Settings
from primer.trace import ChapterRun, ErrorInfo

if TYPE_CHECKING:
    from primer.replay import ChapterCheck

__all__ = ["in_worker", "verify_in_worker"]


class WorkerOutput(BaseModel):
    """What the worker prints: the runs, why a chapter has none (its import's error), and replays (``ChapterCheck``)."""

    runs: list[ChapterRun] = Field(default_factory=list)
    errors: dict[str, ErrorInfo] = Field(default_factory=dict)
    checks: dict[str, dict[str, Any]] = Field(default_factory=dict)


def in_worker(arguments: Sequence[str], chapters: Sequence[str], time_limit: float) -> WorkerOutput:
    """Run the worker (``main``) in a new interpreter; one that fails is every chapter's error."""
    command = [sys.executable, "-B", "-m", "primer.book._run", *arguments]
    # The same import path as here: the chapters' package may live beside the book.
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    try:
        done = subprocess.run(  # noqa: S603 - our own interpreter and module
            command, capture_output=True, text=True, timeout=time_limit, env=env, check=True
        )
        return WorkerOutput.model_validate_json(done.stdout)
    except (subprocess.SubprocessError, ValueError, OSError) as error:
        said = getattr(error, "stderr", None) or str(error)  # bytes after a timeout, whatever text=True says
        said = said.decode(errors="replace") if isinstance(said, bytes) else said
        took = f"it took over {time_limit:g} s: " if isinstance(error, subprocess.TimeoutExpired) else ""
        # What the chapter's code printed may hold a key: scrubbed, as the build's own errors are.
        why = Settings.keys_redactor().text(took + said.strip()[-2000:])
        failed = ErrorInfo(type=type(error).__name__, message=f"the worker in a new interpreter failed: {why}")
        return WorkerOutput(errors=dict.fromkeys(chapters, failed))


def verify_in_worker(path: Path, package: str, chapter: str, time_limit: float) -> ChapterCheck:
    """Replay a frozen live trace in a new interpreter; raises ``IncompleteRecording`` saying why not."""
    from primer.replay import ChapterCheck, IncompleteRecording

    output = in_worker(["--verify", str(path), package, chapter], [chapter], time_limit)
    if chapter not in output.checks:
        raise IncompleteRecording(str(output.errors.get(chapter, "the replay gave no result")))
    return ChapterCheck.model_validate(output.checks[chapter])


def main(argv: Sequence[str] | None = None) -> int:
    """The worker: run each named chapter of the package in mock mode (or ``--verify FILE PACKAGE CHAPTER``)."""
    from primer.book._chapters import Chapters

    args = list(sys.argv[1:] if argv is None else argv)
    output = WorkerOutput()
    try:
        settings = Settings.from_env()
    except ConfigError:  # the build said so already, and runs the mocks all the same
        settings = Settings.without_live(os.environ)
    redactor = Settings.keys_redactor()  # the keys, even where the settings could not be read
    if args[:1] == ["--verify"]:
        from primer.replay import verify_chapter
        from primer.trace_file import read_trace

        path, package, chapter = args[1:4]
        try:
            check = verify_chapter(read_trace(Path(path)), Chapters(package).scenarios(chapter))
            output.checks[chapter] = check.model_dump(mode="json")
        except Exception as error:  # noqa: BLE001 - reported to the build, which warns naming the file
            output.errors[chapter] = ErrorInfo.of(error, redactor.text)
    else:
        from primer.runner import run_mock

        package, *names = args
        chapters = Chapters(package)
        for name in names:
            try:  # run_mock shows a scenario's error in its run: what raises is the chapter's import
                output.runs.append(run_mock(name, chapters.scenarios(name), settings))
            except Exception as error:  # noqa: BLE001 - reported to the build, which shows it
                output.errors[name] = ErrorInfo.of(error, redactor.text)
    sys.stdout.write(output.model_dump_json())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
