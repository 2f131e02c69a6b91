"""``urbanground-react``: UrbanGround's agent (seed 002, appendix F.1).

The system message is the task prompt, then the action-space prompt (one flat action
object per turn named by its ``action`` field, only its own parameters, no ``type`` field,
moves of at most 2 s, mode rules), then the ReAct output protocol (``observation``,
``reason``, ``action``; exactly one JSON object). Two variants: ``question`` (do not answer
while exploring; after ``terminate`` a separate call asks for the final answer as
``{"answer": "A|B|C|D", "reason": ...}``, which goes with the terminate action) and
``navigation`` (terminate on arrival; the state is scored). The model sees its recent
turns (``history``; the family's default unless set). Defined on CityWalk.
"""

from __future__ import annotations

from typing import Any

from urban_gym.baselines.lmm.calls import CALL_HEADINGS
from urban_gym.baselines.lmm.schemes.base import Scheme, SchemeProtocol, lm_interface
from urban_gym.baselines.lmm.schemes.cot import first_object
from urban_gym.baselines.lmm.schemes.texts import URBANGROUND
from urban_gym.errors import UrbanGymError
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
            raise UrbanGymError(
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
        """One turn; on a question's terminate, ask for the final answer separately."""
        text = agent.ask_action(stack)
        if not self._question:
            return text
        lm = lm_interface(stack)
        parsed = lm.read_reply(text)
        action = parsed.action if parsed.ok else None
        if not action or action.get("action") != "terminate":
            return text
        messages = [
            {
                "role": "system",
                "content": CALL_HEADINGS["final_answer"] + "\n" + self.text("final_answer"),
            },
            {"role": "user", "content": lm.user_content()},
            {"role": "assistant", "content": text},
            {"role": "user", "content": "Give your final answer now."},
        ]
        answer = agent.ask(messages, "final_answer")
        self.final_answers += 1
        obj = first_object(answer)
        letter = obj.get("answer") if isinstance(obj, dict) else None
        reply = first_object(text) or {}
        act = {"action": "terminate"}
        if isinstance(letter, str) and letter.strip():
            act["answer"] = letter.strip()
        import json

        return json.dumps(
            {
                "observation": reply.get("observation", ""),
                "reason": reply.get("reason", ""),
                "action": act,
            },
            ensure_ascii=False,
        )

    def episode_notes(self) -> dict[str, Any]:
        """The final-answer calls made."""
        return {"final_answers": self.final_answers}
