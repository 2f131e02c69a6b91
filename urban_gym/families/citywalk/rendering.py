"""What CityWalk draws: its renderers, the map with the task's markers, the video frame and
the views of the goal modes.

:class:`CityWalkRendering` is that part of :class:`~urban_gym.families.citywalk.env.CityWalkEnv`
(a mixin); the first-person observation itself (``_view``, with the first views shared by
the envs of a process) stays with the env.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from urban_gym.families.citywalk.dynamics import Closure, Crowd, SimClock, WalkerState
from urban_gym.families.citywalk.handlers import MapState
from urban_gym.families.citywalk.progress import ARRIVAL_VIEW_SIZE
from urban_gym.families.citywalk.tasks import EpisodeOutcome
from urban_gym.world.city import City

if TYPE_CHECKING:
    from urban_gym.tasks.spec import TaskSpec


class CityWalkRendering:
    """The renderers, map, frame and goal views of
    :class:`~urban_gym.families.citywalk.env.CityWalkEnv` (a mixin).
    """

    if TYPE_CHECKING:  # the env's settings and state that the drawing reads
        task: TaskSpec
        walker: WalkerState
        city: City
        clock: SimClock
        crowd: Crowd | None
        map_mode: bool
        map: MapState
        stops: list[dict[str, Any]]
        record: EpisodeOutcome
        closures: list[Closure]
        closure_active: list[bool]
        conditions: dict[str, Any]
        view_wh: tuple[int, int] | None
        render_size: int
        fov: float
        _renderers: dict[str, Any]
        _last_view: dict[str, tuple[Any, np.ndarray]]
        _markers_memo: tuple | None
        _render_cond: Any

        def _view(self, which: str = "view") -> np.ndarray: ...
        def _status(self) -> str: ...

    # ------------------------------------------------------------------ goal modes
    no_view_reason = "view_size=None renders no view"

    def _goal_point(self) -> tuple[float, float] | None:
        """The goal place; for a multi-stop task its first stop not reached yet (the
        last stop once all are reached).
        """
        stops = getattr(self, "stops", None) or (self.task.goal or {}).get("stops")
        if not stops:
            # the env's UrbanEnv, after this mixin in its MRO
            return super()._goal_point()  # type: ignore[misc]
        arrivals = list(getattr(getattr(self, "record", None), "arrivals", []) or [])
        for i, st in enumerate(stops):
            if i >= len(arrivals) or arrivals[i] is None:
                return float(st["x"]), float(st["y"])
        return float(stops[-1]["x"]), float(stops[-1]["y"])

    def _view_shape(self) -> tuple[int, int] | None:
        return (self.view_wh[1], self.view_wh[0]) if self.view_wh is not None else None

    def _goal_view(self, task: TaskSpec, goal: tuple[float, float]) -> np.ndarray:
        """The first-person view at ``goal``, facing the task's start heading, level."""
        heading = float(task.start.get("heading", 0.0))
        return np.asarray(self._renderer("view").render(goal[0], goal[1], heading, 0.0).rgb)

    def _goal_visible(self) -> bool:
        """The goal place's sign in the first-person view (pedestrians occlude; False while
        the map is open): :mod:`urban_gym.envs.visibility`.
        """
        from urban_gym.envs.visibility import id_view_size, in_view, tracker_of

        if self.map_mode:
            return False
        tr = tracker_of(self, self.city)
        targets = tr.targets(self.task)
        if targets.size == 0:
            return False
        w = self.walker
        res = tr.first_person(id_view_size(self.view_wh or (128, 128)), self.fov).render(
            w.x, w.y, w.heading, w.pitch, pedestrians=self.pedestrian_positions(), ids=True
        )
        return in_view(res.ids, targets)

    # ------------------------------------------------------------------ pixels
    def _renderer(self, name: str) -> Any:
        r = self._renderers.get(name)
        if r is None:
            import urban_gym.render as R

            if name == "map":
                r = R.MapRenderer(self.city)
            else:
                size = {"view": self.view_wh, "arrival": ARRIVAL_VIEW_SIZE}.get(
                    name, (self.render_size,) * 2
                )
                assert size is not None  # only an env with a view renders one
                vw, vh = size
                r = R.FirstPersonRenderer(self.city, width=vw, height=vh, fov=self.fov)
            self._renderers[name] = r
        return r

    def _render_conditions(self) -> Any:
        if self._render_cond is None:  # the episode's conditions, made once
            from urban_gym.render import Conditions

            self._render_cond = Conditions(**self.conditions)
        return self._render_cond

    def pedestrian_positions(self) -> np.ndarray:
        """``(N, 2)`` positions (m) of the pedestrians now (privileged)."""
        if self.crowd is None:
            return np.zeros((0, 2))
        return self.crowd.positions(self.clock.elapsed)

    def map_markers(self) -> Any:
        """The map markers the agent may see: itself, the task's destinations (when the task
        shows them) and the active closures. Never a route.
        """
        from urban_gym.render import MapMarkers

        w = self.walker
        selected = self.map.selected if self.map_mode else None
        # what they depend on (the closures list is the episode's own): the same markers
        # while nothing moves -- a map session's pans and zooms
        key = (w.x, w.y, w.heading, selected, *self.closure_active)
        memo = self._markers_memo
        if (
            memo is not None
            and memo[0] is self.task
            and memo[1] is self.closures
            and memo[2] == key
        ):
            return memo[3]
        g = self.task.goal
        dest: list[tuple[float, float]] = []
        if self.stops:
            if g.get("show_on_map"):
                dest = [(float(st["x"]), float(st["y"])) for st in self.stops]
        elif g.get("show_on_map") and "x" in g:
            dest = [(float(g["x"]), float(g["y"]))]
        closures = [c.points for c, on in zip(self.closures, self.closure_active) if on]
        markers = MapMarkers(
            agent=(w.x, w.y, w.heading), destinations=dest, closures=closures, selected=selected
        )
        self._markers_memo = (self.task, self.closures, key, markers)
        return markers

    def _map_image(self, size: int | tuple[int, int]) -> np.ndarray:
        """The map now; the last one is reused while nothing on it changed (an invalid
        action or a first-person action that moves nothing, in map mode).
        """
        m = self.map if self.map_mode else MapState(center=(self.walker.x, self.walker.y))
        w = self.walker
        # everything the map shows: the view, the walker, the task's markers and closures
        view = (m.center, m.mpp, m.rotation, m.tilt, m.selected)  # MapState is mutable
        key = (self.map_mode, view, w.x, w.y, w.heading, id(self.task), *self.closure_active)
        which = f"map {size}"  # the observation's and the video frame's maps apart
        hit = self._last_view.get(which)
        if hit is not None and hit[0] == key:
            return hit[1].copy()
        kw = {"tilt": m.tilt} if m.tilt else {}
        img = self._renderer("map").render(
            center=m.center,
            metres_per_pixel=m.mpp,
            size=size,
            rotation=m.rotation,
            labels=True,
            markers=self.map_markers(),
            **kw,
        )
        self._last_view[which] = (key, img)
        return img.copy()

    def _frame(self) -> np.ndarray:
        """The ``rgb_array`` frame, three ``render_size`` squares side by side: the
        first-person view, the map around the walker, and the task, its instruction and
        the status line as text.
        """
        from urban_gym.render import frame as F

        n = self.render_size
        text = F.text_panel(
            [f"{self.task.type} | {self.task.id}", self.task.instruction, "", self._status()],
            n,
            n,
            font_size=max(8, n // 22),
        )
        return F.hstack([self._view("frame"), self._map_image(n), text])
