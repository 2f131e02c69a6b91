"""StreetGraph's play page: its keys and what each press means.

0-9 take that option (its picture and bearing are shown); Enter stops (instruction tasks).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from urban_gym.errors import InputError
from urban_gym.play.controls import Control, ControlError, FamilyControls, Press


def to_action(control: str, params: Mapping[str, Any], env: Any = None) -> dict[str, Any]:
    """The structured action of a press of ``control`` with the page's ``params``."""
    if control == "stop":
        return {"action": "stop"}
    if control == "option":
        i = params.get("option")
        if isinstance(i, bool) or not isinstance(i, int):
            raise ControlError(f"option={i!r} must be an integer")
        return {"action": "go", "option": i}
    raise ControlError(f"StreetGraph has no control {control!r}")


def presses(action: dict[str, Any]) -> list[Press]:
    """How a person performs the structured ``action`` on the page: a digit takes that
    option, Enter stops; :class:`UrbanGymError` for an option beyond 9 (click it).
    """
    if action["action"] == "stop":
        return [Press("key", "Enter")]
    i = int(action["option"])
    if not 0 <= i <= 9:
        raise InputError(f"option {i} has no key (0-9); click it")
    return [Press("key", str(i))]


CONTROLS = FamilyControls(
    "streetgraph",
    (Control("stop", "Stop here (Enter)", ("Enter",), "stop", group="answer"),),
    digits="options",
    notes=("0-9: take that option",),
    action_of=to_action,
    presses_of=presses,
)
