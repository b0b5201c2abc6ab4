"""What a build knows of one chapter while it goes through it.

One ``ChapterState`` per chapter and build: its fingerprint, the traces
found in the store, what ran, what a replay found, and the live status the
page will show. The build (``primer.book._build``) and its live side
(``primer.book._live_build``) fill it in; the store is handed the result.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from primer.book._execute import error_run
from primer.book._source import LiveStatus
from primer.errors import ChapterError
from primer.settings import Settings
from primer.trace import ChapterRun, ScenarioRun

if TYPE_CHECKING:
    from primer.book._chapters import Chapters
    from primer.replay import ChapterCheck
    from primer.scenario import Scenario

__all__ = ["ChapterState"]


@dataclass
class ChapterState:
    """One chapter's state during a build."""

    name: str
    #: The fingerprint of the chapter's code now (its traces' ``source_hash``).
    key: str
    #: The chapter's key in the cache as the build found it (``primer.book._cache``): its entry.
    entry: str
    mock: ChapterRun | None = None
    #: The frozen live trace as stored (re-stamped when a replay verified it).
    frozen: ChapterRun | None = None
    #: The live trace the page shows.
    live: ChapterRun | None = None
    status: LiveStatus = field(default_factory=lambda: LiveStatus("missing"))
    scenarios: list[Scenario] | None = None
    #: Why the chapter could not be imported, as the run the page shows instead.
    import_error: ScenarioRun | None = None
    #: Whether this process runs library code older than the files (``mkdocs serve``).
    stale_library: bool = False
    #: What a replay of the frozen live trace found: None if none was tried.
    check: ChapterCheck | None = None

    def load(self, chapters: Chapters, settings: Settings) -> bool:
        """Import the chapter's scenarios once; False (and ``import_error`` set) if it cannot be."""
        if self.scenarios is not None or self.import_error is not None:
            return self.scenarios is not None
        try:
            self.scenarios = chapters.scenarios(self.name)
        except Exception as error:  # noqa: BLE001 - a chapter that fails to import is shown, not fatal
            self.import_error = error_run("import", "mock", error, settings.redactor())
            module = chapters.module_name(self.name)
            self.import_error.title = (
                f"The chapter module {module} declares its scenarios wrongly."
                if isinstance(error, ChapterError)
                else f"The chapter module {module} could not be imported."
            )
            return False
        return True
