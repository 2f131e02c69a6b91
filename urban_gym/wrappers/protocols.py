"""Prompt protocols: how an environment family talks to a language model.

A :class:`PromptProtocol` writes the system prompt (the agent's role, the environment's
action schema taken from its :class:`~urban_gym.envs.actions.ActionSet`, the reply format),
turns an observation into the parts of a user message (texts and images) and reads replies
with the tolerant parser. The generic protocol here fits any env; each family refines it
in its own ``prompts`` module, following its benchmark's way of prompting in our own words,
and names it in :meth:`~urban_gym.tasks.families.Family.lmm_protocols`.

:func:`protocol_for` picks one by name or by a family's name (its default protocol).
"""

from __future__ import annotations

import copy
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
        action_format: ``"nested"``: ``action`` is an object naming the action with its
            parameters beside the name (``{"name": "W", "size": "SMALL"}``); ``"flat"``:
            ``action`` is the name alone and each parameter is a field of the reply itself,
            under the name :attr:`param_fields` gives it (360CityArena's
            ``{"action": "W", "answer": "MEDIUM"}``). The parser reads both either way.
        param_fields: for a flat reply, parameter name -> the reply field it is written in
            (a parameter not named keeps its own name).
        reply_order: the order of a reply's keys, ``"action"`` among them (fields not
            listed come first); empty: the fields, then the action.
        show_schema: whether the system prompt shows the JSON schema of the action object
            unless told otherwise (``LMMInterface(include_schema=...)``).
        dropped_fields: reply fields this protocol no longer asks for
            (:meth:`without_fields`; e.g. ``memory`` on a face without memory).
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
    action_format: str = "nested"
    param_fields: Mapping[str, str] = {}
    reply_order: tuple[str, ...] = ()
    show_schema: bool = True
    dropped_fields: frozenset[str] = frozenset()

    # ------------------------------------------------------------------ system prompt
    def system_prompt(self, action_set: ActionSet, include_schema: bool | None = None) -> str:
        """The system message: role, actions, reply format, an example and (with
        ``include_schema``; None: :attr:`show_schema`) the JSON schema of the action object.
        """
        parts = [self.intro, "## Actions", self.describe_actions(action_set), "## How to reply"]
        parts.append(self.reply_instructions(action_set))
        ex = self.example_actions(action_set)
        if ex:
            parts.append(
                "Example reply:\n" + self.format_reply(ex[0], self.example_fields(), action_set)
            )
        if self.show_schema if include_schema is None else include_schema:
            parts.append(
                "JSON schema of the action object:\n"
                + json.dumps(action_object_schema(action_set), ensure_ascii=False)
            )
        return "\n\n".join(parts)

    def describe_actions(self, action_set: ActionSet) -> str:
        """The actions and their parameters for the prompt; a flat reply's parameters under
        the fields they are written in (:attr:`param_fields`).
        """
        if self.action_format == "flat":
            return action_set.describe(self.param_fields)
        return action_set.describe()

    def example_actions(self, action_set: ActionSet) -> list[dict[str, Any]]:
        """The canonical actions the prompt's example replies show (default: one per action,
        :meth:`~urban_gym.envs.actions.ActionSet.examples`).
        """
        return action_set.examples()

    def action_help(self, action_set: ActionSet | None) -> str:
        """The reply-field line of the action: the nested object or the flat name."""
        if self.action_format == "flat":
            return (
                "- `action`: the action's name alone, a string (e.g. "
                + ", ".join(f'"{n}"' for n in (action_set.names[:2] if action_set else ()))
                + "); its parameters are fields of the reply, named under each action above"
            )
        key = action_object_key(action_set)
        return (
            f'- `action`: the action object: `"{key}"` names the action, its parameters '
            "sit beside it."
        )

    def reply_instructions(self, action_set: ActionSet) -> str:
        """The part of the system prompt that says how to reply (fields, the action)."""
        keys = self.reply_keys() if self.action_format == "flat" else [*self.reply_fields, "action"]
        lines = [
            "Reply with one JSON object and nothing else. Its fields:",
            *(
                self.action_help(action_set)
                if f == "action"
                else f"- `{f}`: {self.field_help.get(f, f)}"
                for f in keys
            ),
            "A reply that cannot be read costs a step, like any invalid action.",
        ]
        return "\n".join(lines)

    def reply_format(self, include_schema: bool | None = None) -> dict[str, Any]:
        """What a run's manifest records of the reply format: the protocol, the reply's
        keys in order, nested or flat action, where a flat reply writes each parameter,
        whether the JSON schema is shown.
        """
        return {
            "protocol": self.name,
            "keys": self.reply_keys(),
            "action": self.action_format,
            "param_fields": dict(self.param_fields) if self.action_format == "flat" else {},
            "json_schema": bool(self.show_schema if include_schema is None else include_schema),
        }

    def for_env(self, env: Any) -> PromptProtocol:
        """The protocol as it reads for ``env``'s current task and observation (a family's
        protocol may word its prompt per task type or observation kind); itself by default.
        """
        return self

    def without_fields(self, *fields: str) -> PromptProtocol:
        """A copy that neither asks for nor shows the reply fields ``fields`` (the
        example replies leave them out too); the parser still reads them.
        """
        out = copy.copy(self)
        drop = frozenset(fields) | self.dropped_fields
        out.dropped_fields = drop
        out.reply_fields = tuple(f for f in self.reply_fields if f not in drop)
        return out

    def reply_keys(self) -> list[str]:
        """The reply's keys in the order a reply writes them, ``"action"`` among them."""
        if not self.reply_order:
            return [*self.reply_fields, "action"]
        first = [f for f in self.reply_fields if f not in self.reply_order]
        rest = [f for f in self.reply_order if f == "action" or f in self.reply_fields]
        return first + rest

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
        """A reply in this protocol for a canonical ``action`` (JSON text): the fields in
        :meth:`reply_keys` order, the action nested or flat (:attr:`action_format`).
        """
        values = {k: v for k, v in (fields or {}).items() if k not in self.dropped_fields}
        if self.action_format == "flat":
            values["action"] = action["action"]
            for k, v in action.items():
                if k != "action" and v is not None:
                    values[self.param_fields.get(k, k)] = plain_value(v)
        else:
            values["action"] = action_object(action, action_set)
        out = {k: values[k] for k in self.reply_keys() if k in values}
        for f, v in values.items():
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


#: The core's protocols by name (the families add theirs: :func:`protocols`).
PROTOCOLS: dict[str, type[PromptProtocol]] = {PromptProtocol.name: PromptProtocol}


def protocols() -> dict[str, type[PromptProtocol]]:
    """Every protocol by name: the core's and those of the registered families
    (:meth:`~urban_gym.tasks.families.Family.lmm_protocols`).
    """
    out = dict(PROTOCOLS)
    for fam in FAMILIES.values():
        out.update(fam.lmm_protocols())
    return out


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
        key = FAMILIES[key].lmm_defaults().protocol
    known = protocols()
    if key not in known:
        from urban_gym.errors import InputError

        raise InputError(
            f"unknown prompt protocol {name_or_family!r}; use one of "
            + ", ".join([*known, *FAMILIES])
        )
    return known[key]()


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
    out.update({k: plain_value(v) for k, v in action.items() if k != "action"})
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


def plain_value(v: Any) -> Any:
    """A numpy scalar as the Python value it holds (any other value as it is)."""
    if isinstance(v, np.generic):
        return v.item()
    return v
