"""Trace data for the renderer's tests, and a small DOM to read the HTML back.

The other render, Markdown and browser tests import from here:

* ``live_chapter``: a live-looking ``ChapterRun`` built from the provider
  traffic recorded in the seed pages (``tests/fixtures/provider``), with the
  mock run's tool calls where the live model asked for the same tool;
* ``hostile_chapter``: runs whose every untrusted field (prompt, replies, tool
  arguments and results, headers, bodies, errors, notes) carries the corpus;
* ``long_run``: a real mock scenario run of N turns;
* ``FixtureSource``: a ``TraceSource`` over those;
* ``parse``: HTML → a tree of ``Node`` for structural assertions.

The tests below check that the data is what it claims to be.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cache
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from primer.book._source import ChapterTraces, LiveStatus
from primer.errors import NotFound
from primer.models.mock import ask, call, say
from primer.runner import run_chapter, run_scenario
from primer.scenario import Scenario
from primer.tools import ToolContext, tool
from primer.trace import (
    ChapterRun,
    Ending,
    ErrorInfo,
    Exchange,
    Message,
    ModelCall,
    Note,
    ScenarioRun,
    Timing,
    ToolCall,
    ToolRun,
    Turn,
    Usage,
    WireRequest,
    WireResponse,
)

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "provider"
PROVIDER_URL = "https://api.deepseek.com/v1/chat/completions"
SAMPLING = ["temperature", "max_tokens", "top_p", "stop", "seed", "tool_choice"]

#: Untrusted text that would do harm if it reached the page unescaped.
HOSTILE = [
    "<script>window.__pwned = 1; alert('script')</script>",
    '<img src=x onerror="window.__pwned = 1; alert(1)">',
    '<a href="javascript:alert(2)">click me</a>',
    "</td></tr></table></details></details></div></section><script>alert(3)</script>",
    '"><svg onload="alert(4)"></svg>',
    "**bold** _em_ [link](javascript:alert(5)) <b>raw</b> `code`\n\n# heading",
    "{{ 7*7 }} {% raw %}{{ config }}{% endraw %} {# comment #}",
    "\x02wzxhzdk:0\x03 and &lt;already&gt; &amp; escaped",
    "\x02trace-book:0\x03 would be the trace extension's own token",
]
#: Harmless text of the same shape, to compare page structure against.
TAME = [f"plain text number {i}" for i in range(len(HOSTILE))]


# -- live-looking runs from the recorded provider traffic ---------------------


def _reply(message: dict[str, Any]) -> Message:
    return Message(
        role="ai",
        content=message.get("content") or None,
        tool_calls=[
            ToolCall(id=c["id"], name=c["function"]["name"], arguments=json.loads(c["function"]["arguments"]))
            for c in message.get("tool_calls") or []
        ],
        reasoning=message.get("reasoning_content") or None,
    )


def _live_scenario(mock: ScenarioRun, exchanges: list[dict[str, Any]]) -> ScenarioRun:
    context = list(mock.transcript[:2])
    declared = mock.turns[0].model_call.tools
    turns = []
    for index, recorded in enumerate(exchanges):
        body = recorded["response"]
        choice = body["choices"][0]
        reply = _reply(choice["message"])
        outside = 300.0 + 50.0 * index
        call = ModelCall(
            kind="live",
            model=body.get("model", "deepseek-flash"),
            timing=Timing(total_ms=outside + 12.5, outside_ms=outside),
            context=list(context),
            tools=declared,
            settings=dict(mock.settings),
            exchanges=[
                Exchange(
                    attempt=1,
                    request=WireRequest(
                        method="POST",
                        url=PROVIDER_URL,
                        headers=[
                            ("accept", "application/json"),
                            ("authorization", "not recorded"),
                            ("content-type", "application/json"),
                        ],
                        json_body=recorded["request"],
                        defaulted=[p for p in SAMPLING if p not in recorded["request"]],
                    ),
                    response=WireResponse(
                        status=recorded["status"], headers=list(recorded["headers"].items()), json_body=body
                    ),
                    timing=Timing(total_ms=outside + 2.0, outside_ms=outside),
                )
            ],
            reply=reply,
            finish_reason=choice["finish_reason"],
            usage=Usage(
                input_tokens=body["usage"]["prompt_tokens"],
                output_tokens=body["usage"]["completion_tokens"],
                cached_tokens=(body["usage"].get("prompt_tokens_details") or {}).get("cached_tokens"),
            ),
        )
        context.append(reply)
        mock_tools = mock.turns[index].tools if index < len(mock.turns) else []
        tools = []
        for position, asked in enumerate(reply.tool_calls):
            like = mock_tools[position] if position < len(mock_tools) else None
            if like is not None and like.name == asked.name:
                run = like.model_copy(update={"call_id": asked.id, "arguments": asked.arguments})
            else:
                run = ToolRun(call_id=asked.id, name=asked.name, arguments=asked.arguments, result="ok", message="ok")
            tools.append(run)
            context.append(Message(role="tool", content=run.message, tool_call_id=asked.id))
        total = call.timing.total_ms + sum(t.timing.total_ms for t in tools)
        turns.append(Turn(number=index + 1, timing=Timing(total_ms=total), model_call=call, tools=tools))
    finish = turns[-1].model_call.finish_reason
    if mock.ending.finish_reason is not None:
        ending = Ending(reason=mock.ending.reason, finish_reason=finish)
    else:
        ending = Ending(reason="no_tool_calls")
    return ScenarioRun(
        name=mock.name,
        mode="live",
        title=mock.title,
        tools=mock.tools,
        settings=mock.settings,
        timing=Timing(total_ms=sum(t.timing.total_ms for t in turns)),
        turns=turns,
        transcript=context,
        ending=ending,
    )


@cache
def mock_chapter(chapter: str) -> ChapterRun:
    """The chapter's real mock run (cached: the tests only read it)."""
    return run_chapter(chapter, "mock")


@cache
def live_chapter(chapter: str) -> ChapterRun:
    """A live run of the chapter rebuilt from the provider traffic of the seeds."""
    scenarios = []
    for mock in mock_chapter(chapter).scenarios:
        path = FIXTURES / f"{chapter}.{mock.name}.json"
        if path.exists():
            scenarios.append(_live_scenario(mock, json.loads(path.read_text(encoding="utf-8"))["exchanges"]))
    return ChapterRun(
        chapter=chapter,
        mode="live",
        model="deepseek-flash",
        recorded_at="2026-09-13T21:52:02+00:00",
        scenarios=scenarios,
    )


# -- the hostile corpus, run for real ----------------------------------------


class Echo(BaseModel):
    """Says back what it is given. <script>alert('description')</script>"""

    model_config = ConfigDict(title="echo")
    text: str


class Boom(BaseModel):
    """Always raises."""

    model_config = ConfigDict(title="boom")
    text: str


@tool(Echo)
def echo(args: Echo, ctx: ToolContext) -> str:
    """The text, unchanged."""
    return args.text


@tool(Boom)
def boom(args: Boom, ctx: ToolContext) -> str:
    """An unexpected error carrying the text."""
    raise RuntimeError(args.text)


def _corpus_scenarios(corpus: list[str]) -> list[Scenario]:
    everything = " ".join(corpus)
    return [
        Scenario(
            name="hostile",
            about=everything,
            system=corpus[0],
            prompt=everything,
            tools=[echo, boom],
            mock=[ask(*[call("echo", text=text) for text in corpus], text=corpus[1]), say(everything)],
        ),
        Scenario(
            name="hostile_error",
            prompt=corpus[2],
            tools=[echo, boom],
            mock=[ask(call("boom", text=everything))],
        ),
    ]


def _with_wire(run: ScenarioRun, corpus: list[str]) -> ScenarioRun:
    # A wire exchange, a note and an ending detail carrying the corpus, as a
    # provider or service could send them.
    everything = " ".join(corpus)
    turns = []
    for turn in run.turns:
        call = turn.model_call.model_copy(
            update={
                "notes": [*turn.model_call.notes, Note(label=corpus[3], data={"said": corpus})],
                "exchanges": [
                    Exchange(
                        attempt=1,
                        request=WireRequest(
                            method="POST",
                            url=f"https://example.invalid/{corpus[2]}",
                            headers=[("x-said", text) for text in corpus],
                            json_body={"messages": [{"role": "user", "content": text} for text in corpus]},
                            defaulted=corpus[:2],
                        ),
                        response=WireResponse(status=200, headers=[(corpus[0], corpus[1])], text_body=everything),
                    )
                ],
            }
        )
        turns.append(turn.model_copy(update={"model_call": call}))
    return run.model_copy(update={"turns": turns, "ending": run.ending.model_copy(update={"detail": everything})})


def hostile_chapter(corpus: tuple[str, ...] = tuple(HOSTILE)) -> ChapterTraces:
    """Mock and live runs of the corpus scenarios, and a failed live status naming it too."""
    texts = list(corpus)
    runs = [_with_wire(run_scenario(s, "mock"), texts) for s in _corpus_scenarios(texts)]
    mock = ChapterRun(chapter="hostile", mode="mock", scenarios=runs)
    live = ChapterRun(
        chapter="hostile",
        mode="live",
        scenarios=[r.model_copy(update={"mode": "live"}) for r in runs[:1]],
    )
    return ChapterTraces(
        chapter="hostile",
        mock=mock,
        live=live,
        live_status=LiveStatus(
            state="stale",
            reason=texts[4],
            failure=ErrorInfo(type="ProviderError", message=texts[0], traceback=" ".join(texts)),
        ),
        download_url="javascript:alert(6)",
    )


# -- long runs ---------------------------------------------------------------


def long_run(turns: int) -> ScenarioRun:
    """A real mock run of ``turns`` turns: ``turns - 1`` tool calls, then the answer."""
    from primer.chapters.ch09_who_retries import TOOLS

    script = [ask(call("price_of", item="milk")) for _ in range(turns - 1)] + [say("Milk is 1.20.")]
    scenario = Scenario(
        name=f"long_{turns}",
        prompt="How much is milk?",
        tools=TOOLS,
        mock=script,
        max_turns=turns + 1,
    )
    return run_scenario(scenario, "mock")


# -- a source over all of it -------------------------------------------------


@dataclass
class FixtureSource:
    """Seed chapters with mock and live-looking runs, and the hostile chapter."""

    live: bool = True
    asked: list[str] = field(default_factory=list)

    def traces(self, chapter: str) -> ChapterTraces:
        """The chapter's traces, or ``NotFound``."""
        self.asked.append(chapter)
        if chapter == "hostile":
            return hostile_chapter()
        if chapter not in ("ch05_loop_endings", "ch09_who_retries"):
            raise NotFound(f"There is no chapter {chapter!r}. The chapters are: ch05_loop_endings, ch09_who_retries.")
        return ChapterTraces(
            chapter=chapter,
            mock=mock_chapter(chapter),
            live=live_chapter(chapter) if self.live else None,
            live_status=LiveStatus(state="current") if self.live else LiveStatus(state="missing", reason="no key yet"),
            download_url=f"traces/{chapter}.json",
        )


# -- reading HTML back ---------------------------------------------------------

#: The one script the renderer writes, once a page (templates/later.html.j2): a trace comes from the
#: template, never from what a run says.
LATER = re.search(
    r"<script>(.*?)</script>",
    (Path(__file__).resolve().parent.parent / "primer/book/templates/later.html.j2").read_text("utf-8"),
    re.S,
)[1]

VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}


@dataclass
class Node:
    """An element: tag, attributes, children (nodes and text, in order)."""

    tag: str
    attrs: dict[str, str | None]
    children: list[Node | str] = field(default_factory=list)
    parent: Node | None = None

    @property
    def text(self) -> str:
        """All text inside, concatenated: what a reader sees (a script's source is not)."""
        if self.tag == "script":
            return ""
        return "".join(c if isinstance(c, str) else c.text for c in self.children)

    @property
    def source(self) -> str:
        """A script's source."""
        return "".join(c for c in self.children if isinstance(c, str))

    def elements(self) -> Iterator[Node]:
        """Every element below, depth first, in document order."""
        for child in self.children:
            if isinstance(child, Node):
                yield child
                yield from child.elements()

    def find(self, tag: str | None = None, **attrs: str) -> list[Node]:
        """Elements below with that tag and those attribute values (class: one of the classes)."""
        found = []
        for node in self.elements():
            if tag is not None and node.tag != tag:
                continue
            if all(
                value in (node.attrs.get("class") or "").split() if name == "class_" else node.attrs.get(name) == value
                for name, value in attrs.items()
            ):
                found.append(node)
        return found

    def by_id(self, anchor: str) -> Node:
        """The one element with that id."""
        matches = self.find(id=anchor)
        assert len(matches) == 1, f"{len(matches)} elements with id {anchor!r}"
        return matches[0]

    def is_summary(self) -> bool:
        """A <summary>, or a run's fold's line (div.tr-sum), which traces.js makes one when the run opens."""
        return self.tag == "summary" or (self.tag == "div" and "tr-sum" in (self.attrs.get("class") or "").split())

    def summary(self) -> str:
        """The text of a <details>' own <summary> (a fold's: its line)."""
        for child in self.children:
            if isinstance(child, Node) and child.is_summary():
                return child.text
        raise AssertionError(f"<{self.tag}> has no summary")

    def ancestors(self) -> Iterator[Node]:
        """The elements around this one, nearest first."""
        node = self.parent
        while node is not None:
            yield node
            node = node.parent


class _Builder(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.root = Node("#root", {})
        self.stack = [self.root]
        self.mismatched: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        node = Node(tag, dict(attrs), parent=self.stack[-1])
        self.stack[-1].children.append(node)
        if tag not in VOID:
            self.stack.append(node)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.stack[-1].children.append(Node(tag, dict(attrs), parent=self.stack[-1]))

    def handle_endtag(self, tag: str) -> None:
        if tag in VOID:
            return
        if self.stack[-1].tag != tag:
            self.mismatched.append(f"</{tag}> closes <{self.stack[-1].tag}>")
            return
        self.stack.pop()

    def handle_data(self, data: str) -> None:
        self.stack[-1].children.append(data)


def parse(html: str) -> Node:
    """The HTML as a tree; fails on any end tag that does not close the open element."""
    builder = _Builder()
    builder.feed(html)
    builder.close()
    assert not builder.mismatched, builder.mismatched[:5]
    assert builder.stack == [builder.root], f"unclosed: {[n.tag for n in builder.stack[1:]]}"
    return builder.root


# -- the data is what it claims ------------------------------------------------


def test_live_chapter_replays_every_recorded_exchange() -> None:
    for chapter in ("ch05_loop_endings", "ch09_who_retries"):
        live = live_chapter(chapter)
        assert live.scenarios, chapter
        for scenario in live.scenarios:
            recorded = json.loads((FIXTURES / f"{chapter}.{scenario.name}.json").read_text(encoding="utf-8"))
            assert len(scenario.turns) == len(recorded["exchanges"])
            for turn, exchange in zip(scenario.turns, recorded["exchanges"], strict=True):
                assert turn.model_call.exchanges[0].request.json_body == exchange["request"]
                assert turn.model_call.usage is not None
                assert turn.model_call.usage.input_tokens == exchange["response"]["usage"]["prompt_tokens"]
            # Each request the provider got carried the context the run recorded.
            for turn in scenario.turns:
                assert len(turn.model_call.exchanges[0].request.json_body["messages"]) == len(turn.model_call.context)


def test_hostile_chapter_carries_the_corpus_everywhere() -> None:
    traces = hostile_chapter()
    assert traces.mock is not None
    dumped = traces.mock.model_dump_json()
    for text in HOSTILE:
        assert json.dumps(text)[1:-1] in dumped
    error_run = traces.mock.scenario("hostile_error")
    assert error_run.turns[0].tools[0].error is not None


def test_long_run_has_the_turns_asked_for() -> None:
    run = long_run(5)
    assert len(run.turns) == 5
    assert run.ending.reason == "no_tool_calls"
    assert [len(t.tools) for t in run.turns] == [1, 1, 1, 1, 0]
