"""What a person can press on the play page, and the structured action each press means.

Every family's controls are data (:class:`Control`): a label, the keys that press it (the
``KeyboardEvent.key`` values, letters in lower case), the parameters it reads from the
page's widgets (:class:`Widget`: the step size of PoseGraph360, the duration and turn of
CityWalk) and the action-mask entry that says whether it works now. The page posts a
*command* -- a control's id and its parameters -- and :func:`to_action` turns it into the
structured action of the env's :class:`~urban_gym.envs.actions.ActionSet`, the same
action a language model or the oracle would send. So a person can do exactly what an
agent can, and nothing more.

===============  ===========================================================================
family           keys
===============  ===========================================================================
PoseGraph360     W forward, A/D look left/right, Q/E tilt up/down, S face the direction of
                 travel; the arrows take the branch LEFT / UP / RIGHT at a junction; 1/2/3
                 pick the step size SMALL/MEDIUM/LARGE (0: the default); the answer box
                 (Enter) answers
StreetGraph      0-9 take that option (its picture and bearing are shown); Enter stops
                 (instruction tasks)
CityWalk         W/A/S/D move forward/left/backward/right for the duration (slider, 0.05-2
                 s), with Shift sprint; Q/E curve left/right (forward while turning by the
                 turn angle); arrows left/right look by the turn angle, up/down tilt the
                 view 30° up/down (relative, as UrbanGround's look); J or Space jump; M
                 opens and closes the map; in map mode drag pans, the wheel zooms, a click
                 marks a point, the arrows pan 100 m, +/- zoom in/out, [ and ] rotate, T/G
                 tilt the map camera up/down 20°; Enter stops (terminate); after it, in a
                 question's answer turn, 1-4 answer A-D
===============  ===========================================================================

Units: seconds (``duration``), degrees (``turn``), fractions of the map image (the drag's
``dx``/``dy`` and a click's ``x``/``y``), wheel notches (``notches``, + = towards the
person, i.e. zoom out).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from urban_gym.errors import UrbanGymError

#: Families the play page knows.
FAMILIES: tuple[str, ...] = ("posegraph360", "streetgraph", "citywalk")
#: CityWalk: the turning speed a curve never exceeds (the action set's limit, deg/s).
MAX_YAW_RATE = 180.0
#: CityWalk: metres a map pan may move (the action set's limit).
MAX_PAN_M = 2000.0


class ControlError(UrbanGymError):
    """A command the page cannot have meant: an unknown control or a parameter that is not
    a number (a bug of the page, answered with HTTP 400; never an env step).
    """


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
        mode: CityWalk ``"first_person"`` or ``"map"``: the control is shown (and its keys
            work) only in that mode; None in both.
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
class FamilyControls:
    """The controls and widgets of one family, and whether it has an answer box."""

    family: str
    controls: tuple[Control, ...]
    widgets: tuple[Widget, ...] = ()
    answer_box: bool = False
    answer_hint: str = ""
    gestures: tuple[str, ...] = field(default=())

    def to_dict(self) -> dict[str, Any]:
        """The JSON the page builds its buttons from."""
        return asdict(self)


_PG_SIZE = Widget(
    "size",
    "step size",
    "choice",
    "",
    choices=(
        ("", "default (W: 1 frame, A/D: 24°)", "0"),
        ("SMALL", "SMALL (1 frame / 30°)", "1"),
        ("MEDIUM", "MEDIUM (3 frames / 60°)", "2"),
        ("LARGE", "LARGE (5 frames / 90°)", "3"),
    ),
)

POSEGRAPH360 = FamilyControls(
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
    (_PG_SIZE,),
    answer_box=True,
    answer_hint="your answer (navigation tasks: 'arrived' where you think the goal is)",
)

STREETGRAPH = FamilyControls(
    "streetgraph",
    (Control("stop", "Stop here (Enter)", ("Enter",), "stop", group="answer"),),
)

_DURATION = Widget("duration", "duration", "range", 1.0, low=0.05, high=2.0, step=0.05, unit="s")
_TURN = Widget("turn", "turn", "range", 30.0, low=1.0, high=180.0, step=1.0, unit="°")
_FP = "first_person"


def _move(cid: str, label: str, key: str, params: tuple[str, ...] = ("duration",)) -> Control:
    """A CityWalk move control: walks, or sprints with Shift."""
    return Control(cid, label, (key,), "move", params, _FP, "move", True, "sprint")


CITYWALK = FamilyControls(
    "citywalk",
    (
        _move("move_forward", "W forward", "w"),
        _move("move_left", "A left", "a"),
        _move("move_backward", "S back", "s"),
        _move("move_right", "D right", "d"),
        _move("curve_left", "Q curve left", "q", ("duration", "turn")),
        _move("curve_right", "E curve right", "e", ("duration", "turn")),
        Control("look_left", "← look left", ("ArrowLeft",), "look", ("turn",), _FP, "camera"),
        Control("look_right", "→ look right", ("ArrowRight",), "look", ("turn",), _FP, "camera"),
        Control("look_up", "↑ look up 30°", ("ArrowUp",), "look", (), _FP, "camera"),
        Control("look_down", "↓ look down 30°", ("ArrowDown",), "look", (), _FP, "camera"),
        Control("jump", "J jump (wait)", ("j", " "), "jump", (), _FP, "camera"),
        Control("open_map", "M open the map", ("m",), "open_map", (), _FP, "map"),
        Control("close_map", "M close the map", ("m", "Escape"), "close_map", (), "map", "map"),
        Control("map_north", "↑ pan north", ("ArrowUp", "w"), "map_pan", (), "map", "map"),
        Control("map_south", "↓ pan south", ("ArrowDown", "s"), "map_pan", (), "map", "map"),
        Control("map_west", "← pan west", ("ArrowLeft", "a"), "map_pan", (), "map", "map"),
        Control("map_east", "→ pan east", ("ArrowRight", "d"), "map_pan", (), "map", "map"),
        Control("map_zoom_in", "+ zoom in", ("+", "="), "map_zoom", (), "map", "map"),
        Control("map_zoom_out", "- zoom out", ("-", "_"), "map_zoom", (), "map", "map"),
        Control("map_orbit_left", "[ rotate left", ("[",), "map_zoom", (), "map", "map"),
        Control("map_orbit_right", "] rotate right", ("]",), "map_zoom", (), "map", "map"),
        Control("map_tilt_up", "T tilt the map", ("t",), "map_zoom", (), "map", "map"),
        Control("map_tilt_down", "G tilt back", ("g",), "map_zoom", (), "map", "map"),
        Control("terminate", "Stop here (Enter)", ("Enter",), "terminate", (), None, "answer"),
    ),
    (_DURATION, _TURN),
    answer_box=True,
    answer_hint="question tasks: the option's letter (A-D) or its text",
    gestures=("map_drag", "map_wheel", "map_click"),
)

_BY_FAMILY = {c.family: c for c in (POSEGRAPH360, STREETGRAPH, CITYWALK)}


def family_controls(family: str) -> FamilyControls:
    """The controls of ``family``; :class:`ControlError` naming an unknown family."""
    try:
        return _BY_FAMILY[family]
    except KeyError:
        raise ControlError(
            f"family {family!r} has no play controls; known: {', '.join(FAMILIES)}"
        ) from None


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
    """CityWalk: the option letters a question task accepts now (``[]`` otherwise)."""
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
def _number(params: Mapping[str, Any], name: str, default: float | None = None) -> float:
    v = params.get(name, default)
    if isinstance(v, str):
        try:
            v = float(v)
        except ValueError:
            raise ControlError(f"parameter {name}={v!r} is not a number") from None
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        raise ControlError(f"parameter {name}={v!r} must be a finite number")
    return float(v)


def _posegraph_action(control: str, params: Mapping[str, Any]) -> dict[str, Any]:
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


def _streetgraph_action(control: str, params: Mapping[str, Any]) -> dict[str, Any]:
    if control == "stop":
        return {"action": "stop"}
    if control == "option":
        i = params.get("option")
        if isinstance(i, bool) or not isinstance(i, int):
            raise ControlError(f"option={i!r} must be an integer")
        return {"action": "go", "option": i}
    raise ControlError(f"StreetGraph has no control {control!r}")


_MOVES = {
    "move_forward": "forward",
    "move_left": "left",
    "move_backward": "backward",
    "move_right": "right",
    "curve_left": "forward",
    "curve_right": "forward",
}
_MAP_PANS = {
    "map_north": (0.0, 100.0),
    "map_south": (0.0, -100.0),
    "map_west": (-100.0, 0.0),
    "map_east": (100.0, 0.0),
}
_CITYWALK_FIXED = {
    "look_up": {"action": "look", "yaw": 0.0, "pitch": 30.0},
    "look_down": {"action": "look", "yaw": 0.0, "pitch": -30.0},
    "jump": {"action": "jump"},
    "open_map": {"action": "open_map"},
    "close_map": {"action": "close_map"},
    "map_zoom_in": {"action": "map_zoom", "factor": 0.5},
    "map_zoom_out": {"action": "map_zoom", "factor": 2.0},
    "map_orbit_left": {"action": "map_orbit", "yaw": -30.0},
    "map_orbit_right": {"action": "map_orbit", "yaw": 30.0},
    "map_tilt_up": {"action": "map_orbit", "pitch": 20.0},
    "map_tilt_down": {"action": "map_orbit", "pitch": -20.0},
    "terminate": {"action": "terminate"},
}


def _citywalk_move(control: str, params: Mapping[str, Any]) -> dict[str, Any]:
    dur = _number(params, "duration", 1.0)
    a: dict[str, Any] = {
        "action": "sprint" if params.get("sprint") else "move",
        "dir": _MOVES[control],
        "seconds": round(dur, 3),
    }
    if control.startswith("curve_") and dur > 0:
        turn = abs(_number(params, "turn", 30.0))
        rate = min(MAX_YAW_RATE, turn / dur)
        a["yaw_rate"] = round(-rate if control == "curve_left" else rate, 3)
    return a


def _citywalk_gesture(control: str, params: Mapping[str, Any], env: Any) -> dict[str, Any]:
    """``map_drag`` (``dx``, ``dy``: fractions of the image the map moved with the pointer),
    ``map_wheel`` (``notches``) and ``map_click`` (``x``, ``y`` in [0, 1]).
    """
    if control == "map_click":
        return {"action": "map_select", "x": _number(params, "x"), "y": _number(params, "y")}
    if control == "map_wheel":
        n = _number(params, "notches")
        return {"action": "map_zoom", "factor": float(min(4.0, max(0.25, 2.0**n)))}
    # map_drag: the world point under the pointer stays under it
    from urban_gym.render.map import MapRenderer

    u = env.unwrapped
    w, h = u.view_wh or (256, 256)
    m = u.map
    dx, dy = _number(params, "dx") * w, _number(params, "dy") * h
    x, y = MapRenderer.pixel_to_world(
        w / 2.0 - dx, h / 2.0 - dy, m.center, m.mpp, (w, h), m.rotation
    )
    east = max(-MAX_PAN_M, min(MAX_PAN_M, x - m.center[0]))
    north = max(-MAX_PAN_M, min(MAX_PAN_M, y - m.center[1]))
    return {"action": "map_pan", "east": round(east, 2), "north": round(north, 2)}


def _citywalk_action(control: str, params: Mapping[str, Any], env: Any) -> dict[str, Any]:
    if control in _MOVES:
        return _citywalk_move(control, params)
    if control in ("look_left", "look_right"):
        turn = abs(_number(params, "turn", 30.0))
        return {"action": "look", "yaw": -turn if control == "look_left" else turn}
    if control in _CITYWALK_FIXED:
        return dict(_CITYWALK_FIXED[control])
    if control in _MAP_PANS:
        east, north = _MAP_PANS[control]
        return {"action": "map_pan", "east": east, "north": north}
    if control in CITYWALK.gestures:
        return _citywalk_gesture(control, params, env)
    if control == "answer":
        text = str(params.get("text", "")).strip()
        return {"action": "answer", "answer": text or None}
    raise ControlError(f"CityWalk has no control {control!r}")


def to_action(family: str, control: str, params: Mapping[str, Any] | None, env: Any) -> dict:
    """The structured action of a command (see the module docstring); ``env`` is the
    session's env (read for the map's scale when a drag pans the map). Values the env
    rejects (a duration out of range, an unknown option) are passed on: the env answers them
    with an invalid-action step, as it would an agent's.
    """
    if not isinstance(control, str):
        raise ControlError(f"control={control!r} must be a string")
    params = dict(params or {})
    if family == "posegraph360":
        return _posegraph_action(control, params)
    if family == "streetgraph":
        return _streetgraph_action(control, params)
    if family == "citywalk":
        return _citywalk_action(control, params, env)
    raise ControlError(f"family {family!r} has no play controls; known: {', '.join(FAMILIES)}")


def keys_of(controls: Sequence[Control]) -> dict[str, list[str]]:
    """Key -> the ids of the controls it presses (for the documentation and tests)."""
    out: dict[str, list[str]] = {}
    for c in controls:
        for k in c.keys:
            out.setdefault(k, []).append(c.id)
    return out


__all__ = [
    "CITYWALK",
    "FAMILIES",
    "POSEGRAPH360",
    "STREETGRAPH",
    "Control",
    "ControlError",
    "FamilyControls",
    "Widget",
    "answer_letters",
    "available_actions",
    "family_controls",
    "keys_of",
    "to_action",
]
