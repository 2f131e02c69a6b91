"""The toy family's oracle."""

from __future__ import annotations

from tests.toy_family.tasks import goal_cells, stops_reached


# [doc:oracle]
class CorridorOracle:
    """Walks straight to the next cell to visit, then stops."""

    def reset(self, env):
        """Nothing to plan."""

    def act(self, env):
        """The next structured action."""
        u = env.unwrapped
        cells = goal_cells(u.task)
        reached = stops_reached(u.visited, cells)
        if reached == len(cells):
            return {"action": "stop"}
        return {"action": "walk", "cells": 1 if cells[reached] > u.cell else -1}


# [/doc:oracle]
