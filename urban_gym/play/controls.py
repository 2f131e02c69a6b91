"""What a person can press on the play page, and the structured action each press means.

A family's controls are data (:class:`FamilyControls`, from its
:meth:`~urban_gym.tasks.families.Family.play_controls`): its buttons (:class:`Control`: a
label, the keys that press it -- ``KeyboardEvent.key`` values, letters in lower case --,
the parameters it reads from the page's widgets and the action-mask entry that says
whether it works now), its widgets (:class:`Widget`: a step size, a duration, a turn), and
two functions: ``action_of`` turns a *command* the page posts -- a control's id and its
parameters -- into the structured action of the env's
:class:`~urban_gym.envs.actions.ActionSet` (the same action a language model or the oracle
would send), and ``presses_of`` says how a person performs a structured action (for the
browser test). So a person can do exactly what an agent can, and nothing more.

The keys of each family are in its ``controls`` module
(``urban_gym/families/<name>/controls.py``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from urban_gym.errors import ControlError, InputError


@dataclass(frozen=True)
class Widget:
    """A parameter a person sets on the page before pressing a control.

    Attributes:
        name: the parameter's name in commands.
        label: what the page writes beside it.
        kind: ``"choice"`` (buttons; ``choices`` are ``(value, label, key)``) or
            ``"range"`` (a slider with a number box: ``low``, ``high``, ``step``).
        default: the value the page starts with.
    """

    name: str
    label: str
    kind: str
    default: Any
    choices: tuple[tuple[str, str, str], ...] = ()
    low: float = 0.0
    high: float = 0.0
    step: float = 0.0
    unit: str = ""


@dataclass(frozen=True)
class Control:
    """One button of the page (see the module docstring).

    Attributes:
        id: the command's name.
        label: the button's text.
        keys: ``KeyboardEvent.key`` values that press it (letters lower case).
        needs: the action whose action-mask entry must be 1 for the control to work (None:
            always); with Shift the control needs ``needs_shift`` instead.
        params: widget names whose values go with the command.
        mode: ``"first_person"`` or ``"map"`` for a family with a map mode: the control is
            shown (and its keys work) only in that mode; None in both.
        group: where the page puts the button.
        shift: the command's ``sprint`` parameter follows the Shift key.
    """

    id: str
    label: str
    keys: tuple[str, ...] = ()
    needs: str | None = None
    params: tuple[str, ...] = ()
    mode: str | None = None
    group: str = "move"
    shift: bool = False
    needs_shift: str | None = None


@dataclass(frozen=True)
class Press:
    """One thing a person does on the page: ``kind`` ``"key"`` (press ``value``, with
    ``shift``), ``"set"`` (type ``value`` into the number box of widget ``name``) or
    ``"answer"`` (type ``value`` into the answer box and press Enter).
    """

    kind: str
    value: str
    shift: bool = False
    name: str = ""


def _no_presses(action: dict[str, Any]) -> list[Press]:
    raise InputError(f"no key on the page performs {action!r}")


@dataclass(frozen=True)
class FamilyControls:
    """The controls and widgets of one family's page, whether it has an answer box, and
    its two functions (see the module docstring).

    Attributes:
        family: the family's name.
        controls: the buttons.
        widgets: the parameters set on the page.
        answer_box: whether the page has an answer box (its command is ``answer`` with
            ``text``).
        answer_hint: the answer box's placeholder.
        gestures: commands of pointer gestures besides buttons (a map's drag, say).
        digits: what the digit keys do: ``"options"`` (0-9 take that option, the
            ``option`` command), ``"letters"`` (1-4 answer with the answer letters the
            page shows) or ``""`` (nothing beyond the widgets' keys).
        notes: more lines for the page's list of keys.
        action_of: ``(control, params, env) -> structured action``; raises
            :class:`ControlError` for a command the page cannot have meant.
        presses_of: ``(structured action) -> [Press]``.
    """

    family: str
    controls: tuple[Control, ...]
    widgets: tuple[Widget, ...] = ()
    answer_box: bool = False
    answer_hint: str = ""
    gestures: tuple[str, ...] = field(default=())
    digits: str = ""
    notes: tuple[str, ...] = ()
    action_of: Callable[[str, Mapping[str, Any], Any], dict[str, Any]] = field(
        default=lambda control, params, env: {}, repr=False, compare=False
    )
    presses_of: Callable[[dict[str, Any]], list[Press]] = field(
        default=_no_presses, repr=False, compare=False
    )

    def to_dict(self) -> dict[str, Any]:
        """The JSON the page builds its buttons from."""
        return {
            "family": self.family,
            "controls": [asdict(c) for c in self.controls],
            "widgets": [asdict(w) for w in self.widgets],
            "answer_box": self.answer_box,
            "answer_hint": self.answer_hint,
            "gestures": list(self.gestures),
            "digits": self.digits,
            "notes": list(self.notes),
        }


def family_controls(family: str) -> FamilyControls:
    """The controls of ``family``; :class:`ControlError` naming a family without a page."""
    from urban_gym.tasks.families import FAMILIES

    fam = FAMILIES.get(family)
    fc = fam.play_controls() if fam is not None else None
    if not isinstance(fc, FamilyControls):
        with_page = [n for n, f in FAMILIES.items() if f.play_controls() is not None]
        raise ControlError(f"family {family!r} has no play controls; known: {', '.join(with_page)}")
    return fc


# --------------------------------------------------------------------------- availability
def available_actions(env: Any, mask: Any) -> list[str]:
    """The action names whose action-table entries the mask allows now (in table order)."""
    table = env.unwrapped.action_table
    m = np.asarray(mask).reshape(-1)
    out: list[str] = []
    for ok, a in zip(m, table):
        name = str(a.get("action"))
        if ok and name not in out:
            out.append(name)
    return out


def answer_letters(env: Any, mask: Any) -> list[str]:
    """The option letters a question task accepts now (the action table's ``answer``
    entries the mask allows while the env's ``kind`` is ``"question"``; ``[]`` otherwise).
    """
    table = env.unwrapped.action_table
    m = np.asarray(mask).reshape(-1)
    u = env.unwrapped
    if getattr(u, "kind", None) != "question":
        return []
    return [
        str(a["answer"])
        for ok, a in zip(m, table)
        if ok and a.get("action") == "answer" and a.get("answer") is not None
    ]


# --------------------------------------------------------------------------- commands
def number_param(params: Mapping[str, Any], name: str, default: float | None = None) -> float:
    """The number parameter ``name`` of a command (a number or numeric text; ``default``
    when absent); :class:`ControlError` for anything else or a non-finite value.
    """
    v = params.get(name, default)
    if isinstance(v, str):
        try:
            v = float(v)
        except ValueError:
            raise ControlError(f"parameter {name}={v!r} is not a number") from None
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        raise ControlError(f"parameter {name}={v!r} must be a finite number")
    return float(v)


def to_action(family: str, control: object, params: Mapping[str, Any] | None, env: Any) -> dict:
    """The structured action of a command on ``family``'s page (its ``action_of``);
    ``env`` is the session's env. Values the env rejects (a duration out of range, an
    unknown option) are passed on: the env answers them with an invalid-action step, as it
    would an agent's.
    """
    if not isinstance(control, str):
        raise ControlError(f"control={control!r} must be a string")
    return family_controls(family).action_of(control, dict(params or {}), env)


def presses_for(family: str, action: dict[str, Any]) -> list[Press]:
    """How a person performs the structured ``action`` on ``family``'s page (its
    ``presses_of``); :class:`UrbanGymError` for an action no key performs exactly (e.g. a
    map pan by an odd distance: a drag does that).
    """
    return family_controls(family).presses_of(action)


def keys_of(controls: Sequence[Control]) -> dict[str, list[str]]:
    """Key -> the ids of the controls it presses (for the documentation and tests)."""
    out: dict[str, list[str]] = {}
    for c in controls:
        for k in c.keys:
            out.setdefault(k, []).append(c.id)
    return out


__all__ = [
    "Control",
    "ControlError",
    "FamilyControls",
    "Press",
    "Widget",
    "answer_letters",
    "available_actions",
    "family_controls",
    "keys_of",
    "number_param",
    "presses_for",
    "to_action",
]
