"""``urbanground-react``: UrbanGround's agent (Appendix F.1).

The system message is the task prompt, then the action-space prompt (one flat action
object per turn named by its ``action`` field, only its own parameters, no ``type`` field,
moves of at most 2 s, mode rules), then the ReAct output protocol (``observation``,
``reason``, ``action``; exactly one JSON object). Two variants: ``question`` (do not answer
while exploring; in the env's answer turn after ``terminate`` a separate call asks for the
final answer as ``{"answer": "A|B|C|D", "reason": ...}``) and
``navigation`` (terminate on arrival; the state is scored). The model sees its recent
turns (``history``; the family's default unless set). Defined on CityWalk.
"""

from __future__ import annotations

from typing import Any

from urban_gym.baselines.lmm.calls import CALL_HEADINGS
from urban_gym.baselines.lmm.schemes.base import Scheme, SchemeProtocol, lmm_interface
from urban_gym.errors import InputError
from urban_gym.families.citywalk.prompts import URBANGROUND
from urban_gym.wrappers.protocols import protocol_for

FIELD_HELP = {
    "observation": "the visible evidence that matters now (short, not empty)",
    "reason": "why the next action follows from it (short, not empty)",
}
VARIANTS = ("auto", "question", "navigation")


def is_question(env: Any) -> bool:
    """Whether the env's current task is a multiple-choice question."""
    task = getattr(getattr(env, "unwrapped", env), "task", None)
    return bool(getattr(task, "options", None))


class UrbanGroundReAct(Scheme):
    """UrbanGround's observation / reason / action loop (see the module docstring)."""

    name = "urbanground-react"
    families = ("citywalk",)
    defaults = {"variant": "auto", "history": -1}
    texts = URBANGROUND

    def __init__(self, config: Any = None, prompts: Any = None) -> None:
        super().__init__(config, prompts)
        if self.config["variant"] not in VARIANTS:
            raise InputError(
                f"scheme 'urbanground-react': variant={self.config['variant']!r} is not one "
                f"of {', '.join(VARIANTS)}"
            )
        self.final_answers = 0
        self._question = False

    def history(self, family: str | None) -> tuple[int, bool] | None:
        """``history`` past turns (-1: the family's default)."""
        h = int(self.config["history"])
        return None if h < 0 else (h, False)

    def protocol(self, family: str | None) -> SchemeProtocol:
        """The observe/reason/act protocol with the appendix-F texts."""
        return SchemeProtocol(
            protocol_for("observe_reason_act"),
            self._system,
            ("observation", "reason"),
            FIELD_HELP,
        )

    def variant(self, env: Any) -> str:
        """``question`` or ``navigation`` for the env's current task."""
        v = self.config["variant"]
        if v != "auto":
            return v
        return "question" if is_question(env) else "navigation"

    def _system(self, action_set: Any, proto: SchemeProtocol) -> str:
        v = "question" if self._question else "navigation"
        if self.config["variant"] != "auto":
            v = self.config["variant"]
        return "\n\n".join(
            [
                self.text(f"task.{v}"),
                self.text("actions", actions=action_set.describe()),
                self.text(f"protocol.{v}"),
            ]
        )

    # ------------------------------------------------------------------ the loop
    def reset(self, agent: Any, stack: Any, task: Any, seed: int | None) -> None:
        """Pick the variant of this task."""
        self._question = self.variant(stack) == "question"
        self.final_answers = 0

    def act(self, agent: Any, stack: Any) -> str:
        """One turn; a question's answer turn is a separate call with the final-answer
        instructions.

        The env itself opens the answer turn after ``terminate`` (or at the step limit) and
        takes only ``{"answer": ..., "reason": ...}`` in it; this scheme asks
        for that reply with UrbanGround's final-answer prompt instead of the exploration
        system message.
        """
        if not (self._question and getattr(stack.unwrapped, "answer_turn", False)):
            return agent.ask_action(stack)
        lm = lmm_interface(stack)
        messages = [
            {
                "role": "system",
                "content": CALL_HEADINGS["final_answer"] + "\n" + self.text("final_answer"),
            },
            {"role": "user", "content": lm.user_content()},
        ]
        self.final_answers += 1
        return agent.ask(messages, "final_answer")

    def episode_notes(self) -> dict[str, Any]:
        """The final-answer calls made."""
        return {"final_answers": self.final_answers}
