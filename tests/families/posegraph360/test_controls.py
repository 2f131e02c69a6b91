"""PoseGraph360's page commands become the env's structured actions."""

from __future__ import annotations

import pytest

import urban_gym  # noqa: F401
from urban_gym.play.controls import ControlError, to_action


def test_posegraph_commands():
    assert to_action("posegraph360", "W", {"size": ""}, None) == {"action": "W", "size": "SMALL"}
    assert to_action("posegraph360", "W", {"size": "LARGE"}, None)["size"] == "LARGE"
    assert to_action("posegraph360", "A", {"size": ""}, None) == {"action": "A", "size": None}
    assert to_action("posegraph360", "RIGHT", {}, None) == {"action": "RIGHT"}
    assert to_action("posegraph360", "answer", {"text": "x:2 y:3"}, None) == {
        "action": "ANSWER",
        "text": "x:2 y:3",
    }
    with pytest.raises(ControlError, match="HUGE"):
        to_action("posegraph360", "W", {"size": "HUGE"}, None)
    with pytest.raises(ControlError, match="'jump'"):
        to_action("posegraph360", "jump", {}, None)
