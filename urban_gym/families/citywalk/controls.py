"""CityWalk's play page: its keys and what each press means.

W/A/S/D move forward/left/backward/right for the duration (slider, 0.05-2 s), with Shift
sprint; Q/E curve left/right (forward while turning by the turn angle); arrows left/right
look by the turn angle, up/down tilt the view 30° up/down (relative, as UrbanGround's
look); J or Space jump; M opens and closes the map; in map mode drag pans, the wheel zooms,
a click marks a point, the arrows pan 100 m, +/- zoom in/out, [ and ] rotate, T/G tilt the
map camera up/down 20°; Enter stops (terminate); after it, in a question's answer turn,
1-4 answer A-D.

Units: seconds (``duration``), degrees (``turn``), fractions of the map image (the drag's
``dx``/``dy`` and a click's ``x``/``y``), wheel notches (``notches``, + = towards the
person, i.e. zoom out).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from urban_gym.errors import InputError
from urban_gym.families.citywalk.tasks import OPTION_LETTERS
from urban_gym.play.controls import (
    Control,
    ControlError,
    FamilyControls,
    Press,
    Widget,
    number_param,
)

#: Page gestures besides key presses (the map's drag, wheel and click).
GESTURES = ("map_drag", "map_wheel", "map_click")
#: The turning speed a curve never exceeds (the action set's limit, deg/s).
MAX_YAW_RATE = 180.0
#: Metres a map pan may move (the action set's limit).
MAX_PAN_M = 2000.0

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
_FIXED: dict[str, dict[str, Any]] = {
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


def _move_action(control: str, params: Mapping[str, Any]) -> dict[str, Any]:
    dur = number_param(params, "duration", 1.0)
    a: dict[str, Any] = {
        "action": "sprint" if params.get("sprint") else "move",
        "dir": _MOVES[control],
        "seconds": round(dur, 3),
    }
    if control.startswith("curve_") and dur > 0:
        turn = abs(number_param(params, "turn", 30.0))
        rate = min(MAX_YAW_RATE, turn / dur)
        a["yaw_rate"] = round(-rate if control == "curve_left" else rate, 3)
    return a


def _gesture(control: str, params: Mapping[str, Any], env: Any) -> dict[str, Any]:
    """``map_drag`` (``dx``, ``dy``: fractions of the image the map moved with the pointer),
    ``map_wheel`` (``notches``) and ``map_click`` (``x``, ``y`` in [0, 1]).
    """
    if control == "map_click":
        return {
            "action": "map_select",
            "x": number_param(params, "x"),
            "y": number_param(params, "y"),
        }
    if control == "map_wheel":
        n = number_param(params, "notches")
        return {"action": "map_zoom", "factor": float(min(4.0, max(0.25, 2.0**n)))}
    # map_drag: the world point under the pointer stays under it
    from urban_gym.render.map import MapRenderer

    u = env.unwrapped
    w, h = u.view_wh or (256, 256)
    m = u.map
    dx, dy = number_param(params, "dx") * w, number_param(params, "dy") * h
    x, y = MapRenderer.pixel_to_world(
        w / 2.0 - dx, h / 2.0 - dy, m.center, m.mpp, (w, h), m.rotation
    )
    east = max(-MAX_PAN_M, min(MAX_PAN_M, x - m.center[0]))
    north = max(-MAX_PAN_M, min(MAX_PAN_M, y - m.center[1]))
    return {"action": "map_pan", "east": round(east, 2), "north": round(north, 2)}


def to_action(control: str, params: Mapping[str, Any], env: Any = None) -> dict[str, Any]:
    """The structured action of a press of ``control`` with the page's ``params`` (``env``:
    the session's env, read for the map's scale when a drag pans the map).
    """
    if control in _MOVES:
        return _move_action(control, params)
    if control in ("look_left", "look_right"):
        turn = abs(number_param(params, "turn", 30.0))
        return {"action": "look", "yaw": -turn if control == "look_left" else turn}
    if control in _FIXED:
        return dict(_FIXED[control])
    if control in _MAP_PANS:
        east, north = _MAP_PANS[control]
        return {"action": "map_pan", "east": east, "north": north}
    if control in GESTURES:
        return _gesture(control, params, env)
    if control == "answer":
        text = str(params.get("text", "")).strip()
        return {"action": "answer", "answer": text or None}
    raise ControlError(f"CityWalk has no control {control!r}")


_MOVE_KEYS = {"forward": "w", "left": "a", "backward": "s", "right": "d"}
_FIXED_KEYS = {"jump": "j", "open_map": "m", "close_map": "m"}


def _num(v: float) -> str:
    return f"{float(v):.4f}".rstrip("0").rstrip(".")


def presses(a: dict[str, Any]) -> list[Press]:
    """How a person performs the structured action ``a`` on the page;
    :class:`UrbanGymError` for an action no key performs exactly.
    """
    name = a["action"]
    if name in ("move", "sprint"):
        rate = float(a.get("yaw_rate") or 0.0)
        if a.get("jump") or (a.get("jump") is None and a.get("jump_at") is not None):
            raise InputError(f"the page has no key for a jump during a move: {a!r}")
        dur = float(a["seconds"])
        out = [Press("set", _num(dur), name="duration")]
        key = _MOVE_KEYS[a["dir"]]
        if rate and a["dir"] == "forward":
            out.append(Press("set", _num(abs(rate) * dur), name="turn"))
            key = "q" if rate < 0 else "e"
        return [*out, Press("key", key, shift=name == "sprint")]
    if name == "look":
        out = []
        yaw = float(a.get("yaw") or 0.0)
        if yaw:
            out += [Press("set", _num(abs(yaw)), name="turn")]
            out += [Press("key", "ArrowLeft" if yaw < 0 else "ArrowRight")]
        pitch = float(a.get("pitch") or 0.0)
        if pitch:
            if pitch not in (-30.0, 30.0):
                raise InputError(f"the page tilts the view by 30° up or down, not {pitch!r}")
            out.append(Press("key", "ArrowUp" if pitch > 0 else "ArrowDown"))
        return out
    if name == "terminate":
        return [Press("key", "Enter")]
    if name == "answer":
        return [Press("key", str(OPTION_LETTERS.index(str(a["answer"])) + 1))]
    if name in _FIXED_KEYS:
        return [Press("key", _FIXED_KEYS[name])]
    raise InputError(f"no key on the page performs {a!r} exactly")


_DURATION = Widget("duration", "duration", "range", 1.0, low=0.05, high=2.0, step=0.05, unit="s")
_TURN = Widget("turn", "turn", "range", 30.0, low=1.0, high=180.0, step=1.0, unit="°")
_FP = "first_person"


def _move(cid: str, label: str, key: str, params: tuple[str, ...] = ("duration",)) -> Control:
    """A CityWalk move control: walks, or sprints with Shift."""
    return Control(cid, label, (key,), "move", params, _FP, "move", True, "sprint")


CONTROLS = FamilyControls(
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
    gestures=GESTURES,
    digits="letters",
    notes=(
        "1-4: answer A-D (question tasks)",
        "map mode: drag to pan, wheel to zoom, click to mark a point",
    ),
    action_of=to_action,
    presses_of=presses,
)
