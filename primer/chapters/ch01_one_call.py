"""One call: what goes to the model and what comes back.

No tools yet. The context is two messages, the system message and the
question; the reply is one ``ai`` message and a finish reason. Settings the
scenario sets (``temperature=0``) travel with the call; every sampling
parameter it leaves out is the provider's choice.
Code: ``primer/models/base.py`` (``Model.complete``), ``primer/models/mock.py``
(``MockModel``, ``say``) and ``primer/runner.py`` (``run_scenario`` builds the
first context).
"""

from __future__ import annotations

from primer.loop import until_answer
from primer.models.mock import say
from primer.scenario import Scenario

plain_question = Scenario(
    name="plain_question",
    about="A system message and a question go out; one ai message comes back.",
    prompt="What goes well with fresh bread?",
    tools=[],
    loop=until_answer,
    mock=[say("Butter. A little salt on top if you like.")],
)

one_word_answers = Scenario(
    name="one_word_answers",
    about="Same question, another system message: it is an instruction sent with every call.",
    system="You answer in exactly one word.",
    prompt="What goes well with fresh bread?",
    tools=[],
    loop=until_answer,
    mock=[say("Butter.")],
)

settings_on_the_wire = Scenario(
    name="settings_on_the_wire",
    about="temperature=0 is sent with the call; the other sampling parameters are left to the provider.",
    prompt="In one sentence: why does milk go sour?",
    tools=[],
    loop=until_answer,
    settings={"temperature": 0},
    mock=[say("Bacteria in the milk turn its sugar into lactic acid, which sours and thickens it.")],
)
