"""``prep``: PReP (Perceive, Reflect, and Plan; Zeng et al., 2024), the outdoor-navigation
baseline CityNav compares AgentNav with (Section 5.2, Table 4).

PReP navigates towards a goal without instructions by three modules around each decision:
it *perceives* the landmarks in the current street views with their direction and
distance; it *reflects* on that perception together with a memory of its earlier
experience (what it saw and did), retrieved for the current step, to estimate where the
goal lies and to notice loops; and it *plans* a long-range route of sub-goals from the
reflection, so that the decision is not short-sighted. PReP's perception is a fine-tuned
LLaVA-7B; CityNav runs every baseline of its Table 4 with GPT-4.1, and so here each module
is a call to the agent's own model.

Each decision therefore makes four calls (:data:`~urban_gym.baselines.lmm.calls.
CALL_HEADINGS`): ``perception`` (the intersection's images and options), ``memory_reflection``
(the perception with the memory: the last ``memory_entries`` steps' perceptions and
choices), ``planning`` (every ``replan_every``-th decision; the previous plan shown
otherwise) and the action request, whose prompt shows the perception, the reflection and
the plan. The step notes of the trace (``scheme``) hold the three. Texts:
:data:`~urban_gym.families.streetgraph.prompts.PREP` (our words). Defined on StreetGraph.
"""

from __future__ import annotations

from typing import Any

from urban_gym.baselines.lmm.calls import CALL_HEADINGS
from urban_gym.baselines.lmm.schemes.base import Scheme, SchemeProtocol, lmm_interface
from urban_gym.baselines.lmm.schemes.cot import first_object, reply_field
from urban_gym.errors import InputError
from urban_gym.families.streetgraph.agent import text_of
from urban_gym.families.streetgraph.prompts import PREP
from urban_gym.wrappers.protocols import protocol_for

FIELD_HELP = {"thought": "which step of your plan the chosen street carries out, and why"}


class PReP(Scheme):
    """Perceive, reflect, plan, then decide (see the module docstring)."""

    name = "prep"
    families = ("streetgraph",)
    defaults = {"memory_entries": 5, "replan_every": 1}
    texts = PREP
    own_memory = "its earlier steps' perceptions and choices, shown to the reflection call"

    def __init__(self, config: Any = None, prompts: Any = None) -> None:
        super().__init__(config, prompts)
        for key in ("memory_entries", "replan_every"):
            if int(self.config[key]) < 1:
                raise InputError(f"scheme 'prep': {key}={self.config[key]!r} must be >= 1")
        self._reset()

    def _reset(self) -> None:
        self.decisions = 0
        self.memory: list[str] = []
        self.notes: dict[str, str] = {}
        self.plan = ""

    def describe(self) -> dict[str, Any]:
        """The manifest's record, with the paper the scheme follows."""
        return {**super().describe(), "source": "PReP (Zeng et al., 2024), CityNav Table 4"}

    def stack_options(self, family: str | None) -> dict[str, Any]:
        """No memory wrapper: PReP keeps its own memory of perceptions and choices."""
        return {"memory": None}

    def history(self, family: str | None) -> tuple[int, bool]:
        """No past turns: the memory and the plan carry the past."""
        return 0, False

    def protocol(self, family: str | None) -> SchemeProtocol:
        """StreetGraph's options with bearings, PReP's system prompt, the notes shown."""
        return SchemeProtocol(
            protocol_for("verbalized_path"),
            lambda aset, proto: self.text(
                "system", actions=aset.describe(), fields=proto.fields_text()
            ),
            ("thought",),
            FIELD_HELP,
            extra=self._notes_text,
        )

    def _notes_text(self, obs: Any, env: Any) -> list[str]:
        if not self.notes:
            return []
        return [
            f"## What you perceive\n{self.notes.get('perception', '')}",
            f"## Your reflection\n{self.notes.get('reflection', '')}",
            f"## Your plan\n{self.plan}",
        ]

    # ------------------------------------------------------------------ the loop
    def reset(self, agent: Any, stack: Any, task: Any, seed: int | None) -> None:
        """A new episode: an empty memory, no plan."""
        self._reset()

    def act(self, agent: Any, stack: Any) -> str:
        """Perceive, reflect, (re)plan, then decide; the step goes into the memory."""
        lm = lmm_interface(stack)
        self.notes = {}  # the calls below see the input without the previous notes
        content = lm.user_content()
        task = text_of(content)
        perception = self._call(agent, "perception", "perceive", content, "perception")
        if not self.memory_on:
            remembered = "(none: this run keeps no memory of earlier steps)"
        else:
            remembered = "\n".join(self.memory) or "(nothing yet: this is the first decision)"
        reflection = self._call(
            agent,
            "memory_reflection",
            "reflect",
            f"{task}\n\n## What you perceive now\n{perception}\n\n"
            f"## Your memory of the earlier steps (oldest first)\n{remembered}",
            "reflection",
        )
        if self.decisions % int(self.config["replan_every"]) == 0:
            self.plan = self._call(
                agent,
                "planning",
                "plan",
                f"{task}\n\n## Your reflection\n{reflection}\n\n"
                f"## Your previous plan\n{self.plan or '(none yet)'}",
                "plan",
            )
        self.notes = {"perception": perception, "reflection": reflection}
        self.decisions += 1
        text = agent.ask_action(stack)
        obj = first_object(text)
        chose = obj.get("action") if isinstance(obj, dict) else None
        if self.memory_on:
            self.memory.append(
                f"Decision {self.decisions}: perceived {perception[:400]}; chose {chose}."
            )
            del self.memory[: -int(self.config["memory_entries"])]
        return text

    def _call(self, agent: Any, kind: str, text: str, user: Any, field: str) -> str:
        system = CALL_HEADINGS[kind] + "\n" + self.text(text)
        reply = agent.ask(
            [{"role": "system", "content": system}, {"role": "user", "content": user}], kind
        )
        return reply_field(reply, field)

    def episode_notes(self) -> dict[str, Any]:
        """This step's perception, reflection and plan."""
        return {**self.notes, "plan": self.plan} if self.notes else {}
