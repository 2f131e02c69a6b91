"""The actions of CityWalk: the structured action set of the language-model face and the
discrete action table of the RL face (durations in seconds, angles in degrees, distances
in metres).
"""

from __future__ import annotations

from typing import Any

from urban_gym.envs.actions import ActionSet, ActionSpec, Param
from urban_gym.envs.citywalk_dynamics import SPRINT_SPEED, WALK_SPEED
from urban_gym.tasks.citywalk import OPTION_LETTERS

MAX_DURATION = 2.0  # s; longer move/sprint durations are clamped
MIN_DURATION = 0.05  # s
LOOK_DURATION = 0.5  # s on the clock for a look
JUMP_DURATION = 0.6  # s on the clock for a jump
JUMP_HEIGHT = 0.5  # m the eye rises at the top of a jump (reported in info)


FIRST_PERSON = ("move", "sprint", "look", "jump", "open_map")
MAP_ONLY = ("close_map", "map_pan", "map_zoom", "map_orbit", "map_select")


def _move_params(speed: float) -> tuple[Param, ...]:
    return (
        Param(
            "direction",
            "enum",
            "direction relative to where you face",
            choices=("forward", "backward", "left", "right"),
            value_synonyms={
                "ahead": "forward",
                "front": "forward",
                "fwd": "forward",
                "straight": "forward",
                "back": "backward",
                "backwards": "backward",
                "behind": "backward",
                "reverse": "backward",
            },
            key_synonyms=("dir", "way"),
        ),
        Param(
            "duration",
            "float",
            f"how long to move at {speed} m/s; values above {MAX_DURATION} s are clamped to "
            f"{MAX_DURATION} s",
            low=MIN_DURATION,
            high=60.0,
            unit="s",
            key_synonyms=("seconds", "time", "secs", "t"),
        ),
        Param(
            "yaw_rate",
            "float",
            "turning speed during the move (+ turns right)",
            low=-180.0,
            high=180.0,
            required=False,
            default=0.0,
            unit="deg/s",
            key_synonyms=("turn_rate", "yaw_speed"),
        ),
        Param(
            "pitch_rate",
            "float",
            "tilting speed of the view during the move (+ up)",
            low=-180.0,
            high=180.0,
            required=False,
            default=0.0,
            unit="deg/s",
        ),
    )


def _first_person_specs() -> list[ActionSpec]:
    """The actions of first-person mode (and opening the map)."""
    return [
        ActionSpec(
            "move",
            f"walk at {WALK_SPEED} m/s (first-person mode)",
            _move_params(WALK_SPEED),
            synonyms=("walk", "go", "step"),
        ),
        ActionSpec(
            "sprint",
            f"run at {SPRINT_SPEED} m/s (first-person mode)",
            _move_params(SPRINT_SPEED),
            synonyms=("run",),
        ),
        ActionSpec(
            "look",
            f"turn on the spot and/or tilt the view; takes {LOOK_DURATION} s (first-person mode)",
            (
                Param(
                    "yaw",
                    "float",
                    "turn by this many degrees (+ right, - left)",
                    low=-180.0,
                    high=180.0,
                    required=False,
                    default=0.0,
                    unit="deg",
                    key_synonyms=("turn", "angle", "degrees"),
                ),
                Param(
                    "pitch",
                    "float",
                    "set the view's pitch (+ up, 0 level); omit to keep",
                    low=-90.0,
                    high=90.0,
                    required=False,
                    default=None,
                    unit="deg",
                ),
            ),
            synonyms=("turn", "rotate", "look_around"),
        ),
        ActionSpec(
            "jump",
            f"hop in place: no displacement, {JUMP_DURATION} s on the clock "
            "(a way to wait, e.g. for people to pass)",
            synonyms=("hop", "wait"),
        ),
        ActionSpec(
            "open_map",
            "open the map (map mode): it shows you and the task's markers, never a route",
            synonyms=("map", "show_map"),
        ),
    ]


def _map_specs() -> list[ActionSpec]:
    """The actions of map mode."""
    return [
        ActionSpec(
            "close_map",
            "close the map and return to first-person view",
            synonyms=("hide_map", "exit_map"),
        ),
        ActionSpec(
            "map_pan",
            "move the map window (map mode)",
            (
                Param(
                    "east",
                    "float",
                    "metres east (+) or west (-)",
                    low=-2000.0,
                    high=2000.0,
                    required=False,
                    default=0.0,
                    unit="m",
                    key_synonyms=("dx", "x"),
                ),
                Param(
                    "north",
                    "float",
                    "metres north (+) or south (-)",
                    low=-2000.0,
                    high=2000.0,
                    required=False,
                    default=0.0,
                    unit="m",
                    key_synonyms=("dy", "y"),
                ),
            ),
            synonyms=("pan",),
        ),
        ActionSpec(
            "map_zoom",
            "zoom the map (map mode)",
            (
                Param(
                    "factor",
                    "float",
                    "> 1 zooms in, < 1 zooms out",
                    low=0.25,
                    high=4.0,
                    key_synonyms=("zoom", "scale"),
                ),
            ),
            synonyms=("zoom",),
        ),
        ActionSpec(
            "map_orbit",
            "rotate the map (map mode)",
            (
                Param(
                    "degrees",
                    "float",
                    "rotate by this much (+ clockwise)",
                    low=-180.0,
                    high=180.0,
                    unit="deg",
                    key_synonyms=("angle", "rotation", "yaw"),
                ),
            ),
            synonyms=("orbit", "rotate_map"),
        ),
        ActionSpec(
            "map_select",
            "mark a point on the map (map mode); it only marks, it computes nothing",
            (
                Param(
                    "x",
                    "float",
                    "from the map's left edge (0) to its right edge (1)",
                    low=0.0,
                    high=1.0,
                    key_synonyms=("col", "u"),
                ),
                Param(
                    "y",
                    "float",
                    "from the map's top edge (0) to its bottom edge (1)",
                    low=0.0,
                    high=1.0,
                    key_synonyms=("row", "v"),
                ),
            ),
            synonyms=("select", "mark"),
        ),
    ]


def citywalk_action_set() -> ActionSet:
    """The structured actions of CityWalk (the language-model face)."""
    terminate = ActionSpec(
        "terminate",
        "end the episode (when you are at the goal, or to answer a question)",
        (
            Param(
                "answer",
                "str",
                "question tasks: the option's letter (A-D) or text",
                required=False,
                default=None,
                key_synonyms=("option", "choice"),
            ),
        ),
        synonyms=("stop", "done", "finish", "answer", "end"),
    )
    return ActionSet([*_first_person_specs(), *_map_specs(), terminate])


def citywalk_action_table() -> list[dict[str, Any]]:
    """The discrete action table of the RL face (index = ``Discrete`` action)."""
    fp = [
        {"action": "move", "direction": "forward", "duration": 1.0},
        {"action": "move", "direction": "forward", "duration": 2.0},
        {"action": "move", "direction": "backward", "duration": 1.0},
        {"action": "move", "direction": "left", "duration": 1.0},
        {"action": "move", "direction": "right", "duration": 1.0},
        {"action": "sprint", "direction": "forward", "duration": 2.0},
        {"action": "look", "yaw": -30.0},
        {"action": "look", "yaw": 30.0},
        {"action": "look", "yaw": -90.0},
        {"action": "look", "yaw": 90.0},
        {"action": "look", "yaw": 0.0, "pitch": 30.0},
        {"action": "look", "yaw": 0.0, "pitch": 0.0},
        {"action": "jump"},
        {"action": "open_map"},
        {"action": "close_map"},
        {"action": "map_zoom", "factor": 2.0},
        {"action": "map_zoom", "factor": 0.5},
        {"action": "map_pan", "east": 0.0, "north": 100.0},
        {"action": "map_pan", "east": 100.0, "north": 0.0},
        {"action": "map_pan", "east": 0.0, "north": -100.0},
        {"action": "map_pan", "east": -100.0, "north": 0.0},
        {"action": "terminate"},
        *({"action": "terminate", "answer": L} for L in OPTION_LETTERS),
    ]
    aset = citywalk_action_set()
    return [aset.normalise(a) for a in fp]
