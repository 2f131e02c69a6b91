"""How a CityWalk episode is set up: the world of its task and the state it starts from.

:class:`CityWalkEpisode` is that part of :class:`~urban_gym.families.citywalk.env.CityWalkEnv`
(a mixin): the walker at the task's start, the clock, the closures (with their triggers),
the crowd, the light and weather, the stops; and the per-process state rebuilt after
unpickling.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from urban_gym.families.citywalk.actions import MAX_DURATION
from urban_gym.families.citywalk.dynamics import (
    Closure,
    Crowd,
    SimClock,
    WalkerState,
    low_obstacles,
)
from urban_gym.families.citywalk.handlers import MapState, StepScratch
from urban_gym.families.citywalk.network import PedestrianNetwork
from urban_gym.families.citywalk.tasks import DEFAULT_MAX_STEPS, TASK_TYPES, EpisodeOutcome
from urban_gym.tasks.spec import TaskError, TaskSpec
from urban_gym.world.city import City
from urban_gym.world.routing import DistanceField, Router
from urban_gym.world.walkable import WalkGeometry

#: How far outside its city's bounds a task may start (metres).
START_MARGIN_M = 1000.0


class CityWalkEpisode:
    """The episode set-up of :class:`~urban_gym.families.citywalk.env.CityWalkEnv` (a mixin)."""

    if TYPE_CHECKING:  # the env's settings and state that the set-up reads and writes
        task: TaskSpec
        max_steps_override: int | None
        _city_spec: str
        _renderers: dict[str, Any]
        _last_view: dict[str, tuple[Any, Any]]
        _router_cache: Router | None
        _fields: dict[int, DistanceField]
        _remaining_memo: tuple | None
        _markers_memo: tuple | None

        def load_world(self, spec: str) -> Any: ...  # noqa: D102 (UrbanEnv's)
        def _remaining(self) -> float: ...

    def _setup_world(self, task: TaskSpec) -> None:
        self.city: City = self.load_world(task.city)
        self.geometry = WalkGeometry.for_city(self.city)
        self.ground = low_obstacles(self.city, self.geometry)
        self.pedestrian = PedestrianNetwork.for_city(self.city)
        self._city_spec = task.city

    def _reset_state(self) -> None:
        t = self.task
        st = t.start
        self.walker = WalkerState(
            float(st["x"]),
            float(st["y"]),
            float(st["heading"]) % 360.0,
            float(st.get("pitch", 0.0)),
        )
        self.clock = SimClock(float(st.get("clock", 36000.0)))
        self.kind = TASK_TYPES[t.type].kind
        self.max_steps = self.max_steps_override or int(
            t.limits.get("max_steps", DEFAULT_MAX_STEPS)
        )
        self.map_mode = False
        self.answer_turn = False
        self._answer_fails = 0
        self._eye_rise = 0.0
        self.map = MapState()
        self._s = StepScratch()
        self.notice_once: list[str] = []
        self.record = EpisodeOutcome()
        self.record.positions.append((self.walker.x, self.walker.y))
        self.record.headings.append(self.walker.heading)
        self.record.clocks.append(0.0)
        self.closures = [
            Closure(
                str(c.get("id", f"c{i}")),
                tuple(tuple(p) for p in c["points"]),
                str(c.get("label", "")),
                tuple(c["trigger"]) if c.get("trigger") else None,
            )
            for i, c in enumerate(t.constraints.get("closures", []) or [])
        ]
        self.closure_active = [c.trigger is None for c in self.closures]
        self._closed_edges = {
            i: [tuple(e) for e in (c.get("closed_edges") or [])]
            for i, c in enumerate(t.constraints.get("closures", []) or [])
        }
        peds = t.constraints.get("pedestrians")
        self.crowd = (
            Crowd(
                self.city,
                int(peds.get("count", 0)),
                int(peds.get("seed", 0)),
                peds.get("around"),
                duration=self.max_steps * MAX_DURATION + 60.0,
                avoid=(self.walker.x, self.walker.y),
            )
            if peds
            else None
        )
        cond = t.constraints.get("conditions") or {}
        self.conditions = {
            "time_of_day": cond.get("time_of_day", "day"),
            "weather": cond.get("weather", "clear"),
            "seed": int(cond.get("seed", 0)),
        }
        self.raining = self.conditions["weather"] == "rain"
        # per-episode pieces of each step's status line and view key
        tod, weather = self.conditions["time_of_day"], self.conditions["weather"]
        self._status_tail = "" if (tod, weather) == ("day", "clear") else f" | {tod}, {weather}"
        self._conditions_key = tuple(self.conditions.values())
        self._render_cond: Any = None  # the Conditions of the renderers, made at first use
        self.stops = list(t.goal.get("stops", []) or [])
        self.record.arrivals = [None] * len(self.stops)
        self._router_cache: Router | None = None
        self._fields: dict[int, DistanceField] = {}
        self._remaining_memo: tuple | None = None  # (field, x, y, walking distance)
        self.distance_to_goal = self._remaining()
        self.record.start_distance = self.distance_to_goal
        self._last_notice = ""

    def _start_episode(self, task: TaskSpec) -> None:
        if task.city != self._city_spec:
            self._setup_world(task)
        x, y = float(task.start["x"]), float(task.start["y"])
        if not self.city.contains(x, y, margin=START_MARGIN_M):
            x0, y0, x1, y1 = self.city.bounds
            raise TaskError(
                f"task {task.id!r}: start (x={x!r}, y={y!r}) lies more than "
                f"{START_MARGIN_M:g} m outside its city (x {x0:.0f}..{x1:.0f}, "
                f"y {y0:.0f}..{y1:.0f} m)"
            )
        self._reset_state()

    def _restore_caches(self) -> None:
        self._renderers = {}
        self._last_view = {}
        self._router_cache = None
        self._fields = {}
        self._remaining_memo = None
        self._markers_memo = None
        self.city = self.load_world(self._city_spec)
        self.geometry = WalkGeometry.for_city(self.city)
        self.ground = low_obstacles(self.city, self.geometry)
        self.pedestrian = PedestrianNetwork.for_city(self.city)
