"""StreetGraph's page commands become the env's structured actions."""

from __future__ import annotations

import pytest

import urban_gym  # noqa: F401
from urban_gym.play.controls import ControlError, to_action


def test_streetgraph_commands():
    assert to_action("streetgraph", "option", {"option": 2}, None) == {"action": "go", "option": 2}
    assert to_action("streetgraph", "stop", {}, None) == {"action": "stop"}
    with pytest.raises(ControlError, match="option='2'"):
        to_action("streetgraph", "option", {"option": "2"}, None)
