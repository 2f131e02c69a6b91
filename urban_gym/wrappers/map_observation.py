"""A top-down map added to the observation.

:class:`MapObservation` adds a ``map`` image drawn by the render layer's
:class:`~urban_gym.render.MapRenderer`: agent-centred (following the agent at a fixed
scale, optionally heading-up) or the whole district, with the agent's arrow, the task's
markers, the trajectory so far and the localization grid.

Which task markers appear is the environment's call, not the task file's: with
``markers="env"`` (the default) the wrapper draws what ``env.unwrapped.map_markers()``
says the agent may see (a map-navigation task's start and goal, the destinations a task
shows and closures once they are active, nothing for a landmark search). ``markers="task"`` draws every start, goal, destination and
closure of the task spec -- privileged, for a person watching, not for an agent.

``show_location=False`` gives the map *without location information*, for the
with/without-location comparison of the benchmarks: the whole district, north-up, with the
task's markers and the grid but no agent arrow and no trajectory (an agent-centred map would
give the position away by its centre). ``enabled=False`` adds nothing at all.

``render()`` returns the map with the env's frame beside it (composed by
:mod:`urban_gym.render.frame`), so a recorded video shows the map too; with
``observe=False`` the map is drawn for ``render()`` only (a person watching) and the
observation stays the env's. ``view="task"`` shows the task's area: a window fitting its
start, goal and destinations, that moves to the agent when the agent leaves it.

The true pose is read from ``info`` (:func:`urban_gym.wrappers.state.read_pose`); the
world from ``env.unwrapped.city`` (or loaded from the task's ``city`` spec).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, SupportsFloat, cast

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from urban_gym.errors import InputError
from urban_gym.world.grid import GridOverlay
from urban_gym.wrappers.state import Pose, read_pose, task_markers

VIEWS = ("agent", "district", "task")


class MapObservation(gym.Wrapper, gym.utils.RecordConstructorArgs):
    """Adds a ``map`` image (``Box(0, 255, (size, size, 3), uint8)``) to a Dict observation.

    Args:
        env: an urban_gym env (Dict observation; ``unwrapped.city`` and ``unwrapped.task``).
        view: ``"agent"`` (centred on the agent), ``"district"`` (the whole city) or
            ``"task"`` (the task's area, see above).
        size: image side in pixels.
        metres_per_pixel: scale of the agent-centred map (the district map fits the city).
        heading_up: rotate the agent-centred map so the agent's heading points up.
        show_location: False: no agent arrow or trajectory, district view (see above).
        markers: ``"env"`` (or True): the markers the env lets the agent see;
            ``"task"``: every marker of the task spec (privileged); False: none.
        grid: True: the task's localization grid if it has one, else a 5x5 grid over the
            city; a :class:`GridOverlay`; or False for none.
        trajectory: draw the path walked so far.
        labels: draw POI names.
        key: the observation key.
        enabled: False: the wrapper adds nothing.
        observe: False: the map is not added to the observation, only to ``render()``.
    """

    def __init__(
        self,
        env: gym.Env,
        view: str = "agent",
        size: int = 256,
        metres_per_pixel: float = 1.0,
        heading_up: bool = False,
        show_location: bool = True,
        markers: bool | str = "env",
        grid: bool | GridOverlay = False,
        trajectory: bool = True,
        labels: bool = False,
        key: str = "map",
        enabled: bool = True,
        observe: bool = True,
    ) -> None:
        gym.utils.RecordConstructorArgs.__init__(
            self,
            view=view,
            size=size,
            metres_per_pixel=metres_per_pixel,
            heading_up=heading_up,
            show_location=show_location,
            markers=markers,
            grid=grid,
            trajectory=trajectory,
            labels=labels,
            key=key,
            enabled=enabled,
            observe=observe,
        )
        gym.Wrapper.__init__(self, env)
        if view not in VIEWS:
            raise InputError(f"MapObservation view={view!r} is not one of {', '.join(VIEWS)}")
        if int(size) < 16:
            raise InputError(f"MapObservation size={size!r} must be >= 16 pixels")
        if not float(metres_per_pixel) > 0:
            raise InputError(
                f"MapObservation metres_per_pixel={metres_per_pixel!r} must be positive"
            )
        self.view = view if show_location else "district"
        self.size = int(size)
        self.metres_per_pixel = float(metres_per_pixel)
        self.heading_up = heading_up and show_location
        self.show_location = show_location
        if markers is True:
            markers = "env"
        if markers not in ("env", "task", False, None):
            raise InputError(
                f"MapObservation markers={markers!r} is not one of 'env', 'task', False"
            )
        self.draw_markers = markers or None
        self.grid = grid
        self.draw_trajectory = trajectory and show_location
        self.labels = labels
        self.key = key
        self.enabled = enabled
        self.observe = observe
        if enabled and observe:
            base = env.observation_space
            if not isinstance(base, spaces.Dict):
                raise InputError(
                    f"MapObservation needs a Dict observation space, got {type(base).__name__}"
                )
            if key in base.spaces:
                raise InputError(f"the observation already has a {key!r} entry")
            self.observation_space = spaces.Dict(
                {**base.spaces, key: spaces.Box(0, 255, (self.size, self.size, 3), np.uint8)}
            )
        self._renderer: Any = None
        self._city: Any = None
        self._path: list[tuple[float, float]] = []
        self._pose: Pose | None = None
        self.last_map: np.ndarray | None = None
        self._task_window: tuple[tuple[float, float], float] | None = None

    # ------------------------------------------------------------------ gym API
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        """Reset the env and the trail; the observation gains the map."""
        obs, info = self.env.reset(seed=seed, options=options)
        self._path = []
        self._task_window = None
        return self._add(obs, info), info

    def step(self, action: Any) -> tuple[Any, SupportsFloat, bool, bool, dict[str, Any]]:
        """Step the env; the observation gains the map with the trail so far."""
        obs, reward, terminated, truncated, info = self.env.step(action)
        return self._add(obs, info), reward, terminated, truncated, info

    # ------------------------------------------------------------------ drawing
    def _add(self, obs: Mapping[str, Any], info: Mapping[str, Any]) -> Any:
        if not self.enabled:
            return obs
        pose = read_pose(info)
        if pose is not None:
            self._pose = pose
            if not self._path or self._path[-1] != (pose.x, pose.y):
                self._path.append((pose.x, pose.y))
        if not self.observe:
            self.last_map = None  # drawn when render() asks for it
            return obs
        self.last_map = self.render_map()
        return {**obs, self.key: self.last_map}

    @property
    def city(self) -> Any:
        """The env's city (loaded from the task's city spec when the env holds none)."""
        if self._city is None:
            u = self.env.unwrapped
            city = getattr(u, "city", None)
            if city is None:
                task = getattr(u, "task", None)
                spec = getattr(task, "city", None)
                if spec is None:
                    raise InputError("MapObservation: the env has neither a city nor a task")
                from urban_gym.world import load_city

                city = load_city(spec, names=getattr(u, "names", "both"))
            self._city = city
        return self._city

    def _grid(self) -> GridOverlay | None:
        if isinstance(self.grid, GridOverlay):
            return self.grid
        if not self.grid:
            return None
        g = task_markers(getattr(self.env.unwrapped, "task", None)).grid
        return g if g is not None else GridOverlay(tuple(self.city.bounds), 5, 5)

    def window(self) -> tuple[tuple[float, float], float, float]:
        """``(center, metres_per_pixel, rotation)`` of the map drawn now."""
        pose = self._pose
        if self.view == "agent" and pose is not None:
            rot = pose.heading if self.heading_up else 0.0
            return (pose.x, pose.y), self.metres_per_pixel, rot
        if self.view == "task":
            return (*self._task_area(), 0.0)
        x0, y0, x1, y1 = self.city.bounds
        mpp = max(x1 - x0, y1 - y0) * 1.04 / self.size
        return ((x0 + x1) / 2.0, (y0 + y1) / 2.0), mpp, 0.0

    def _task_area(self) -> tuple[tuple[float, float], float]:
        """Centre and metres per pixel of the ``"task"`` view: the task's start, goal,
        destinations and the agent's first pose with a 30% margin (at least 60 m across),
        re-centred on the agent when it comes within 5% of the width of an edge.
        """
        pose = self._pose
        if self._task_window is None:
            tm = task_markers(getattr(self.env.unwrapped, "task", None))
            pts = [p for p in (tm.start, tm.goal, *tm.destinations) if p is not None]
            if pose is not None:
                pts.append((pose.x, pose.y))
            if not pts:
                x0, y0, x1, y1 = self.city.bounds
                pts = [(x0, y0), (x1, y1)]
            xs, ys = [p[0] for p in pts], [p[1] for p in pts]
            span = max(max(xs) - min(xs), max(ys) - min(ys), 60.0) * 1.3
            self._task_window = ((max(xs) + min(xs)) / 2, (max(ys) + min(ys)) / 2), span / self.size
        center, mpp = self._task_window
        edge = mpp * self.size * 0.45
        if pose is not None and max(abs(pose.x - center[0]), abs(pose.y - center[1])) > edge:
            center = (pose.x, pose.y)  # the agent is leaving the window: centre it there
            self._task_window = center, mpp
        return center, mpp

    def render(self) -> Any:
        """This map and, at its right, the env's frame (padded to one height; the map comes
        first so that it stays in place when the env's frame changes width, as an intersection
        view does with the number of options), or the env's ``render()`` as it is when it
        returns no ``rgb_array`` frame or the wrapper is off.
        """
        frame = self.env.render()
        if not self.enabled or not isinstance(frame, np.ndarray) or frame.ndim != 3:
            return frame
        from urban_gym.render import frame as F

        side = self.last_map if self.last_map is not None else self.render_map()
        return F.hstack([side, frame])

    def render_map(self) -> np.ndarray:
        """The map for the current state, ``(size, size, 3)`` uint8."""
        from urban_gym.render import MapMarkers, MapRenderer

        if self._renderer is None:
            self._renderer = MapRenderer(self.city)
        center, mpp, rot = self.window()
        kw: dict[str, Any] = {"grid": self._grid()}
        if self.draw_markers == "task":
            tm = task_markers(getattr(self.env.unwrapped, "task", None))
            kw.update(
                start=tm.start, goal=tm.goal, destinations=tm.destinations, closures=tm.closures
            )
        elif self.draw_markers == "env":
            env_markers = getattr(self.env.unwrapped, "map_markers", None)
            if callable(env_markers):
                em = env_markers()
                kw.update(
                    start=em.start,
                    goal=em.goal,
                    destinations=list(em.destinations),
                    closures=list(em.closures),
                )
                if em.grid is not None and kw["grid"] is None:
                    kw["grid"] = em.grid
        if self.show_location and self._pose is not None:
            kw["agent"] = (self._pose.x, self._pose.y, self._pose.heading)
        if self.draw_trajectory and len(self._path) >= 2:
            kw["trajectory"] = list(self._path)
        return self._renderer.render(
            center=center,
            metres_per_pixel=mpp,
            size=self.size,
            rotation=rot,
            labels=self.labels,
            markers=MapMarkers(**kw),
        )


class AddLocationMap(gym.ObservationWrapper, gym.utils.RecordConstructorArgs):
    """Add the env's own map of the agent's current location to every observation.

    360CityArena's main setting gives the model, each step, a map that marks where the
    agent is and which way it faces; its ablation ("without location") leaves the map
    out. This wrapper reads the map from the env (``env.unwrapped.location_map(size)``,
    for a family that draws one) and adds it under ``key``; an env made with ``location_prior=True`` already has it.

    Args:
        env: an env with a Dict observation space whose core has ``location_map``.
        size: the map's side in pixels (default: the env's ``map_size``).
        key: the observation key.
    """

    def __init__(self, env: gym.Env, size: int | None = None, key: str = "map") -> None:
        gym.utils.RecordConstructorArgs.__init__(self, size=size, key=key)
        gym.ObservationWrapper.__init__(self, env)
        base = env.observation_space
        if not isinstance(base, spaces.Dict):
            raise InputError("AddLocationMap needs a Dict observation space")
        if not callable(getattr(env.unwrapped, "location_map", None)):
            raise InputError(
                f"{type(env.unwrapped).__name__} has no location_map(); AddLocationMap "
                "works on an env that draws its location map"
            )
        if key in base.spaces:
            raise InputError(f"the observation already has a {key!r} entry")
        self.size = int(size or cast(int, getattr(env.unwrapped, "map_size", 512)))
        self.key = key
        self.observation_space = spaces.Dict(
            {**base.spaces, key: spaces.Box(0, 255, (self.size, self.size, 3), np.uint8)}
        )

    def observation(self, observation: Mapping[str, Any]) -> dict[str, Any]:
        """The observation with the location map added."""
        core: Any = self.env.unwrapped  # an env that draws its location map (checked)
        return {**observation, self.key: core.location_map(self.size)}
