"""The reference image a PoseGraph360 task shows the agent (360CityArena's reference
inputs): the 5x5 grid map of localization, the route map of map navigation, the landmark
view of search by image. Kept per env for the tasks that come back
(:data:`REFERENCE_CACHE_BYTES`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from urban_gym.errors import UrbanGymError
from urban_gym.render import perspective
from urban_gym.tasks.spec import TaskError, TaskSpec
from urban_gym.world.grid import GridOverlay
from urban_gym.world.posegraph import PoseGraph, State

#: bytes of task reference images kept per env (a 512 px image is 0.8 MB)
REFERENCE_CACHE_BYTES = 48 * 2**20


def reference_image(
    task: TaskSpec, size: int, graph: PoseGraph, maps: Callable[[], Any]
) -> np.ndarray:
    """The reference image of ``task`` (``size`` px square): the grid map of a localization
    task, the route map of a map-navigation task, the view of the landmark of a
    landmark-by-image task, black otherwise (``maps()`` gives the city's map renderer).
    """
    if not task.reference_images:
        return np.zeros((size, size, 3), np.uint8)
    kind = task.reference_images[0]
    if kind == "grid_map":
        from urban_gym.render import MapMarkers

        x0, y0, x1, y1 = (float(v) for v in task.goal["grid"])
        grid = GridOverlay(
            (x0, y0, x1, y1), int(task.goal.get("nx", 5)), int(task.goal.get("ny", 5))
        )
        mpp = max(x1 - x0, y1 - y0) / (size - 4)
        return maps().render(
            ((x0 + x1) / 2, (y0 + y1) / 2), mpp, size, markers=MapMarkers(grid=grid)
        )
    if kind == "route_map":
        from urban_gym.render import MapMarkers

        m = task.goal["map"]
        mpp = float(m["extent"]) / size
        mk = MapMarkers(
            start=(float(task.start["x"]), float(task.start["y"])),
            goal=(float(task.goal["x"]), float(task.goal["y"])),
        )
        return maps().render(tuple(m["center"]), mpp, size, markers=mk)
    if kind == "landmark":
        v = task.goal["view"]
        s = State(int(v["trajectory"]), int(v["frame"]))
        try:
            graph.check_state(s)
            ok = math.dist(graph.position(s), (task.goal["x"], task.goal["y"])) <= 1.0
        except UrbanGymError:
            ok = False
        if not ok:
            s = graph.nearest_state(float(task.goal["x"]), float(task.goal["y"]))
        pano, ph = graph.panorama(s)
        return perspective(
            pano,
            float(v["bearing"]),
            float(v.get("pitch", 10.0)),
            float(v.get("fov", 60.0)),
            size,
            pano_heading=ph,
        )
    raise TaskError(f"task {task.id!r}: unknown reference image {kind!r}")
