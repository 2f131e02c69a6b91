"""The toy family's play page: the arrows walk, Enter stops."""

from __future__ import annotations

# [doc:controls]
from urban_gym.play.controls import Control, ControlError, FamilyControls, Press


def to_action(control, params, env=None):
    """The structured action of a press on the page."""
    if control in ("east", "west"):
        return {"action": "walk", "cells": 1 if control == "east" else -1}
    if control == "stop":
        return {"action": "stop"}
    raise ControlError(f"the corridor has no control {control!r}")


def presses(action):
    """How a person performs ``action`` (one cell at a time) on the page."""
    if action["action"] == "stop":
        return [Press("key", "Enter")]
    return [Press("key", "ArrowRight" if action["cells"] > 0 else "ArrowLeft")]


CONTROLS = FamilyControls(
    "toy_corridor",
    (
        Control("west", "← walk west", ("ArrowLeft",), "walk"),
        Control("east", "→ walk east", ("ArrowRight",), "walk"),
        Control("stop", "Stop here (Enter)", ("Enter",), "stop", group="answer"),
    ),
    action_of=to_action,
    presses_of=presses,
)
# [/doc:controls]
