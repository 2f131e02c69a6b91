"""Prompt protocols: how each benchmark family talks to a language model.

A :class:`PromptProtocol` writes the system prompt (the agent's role, the environment's
action schema taken from its :class:`~urban_gym.envs.actions.ActionSet`, the reply format),
turns an observation into the parts of a user message (texts and images) and reads replies
with the tolerant parser. The three family protocols follow their benchmark's way of
prompting, written in our own words:

* ``react`` (PoseGraph360): a ReAct-style JSON reply with ``thought``, ``action``,
  ``memory`` (the agent's own notes, kept for the next step) and ``answer``.
* ``verbalized_path`` (StreetGraph): the options with their compass bearings; the reply
  first states where the destination is, where the agent believes it is now and the walking
  directions from here, then its Markovian ``memory`` and the chosen ``action``.
* ``observe_reason_act`` (CityWalk): ``observation``, ``reason``, ``action``.

:func:`protocol_for` picks one by name or by the task's family.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import numpy as np
from gymnasium import spaces

from urban_gym.envs.actions import ACTION_KEY_SYNONYMS, ActionSet
from urban_gym.tasks.families import FAMILIES
from urban_gym.wrappers.parsing import DEFAULT_FIELD_SYNONYMS, ParsedReply, parse_reply

#: Observation keys shown as the task, in this order, before any other text.
TASK_KEYS = ("instruction", "task", "mission", "goal", "destination", "question")

_TITLES = {
    "instruction": "Task",
    "task": "Task",
    "mission": "Task",
    "question": "Question",
    "destination": "Destination",
    "memory": "Your memory (what you wrote last step)",
    "decision_history": "Your decisions so far",
    "previous_visits": "Previous visits to this place",
    "notice": "Notice",
    "status": "Status",
    "message": "Message",
    "options": "Options",
}


class PromptProtocol:
    """The generic protocol; the family protocols below refine it.

    Attributes:
        name: the protocol's name (``protocol_for`` looks it up).
        intro: the first paragraph of the system prompt.
        reply_fields: the reply's fields besides the action, in the order asked for.
        field_help: one line per field saying what to write.
        field_synonyms: canonical field -> accepted keys (for the parser).
        fill_from_fields: parameter name (``"*"``: any text parameter) -> the reply field
            that supplies it when the action object lacks it.
    """

    name = "generic"
    intro = (
        "You are an agent finding your way through a city. Each turn you receive what you "
        "observe and you reply with exactly one action."
    )
    reply_fields: tuple[str, ...] = ("thought",)
    field_help: Mapping[str, str] = {"thought": "a short reason for the action"}
    field_synonyms: Mapping[str, tuple[str, ...]] = DEFAULT_FIELD_SYNONYMS
    fill_from_fields: Mapping[str, str] = {}

    # ------------------------------------------------------------------ system prompt
    def system_prompt(self, action_set: ActionSet, include_schema: bool = True) -> str:
        """The system message: role, actions, reply format, an example and the schema."""
        parts = [self.intro, "## Actions", action_set.describe(), "## How to reply"]
        parts.append(self.reply_instructions(action_set))
        ex = action_set.examples()
        if ex:
            parts.append("Example reply:\n" + self.format_reply(ex[0], self.example_fields()))
        if include_schema:
            parts.append(
                "JSON schema of the action object:\n"
                + json.dumps(action_object_schema(action_set), ensure_ascii=False)
            )
        return "\n\n".join(parts)

    def reply_instructions(self, action_set: ActionSet) -> str:
        """The part of the system prompt that says how to reply (fields, the action object)."""
        key = action_object_key(action_set)
        lines = [
            "Reply with one JSON object and nothing else. Its fields:",
            *(f"- `{f}`: {self.field_help.get(f, f)}" for f in self.reply_fields),
            f'- `action`: the action object: `"{key}"` names the action, its parameters '
            "sit beside it.",
            "A reply that cannot be read costs a step, like any invalid action.",
        ]
        return "\n".join(lines)

    def example_fields(self) -> dict[str, Any]:
        """The reply fields of the example reply (placeholders)."""
        return {f: "..." for f in self.reply_fields}

    # ------------------------------------------------------------------ replies
    def format_reply(
        self,
        action: Mapping[str, Any],
        fields: Mapping[str, Any] | None = None,
        action_set: ActionSet | None = None,
    ) -> str:
        """A reply in this protocol for a canonical ``action`` (JSON text)."""
        out: dict[str, Any] = {}
        fields = dict(fields or {})
        for f in self.reply_fields:
            if f in fields:
                out[f] = fields[f]
        out["action"] = action_object(action, action_set)
        for f, v in fields.items():
            out.setdefault(f, v)
        return json.dumps(out, ensure_ascii=False)

    def parse(self, text: Any, action_set: ActionSet) -> ParsedReply:
        """Read a reply (see :func:`~urban_gym.wrappers.parsing.parse_reply`)."""
        return parse_reply(text, action_set, self.field_synonyms, self.fill_from_fields)

    # ------------------------------------------------------------------ observations
    def observation_parts(
        self, obs: Mapping[str, Any], space: spaces.Space | None, env: Any = None
    ) -> list[tuple[str, Any, str]]:
        """The user message's parts for one observation, as ``("text", str, "")`` and
        ``("image", array, caption)`` triples, in the order they are shown.
        """
        texts: list[tuple[str, Any, str]] = []
        images: list[tuple[str, Any, str]] = []
        subspaces = getattr(space, "spaces", {}) or {}
        keys = list(obs.keys()) if isinstance(obs, Mapping) else []
        order = [k for k in TASK_KEYS if k in keys] + [k for k in keys if k not in TASK_KEYS]
        for k in order:
            v = obs[k]
            sub = subspaces.get(k)
            if k == "action_mask":
                line = self.available_actions(v, env)
                if line:
                    texts.append(("text", line, ""))
                continue
            if isinstance(v, str):
                if v.strip():
                    texts.append(("text", f"## {title(k)}\n{v.strip()}", ""))
                continue
            arr = np.asarray(v)
            if _is_image(arr, sub):  # all-black images are padding (no reference image)
                if arr.ndim == 4:
                    for i, im in enumerate(arr):
                        if im.any():
                            images.append(("image", im, f"{title(k)} {i}"))
                elif arr.any():
                    images.append(("image", arr, title(k)))
                continue
            if arr.size and arr.size <= 32 and arr.dtype.kind in "iuf":
                texts.append(("text", f"## {title(k)}\n{_fmt_numbers(arr)}", ""))
        return texts + images

    def available_actions(self, mask: Any, env: Any) -> str:
        """A line listing the actions the mask allows (names from the action table)."""
        table = getattr(getattr(env, "unwrapped", env), "action_table", None)
        m = np.asarray(mask).reshape(-1)
        if table is None or len(table) != len(m):
            return ""
        names: list[str] = []
        for ok, a in zip(m, table):
            name = a.get("action") if isinstance(a, Mapping) else str(a)
            if ok and name not in names:
                names.append(str(name))
        return "## Actions possible now\n" + ", ".join(names) if names else ""


class ReActProtocol(PromptProtocol):
    """PoseGraph360: think, act, keep notes, answer (ReAct JSON)."""

    name = "react"
    intro = (
        "You explore a city through 360-degree street-level video. You see one camera view "
        "at a time; at a junction the streets you can take are drawn as red arrows. Think "
        "step by step, keep notes in your memory, and act. End the task with the ANSWER "
        "action when you know the answer or have reached the goal."
    )
    reply_fields = ("thought", "memory", "answer")
    field_help = {
        "thought": "what you see and why you take this action",
        "memory": "your reflection memory, shown back to you next turn verbatim; an empty "
        'string ("") keeps the memory as it is (see "Reflection memory" below)',
        "answer": "with ANSWER: your final answer (in a navigation task it may stay empty: "
        "ANSWER then means you have arrived); with W, A, D, Q or E: the size, SMALL, MEDIUM "
        "or LARGE; otherwise an empty string",
    }
    fill_from_fields = {"*": "answer"}

    #: The reflection instruction (360CityArena's reflection rules, in our own words).
    reflection = (
        "## Reflection memory\n"
        "You only see the current view, so your memory is what carries you from step to "
        "step. Read any text you can make out in the view and record what matters. The "
        "memory you write replaces the one shown to you, so never write a fresh note in "
        "place of the old one: copy the previous reflection and extend it. Keep more "
        "rather than less. Reflect on: the goal of the task and your current plan; what "
        "you tried and whether it worked; the places you have been and what you found "
        "there; where you are now and what is still to do. To leave the memory unchanged, "
        'write an empty string ("").'
    )

    def reply_instructions(self, action_set: ActionSet) -> str:
        """The reply's fields, the size rule of W/A/D/Q/E and the reflection instruction."""
        sizes = (
            "Sizes: W moves SMALL = 1 frame, MEDIUM = 3 frames, LARGE = 5 frames; A, D, Q and "
            "E turn SMALL = 30°, MEDIUM = 60°, LARGE = 90° (24° when no size is given). Put "
            'the size in "answer", e.g. {"action": "A", "answer": "LARGE"}.'
        )
        return "\n\n".join([super().reply_instructions(action_set), sizes, self.reflection])

    def example_fields(self) -> dict[str, Any]:
        """The reply fields of the example reply (placeholders; no answer yet)."""
        return {"thought": "...", "memory": "...", "answer": None}


class VerbalizedPathProtocol(PromptProtocol):
    """StreetGraph: options with compass bearings; verbalize the path before choosing."""

    name = "verbalized_path"
    intro = (
        "You walk through a city on its streets, from intersection to intersection, "
        "towards a named destination. There is no map. At each intersection you see one "
        "image per street leaving it, with its compass bearing (0 = north, 90 = east). "
        "Choose the street that brings you closer to the destination."
    )
    reply_fields = (
        "destination_location",
        "current_location",
        "walking_directions",
        "memory",
        "thought",
    )
    field_help = {
        "destination_location": "where exactly the destination is, as well as you know",
        "current_location": "where you estimate you are now",
        "walking_directions": "how to walk from here to the destination",
        "memory": "what to remember for the next intersection (shown back to you)",
        "thought": "why you choose this street",
    }
    field_synonyms = {
        **DEFAULT_FIELD_SYNONYMS,
        "destination_location": ("destination_location", "destination", "goal_location"),
        "current_location": ("current_location", "location", "position", "where_am_i"),
        "walking_directions": ("walking_directions", "directions", "route", "plan"),
    }

    def observation_parts(
        self, obs: Mapping[str, Any], space: spaces.Space | None, env: Any = None
    ) -> list[tuple[str, Any, str]]:
        """The destination, the direction of travel, then one line and one image per
        option (``Option i: bearing° (compass name)``); padding options are left out.
        """
        if not isinstance(obs, Mapping) or "bearings" not in obs:
            return super().observation_parts(obs, space, env)
        bearings = np.asarray(obs["bearings"], dtype=float).reshape(-1)
        mask = np.asarray(obs.get("action_mask", np.ones(len(bearings) + 1))).reshape(-1)
        valid = [i for i in range(len(bearings)) if i < len(mask) and mask[i] > 0]
        rest = {k: v for k, v in obs.items() if k not in ("bearings", "views", "heading")}
        rest.pop("action_mask", None)
        parts = [p for p in super().observation_parts(rest, space, env) if p[0] == "text"]
        if "heading" in obs:
            h = float(np.asarray(obs["heading"]).reshape(-1)[0]) % 360.0
            parts.append(("text", f"## Your direction of travel\n{_bearing_text(h)}", ""))
        lines = [f"Option {i}: {_bearing_text(bearings[i])}" for i in valid]
        if len(mask) > len(bearings) and mask[len(bearings)] > 0:
            lines.append('You may also "stop" here.')
        parts.append(
            ("text", "## Options (streets leaving this intersection)\n" + "\n".join(lines), "")
        )
        views = obs.get("views")
        if views is not None:
            arr = np.asarray(views)
            for i in valid:
                if i < len(arr):
                    parts.append(("image", arr[i], f"Option {i}: {_bearing_text(bearings[i])}"))
        return parts


def _bearing_text(bearing: float) -> str:
    from urban_gym.wrappers.memory import compass_name

    b = float(bearing) % 360.0
    return f"{b:.0f}° ({compass_name(b)})"


class ObserveReasonActProtocol(PromptProtocol):
    """CityWalk: UrbanGround's visual ReAct loop (seed 002, Appendix F), in our own words.

    Every turn the reply is one flat JSON object with ``observation``, ``reason`` and
    ``action``; the action object names its action under ``"action"`` and uses the paper's
    field names (``dir``, ``seconds``, ``yaw_rate``, ``pitch_rate``, ``jump``, ``jump_at``,
    ``yaw``, ``pitch``, ``x``, ``y``, ``east``, ``north``, ``factor``). As in the paper the
    prompt gives the schemas and no numeric example action. A question task ends its
    exploration with ``terminate``; the next turn asks for ``{"answer": "A|B|C|D",
    "reason": ...}``. A user with the paper's exact prompt text loads it from a file of
    their own (``system_prompt`` of the language-model face).
    """

    name = "observe_reason_act"
    intro = (
        "You are a pedestrian in a real city, seen in first person. Each turn you get a "
        "screenshot (the first-person view, or the map while it is open), the task and your "
        "earlier turns, and you choose exactly one action. You never get hidden simulator "
        "state: no coordinates, no distance readout, no computed route."
    )
    reply_fields = ("observation", "reason")
    field_help = {
        "observation": "a non-empty string: the visible evidence in this screenshot that "
        "matters for the task",
        "reason": "a non-empty string: why you take the next action",
    }
    #: The answer turn's ``{"answer": ..., "reason": ...}``: the reason goes to the action.
    fill_from_fields = {"reason": "reason"}

    def system_prompt(self, action_set: ActionSet, include_schema: bool = True) -> str:
        """Role, the action space (schemas, no example action), the loop, the reply format
        and the two ways an episode ends (question / navigation).
        """
        parts = [
            self.intro,
            "## Action space\n"
            "One action per turn, written as one flat JSON object whose `action` field is "
            "the action's name; give only the parameters listed for that action. These are "
            "schemas, not examples. First-person actions (move, sprint, look, jump, "
            "open_map) work while you see the first-person view, map actions (close_map, "
            "map_select, map_pan, map_zoom, map_orbit) while the map is open; terminate "
            "works in both. A move or sprint lasts at most 2 seconds: a longer request is "
            "cut to 2 seconds. The map shows markers the task makes visible; it never "
            "computes or shows a route.",
            action_set.describe(),
            "## How to reply\n" + self.reply_instructions(action_set),
            "## Ending\n"
            "- Question tasks: explore until what you see is enough to answer, then choose "
            "terminate; do not answer before that. Exploration also ends when the turn "
            "limit is reached. You are then asked for the final answer in a separate turn: "
            'reply with exactly {"answer": "A|B|C|D", "reason": "..."} (a short reason '
            "based on what you saw).\n"
            "- Navigation tasks: keep going until you believe you have arrived, then choose "
            "terminate: your position then is scored. Reaching the destination also ends "
            "the episode, and so does the turn limit. Stay on sidewalks, crossings and "
            "other pedestrian ways where you can.",
        ]
        if include_schema:
            parts.append(
                "JSON schema of the action object:\n"
                + json.dumps(action_set.json_schema(), ensure_ascii=False)
            )
        return "\n\n".join(parts)

    def reply_instructions(self, action_set: ActionSet) -> str:
        """The reply's three fields and the rules of the action object."""
        return "\n".join(
            [
                "Each turn: 1. observe (what in the screenshot matters), 2. reason (with "
                "what you remember of earlier turns), 3. act. Reply with exactly one JSON "
                "object, no Markdown and no other text, with exactly these fields:",
                *(f"- `{f}`: {self.field_help[f]}" for f in self.reply_fields),
                "- `action`: one flat action object of the action space; its name goes "
                'in the string field `"action"` (not `"type"`, and not as a key of its '
                "own); choose every number from what you see and remember.",
                'Shape of a reply: {"observation": "...", "reason": "...", "action": '
                '{"action": "<name>", <its parameters>}}.',
                "A reply that cannot be read costs a turn, like any invalid action.",
            ]
        )

    def format_reply(
        self,
        action: Mapping[str, Any],
        fields: Mapping[str, Any] | None = None,
        action_set: ActionSet | None = None,
    ) -> str:
        """A reply for a canonical ``action``: the answer turn's ``{"answer", "reason"}``,
        else ``{"observation", "reason", "action": {"action": name, ...}}``.
        """
        fields = dict(fields or {})
        if action.get("action") == "answer" and "answer" in action:
            out = {"answer": action.get("answer"), "reason": action.get("reason") or ""}
            return json.dumps(out, ensure_ascii=False)
        obj = {"action": action["action"]}
        obj.update({k: _plain(v) for k, v in action.items() if k != "action" and v is not None})
        out = {f: fields.get(f, "...") for f in self.reply_fields}
        out["action"] = obj
        for f, v in fields.items():
            out.setdefault(f, v)
        return json.dumps(out, ensure_ascii=False)


PROTOCOLS: dict[str, type[PromptProtocol]] = {
    p.name: p
    for p in (PromptProtocol, ReActProtocol, VerbalizedPathProtocol, ObserveReasonActProtocol)
}


def protocol_for(name_or_family: str | PromptProtocol | None) -> PromptProtocol:
    """A protocol by its name, by a task family (its registered ``protocol``,
    :mod:`urban_gym.tasks.families`), or the generic one for None.
    """
    if isinstance(name_or_family, PromptProtocol):
        return name_or_family
    if name_or_family is None:
        return PromptProtocol()
    key = name_or_family
    if key in FAMILIES:
        key = FAMILIES[key].protocol
    if key not in PROTOCOLS:
        from urban_gym.errors import UrbanGymError

        raise UrbanGymError(
            f"unknown prompt protocol {name_or_family!r}; use one of "
            + ", ".join([*PROTOCOLS, *FAMILIES])
        )
    return PROTOCOLS[key]()


def action_object_key(action_set: ActionSet | None) -> str:
    """``"name"``, or ``"action"`` when some parameter is itself called ``name``/``type``."""
    if action_set is None:
        return "name"
    taken = {p.name.casefold() for s in action_set.specs for p in s.params}
    return "action" if taken & set(ACTION_KEY_SYNONYMS) else "name"


def action_object(action: Mapping[str, Any], action_set: ActionSet | None = None) -> dict:
    """The nested action object of a reply: ``{"name": "W", "size": "MEDIUM"}``."""
    key = action_object_key(action_set)
    out = {key: action["action"]}
    out.update({k: _plain(v) for k, v in action.items() if k != "action"})
    return out


def action_object_schema(action_set: ActionSet) -> dict[str, Any]:
    """The ActionSet's JSON schema with the action's name under the key replies use
    (:func:`action_object_key`).
    """
    key = action_object_key(action_set)
    schema = action_set.json_schema()
    if key == "action":
        return schema
    for alt in schema["oneOf"]:
        props = alt["properties"]
        alt["properties"] = {
            key: props["action"],
            **{k: v for k, v in props.items() if k != "action"},
        }
        alt["required"] = [key if r == "action" else r for r in alt["required"]]
    return schema


def title(key: str) -> str:
    """The heading of an observation key in a prompt (``"street_views"`` -> ``"Street views"``)."""
    return _TITLES.get(key, key.replace("_", " ").capitalize())


def _is_image(arr: np.ndarray, sub: spaces.Space | None) -> bool:
    if arr.dtype != np.uint8:
        return False
    if arr.ndim == 3 and arr.shape[2] in (1, 3, 4) and min(arr.shape[:2]) >= 8:
        return True
    return arr.ndim == 4 and arr.shape[3] in (1, 3, 4) and min(arr.shape[1:3]) >= 8


def _fmt_numbers(arr: np.ndarray) -> str:
    flat = arr.reshape(-1)
    if arr.dtype.kind == "f":
        return ", ".join(f"{float(v):g}" for v in flat)
    return ", ".join(str(int(v)) for v in flat)


def _plain(v: Any) -> Any:
    if isinstance(v, np.generic):
        return v.item()
    return v
