"""PoseGraph360's play page: its keys and what each press means.

W forward, A/D look left/right, Q/E tilt up/down, S face the direction of travel; the
arrows take the branch LEFT / UP / RIGHT at a junction; 1/2/3 pick the step size
SMALL/MEDIUM/LARGE (0: the default); the answer box (Enter) answers.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from urban_gym.families.posegraph360.tasks.types import DEFAULT_FORWARD_FRAMES, ROTATIONS
from urban_gym.play.controls import Control, ControlError, FamilyControls, Press, Widget

_FRAMES = dict(zip(("SMALL", "MEDIUM", "LARGE"), DEFAULT_FORWARD_FRAMES))
_SIZE = Widget(
    "size",
    "step size",
    "choice",
    "",
    choices=(
        ("", f"default (W: {_FRAMES['SMALL']} frame, A/D: {ROTATIONS[None]:.0f}°)", "0"),
        *(
            (k, f"{k} ({n} frame{'s' if n > 1 else ''} / {ROTATIONS[k]:.0f}°)", str(i))
            for i, (k, n) in enumerate(_FRAMES.items(), start=1)
        ),
    ),
)


def to_action(control: str, params: Mapping[str, Any], env: Any = None) -> dict[str, Any]:
    """The structured action of a press of ``control`` with the page's ``params``."""
    size = params.get("size") or None
    if size is not None and size not in ("SMALL", "MEDIUM", "LARGE"):
        raise ControlError(f"size={size!r} must be SMALL, MEDIUM, LARGE or empty")
    if control == "W":
        return {"action": "W", "size": size or "SMALL"}
    if control in ("A", "D"):
        return {"action": control, "size": size}
    if control in ("Q", "E", "S", "LEFT", "UP", "RIGHT"):
        return {"action": control}
    if control == "answer":
        return {"action": "ANSWER", "text": str(params.get("text", ""))}
    raise ControlError(f"PoseGraph360 has no control {control!r}")


_SIZE_KEYS = {None: "0", "SMALL": "1", "MEDIUM": "2", "LARGE": "3"}
_KEYS = {
    "W": "w",
    "A": "a",
    "D": "d",
    "Q": "q",
    "E": "e",
    "S": "s",
    "LEFT": "ArrowLeft",
    "UP": "ArrowUp",
    "RIGHT": "ArrowRight",
}


def presses(a: dict[str, Any]) -> list[Press]:
    """How a person performs the structured action ``a`` on the page."""
    name = a["action"]
    if name == "ANSWER":
        return [Press("answer", str(a.get("text", "")))]
    out = []
    if name in ("W", "A", "D"):
        out.append(Press("key", _SIZE_KEYS[a.get("size")]))
    return [*out, Press("key", _KEYS[name])]


CONTROLS = FamilyControls(
    "posegraph360",
    (
        Control("W", "W forward", ("w",), "W", ("size",)),
        Control("A", "A look left", ("a",), "A", ("size",), group="camera"),
        Control("D", "D look right", ("d",), "D", ("size",), group="camera"),
        Control("Q", "Q tilt up", ("q",), "Q", group="camera"),
        Control("E", "E tilt down", ("e",), "E", group="camera"),
        Control("S", "S face the street", ("s",), "S", group="camera"),
        Control("LEFT", "← branch LEFT", ("ArrowLeft",), "LEFT", group="branch"),
        Control("UP", "↑ branch UP", ("ArrowUp",), "UP", group="branch"),
        Control("RIGHT", "→ branch RIGHT", ("ArrowRight",), "RIGHT", group="branch"),
    ),
    (_SIZE,),
    answer_box=True,
    answer_hint="your answer (navigation tasks: 'arrived' where you think the goal is)",
    action_of=to_action,
    presses_of=presses,
)
