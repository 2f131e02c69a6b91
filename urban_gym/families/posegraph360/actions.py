"""The actions of PoseGraph360: the structured action set of the language-model face and
the fixed part of the discrete action table of the RL face (the answer heads follow it).
"""

from __future__ import annotations

from typing import Any

from urban_gym.envs.actions import ActionSet, ActionSpec, Param
from urban_gym.families.posegraph360.tasks.types import DEFAULT_FORWARD_FRAMES, PITCH_LIMIT

#: Number of answer heads (``ANSWER_0`` .. ``ANSWER_24``): the most options of any task.
N_ANSWER_HEADS = 25
BRANCH_ACTIONS = ("LEFT", "UP", "RIGHT")
_SIZES = ("SMALL", "MEDIUM", "LARGE")
#: Other keys a reply may put the size under. 360CityArena's reply format puts it in
#: ``"answer"`` (``{"action": "A", "answer": "LARGE"}``); ``"size"`` wins when both are set.
SIZE_KEYS = ("answer", "amount", "magnitude", "distance", "angle")


def make_action_set() -> ActionSet:
    """The structured actions of PoseGraph360 (the language-model face)."""
    size = Param(
        "size",
        "enum",
        "how far",
        choices=_SIZES,
        required=False,
        default=None,
        value_synonyms={
            "S": "SMALL",
            "M": "MEDIUM",
            "L": "LARGE",
            "SHORT": "SMALL",
            "LONG": "LARGE",
            "BIG": "LARGE",
        },
        key_synonyms=SIZE_KEYS,
    )
    wsize = Param(
        "size",
        "enum",
        "SMALL {} frame, MEDIUM {} frames, LARGE {} frames forward (SMALL when omitted)".format(
            *DEFAULT_FORWARD_FRAMES
        ),
        choices=_SIZES,
        required=False,
        default="SMALL",
        value_synonyms=size.value_synonyms,
        key_synonyms=size.key_synonyms,
    )
    rsize = Param(
        "size",
        "enum",
        "SMALL 30°, MEDIUM 60°, LARGE 90° (24° when omitted or empty)",
        choices=_SIZES,
        required=False,
        default=None,
        value_synonyms=size.value_synonyms,
        key_synonyms=size.key_synonyms,
    )
    text = Param(
        "text",
        "str",
        "your answer; in a navigation task it may be empty (ANSWER confirms arrival)",
        required=False,
        default=None,
        key_synonyms=("answer", "value", "content", "response", "result"),
    )
    return ActionSet(
        [
            ActionSpec(
                "W",
                "move forward along the street (video plays forward)",
                (wsize,),
                ("forward", "move_forward", "go_forward", "walk"),
            ),
            ActionSpec(
                "A",
                "rotate the camera left",
                (rsize,),
                ("look_left", "rotate_left", "turn_camera_left", "pan_left"),
            ),
            ActionSpec(
                "D",
                "rotate the camera right",
                (rsize,),
                ("look_right", "rotate_right", "turn_camera_right", "pan_right"),
            ),
            ActionSpec(
                "Q",
                f"tilt the camera up (within +{PITCH_LIMIT:.0f}°)",
                (rsize,),
                ("look_up", "tilt_up"),
            ),
            ActionSpec(
                "E",
                f"tilt the camera down (within -{PITCH_LIMIT:.0f}°)",
                (rsize,),
                ("look_down", "tilt_down"),
            ),
            ActionSpec(
                "S",
                "reset the view to the direction of travel",
                (),
                ("reset_view", "look_forward", "recenter"),
            ),
            ActionSpec(
                "LEFT",
                "at a junction: take the branch marked LEFT",
                (),
                ("branch_left", "turn_left", "go_left"),
            ),
            ActionSpec(
                "UP",
                "at a junction: take the branch marked UP (ahead)",
                (),
                ("branch_up", "straight", "go_straight", "ahead", "branch_straight"),
            ),
            ActionSpec(
                "RIGHT",
                "at a junction: take the branch marked RIGHT",
                (),
                ("branch_right", "turn_right", "go_right"),
            ),
            ActionSpec(
                "ANSWER",
                "end the episode with your answer",
                (text,),
                ("submit", "final_answer", "stop", "done"),
            ),
        ]
    )


#: The fixed part of the discrete action table (index -> structured action).
MOVE_TABLE: tuple[dict[str, Any], ...] = (
    {"action": "W", "size": "SMALL"},
    {"action": "W", "size": "MEDIUM"},
    {"action": "W", "size": "LARGE"},
    {"action": "A", "size": None},
    {"action": "A", "size": "SMALL"},
    {"action": "A", "size": "MEDIUM"},
    {"action": "A", "size": "LARGE"},
    {"action": "D", "size": None},
    {"action": "D", "size": "SMALL"},
    {"action": "D", "size": "MEDIUM"},
    {"action": "D", "size": "LARGE"},
    {"action": "Q", "size": None},
    {"action": "E", "size": None},
    {"action": "S"},
    {"action": "LEFT"},
    {"action": "UP"},
    {"action": "RIGHT"},
)
ANSWER_BASE = len(MOVE_TABLE)
