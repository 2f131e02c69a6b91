"""The actions of CityWalk: the structured action set of the language-model face and the
discrete action table of the RL face (durations in seconds, angles in degrees, distances
in metres).

The structured actions are UrbanGround's action space (Section 3.4 and the
action-space prompt of its Appendix F) with its field names as the canonical ones:
``move``/``sprint`` take ``dir`` and ``seconds`` (``direction`` and ``duration``
are accepted as synonyms), optional ``yaw_rate``, ``pitch_rate``, ``jump`` and ``jump_at``;
``look`` turns by ``yaw`` and tilts by ``pitch`` (both relative); ``map_zoom`` ``factor``
above 1 zooms out; ``map_orbit`` turns (``yaw``) and tilts (``pitch``) the map camera.
``answer`` is the reply of a question task's separate answer turn.
"""

from __future__ import annotations

from typing import Any

from urban_gym.envs.actions import ActionSet, ActionSpec, Param
from urban_gym.families.citywalk.dynamics import SPRINT_SPEED, WALK_SPEED
from urban_gym.families.citywalk.tasks import OPTION_LETTERS

MAX_DURATION = 2.0  # s; longer move/sprint durations are clamped
MIN_DURATION = 0.05  # s
LOOK_DURATION = 0.5  # s on the clock for a look
JUMP_DURATION = 0.6  # s on the clock for a jump
JUMP_HEIGHT = 0.5  # m the eye rises at the top of a jump (reported in info)
MAP_MAX_TILT = 60.0  # degrees from straight down the map camera may tilt (map_orbit pitch)


FIRST_PERSON = ("move", "sprint", "look", "jump", "open_map")
#: The action of the answer turn of question tasks (after ``terminate``).
ANSWER_ONLY = ("answer",)
MAP_ONLY = ("close_map", "map_pan", "map_zoom", "map_orbit", "map_select")


def _move_params(speed: float) -> tuple[Param, ...]:
    """The parameters of ``move``/``sprint``, named as UrbanGround names them (``dir``,
    ``seconds``; ``direction`` and ``duration`` are accepted as synonyms).
    """
    return (
        Param(
            "dir",
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
            key_synonyms=("direction", "way"),
        ),
        Param(
            "seconds",
            "float",
            f"how long to move at {speed} m/s",
            low=MIN_DURATION,
            high=MAX_DURATION,
            unit="s",
            key_synonyms=("duration", "time", "secs", "t"),
            clamp_high=True,
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
        Param(
            "jump",
            "bool",
            f"jump during the move (the eye rises up to {JUMP_HEIGHT} m for {JUMP_DURATION} s; "
            "while in the air you pass over low obstacles such as benches)",
            required=False,
            default=False,
        ),
        Param(
            "jump_at",
            "float",
            "when to jump, in seconds after the move starts, in [0, seconds] (default 0)",
            low=0.0,
            high=None,
            required=False,
            default=None,
            unit="s",
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
                    "tilt the view by this many degrees (+ up, - down); the view's pitch "
                    "stays within [-90, 90]",
                    low=-90.0,
                    high=90.0,
                    required=False,
                    default=0.0,
                    unit="deg",
                    key_synonyms=("tilt",),
                ),
            ),
            synonyms=("turn", "rotate", "look_around"),
        ),
        ActionSpec(
            "jump",
            f"jump in place: no displacement, {JUMP_DURATION} s on the clock; the view "
            "after it is taken once you have landed",
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
                    "below 1 zooms in (closer), above 1 zooms out (farther)",
                    low=0.25,
                    high=4.0,
                    key_synonyms=("zoom", "scale"),
                ),
            ),
            synonyms=("zoom",),
        ),
        ActionSpec(
            "map_orbit",
            "orbit the map camera (map mode): turn and tilt the view of the map",
            (
                Param(
                    "yaw",
                    "float",
                    "turn the map view by this many degrees (+ clockwise)",
                    low=-180.0,
                    high=180.0,
                    required=False,
                    default=0.0,
                    unit="deg",
                    key_synonyms=("degrees", "angle", "rotation"),
                ),
                Param(
                    "pitch",
                    "float",
                    "tilt the map camera by this many degrees: + raises the line of sight "
                    f"towards the horizon (an oblique view, at most {MAP_MAX_TILT:g} degrees "
                    "from straight down), - back towards straight down",
                    low=-90.0,
                    high=90.0,
                    required=False,
                    default=0.0,
                    unit="deg",
                    key_synonyms=("tilt",),
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
    """The structured actions of CityWalk (the language-model face): UrbanGround's action
    space, plus ``answer``, the reply of a question task's answer turn.
    """
    terminate = ActionSpec(
        "terminate",
        "end exploration or navigation now (both modes). Navigation is scored where you "
        "stand; a question task then asks you for the final answer in a separate turn",
        synonyms=("stop", "done", "finish", "end"),
    )
    answer = ActionSpec(
        "answer",
        "question tasks, answer turn only (after terminate): the final multiple-choice answer",
        (
            Param(
                "answer",
                "str",
                "the option's letter, one of A, B, C, D",
                key_synonyms=("option", "choice", "letter"),
            ),
            Param(
                "reason",
                "str",
                "a short reason grounded in what you saw",
                required=False,
                default=None,
                key_synonyms=("why",),
            ),
        ),
        synonyms=("final_answer",),
    )
    return ActionSet([*_first_person_specs(), *_map_specs(), terminate, answer])


def citywalk_action_table() -> list[dict[str, Any]]:
    """The discrete action table of the RL face (index = ``Discrete`` action)."""
    fp = [
        {"action": "move", "dir": "forward", "seconds": 1.0},
        {"action": "move", "dir": "forward", "seconds": 2.0},
        {"action": "move", "dir": "backward", "seconds": 1.0},
        {"action": "move", "dir": "left", "seconds": 1.0},
        {"action": "move", "dir": "right", "seconds": 1.0},
        {"action": "sprint", "dir": "forward", "seconds": 2.0},
        {"action": "look", "yaw": -30.0},
        {"action": "look", "yaw": 30.0},
        {"action": "look", "yaw": -90.0},
        {"action": "look", "yaw": 90.0},
        {"action": "look", "yaw": 0.0, "pitch": 30.0},
        {"action": "look", "yaw": 0.0, "pitch": -30.0},
        {"action": "jump"},
        {"action": "open_map"},
        {"action": "close_map"},
        {"action": "map_zoom", "factor": 0.5},
        {"action": "map_zoom", "factor": 2.0},
        {"action": "map_pan", "east": 0.0, "north": 100.0},
        {"action": "map_pan", "east": 100.0, "north": 0.0},
        {"action": "map_pan", "east": 0.0, "north": -100.0},
        {"action": "map_pan", "east": -100.0, "north": 0.0},
        {"action": "terminate"},
        *({"action": "answer", "answer": L} for L in OPTION_LETTERS),
    ]
    aset = citywalk_action_set()
    return [aset.normalise(a) for a in fp]
