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
import numbers
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from urban_gym.errors import InvalidAction


class NormalisedAction(dict):
    """A canonical action dict, as :meth:`ActionSet.normalise` returns it.

    ``action_set`` is the set that normalised it: an environment takes such an action as it
    is when it came from its own action set (so an action is normalised once, e.g. by the
    language-model face's parser), and normalises any other. It compares, prints and
    serialises as the plain dict it is; it pickles as one (and is normalised again after).
    """

    def __init__(self, action: Mapping[str, Any], action_set: ActionSet | None = None) -> None:
        super().__init__(action)
        self.action_set = action_set

    def __reduce__(self):  # a plain dict: the action set is not carried along
        return (dict, (dict(self),))


class UnreadableReply:
    """The action of a language model's reply from which no action could be read.

    An environment turns it into an invalid-action step (it costs a step and is counted)
    whose ``info["invalid_action"]`` is ``message``. ``reply`` and ``text`` are what the
    language-model face read and received (for the wrappers that record them).
    """

    def __init__(self, message: str, reply: Any = None, text: str = "") -> None:
        self.message = str(message) or "the reply could not be read"
        self.reply = reply
        self.text = text

    def __repr__(self) -> str:
        return f"UnreadableReply({describe_value(self.message, 80)})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, UnreadableReply) and other.message == self.message

    __hash__ = None  # type: ignore[assignment]


#: Key names a model may use instead of ``"action"``.
ACTION_KEY_SYNONYMS: tuple[str, ...] = (
    "action",
    "act",
    "name",
    "type",
    "command",
    "cmd",
    "action_name",
    "action_type",
)


@dataclass(frozen=True)
class Param:
    """One parameter of an action.

    ``kind`` is ``"enum"``, ``"float"``, ``"int"``, ``"str"`` or ``"bool"``. Enum
    ``choices`` are canonical spellings; ``value_synonyms`` maps other spellings (compared
    case-insensitively) to a choice. Numbers must lie in ``[low, high]`` when given.
    ``key_synonyms`` are other names for the parameter itself. With ``clamp_high`` a number
    above ``high`` is accepted and passed on as it is (the environment clamps it to ``high``
    and says so); the prompt and the schema still show ``[low, high]``.
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
    clamp_high: bool = False

    def __post_init__(self) -> None:
        if self.kind not in ("enum", "float", "int", "str", "bool"):
            raise ValueError(f"Param {self.name!r}: kind={self.kind!r} is not supported")
        if self.kind == "enum" and not self.choices:
            raise ValueError(f"Param {self.name!r}: an enum needs choices")

    def describe(self, key: str | None = None) -> str:
        """One line for a prompt: the parameter's name (or ``key``, the reply field a flat
        reply writes it in), what it takes (choices, range, unit) and what it means.
        """
        if self.kind == "enum":
            what = "one of " + ", ".join(self.choices)
        elif self.kind in ("float", "int"):
            if self.low is not None and self.high is None:
                rng = f" >= {_fmt(self.low)}"
            else:
                rng = f" in [{_fmt(self.low)}, {_fmt(self.high)}]" if self.low is not None else ""
            what = f"{'number' if self.kind == 'float' else 'integer'}{rng}"
            if self.unit:
                what += f" {self.unit}"
            if self.clamp_high:
                what += f" (a larger value is clamped to {_fmt(self.high)})"
        elif self.kind == "bool":
            what = "true or false"
        else:
            what = "text"
        opt = "" if self.required else f", optional (default {json.dumps(self.default)})"
        return f"`{key or self.name}`: {what}{opt} - {self.description}"

    def schema(self) -> dict[str, Any]:
        """The parameter's JSON schema (type, enum or bounds, description)."""
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
        if self.required:  # the same rule as :meth:`convert`: only required text must be non-empty
            return {"type": "string", "minLength": 1, "description": self.description}
        return {"type": "string", "description": self.description}

    def convert(self, action: str, value: Any) -> Any:
        """The canonical value for ``value`` or :class:`InvalidAction`.

        Never raises anything else, whatever ``value`` is (huge integers, NaN, deep
        nesting, numpy scalars): a bad value is named, shortened, in the message.
        """
        label = f"{action}: {self.name}={describe_value(value)}"
        if self.kind == "enum":
            v = _scalar_text(value)
            if v is None:
                raise InvalidAction(f"{label} must be one of {', '.join(self.choices)}")
            v = v.strip()
            for c in self.choices:
                if v.casefold() == c.casefold():
                    return c
            for k, c in self.value_synonyms.items():
                if v.casefold() == k.casefold():
                    return c
            raise InvalidAction(f"{label} is not allowed; use one of {', '.join(self.choices)}")
        if self.kind in ("float", "int"):
            return self._convert_number(label, value)
        if self.kind == "bool":
            if isinstance(value, (bool, np.bool_)):
                return bool(value)
            text = _scalar_text(value)
            folded = text.strip().casefold() if text is not None else ""
            if folded in ("true", "yes", "1"):
                return True
            if folded in ("false", "no", "0"):
                return False
            raise InvalidAction(f"{label} must be true or false")
        text = _text_of(value)
        if text is None:
            raise InvalidAction(f"{label} must be text")
        text = text.strip()
        if self.required and not text:
            raise InvalidAction(f"{action}: {self.name} must not be empty")
        return text

    def _convert_number(self, label: str, value: Any) -> int | float:
        try:
            num = to_number(value)
        except ValueError as exc:
            raise InvalidAction(f"{label} {exc}") from None
        over = self.high is not None and num > self.high and not self.clamp_high
        if (self.low is not None and num < self.low) or over:
            raise InvalidAction(f"{label} is outside [{_fmt(self.low)}, {_fmt(self.high)}]")
        if self.kind == "int":
            if isinstance(num, float):
                if not num.is_integer():
                    raise InvalidAction(f"{label} must be a whole number")
                num = int(num)
            return num
        try:
            return float(num)
        except OverflowError:  # an unbounded float parameter given a huge integer
            raise InvalidAction(f"{label} is too large") from None


@dataclass(frozen=True)
class ActionSpec:
    """One action: its canonical ``name``, what it does and its parameters."""

    name: str
    description: str
    params: tuple[Param, ...] = ()
    synonyms: tuple[str, ...] = ()

    def describe(self, keys: Mapping[str, str] | None = None) -> str:
        """The action's lines for a prompt: name and description, then one line per
        parameter (``keys``: parameter name -> the reply field it is written in, for a
        flat reply).
        """
        keys = keys or {}
        head = f"- `{self.name}`: {self.description}"
        return "\n".join([head, *(f"    - {p.describe(keys.get(p.name))}" for p in self.params)])

    def schema(self) -> dict[str, Any]:
        """The JSON schema of this action's object: ``action`` fixed to the name, one property
        per parameter.
        """
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
        """The action names, in table order."""
        return tuple(s.name for s in self.specs)

    def __getitem__(self, name: str) -> ActionSpec:
        return self._by_name[name.casefold()]

    def describe(self, keys: Mapping[str, str] | None = None) -> str:
        """Text for a prompt: every action with its parameters (``keys``: parameter name ->
        the reply field a flat reply writes it in; default: the parameter's own name).
        """
        return "\n".join(s.describe(keys) for s in self.specs)

    def json_schema(self) -> dict[str, Any]:
        """A JSON schema (``oneOf`` over the actions) for one action object."""
        return {"oneOf": [s.schema() for s in self.specs]}

    def normalise(self, raw: Any) -> NormalisedAction:
        """A canonical action dict from a tolerant one (see the module docstring).

        A bare string such as ``"W"`` is the action with default parameters. The result is
        a :class:`NormalisedAction` of this set (normalising it again returns it as is). An
        :class:`UnreadableReply` raises :class:`InvalidAction` with its message.
        """
        if isinstance(raw, NormalisedAction) and raw.action_set is self:
            return raw
        if isinstance(raw, UnreadableReply):
            raise InvalidAction(raw.message)
        if isinstance(raw, str):
            raw = {"action": raw}
        if not isinstance(raw, Mapping):
            raise InvalidAction(
                f"action {describe_value(raw)} must be an object with an 'action' key, one of "
                + ", ".join(self.names)
            )
        lowered = {key_text(k): v for k, v in raw.items()}
        name = None
        for k in ACTION_KEY_SYNONYMS:
            if k in lowered:
                name = lowered.pop(k)
                break
        if name is None:
            raise InvalidAction(
                f"action {describe_value(raw)} has no 'action' key; use one of "
                + ", ".join(self.names)
            )
        if not isinstance(name, str) or name.strip().casefold() not in self._by_name:
            raise InvalidAction(
                f"unknown action {describe_value(name)}; use one of " + ", ".join(self.names)
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
            if not found or v is None or (not p.required and _blank(v)):
                if p.required:
                    raise InvalidAction(
                        f"{spec.name}: missing parameter '{p.name}' ({p.describe()})"
                    )
                out[p.name] = p.default
                continue
            out[p.name] = p.convert(spec.name, v)
        return NormalisedAction(out, self)

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


def _text_of(value: Any) -> str | None:
    """A scalar as text; a structured answer (``{"bbox_xyxy_norm": [...]}``, a list) as
    JSON text; None when neither.
    """
    text = _scalar_text(value)
    if text is None and isinstance(value, (Mapping, list, tuple)):
        try:
            text = json.dumps(value, ensure_ascii=False, allow_nan=False)
        except (TypeError, ValueError, RecursionError):
            text = None
    return text


def _blank(value: Any) -> bool:
    """Whether ``value`` is an empty or all-blank string (an optional parameter left empty,
    as in ``{"action": "S", "answer": ""}``, takes its default).
    """
    return isinstance(value, str) and not value.strip()


def table_index(action: Any) -> int | None:
    """The index of an integer action -- a Python ``int``, a numpy integer scalar or a
    0-d integer array -- or None when ``action`` is not one (a dict, a string, a float,
    a bool). The index is not range-checked.
    """
    if isinstance(action, (bool, np.bool_)):
        return None
    if isinstance(action, (int, np.integer)):
        return int(action)
    if isinstance(action, np.ndarray) and action.shape == () and action.dtype.kind in "iu":
        return int(action)
    return None


def to_number(value: Any) -> int | float:
    """A finite real number from an action value: an ``int`` (kept exact, however large),
    a ``float``, a numpy number or a numeric string (``"1.5"``, ``"1,5"``, ``" 3 "``).

    Raises ``ValueError`` whose message says, after the value, what is wrong with it
    (``"is not a number"``, ``"is not a finite number"``).
    """
    if isinstance(value, (bool, np.bool_)):
        raise ValueError("is not a number")
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        f = float(value)
        if not math.isfinite(f):
            raise ValueError("is not a finite number")
        return f
    if isinstance(value, str):
        text = value.strip().replace(",", ".")
        if len(text) > MAX_NUMBER_CHARS:
            raise ValueError(f"is not a number (longer than {MAX_NUMBER_CHARS} characters)")
        try:
            f = float(text)
        except ValueError:
            raise ValueError("is not a number") from None
        if not math.isfinite(f):
            raise ValueError("is not a finite number")
        return f
    raise ValueError("is not a number")


#: Longest numeric string read as a number (a longer one is not a sensible value).
MAX_NUMBER_CHARS = 100
#: Integers up to this many bits are written out in full by :func:`describe_value`
#: (about 30 digits); longer ones are shortened.
_SHORT_INT_BITS = 100
#: Integers up to this many bits are safe to convert with ``str`` (about 4000 digits,
#: under Python's default limit of 4300, ``sys.get_int_max_str_digits``).
_STR_INT_BITS = 13_000


def describe_value(value: Any, limit: int = 60) -> str:
    """A short, readable ``repr`` of any value for an error message; never raises.

    Strings, containers and huge integers are cut to about ``limit`` characters
    (an integer too long for ``str`` is written as its leading digits and exponent),
    nesting deeper than three levels is written ``...``, and an object whose ``repr``
    fails is written ``<TypeName>``. Lone surrogates and control characters come out
    escaped, as ``repr`` writes them.
    """
    text = _describe(value, limit, 0)
    return text if len(text) <= limit else text[: max(limit - 3, 1)] + "..."


def _describe(value: Any, limit: int, depth: int) -> str:
    """:func:`describe_value` of ``value`` nested ``depth`` containers deep."""
    if value is None or isinstance(value, (bool, np.bool_)):
        return repr(value if value is None else bool(value))
    if isinstance(value, numbers.Integral):
        try:
            return _describe_int(int(value))
        except Exception:  # pragma: no cover - an Integral whose int() fails
            return f"<{type(value).__name__}>"
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, str):
        return repr(value[: limit + 1])
    if isinstance(value, (Mapping, list, tuple)):
        return _describe_container(value, limit, depth)
    try:
        text = repr(value)
    except Exception:  # RecursionError, a failing __repr__, ...
        return f"<{type(value).__name__}>"
    return text if len(text) <= limit else text[: max(limit - 3, 1)] + "..."


def _describe_container(value: Mapping | list | tuple, limit: int, depth: int) -> str:
    """A mapping, list or tuple written item by item until about ``limit`` characters
    (``...`` for the rest, and for anything nested more than three levels deep).
    """
    is_map = isinstance(value, Mapping)
    open_, close = "{}" if is_map else "[]" if isinstance(value, list) else "()"
    if depth >= 3:
        return open_ + "..." + close if len(value) else open_ + close
    parts: list[str] = []
    used = 2
    try:
        for item in value.items() if isinstance(value, Mapping) else value:
            if used > limit:
                parts.append("...")
                break
            if is_map:
                k, v = item
                part = f"{_describe(k, limit, depth + 1)}: {_describe(v, limit, depth + 1)}"
            else:
                part = _describe(item, limit, depth + 1)
            parts.append(part)
            used += len(part) + 2
    except Exception:  # a mapping whose iteration fails
        parts.append("...")
    if isinstance(value, tuple) and len(parts) == 1 and parts[0] != "...":
        return f"({parts[0]},)"
    return open_ + ", ".join(parts) + close


def _describe_int(n: int) -> str:
    bits = n.bit_length()
    if bits <= _SHORT_INT_BITS:
        return str(n)
    sign = "-" if n < 0 else ""
    n = abs(n)
    if bits <= _STR_INT_BITS:
        digits = str(n)
        return f"{sign}{digits[:12]}...{digits[-3:]} ({len(digits)} digits)"
    shift = bits - 64  # leading digits and exponent from the top 64 bits
    log10 = math.log10(n >> shift) + shift * math.log10(2.0)
    exponent = math.floor(log10)
    mantissa = 10.0 ** (log10 - exponent)
    return f"{sign}{mantissa:.6f}e+{exponent} (an integer of about {exponent + 1} digits)"


def _scalar_text(value: Any) -> str | None:
    """The text of a string or number parameter value; None for anything else (None,
    a bool, a container, an integer too long to write out).
    """
    if isinstance(value, str):
        return value
    if isinstance(value, (bool, np.bool_)) or value is None:
        return None
    if isinstance(value, numbers.Integral):
        n = int(value)
        return str(n) if n.bit_length() <= _STR_INT_BITS else None
    if isinstance(value, numbers.Real):
        try:
            return str(value)
        except Exception:  # pragma: no cover - a number type whose str() fails
            return None
    return None


def key_text(key: Any) -> str:
    """A mapping key as compared with action and parameter names: stripped and
    case-folded; a key that is not a string (an int, a tuple) as its short description.
    """
    text = key if isinstance(key, str) else describe_value(key)
    return text.strip().casefold()


def _fmt(v: float | None) -> str:
    if v is None:
        return "-inf"
    return str(int(v)) if float(v).is_integer() else str(v)
