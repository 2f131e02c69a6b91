"""Where a CityWalk walker stands against its task: the target now, the router with the
active closures closed, and arrival.

:class:`CityWalkProgress` is that part of :class:`~urban_gym.families.citywalk.env.CityWalkEnv`
(a mixin). Arrival follows ``arrival=``: within the goal's radius, and for place-type search
and implicit intent (``"view"``) with enough of the place's sign in the final first-person
view (:data:`ARRIVAL_VIEW_SIZE` pixels at the env's field of view).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from urban_gym.families.citywalk.dynamics import WalkerState, distance_field
from urban_gym.families.citywalk.tasks import SUCCESS_RADIUS, EpisodeOutcome
from urban_gym.families.citywalk.tasks.evaluate import VIEW_JUDGED_TYPES
from urban_gym.world.city import City
from urban_gym.world.routing import DistanceField, Router

if TYPE_CHECKING:
    from urban_gym.tasks.spec import TaskSpec

#: Task types whose arrival the ``"view"`` rule judges from the final view: place-type
#: search and implicit intent (UrbanGround's judge sees the final view).
ARRIVAL_VIEW_TYPES = VIEW_JUDGED_TYPES
#: ``(width, height)`` of the id view the ``"view"`` rule counts the sign's pixels in: the
#: language-model view, at the env's field of view.
ARRIVAL_VIEW_SIZE = (960, 540)


class CityWalkProgress:
    """The target, distances and arrival of
    :class:`~urban_gym.families.citywalk.env.CityWalkEnv` (a mixin).
    """

    if TYPE_CHECKING:  # the env's state that progress reads
        task: TaskSpec
        kind: str
        walker: WalkerState
        city: City
        stops: list[dict[str, Any]]
        record: EpisodeOutcome
        closure_active: list[bool]
        arrival: str
        arrival_min_pixels: int
        map_mode: bool
        _city_spec: str
        _closed_edges: dict[int, list[tuple[int, int]]]
        _router_cache: Router | None
        _router_closed: tuple[tuple[int, int], ...]

        def _renderer(self, name: str) -> Any: ...
        def pedestrian_positions(self) -> np.ndarray: ...  # noqa: D102 (the env's)

    def _reached(self) -> bool:
        """Whether the walker has arrived: within the goal's radius (place search and
        implicit intent: of any suitable place, ``goal.alternatives``), or every stop
        visited.
        """
        if self.kind == "navigation":
            g = self.task.goal
            w = self.walker
            r = float(g.get("radius", SUCCESS_RADIUS))
            spots = [(g["x"], g["y"]), *(tuple(p[:2]) for p in g.get("alternatives") or [])]
            near = any(math.hypot(w.x - x, w.y - y) <= r for x, y in spots)
            if near and self.arrival_rule == "view":
                return self.arrival_sign_pixels() >= self.arrival_min_pixels
            return near
        return all(a is not None for a in self.record.arrivals)

    @property
    def arrival_rule(self) -> str:
        """The rule that judges the current task's arrival: ``arrival`` for PTS and III
        tasks, ``"position"`` for every other type.
        """
        return self.arrival if self.task.type in ARRIVAL_VIEW_TYPES else "position"

    def arrival_places(self) -> list[int]:
        """POI indices of the task's suitable places (the goal and ``goal.alternatives``)
        whose radius the walker is within now.
        """
        g = self.task.goal
        w = self.walker
        r = float(g.get("radius", SUCCESS_RADIUS))
        spots = [(g["x"], g["y"], g.get("poi_id")), *(g.get("alternatives") or [])]
        return [
            int(s[2])
            for s in spots
            if len(s) > 2 and isinstance(s[2], int) and math.hypot(w.x - s[0], w.y - s[1]) <= r
        ]

    def arrival_sign_pixels(self) -> int:
        """Pixels of the signs of :meth:`arrival_places` in the first-person id view now
        (:data:`ARRIVAL_VIEW_SIZE` at ``fov``, pedestrians drawn; 0 with the map open or
        no place near).
        """
        from urban_gym.render.ids import sign_id

        places = self.arrival_places()
        if self.map_mode or not places:
            return 0
        w = self.walker
        peds = self.pedestrian_positions()
        key = (self.task.id, w.x, w.y, w.heading, w.pitch, peds.tobytes())
        hit = self.__dict__.get("_arrival_memo")
        if hit is not None and hit[0] == key:
            return int(hit[1])
        ids = (
            self._renderer("arrival")
            .render(w.x, w.y, w.heading, w.pitch, pedestrians=peds, ids=True)
            .ids
        )
        n = int(np.isin(ids, [sign_id(p) for p in places]).sum())
        self._arrival_memo = (key, n)
        return n

    @property
    def router(self) -> Router:
        """A router over the network with the active closures' edges closed."""
        if self._router_cache is None or self._router_closed != self._active_closed():
            self._router_closed = self._active_closed()
            self._router_cache = Router(self.city, self._router_closed)
        return self._router_cache

    def _active_closed(self) -> tuple[tuple[int, int], ...]:
        out: list[tuple[int, int]] = []
        for i, on in enumerate(self.closure_active):
            if on:
                out.extend(self._closed_edges.get(i, []))
        return tuple(out)

    def _distance_field(self, target: tuple[float, float]) -> DistanceField:
        """Walking distances to ``target`` with the active closures closed (kept across
        episodes: :func:`~urban_gym.families.citywalk.dynamics.distance_field`).
        """
        return distance_field(self._city_spec, self.router, target, self._active_closed())

    def current_target(self) -> tuple[float, float] | None:
        """Where the agent should go now: the goal, the next stop (ordered), the nearest
        unvisited stop (unordered), or None (questions, all stops reached).
        """
        if self.kind == "navigation":
            return (float(self.task.goal["x"]), float(self.task.goal["y"]))
        if self.kind == "multi_stop":
            left = [st for st, a in zip(self.stops, self.record.arrivals) if a is None]
            if not left:
                return None
            if self.task.goal.get("ordered"):
                return (float(left[0]["x"]), float(left[0]["y"]))
            w = self.walker
            best = min(left, key=lambda st: math.hypot(st["x"] - w.x, st["y"] - w.y))
            return (float(best["x"]), float(best["y"]))
        return None
