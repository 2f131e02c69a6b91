"""Reasoning baselines of CityNav (Section 5.2) on the family's own prompts:
``cot`` (chain of thought) and ``reflexion`` (self-reflection after a failed attempt).

``cot`` asks for a ``reasoning`` field before the action, written step by step. Defined
on every family (the reasoning baselines are not tied to one benchmark's prompts).

``reflexion`` (Shinn et al., as CityNav runs it): after an attempt of a task fails, the
model is asked (a separate call, :data:`~urban_gym.baselines.lmm.calls.CALL_HEADINGS`
``reflection``) what went wrong; the next attempt of the same task (the next repeat,
``--seeds N``) gets all reflections so far in its prompts. Attempts and reflections are
recorded in the step notes of the trace (``scheme`` in step 1). The reflection may use
another model (``reflect_model``), as CityNav's Self-Reflection (GPT-5) does.
"""

from __future__ import annotations

import json
from typing import Any

from urban_gym.baselines.lmm.calls import CALL_HEADINGS
from urban_gym.baselines.lmm.schemes.base import Scheme, SchemeProtocol
from urban_gym.baselines.lmm.schemes.texts import REASONING
from urban_gym.wrappers.protocols import protocol_for


class ChainOfThought(Scheme):
    """The family's protocol with a step-by-step ``reasoning`` field first."""

    name = "cot"
    defaults = {"field": "reasoning"}
    texts = {"cot": REASONING["cot"]}

    def protocol(self, family: str | None) -> SchemeProtocol:
        """The family protocol with the reasoning field and instruction added."""
        base = protocol_for(family)
        field = str(self.config["field"])
        fields = (field, *[f for f in base.reply_fields if f != field])
        help_ = {**base.field_help, field: "your step-by-step reasoning, before the action"}

        def system(action_set: Any, proto: SchemeProtocol) -> str:
            text = family_system(base, action_set, proto)
            return text + "\n\n## Reasoning\n" + self.text("cot")

        return SchemeProtocol(base, system, fields, help_, extra=self._extra)

    def _extra(self, obs: Any, env: Any) -> list[str]:
        return []


def family_system(base: Any, action_set: Any, proto: SchemeProtocol) -> str:
    """``base``'s system prompt (intro, actions, how to reply, example) with ``proto``'s
    reply fields.
    """
    parts = [base.intro, "## Actions", proto.describe_actions(action_set), "## How to reply"]
    parts.append(proto.reply_instructions(action_set))
    ex = proto.example_actions(action_set)
    if ex:
        parts.append(
            "Example reply:\n" + proto.format_reply(ex[0], proto.example_fields(), action_set)
        )
    return "\n\n".join(parts)


class Reflexion(ChainOfThought):
    """Chain of thought plus reflections carried across attempts of a task."""

    name = "reflexion"
    defaults = {"field": "reasoning", "max_reflections": 3, "reflect_model": ""}
    texts = {k: REASONING[k] for k in ("cot", "reflexion", "reflect")}

    def __init__(self, config: Any = None, prompts: Any = None) -> None:
        super().__init__(config, prompts)
        self.reflections: dict[str | None, list[str]] = {}
        self.attempts: dict[str | None, int] = {}
        self._notes: dict[str, Any] = {}

    def reset(self, agent: Any, stack: Any, task: Any, seed: int | None) -> None:
        """Reflect on the previous attempt if it failed; count this attempt."""
        last = agent.last_outcome
        if last is not None and not last.get("is_success") and last.get("task_id"):
            self._reflect(agent, last)
        tid = getattr(task, "id", None)
        self.attempts[tid] = self.attempts.get(tid, 0) + 1
        self._notes = {
            "attempt": self.attempts[tid],
            "reflections": list(self.reflections.get(tid, [])),
        }
        self._task_id = tid

    def _reflect(self, agent: Any, last: dict[str, Any]) -> None:
        tid = last["task_id"]
        user = (
            f"## Task\n{last.get('instruction', '')}\n\n## How the attempt ended\n"
            f"termination: {last.get('termination')}, steps: {last.get('steps')}"
        )
        if last.get("trajectory"):
            user += "\n\n## What you did\n" + last["trajectory"]
        messages = [
            {
                "role": "system",
                "content": CALL_HEADINGS["reflection"] + "\n" + self.text("reflect"),
            },
            {"role": "user", "content": user},
        ]
        model = self.config["reflect_model"] or None
        text = agent.ask(
            messages, "reflection", agent.episode_header(last.get("seed"), tid), model=model
        )
        reflection = reply_field(text, "reflection")
        kept = self.reflections.setdefault(tid, [])
        kept.append(reflection)
        del kept[: -int(self.config["max_reflections"])]

    def _extra(self, obs: Any, env: Any) -> list[str]:
        kept = self.reflections.get(getattr(self, "_task_id", None), [])
        if not kept:
            return []
        lines = "\n".join(f"{i}. {r}" for i, r in enumerate(kept, start=1))
        return [f"## Reflections on your earlier attempts\n{self.text('reflexion')}\n{lines}"]

    def episode_notes(self) -> dict[str, Any]:
        """The attempt number and the reflections it was given (once per episode: in the
        trace of its first step).
        """
        notes, self._notes = self._notes, {}
        return notes


def reply_field(text: str, name: str) -> str:
    """Field ``name`` of the first JSON object in a reply (plain, fenced or in prose), else
    the whole text (at most 2,000 characters).
    """
    obj = first_object(text)
    if isinstance(obj, dict) and isinstance(obj.get(name), str):
        return obj[name].strip()
    return text.strip()[:2000]


def first_object(text: str) -> Any:
    """The first JSON object in ``text`` (None when there is none)."""
    try:
        value = json.loads(text)
        if isinstance(value, dict):
            return value
    except ValueError:
        pass
    decoder = json.JSONDecoder()
    start = text.find("{")
    while start >= 0:
        try:
            value, _ = decoder.raw_decode(text, start)
            if isinstance(value, dict):
                return value
        except ValueError:
            pass
        start = text.find("{", start + 1)
    return None
