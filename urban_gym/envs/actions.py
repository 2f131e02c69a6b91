"""Structured actions: one object gives the prompt's action description, the JSON schema
and the validation of an action.

Every environment declares an :class:`ActionSet`. A structured action is a dict whose
``"action"`` key names an :class:`ActionSpec` and whose other keys are that action's
parameters, e.g. ``{"action": "W", "size": "MEDIUM"}`` or
``{"action": "move", "direction": "forward", "duration": 1.5}``.

:meth:`ActionSet.normalise` is tolerant in the ways a language model's reply needs:
action and key names are case-insensitive and may be synonyms, enum values may be
synonyms, numbers may arrive as strings. Whatever it cannot make sense of raises
:class:`InvalidAction` with a message that names the bad value and says what is allowed;
the environment turns that into an invalid-action step.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any


class InvalidAction(Exception):
    """An agent's action that cannot be carried out; the message is shown to the agent."""


#: Key names a model may use instead of ``"action"``.
ACTION_KEY_SYNONYMS: tuple[str, ...] = (
    "action", "act", "name", "type", "command", "cmd", "action_name", "action_type",
)  # fmt: skip


@dataclass(frozen=True)
class Param:
    """One parameter of an action.

    ``kind`` is ``"enum"``, ``"float"``, ``"int"``, ``"str"`` or ``"bool"``. Enum
    ``choices`` are canonical spellings; ``value_synonyms`` maps other spellings (compared
    case-insensitively) to a choice. Numbers must lie in ``[low, high]`` when given.
    ``key_synonyms`` are other names for the parameter itself.
    """

    name: str
    kind: str
    description: str
    choices: tuple[str, ...] = ()
    low: float | None = None
    high: float | None = None
    required: bool = True
    default: Any = None
    value_synonyms: Mapping[str, str] = field(default_factory=dict)
    key_synonyms: tuple[str, ...] = ()
    unit: str = ""

    def __post_init__(self) -> None:
        if self.kind not in ("enum", "float", "int", "str", "bool"):
            raise ValueError(f"Param {self.name!r}: kind={self.kind!r} is not supported")
        if self.kind == "enum" and not self.choices:
            raise ValueError(f"Param {self.name!r}: an enum needs choices")

    def describe(self) -> str:
        if self.kind == "enum":
            what = "one of " + ", ".join(self.choices)
        elif self.kind in ("float", "int"):
            rng = f" in [{_fmt(self.low)}, {_fmt(self.high)}]" if self.low is not None else ""
            what = f"{'number' if self.kind == 'float' else 'integer'}{rng}"
            if self.unit:
                what += f" {self.unit}"
        elif self.kind == "bool":
            what = "true or false"
        else:
            what = "text"
        opt = "" if self.required else f", optional (default {json.dumps(self.default)})"
        return f"`{self.name}`: {what}{opt} - {self.description}"

    def schema(self) -> dict[str, Any]:
        if self.kind == "enum":
            return {"type": "string", "enum": list(self.choices), "description": self.description}
        if self.kind in ("float", "int"):
            s: dict[str, Any] = {"type": "number" if self.kind == "float" else "integer"}
            if self.low is not None:
                s["minimum"] = self.low
            if self.high is not None:
                s["maximum"] = self.high
            s["description"] = self.description
            return s
        if self.kind == "bool":
            return {"type": "boolean", "description": self.description}
        return {"type": "string", "minLength": 1, "description": self.description}

    def convert(self, action: str, value: Any) -> Any:
        """The canonical value for ``value`` or :class:`InvalidAction`."""
        label = f"{action}: {self.name}={_short(value)}"
        if self.kind == "enum":
            if not isinstance(value, (str, int, float)) or isinstance(value, bool):
                raise InvalidAction(f"{label} must be one of {', '.join(self.choices)}")
            v = str(value).strip()
            for c in self.choices:
                if v.casefold() == c.casefold():
                    return c
            for k, c in self.value_synonyms.items():
                if v.casefold() == k.casefold():
                    return c
            raise InvalidAction(f"{label} is not allowed; use one of {', '.join(self.choices)}")
        if self.kind in ("float", "int"):
            num = _to_number(value)
            if num is None:
                raise InvalidAction(f"{label} is not a number")
            if self.kind == "int":
                if num != int(num):
                    raise InvalidAction(f"{label} must be a whole number")
                num = int(num)
            if (self.low is not None and num < self.low) or (
                self.high is not None and num > self.high
            ):
                raise InvalidAction(f"{label} is outside [{_fmt(self.low)}, {_fmt(self.high)}]")
            return num
        if self.kind == "bool":
            if isinstance(value, bool):
                return value
            if str(value).strip().casefold() in ("true", "yes", "1"):
                return True
            if str(value).strip().casefold() in ("false", "no", "0"):
                return False
            raise InvalidAction(f"{label} must be true or false")
        if value is None or (isinstance(value, (dict, list))):
            raise InvalidAction(f"{label} must be text")
        text = str(value).strip()
        if self.required and not text:
            raise InvalidAction(f"{action}: {self.name} must not be empty")
        return text


@dataclass(frozen=True)
class ActionSpec:
    """One action: its canonical ``name``, what it does and its parameters."""

    name: str
    description: str
    params: tuple[Param, ...] = ()
    synonyms: tuple[str, ...] = ()

    def describe(self) -> str:
        head = f"- `{self.name}`: {self.description}"
        return "\n".join([head, *(f"    - {p.describe()}" for p in self.params)])

    def schema(self) -> dict[str, Any]:
        props: dict[str, Any] = {"action": {"const": self.name}}
        for p in self.params:
            props[p.name] = p.schema()
        return {
            "type": "object",
            "properties": props,
            "required": ["action", *(p.name for p in self.params if p.required)],
            "additionalProperties": False,
        }


class ActionSet:
    """The actions of one environment (see the module docstring)."""

    def __init__(self, specs: Iterable[ActionSpec]) -> None:
        self.specs: tuple[ActionSpec, ...] = tuple(specs)
        self._by_name: dict[str, ActionSpec] = {}
        for s in self.specs:
            for n in (s.name, *s.synonyms):
                key = n.casefold()
                if key in self._by_name:
                    raise ValueError(f"action name {n!r} is used twice")
                self._by_name[key] = s

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(s.name for s in self.specs)

    def __getitem__(self, name: str) -> ActionSpec:
        return self._by_name[name.casefold()]

    def describe(self) -> str:
        """Text for a prompt: every action with its parameters."""
        return "\n".join(s.describe() for s in self.specs)

    def json_schema(self) -> dict[str, Any]:
        """A JSON schema (``oneOf`` over the actions) for one action object."""
        return {"oneOf": [s.schema() for s in self.specs]}

    def normalise(self, raw: Any) -> dict[str, Any]:
        """A canonical action dict from a tolerant one (see the module docstring).

        A bare string such as ``"W"`` is the action with default parameters.
        """
        if isinstance(raw, str):
            raw = {"action": raw}
        if not isinstance(raw, Mapping):
            raise InvalidAction(
                f"action {_short(raw)} must be an object with an 'action' key, one of "
                + ", ".join(self.names)
            )
        lowered = {str(k).strip().casefold(): v for k, v in raw.items()}
        name = None
        for k in ACTION_KEY_SYNONYMS:
            if k in lowered:
                name = lowered.pop(k)
                break
        if name is None:
            raise InvalidAction(
                f"action {_short(raw)} has no 'action' key; use one of " + ", ".join(self.names)
            )
        if not isinstance(name, str) or name.strip().casefold() not in self._by_name:
            raise InvalidAction(
                f"unknown action {_short(name)}; use one of " + ", ".join(self.names)
            )
        spec = self._by_name[name.strip().casefold()]
        out: dict[str, Any] = {"action": spec.name}
        for p in spec.params:
            found = False
            for k in (p.name, *p.key_synonyms):
                if k.casefold() in lowered:
                    v = lowered.pop(k.casefold())
                    found = True
                    break
            if not found or v is None:
                if p.required:
                    raise InvalidAction(
                        f"{spec.name}: missing parameter '{p.name}' ({p.describe()})"
                    )
                out[p.name] = p.default
                continue
            out[p.name] = p.convert(spec.name, v)
        return out

    def examples(self) -> list[dict[str, Any]]:
        """One valid action per spec, with every parameter set (for prompts and tests)."""
        out = []
        for s in self.specs:
            a: dict[str, Any] = {"action": s.name}
            for p in s.params:
                if p.kind == "enum":
                    a[p.name] = p.choices[0]
                elif p.kind in ("float", "int"):
                    lo = p.low if p.low is not None else 0.0
                    hi = p.high if p.high is not None else lo + 1.0
                    mid = (lo + hi) / 2.0
                    a[p.name] = int(mid) if p.kind == "int" else mid
                elif p.kind == "bool":
                    a[p.name] = True
                else:
                    a[p.name] = "example"
            out.append(a)
        return out


def _to_number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value) if math.isfinite(value) else None
    if isinstance(value, str):
        try:
            v = float(value.strip().replace(",", "."))
        except ValueError:
            return None
        return v if math.isfinite(v) else None
    return None


def _fmt(v: float | None) -> str:
    if v is None:
        return "-inf"
    return str(int(v)) if float(v).is_integer() else str(v)


def _short(value: Any, limit: int = 60) -> str:
    r = repr(value)
    return r if len(r) <= limit else r[: limit - 3] + "..."
