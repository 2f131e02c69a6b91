"""``self-reflection``: CityNav's Self-Reflection baseline (Section 5.2), each step's draft
decision reviewed and refined before the agent acts.

CityNav compares AgentNav with "Self-Reflection (GPT-4.1)" and "Self-Reflection (GPT-5)":
the agent (GPT-4.1) reasons and decides, and in a reflective step a model -- the same one,
or a stronger one -- revisits that initial reasoning and refines it (Table 4: the agent is
GPT-4.1 in both rows; the label names the model of the reflection). Here each step makes
two calls:

1. the action request of chain of thought (:class:`~.cot.ChainOfThought`: a step-by-step
   ``reasoning`` field before the action) -- the draft;
2. a review (:data:`~urban_gym.baselines.lmm.calls.CALL_HEADINGS` ``draft_review``) by
   ``reflect_model`` (empty: the agent's model) that gets the agent's instructions, the
   same input and the draft, and writes the final reply in the same format with a
   ``critique`` field; that reply is the step's action. A review with no JSON object in
   it leaves the draft in force (noted in the step).

The step notes of the trace (``scheme``) hold the draft, whether the review changed the
action, and the model that reviewed. Distinct from ``reflexion`` (Shinn et al.'s
reflection across failed attempts of a task). Defined on every family.
"""

from __future__ import annotations

from typing import Any

from urban_gym.baselines.lmm.calls import CALL_HEADINGS
from urban_gym.baselines.lmm.schemes.base import lmm_interface
from urban_gym.baselines.lmm.schemes.cot import ChainOfThought, first_object
from urban_gym.baselines.lmm.schemes.texts import REASONING


class SelfReflection(ChainOfThought):
    """Chain of thought whose every draft is reviewed and refined before acting."""

    name = "self-reflection"
    defaults = {"field": "reasoning", "reflect_model": ""}
    texts = {k: REASONING[k] for k in ("cot", "review")}

    def __init__(self, config: Any = None, prompts: Any = None) -> None:
        super().__init__(config, prompts)
        self.reviews = 0
        self._notes: dict[str, Any] = {}

    def describe(self) -> dict[str, Any]:
        """The manifest's record, with the paper the scheme follows and who reviews."""
        return {
            **super().describe(),
            "source": "CityNav Section 5.2 and Table 4: Self-Reflection",
            "reviewed_by": str(self.config["reflect_model"]) or "the agent's model",
        }

    def reset(self, agent: Any, stack: Any, task: Any, seed: int | None) -> None:
        """A new episode: no reviews yet."""
        self.reviews, self._notes = 0, {}

    def act(self, agent: Any, stack: Any) -> str:
        """The draft (an action request), then its review; the reviewed reply."""
        draft = agent.ask_action(stack)
        lm = lmm_interface(stack)
        system = (
            CALL_HEADINGS["draft_review"]
            + "\n"
            + self.text("review")
            + "\n\n## The agent's instructions\n"
            + lm.system_prompt()
        )
        user = with_text(lm.user_content(), "## The draft reply\n" + draft)
        model = str(self.config["reflect_model"]) or None
        final = agent.ask(
            [{"role": "system", "content": system}, {"role": "user", "content": user}],
            "draft_review",
            model=model,
        )
        self.reviews += 1
        reviewed = first_object(final)
        if not isinstance(reviewed, dict):
            self._notes = {"draft": draft[:2000], "review": "unreadable: the draft stands"}
            return draft
        before = first_object(draft)
        self._notes = {
            "draft": draft[:2000],
            "changed": not isinstance(before, dict)
            or before.get("action") != reviewed.get("action"),
            "reviewed_by": model or "the agent's model",
        }
        builder = agent.prompt_builder
        if builder is not None and builder.turns:  # past turns show the reply acted on
            builder.turns[-1] = (builder.turns[-1][0], final)
        return final

    def episode_notes(self) -> dict[str, Any]:
        """This step's draft, whether the review changed its action, who reviewed."""
        notes, self._notes = self._notes, {}
        return notes


def with_text(content: Any, text: str) -> Any:
    """A user message's content (a string or a list of parts) with ``text`` added last."""
    if isinstance(content, str):
        return content + "\n\n" + text
    return [*content, {"type": "text", "text": text}]
