"""Reading pose, distance, clock and node from the info schema, and task markers."""

from __future__ import annotations

import numpy as np

from urban_gym.tasks.spec import TaskSpec
from urban_gym.wrappers.state import (
    Pose,
    read_clock,
    read_distance,
    read_node,
    read_pose,
    task_markers,
)


def test_read_the_info_schema_by_its_names_only():
    info = {
        "pose": {"x": 1.0, "y": 2.0, "heading": 90.0},
        "distance_to_goal_m": 120.5,
        "clock": 7.5,
        "node": np.int64(4),
    }
    assert read_pose(info) == Pose(1, 2, 90)
    assert (read_distance(info), read_clock(info), read_node(info)) == (120.5, 7.5, 4)
    # a task without a goal position reports inf: no distance
    assert read_distance({"distance_to_goal_m": float("inf")}) is None
    # no guessing among synonyms: the keys of other names are not read
    old = {"position": (3.0, 4.0), "yaw": 40.0, "remaining_m": 5.0, "distance_to_goal": 6.0}
    assert read_pose(old) is None and read_distance(old) is None
    assert read_pose({"pose": {"x": "nan", "y": 1}}) is None and read_pose({}) is None


def test_task_markers():
    t = TaskSpec(
        id="t",
        family="citywalk",
        type="CN",
        difficulty="l2",
        city="helsinki",
        instruction="go",
        start={"x": 1, "y": 2, "heading": 0},
        goal={
            "position": [10, 20],
            "grid": [0, 0, 100, 50],
            "nx": 4,
            "ny": 2,
            "stops": [{"x": 5, "y": 6}, [7, 8]],
        },
        constraints={"closures": [{"points": [[0, 0], [0, 10]]}, [[1, 1]]]},
    )
    m = task_markers(t)
    assert m.start == (1, 2) and m.goal == (10, 20)
    assert m.destinations == [(5, 6), (7, 8)]
    assert m.closures == [[(0, 0), (0, 10)]]  # a one-point line is not a closure
    assert m.grid.bounds == (0, 0, 100, 50) and (m.grid.nx, m.grid.ny) == (4, 2)
    assert m.grid.label_of(90, 40) == "x:3 y:0"
