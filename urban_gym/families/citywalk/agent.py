"""``urbanground-react``: UrbanGround's agent (Appendix F), defined on CityWalk.

**System message** (F.1): the task type's prompt (``system.<TYPE>``), then the action
space (``actions.<variant>``: one flat action object per turn named by its ``action``
field, only its own parameters, moves of at most 2 s, mode rules), then the ReAct output
protocol (``protocol.<variant>``: ``observation``, ``reason``, ``action``; exactly one
JSON object). The variant is ``question`` for VR, OU and AEQ (do not answer while
exploring; after ``terminate`` the env's answer turn is a separate call with
``final_answer``, asking for ``{"answer": "A|B|C|D", "reason": ...}``) and
``navigation`` for the rest (terminate when done; the map plans no route). NP uses LGN's
prompt and template, as the paper does.

**Each user turn** (F.2-F.6): the task template (``task.<TYPE>``) filled from the task's
structured fields (:mod:`urban_gym.families.citywalk.task_text`), then -- before the
observation -- PTS's goal reminder, TWS's schedule status (done / total, the time, the
next appointment with its place, activity and deadline and the minutes left, or OVERDUE
by N minutes, or all done; clauses without a value left out) or MSP's route progress
(visited / total, the places left), and DCR's one-time closure notice (``notice.DCR``:
each closed segment as a chain of waypoints, :mod:`urban_gym.families.citywalk.closures`;
the env's own wording of it is taken out of the ``notice`` text). Then the env's status,
notice and the actions possible now, then the screenshot.

**Memory** (F.1: the agent keeps its conversation): by default every earlier turn of the
episode is sent -- its text and the reply -- and no image of a past turn (config
``history``: -1 the whole conversation, n the last n turns; ``past_images``: how many of
the most recent past turns keep their images, -1 all). ``--history`` and
``--history-images`` win over both.

Every text is a named entry of :data:`~urban_gym.families.citywalk.prompts.URBANGROUND`;
``--prompts FILE`` replaces any of them.
"""

from __future__ import annotations

from typing import Any

from urban_gym.baselines.lmm.calls import CALL_HEADINGS
from urban_gym.baselines.lmm.prompt import ALL_TURNS
from urban_gym.baselines.lmm.schemes.base import Scheme, SchemeProtocol, lmm_interface
from urban_gym.errors import InputError
from urban_gym.families.citywalk.closures import describe_closures
from urban_gym.families.citywalk.prompts import URBANGROUND
from urban_gym.families.citywalk.task_text import stop_name, template_values
from urban_gym.families.citywalk.tasks.types import TASK_TYPES, format_hhmm
from urban_gym.tasks.wording import end_sentence
from urban_gym.wrappers.protocols import protocol_for

FIELD_HELP = {
    "observation": "the visible evidence that matters now (short, not empty)",
    "reason": "why the next action follows from it (short, not empty)",
}
VARIANTS = ("auto", "question", "navigation")
#: Types that take another type's prompt and template (UrbanGround F.6: NP uses LGN's).
PROMPT_TYPE = {"NP": "LGN"}


def is_question(env: Any) -> bool:
    """Whether the env's current task is a multiple-choice question."""
    task = getattr(getattr(env, "unwrapped", env), "task", None)
    return bool(getattr(task, "options", None))


def prompt_type(task_type: str) -> str:
    """The type whose system prompt and template a task of ``task_type`` uses."""
    t = PROMPT_TYPE.get(task_type, task_type)
    if f"system.{t}" not in URBANGROUND:
        known = ", ".join(sorted(TASK_TYPES))
        raise InputError(f"urbanground-react: no prompt for task type {task_type!r} ({known})")
    return t


def city_title(city: Any) -> str:
    """The city's name as the prompts write it (``helsinki`` -> ``Helsinki``; a
    procedural city is "a generated city").
    """
    name = str(getattr(city, "name", "") or "")
    if not name or name.startswith("procedural"):
        return "a generated city"
    return name.replace("_", " ").replace("-", " ").title()


class _UrbanGroundProtocol(SchemeProtocol):
    """The scheme's texts first (the task, then the reminder or notice), then the env's
    texts without the instruction (and without the closure notice the scheme words
    itself), then the images.
    """

    def observation_parts(self, obs: Any, space: Any, env: Any = None) -> list:
        core = getattr(env, "unwrapped", env)
        own = [("text", t, "") for t in (self._extra(obs, env) if self._extra else []) if t]
        if isinstance(obs, dict):
            obs = {k: v for k, v in obs.items() if k not in self.hidden}
            said = getattr(core, "last_closure_notice", "")
            if said and isinstance(obs.get("notice"), str):
                obs["notice"] = " ".join(obs["notice"].replace(said, " ").split())
        parts = self.base.observation_parts(obs, space, env)
        texts = [p for p in parts if p[0] == "text"]
        images = [p for p in parts if p[0] != "text"]
        return own + texts + images


class UrbanGroundReAct(Scheme):
    """UrbanGround's agent (see the module docstring)."""

    name = "urbanground-react"
    families = ("citywalk",)
    defaults = {"variant": "auto", "history": -1, "past_images": 0}
    texts = URBANGROUND

    def __init__(self, config: Any = None, prompts: Any = None) -> None:
        super().__init__(config, prompts)
        if self.config["variant"] not in VARIANTS:
            raise InputError(
                f"scheme 'urbanground-react': variant={self.config['variant']!r} is not one "
                f"of {', '.join(VARIANTS)}"
            )
        for key in ("history", "past_images"):
            if int(self.config[key]) < -1:
                raise InputError(
                    f"scheme 'urbanground-react': {key}={self.config[key]!r} must be -1 "
                    "(all) or >= 0"
                )
        self.final_answers = 0
        self._question = False
        self._type = "LGN"
        self._city = "a generated city"
        self._task_text = ""
        self._values: dict[str, Any] = {}
        self._appointments: list[dict[str, str]] = []

    def history(self, family: str | None) -> tuple[int | str, bool | int]:
        """The whole conversation (``history`` -1) or the last ``history`` turns; the
        images of the last ``past_images`` past turns (0: none, -1: all).
        """
        h = int(self.config["history"])
        k = int(self.config["past_images"])
        return (ALL_TURNS if h < 0 else h), (True if k < 0 else k if k > 0 else False)

    def protocol(self, family: str | None) -> SchemeProtocol:
        """The observe/reason/act protocol with the appendix-F texts."""
        return _UrbanGroundProtocol(
            protocol_for("observe_reason_act"),
            self._system,
            ("observation", "reason"),
            FIELD_HELP,
            hidden=("instruction",),
            extra=self._turn_texts,
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
                self.text(f"system.{self._type}", city=self._city),
                self.text(f"actions.{v}", actions=action_set.describe()),
                self.text(f"protocol.{v}"),
            ]
        )

    # ------------------------------------------------------------------ the texts
    def task_text(self) -> str:
        """The current task's template, filled."""
        return self._task_text

    def _fill_task(self, task: Any, city: Any) -> str:
        values = template_values(task, city)
        self._appointments = list(values.pop("appointment_values", []))
        if self._appointments:
            values["appointments"] = "\n".join(
                self.text("task.TWS.appointment", **a) for a in self._appointments
            )
        self._values = values
        return self.text(f"task.{self._type}", **values)

    def reminder(self, env: Any) -> str:
        """The text put before the observation: PTS's goal reminder, TWS's schedule
        status, MSP's route progress (``""`` for other types).
        """
        core = getattr(env, "unwrapped", env)
        kind = getattr(getattr(core, "task", None), "type", None)
        if kind == "PTS":
            return self.text("reminder.PTS", request=self._values.get("request", ""))
        prog = core.stops_progress() if hasattr(core, "stops_progress") else None
        if prog is None or kind not in ("TWS", "MSP"):
            return ""
        stops = core.stops
        if kind == "MSP":
            remaining = ", ".join(stop_name(core.city, stops[i]) for i in prog.remaining)
            return self.text(
                "reminder.MSP",
                visited=prog.completed,
                total=prog.total,
                remaining=remaining or "none",
            )
        head = self.text(
            "reminder.TWS.progress",
            completed=prog.completed,
            total=prog.total,
            time=format_hhmm(prog.now),
        )
        if prog.next is None:
            return f"{head} {self.text('reminder.TWS.done')}"
        stop = stops[prog.next]
        values = self._appointments[prog.next]
        place = str(stop.get("name") or values["place"])
        nxt = self.text("reminder.TWS.next", place=place, activity=values["activity"])
        if stop.get("deadline") is not None:
            nxt += self.text("reminder.TWS.due", deadline=values["deadline"])
            if prog.minutes_left is not None:
                nxt += self.text("reminder.TWS.left", minutes_left=prog.minutes_left)
            elif prog.minutes_overdue is not None:
                nxt += self.text("reminder.TWS.overdue", minutes_overdue=prog.minutes_overdue)
        return f"{head} {end_sentence(nxt)}"

    def notice(self, env: Any) -> str:
        """DCR's one-time notice in the step a closure appears (``""`` otherwise)."""
        core = getattr(env, "unwrapped", env)
        appeared = list(getattr(core, "closures_appeared", []) or [])
        if not appeared:
            return ""
        chains = describe_closures(core.city, [core.closures[i] for i in appeared])
        return self.text("notice.DCR", closures=chains)

    def _turn_texts(self, obs: Any, env: Any) -> list[str]:
        out = [f"## Task\n{self._task_text}"] if self._task_text else []
        if env is None:
            return out
        return out + [t for t in (self.notice(env), self.reminder(env)) if t]

    # ------------------------------------------------------------------ the loop
    def reset(self, agent: Any, stack: Any, task: Any, seed: int | None) -> None:
        """Pick the variant, the prompt type and the filled template of this task."""
        self._question = self.variant(stack) == "question"
        self.final_answers = 0
        core = stack.unwrapped
        task = getattr(core, "task", None) or task
        self._type = prompt_type(str(task.type))
        self._city = city_title(core.city)
        self._task_text = self._fill_task(task, core.city)

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
