"""A scenario that is the author's own code: a function, sync or async.

primer's ``Scenario`` runs primer's ``Agent``. A ``CodeScenario`` runs whatever
the author wrote (the raw ``openai`` SDK, pydantic-ai, the OpenAI Agents SDK,
a loop of their own), and its trace is rebuilt from the HTTP it sends
(``primer.seam``, ``primer.from_wire``). The function is called with a
``Reach``: what it needs to reach the model and the scenario's services::

    def weather_agent(reach: Reach) -> None:
        client = reach.openai                        # an openai.OpenAI, ready
        ...client.chat.completions.create(model=reach.model, messages=..., tools=...)
        httpx.get(f"{reach.service('weather')}/today", params={"city": "Paris"})

    raw_sdk = CodeScenario(
        name="raw_sdk",
        code=weather_agent,
        services=[Service("weather", mock=weather, url="https://weather.example")],
        mock=[ask(call("weather_in", city="Paris")), say("Sunny in Paris.")],
    )

In mock runs the ``Reach`` points at a scripted provider answering from
``mock`` (``primer.scripted_provider``) and each service is its mock; live,
at the provider and services the settings name. Either way the code runs
unmodified, and so does a framework that builds its own clients, as long as
it is pointed at ``reach.base_url`` (or handed ``reach.openai`` /
``reach.async_openai``): a request anywhere else is a scenario error naming
its URL, and in mock runs nothing leaves the machine.

A ``CodeScenario`` is a ``Scenario`` so that everything that finds, plans,
runs and stores scenarios takes it as it is; the fields only primer's
``Agent`` uses (``prompt``, ``tools``, ``loop``, ``policy``, ``approvals``,
``service``) stay empty, and setting one is a ``ChapterError``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any

from primer.errors import ChapterError, NotFound
from primer.loop import until_no_tool_calls
from primer.models.mock import MockReply
from primer.scenario import Scenario
from primer.services import Service
from primer.tools import Tool

if TYPE_CHECKING:
    import openai as sdk  # the properties below are named openai

__all__ = ["CodeScenario", "Reach"]

#: The key the SDK sends in mock runs: the scripted provider takes any, and the record shows none.
MOCK_API_KEY = "mock-key-for-the-scripted-provider"


@dataclass(frozen=True, kw_only=True)
class CodeScenario(Scenario):
    """A scenario whose story is a function of the author's; its trace comes from the wire."""

    #: ``code(reach)``, a function or a coroutine function.
    code: Callable[[Reach], Any]
    prompt: str = ""
    tools: Sequence[Tool[Any]] = ()
    #: The scripted provider's replies, in order (mock runs).
    mock: Sequence[MockReply] = ()
    #: The services the code calls, by name.
    services: Sequence[Service] = ()

    def __post_init__(self) -> None:
        super().__post_init__()
        unused = [
            name
            for name, value in (
                ("prompt", self.prompt),
                ("tools", self.tools),
                ("service", self.service),
                ("policy", self.policy),
                ("approvals", self.approvals),
            )
            if value
        ]
        if self.loop is not until_no_tool_calls:
            unused.append("loop")
        if unused:
            raise ChapterError(
                f"CodeScenario {self.name!r} sets {', '.join(unused)}, which only primer's Agent uses: "
                "the code sends its own prompt and tools, and runs its own loop. Leave them out."
            )
        if not callable(self.code):
            raise ChapterError(f"CodeScenario {self.name!r}: code must be a function that takes a Reach.")
        names = [service.name for service in self.services]
        twice = sorted({name for name in names if names.count(name) > 1})
        if twice:
            raise ChapterError(f"CodeScenario {self.name!r} names the service {twice[0]!r} twice: give each its own.")


@dataclass
class Reach:
    """What a scenario's code is given to reach the model and its services."""

    #: The provider's OpenAI-compatible root (``.../v1``).
    base_url: str
    #: The key to send (in mock runs a stand-in the scripted provider takes).
    api_key: str
    #: The model to name in requests.
    model: str
    #: Each service's base URL, by name.
    services: Mapping[str, str] = field(default_factory=dict)
    #: Seconds to wait for the provider.
    timeout: float = 60.0

    @cached_property
    def openai(self) -> sdk.OpenAI:
        """A ready ``openai.OpenAI`` client (made on first use, closed after the run)."""
        import openai

        return openai.OpenAI(base_url=self.base_url, api_key=self.api_key, timeout=self.timeout)

    @cached_property
    def async_openai(self) -> sdk.AsyncOpenAI:
        """A ready ``openai.AsyncOpenAI`` client (for pydantic-ai, the Agents SDK, your async code)."""
        import openai

        return openai.AsyncOpenAI(base_url=self.base_url, api_key=self.api_key, timeout=self.timeout)

    def service(self, name: str) -> str:
        """A service's base URL; ``NotFound`` naming the scenario's services when it has no such one."""
        if name not in self.services:
            raise NotFound(
                f"There is no service {name!r}: the scenario's services are {', '.join(self.services) or 'none'}."
            )
        return self.services[name]
