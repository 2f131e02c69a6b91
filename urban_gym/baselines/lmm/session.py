"""One scripted episode of the scripted server (:mod:`.server`): the env in lockstep with
the client's, the policy's choices, and the ground-truth answers to the calls that are not
actions (:mod:`.calls`).
"""

from __future__ import annotations

import json
import random
from collections.abc import Mapping
from typing import Any

from urban_gym.baselines.lmm.policies import ScriptedPolicy
from urban_gym.tasks.families import family_name
from urban_gym.wrappers.protocols import PromptProtocol, protocol_for

#: The reply fields the scripted server writes besides the action: a superset of every
#: protocol's and scheme's fields, so that any scheme's parser finds its own.
SCRIPTED_FIELDS: tuple[str, ...] = (
    "thought",
    "reasoning",
    "observation",
    "reason",
    "destination_location",
    "current_location",
    "walking_directions",
    "instruction_progress",
    "next_step",
    "memory",
)


class Session:
    """An episode in lockstep: the server's env, the oracle, the policy's generator.

    Args:
        env: the server's own env (reset here).
        policy: the server's :class:`~.policies.ScriptedPolicy`.
        oracle_factory: ``env -> oracle`` (None: the family's oracle).
    """

    def __init__(self, env: Any, policy: ScriptedPolicy, oracle_factory: Any = None) -> None:
        self.env = env
        self.policy = policy
        self.oracle_factory = oracle_factory
        self.oracle: Any = None
        self.protocol: PromptProtocol | None = None
        self.rng = random.Random(0)
        self.over = True
        self.steps = 0
        self.deviations = 0
        self.info: dict[str, Any] = {}
        self.answer: Any = None
        self.outcome: dict[str, Any] | None = None
        self.task_id: str | None = None
        self.last: tuple[str, dict[str, Any]] | None = None

    def start(self, seed: int | None, options: Mapping[str, Any] | None) -> dict[str, Any]:
        """Reset the env and the oracle for a new episode; a summary of it."""
        _, info = self.env.reset(seed=seed, options=dict(options) if options else None)
        if self.oracle_factory is None:
            from urban_gym.baselines.oracles import make_oracle

            self.oracle = make_oracle(self.env)
        else:
            self.oracle = self.oracle_factory(self.env)
        self.oracle.reset(self.env)
        self.protocol = protocol_for(family_name(self.env))
        task = getattr(self.env.unwrapped, "task", None)
        self.task_id = getattr(task, "id", None)
        self.rng = self.policy.rng_for(seed, self.task_id)
        self.over, self.steps, self.deviations = False, 0, 0
        self.info, self.answer, self.outcome, self.last = dict(info), None, None, None
        return {"seed": seed, "task": self.task_id}

    # ------------------------------------------------------------------ actions
    def next_reply(self) -> str:
        """The policy's next reply (JSON text in the family's protocol), carried out on
        the server's env.
        """
        text = self.policy.next_text()
        if text is not None:
            self._carry_out_text(text)
            return text
        canonical, deviated = self.policy.choose(self.env, self.oracle, self.rng)
        self.deviations += int(deviated)
        aset = self.env.unwrapped.action_set
        fields: dict[str, Any] = {f: self._field_text(f) for f in SCRIPTED_FIELDS}
        text_params = [p.name for p in aset[canonical["action"]].params if p.kind == "str"]
        fields["answer"] = canonical.get(text_params[0]) if text_params else None
        assert self.protocol is not None
        reply = self.protocol.format_reply(canonical, fields, aset)
        self._step(canonical, fields["answer"])
        return reply

    def _field_text(self, name: str) -> str:
        n = self.steps + 1
        if name == "memory":
            return f"step {n}: scripted"
        return f"scripted {self.policy.kind}, step {n}: {name}"

    def _carry_out_text(self, text: str) -> None:
        from urban_gym.envs.actions import UnreadableReply

        assert self.protocol is not None
        parsed = self.protocol.parse(text, self.env.unwrapped.action_set)
        if parsed.ok:
            action: Any = dict(parsed.action or {})
        elif isinstance(parsed.raw_action, dict):
            action = dict(parsed.raw_action)
        else:
            action = UnreadableReply("unreadable: " + parsed.error, parsed, text)
        answer = action.get("answer") if isinstance(action, dict) else None
        self._step(action, answer)

    def _step(self, action: Any, answer: Any) -> None:
        _, _, terminated, truncated, info = self.env.step(action)
        self.steps += 1
        self.info = dict(info)
        if answer is not None:
            self.answer = answer
        if terminated or truncated:
            self.over = True
            self.outcome = {
                "termination": info.get("termination"),
                "is_success": bool(info.get("is_success", False)),
                "steps": self.steps,
                "distance_to_goal_m": info.get("distance_to_goal_m"),
            }

    # ------------------------------------------------------------------ other calls
    def answer_call(self, kind: str) -> str:
        """The ground-truth answer to a non-action call of ``kind`` (:mod:`.calls`)."""
        if kind == "self_positioning":
            return self._self_position()
        if kind == "final_answer":
            if self.answer is None and getattr(self.env.unwrapped, "answer_turn", False):
                # an answer turn (a question asked after terminate): the policy's answer
                # as the client's env carries out the reply
                return self.next_reply()
            return json.dumps({"answer": self.answer, "reason": "scripted: the answer given"})
        if kind == "reflection":
            return json.dumps({"reflection": self._reflection()})
        if kind == "draft_review":
            return self._review()
        if kind in ("perception", "memory_reflection", "planning"):
            return self._report(kind)
        raise ValueError(f"no scripted answer to a {kind!r} call")

    def _review(self) -> str:
        """The draft the last action request got back, its action kept (the client carries
        out the reviewed reply, which must be the action the server stepped with), with a
        ``critique`` added.
        """
        if self.last is None:
            raise ValueError("a draft review before any action request of the episode")
        draft = str(self.last[1]["choices"][0]["message"]["content"])
        from urban_gym.baselines.lmm.schemes.cot import first_object

        obj = first_object(draft)
        if not isinstance(obj, dict):
            return draft
        obj["critique"] = f"scripted review of step {self.steps}: the draft stands"
        return json.dumps(obj)

    def _report(self, kind: str) -> str:
        """A perception, reflection or plan of the current step, from ground truth."""
        d = self.info.get("distance_to_goal_m")
        fact = f"the destination is {float(d):.0f} m away" if d is not None else "no goal distance"
        text = f"scripted {kind} before step {self.steps + 1}: {fact}"
        field = {"perception": "perception", "memory_reflection": "reflection"}.get(kind, "plan")
        return json.dumps({field: text, "analysis": text})

    def _self_position(self) -> str:
        pose = self.info.get("pose") or {}
        d = self.info.get("distance_to_goal_m")
        where = (
            f"x {float(pose.get('x', 0.0)):.0f} m, y {float(pose.get('y', 0.0)):.0f} m, "
            f"facing {float(pose.get('heading', 0.0)):.0f} degrees"
        )
        if d is not None:
            where += f"; the destination is {float(d):.0f} m away"
        return json.dumps(
            {"estimated_position": where, "evidence": "scripted ground truth", "confidence": 1.0}
        )

    def _reflection(self) -> str:
        o = self.outcome or {}
        text = (
            f"The attempt ended as {o.get('termination', 'unfinished')} after "
            f"{o.get('steps', self.steps)} steps"
        )
        if o.get("distance_to_goal_m") is not None:
            text += f", {float(o['distance_to_goal_m']):.0f} m from the goal"
        return text + ". Next time I will check each choice against the destination."


#: The sections of a prompt-revision request (:mod:`urban_gym.eval.gepa`).
CURRENT_HEADING = "## Current instructions"
RESULTS_HEADING = "## Results"


def revise_answer(messages: list, n: int) -> str:
    """The scripted answer to a prompt-revision call: the current instructions (between
    :data:`CURRENT_HEADING` and :data:`RESULTS_HEADING` of the user message) with a
    numbered hint added -- a different, valid prompt each time.
    """
    from urban_gym.baselines.lmm.calls import user_text

    text = user_text(messages)
    start = text.find(CURRENT_HEADING)
    end = text.find(RESULTS_HEADING)
    current = text[start + len(CURRENT_HEADING) : end if end > start else None].strip()
    hint = f"Hint {n}: compare every option with the goal before you choose."
    return json.dumps({"prompt": (current + "\n" + hint).strip()})
