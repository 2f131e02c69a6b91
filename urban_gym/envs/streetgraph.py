"""``UrbanGym/StreetGraph-v0``: long-range navigation on a Street-View intersection graph."""

from __future__ import annotations

import math
import os
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from urban_gym.envs.actions import (
    ActionSet,
    ActionSpec,
    InvalidAction,
    Param,
    describe_value,
    table_index,
)
from urban_gym.envs.base import INVALID_ACTION_REWARD, check_reason, invalid_step_info
from urban_gym.envs.spaces import SharedMemoryText
from urban_gym.envs.text import clean_text, task_charset
from urban_gym.errors import UrbanGymError
from urban_gym.tasks import metrics as M
from urban_gym.tasks.spec import TaskError, TaskSpec
from urban_gym.tasks.streetgraph import DEFAULT_SUITES, suite_path
from urban_gym.tasks.suite import load_suite
from urban_gym.world.streetgraph import (
    Street,
    StreetGraph,
    StreetGraphError,
    graph_key,
    load_streetgraph,
)

#: Camera of the option views: horizontal field of view and pitch (degrees, positive up).
VIEW_FOV = 90.0
VIEW_PITCH = 30.0
#: Goals whose distance arrays an env keeps (LRU).
DISTANCE_CACHE = 128


class StreetGraphEnv(gym.Env):
    """Navigate a Street-View-style panorama graph to a named destination.

    ## Description

    The CityNav setting on a :class:`~urban_gym.world.streetgraph.StreetGraph`: the agent
    stands at an intersection, sees one picture down each outgoing street and picks one; it
    then travels the whole contracted street (all panoramas up to the next intersection)
    without seeing anything in between. It gets no map, no coordinates and no landmark
    hints: only the pictures, each option's compass bearing and the destination's name.
    Destinations are real places (a building footprint, a park) mapped to a set of panorama
    nodes; passing through any of them is arrival. Instruction tasks (Touchdown/map2seq
    routes) are followed one link at a time and end when the agent stops.

    ## Action Space

    ``Discrete(D + 1)`` where ``D`` is the maximum number of options at any node of the
    task graphs (``max_degree``). The action table (``env.unwrapped.action_table``):
    index ``i < D`` = ``{"action": "go", "option": i}`` (take option ``i`` as listed in the
    observation), index ``D`` = ``{"action": "stop"}``. ``stop`` is only available in
    instruction tasks; origin-destination episodes end by arriving. Structured actions (the
    language-model face) are validated by ``env.unwrapped.action_set``. An option that does
    not exist here, ``stop`` where it is masked, or an unparseable action is an
    invalid-action step (state unchanged, reward ``INVALID_ACTION_REWARD``).

    ## Observation Space

    A ``Dict``:

    * ``views`` (image mode only): ``Box(0, 255, (D, h, w, 3), uint8)`` -- option ``i``'s
      perspective view (90° fov, pitch +30°, centred on the street's heading), zeros for
      padding;
    * ``bearings``: ``Box(0, 360, (D,), float32)`` -- each option's compass bearing
      (degrees, the street's 3-hop heading), 0 for padding;
    * ``heading``: ``Box(0, 360, (1,), float32)`` -- the agent's direction of travel
      (degrees; the task's start heading at reset);
    * ``action_mask``: ``Box(0, 1, (D + 1,), int8)`` -- 1 for valid table entries;
    * ``instruction``: ``Text`` -- the destination's name (``"Go to <name>."``) or the
      route description of an instruction task.

    Options are listed in increasing bearing.

    ## Starting State

    The task's start node (an intersection found by the CityNav crawler for
    origin-destination tasks; the route's first panorama for instruction tasks).
    ``reset(seed=s)`` draws the task from ``self.np_random``; ``options={"task_id": id}``
    or ``{"task_index": i}`` picks one.

    ## Rewards

    ``progress_reward`` per metre by which the remaining shortest walking distance to the
    goal shrank (negative when it grew), plus ``success_reward`` on success;
    ``INVALID_ACTION_REWARD`` for an invalid action.

    ## Episode End

    Terminated when an origin-destination agent reaches a destination node
    (``arrived``) or an instruction agent stops (``arrived`` when it stopped on the goal or
    next to it, else ``terminated_by_agent``). Truncated after ``max_decisions`` steps
    (every step counts, also invalid ones; ``decision_limit``) or ``max_transitions``
    panorama-to-panorama moves (``transition_limit``; a street is cut off at the limit).

    ## Information

    ``info`` holds the privileged state: ``task`` (the TaskSpec), ``node`` (panorama id),
    ``position`` (x, y metres), ``remaining_m`` (shortest walking distance to the goal),
    ``decisions``, ``transitions``, ``action_valid``, ``invalid_actions``; at the end
    ``termination``, ``is_success`` and ``metrics``: ``success``, ``spl``,
    ``decision_accuracy`` (a decision is correct when the remaining shortest walking
    distance shrank by more than 1 mm), ``distance_m``, ``shortest_m``, ``remaining_m``, ``decisions``,
    ``transitions``, ``invalid_actions``, and for instruction tasks ``task_completion``,
    ``spd`` (hops from the final panorama to the goal), ``ndtw``, ``sdtw``.

    ## Arguments

    * ``suite``: a default suite name (``"helsinki"``, ``"procedural"``) or a JSONL path.
    * ``tasks``: TaskSpecs (or dicts) to use instead of ``suite``.
    * ``observation``: ``"auto"`` (images when the graph has them or can render them),
      ``"images"`` or ``"symbolic"`` (no ``views``).
    * ``image_size``: view size in pixels, an int or ``(width, height)`` (default 512).
    * ``max_decisions`` (150), ``max_transitions`` (2000): episode limits.
    * ``travel``: ``"street"`` (whole contracted street), ``"link"`` (one panorama) or
      ``"auto"`` (street for origin-destination, link for instruction tasks).
    * ``max_degree``: pad options to this many (default: the graphs' maximum).
    * ``dtw_threshold``: nDTW's success distance ``d_th`` (metres, default 25).
    * ``success_reward`` (1.0), ``progress_reward`` (0.001 per metre).
    * ``pano_width``: rendered panorama width (default ``4 * view width``, at least 256).
    * ``view_cache_mb``: memory for cached option views, MB (LRU over nodes, default 256;
      a node's views are rendered once while they stay in the cache).
    * ``conditions``: light and weather of rendered panoramas, e.g.
      ``{"time_of_day": "dusk", "weather": "fog", "seed": 0}`` (keys of
      :class:`~urban_gym.render.Conditions`; default day, clear).
    * ``render_mode``: ``"rgb_array"`` (the option views with their bearings and the
      instruction).

    ## Version History

    * v0: initial version.
    """

    metadata = {"render_modes": ["rgb_array"], "render_fps": 2}

    def __init__(
        self,
        suite: str | os.PathLike | None = "helsinki",
        tasks: Sequence[TaskSpec | dict] | None = None,
        observation: str = "auto",
        image_size: int | tuple[int, int] = 512,
        max_decisions: int = 150,
        max_transitions: int = 2000,
        travel: str = "auto",
        max_degree: int | None = None,
        dtw_threshold: float = 25.0,
        success_reward: float = 1.0,
        progress_reward: float = 0.001,
        pano_width: int | None = None,
        view_cache_mb: float = 256.0,
        conditions: dict[str, Any] | None = None,
        render_mode: str | None = None,
    ) -> None:
        if tasks is not None:
            self.tasks = [t if isinstance(t, TaskSpec) else TaskSpec.from_dict(t) for t in tasks]
        elif suite is None:
            raise TaskError("StreetGraphEnv needs suite= or tasks=")
        elif isinstance(suite, str) and suite in DEFAULT_SUITES:
            self.tasks = load_suite(suite_path(suite))
        else:
            self.tasks = load_suite(suite)
        if not self.tasks:
            raise TaskError(f"suite {suite!r} has no tasks")
        for t in self.tasks:
            if t.family != "streetgraph":
                raise TaskError(f"task {t.id!r} has family {t.family!r}, not 'streetgraph'")
            if t.type not in ("origin_destination", "instruction"):
                raise TaskError(
                    f"task {t.id!r}: type {t.type!r} must be 'origin_destination' or 'instruction'"
                )
        if observation not in ("auto", "images", "symbolic"):
            raise UrbanGymError(
                f"observation={observation!r} must be 'auto', 'images' or 'symbolic'"
            )
        if travel not in ("auto", "street", "link"):
            raise UrbanGymError(f"travel={travel!r} must be 'auto', 'street' or 'link'")
        for key, val in (("max_decisions", max_decisions), ("max_transitions", max_transitions)):
            if isinstance(val, bool) or not isinstance(val, int) or val < 1:
                raise UrbanGymError(f"{key}={val!r} must be a positive integer")
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise UrbanGymError(f"render_mode={render_mode!r} must be None or 'rgb_array'")
        if not (dtw_threshold > 0):
            raise UrbanGymError(f"dtw_threshold={dtw_threshold!r} must be > 0 metres")
        self.image_wh = _size(image_size)
        self.max_decisions = max_decisions
        self.max_transitions = max_transitions
        self.travel = travel
        self.dtw_threshold = float(dtw_threshold)
        self.success_reward = float(success_reward)
        self.progress_reward = float(progress_reward)
        self.pano_width = int(pano_width) if pano_width else max(256, 4 * self.image_wh[0])
        if not (view_cache_mb >= 0):
            raise UrbanGymError(f"view_cache_mb={view_cache_mb!r} must be >= 0")
        self.view_cache_bytes = int(view_cache_mb * 1024 * 1024)
        self._view_bytes = 0
        self.render_mode = render_mode
        self.conditions = _conditions(conditions)

        self._graphs: dict[str, StreetGraph] = {}
        for t in self.tasks:
            self._graph_of(t)
            self._check_task(t)
        most = max(int(g.out_degree.max()) for g in self._graphs.values())
        if max_degree is not None:
            if max_degree < most:
                raise UrbanGymError(
                    f"max_degree={max_degree!r} is smaller than the graphs' largest out-degree {most}"
                )
            most = int(max_degree)
        self.max_degree = most
        self.images = self._choose_images(observation)

        d = self.max_degree
        self.action_table: list[dict[str, Any]] = [{"action": "go", "option": i} for i in range(d)]
        self.action_table.append({"action": "stop"})
        self.action_set = ActionSet(
            [
                ActionSpec(
                    "go",
                    "travel along the street of this option to the next intersection",
                    (
                        Param(
                            "option",
                            "int",
                            "the option number as listed",
                            low=0,
                            high=d - 1,
                            key_synonyms=(
                                "index",
                                "street",
                                "choice",
                                "number",
                                "direction",
                                "option_index",
                                "id",
                            ),
                        ),
                    ),
                    synonyms=("choose", "select", "take", "move", "follow", "option", "pick"),
                ),
                ActionSpec(
                    "stop",
                    "stop here: you believe you are at the described goal (instruction tasks only)",
                    synonyms=("done", "finish", "end", "arrive", "stay"),
                ),
            ]
        )
        self.action_space = spaces.Discrete(d + 1)
        self._charset = task_charset(self.tasks)
        longest = max([1, *(len(t.instruction) for t in self.tasks)])
        obs: dict[str, spaces.Space] = {
            "bearings": spaces.Box(0.0, 360.0, (d,), np.float32),
            "heading": spaces.Box(0.0, 360.0, (1,), np.float32),
            "action_mask": spaces.Box(0, 1, (d + 1,), np.int8),
            "instruction": SharedMemoryText(max(longest, 256), min_length=0, charset=self._charset),
        }
        if self.images:
            w, h = self.image_wh
            obs["views"] = spaces.Box(0, 255, (d, h, w, 3), np.uint8)
        self.observation_space = spaces.Dict(obs)

        self._views: OrderedDict[tuple[str, int], np.ndarray] = OrderedDict()
        self._node_caches: dict[str, dict[int, tuple[list[Street], np.ndarray]]] = {}
        self._node_cache: dict[int, tuple[list[Street], np.ndarray]] = {}
        self._bearings = np.zeros(self.max_degree, dtype=np.float32)
        self._renderers: dict[str, Any] = {}
        self._dist_cache: OrderedDict[
            tuple[str, tuple[int, ...]], tuple[np.ndarray, np.ndarray | None]
        ] = OrderedDict()
        self.task: TaskSpec = self.tasks[0]
        self.graph: StreetGraph = self._graph_of(self.task)
        self.node = -1
        self.options: list[Street] = []
        self._done = True  # no episode until reset()

    # ------------------------------------------------------------------ setup
    def _graph_of(self, task: TaskSpec) -> StreetGraph:
        spec = task.start.get("graph")
        if not isinstance(spec, dict):
            raise TaskError(f"task {task.id!r}: start.graph={spec!r} must be a graph spec object")
        key = graph_key(spec)
        g = self._graphs.get(key)
        if g is None:
            g = load_streetgraph(spec)
            self._graphs[key] = g
        return g

    def _check_task(self, t: TaskSpec) -> None:
        g = self._graph_of(t)
        if t.start.get("node") not in g.index:
            raise TaskError(
                f"task {t.id!r}: start node {t.start.get('node')!r} is not in graph {g.name!r}"
            )
        if t.type == "origin_destination":
            nodes = t.goal.get("nodes")
            if not isinstance(nodes, list) or not nodes:
                raise TaskError(f"task {t.id!r}: goal.nodes={nodes!r} must be a non-empty list")
            missing = [n for n in nodes if n not in g.index]
            if missing:
                raise TaskError(
                    f"task {t.id!r}: goal nodes {missing[:3]} are not in graph {g.name!r}"
                )
            if t.start["node"] in nodes:
                raise TaskError(f"task {t.id!r}: the start node {t.start['node']!r} is a goal node")
        else:
            route = t.goal.get("route")
            if not isinstance(route, list) or len(route) < 2:
                raise TaskError(
                    f"task {t.id!r}: goal.route={route!r} must list the route's panoramas"
                )
            missing = [n for n in route if n not in g.index]
            if missing:
                raise TaskError(
                    f"task {t.id!r}: route panoramas {missing[:3]} are not in graph {g.name!r}"
                )

    def _choose_images(self, observation: str) -> bool:
        if observation == "symbolic":
            return False
        missing = []
        for g in self._graphs.values():
            src = g.meta.get("source")
            if src == "city" and not _renderer_available():
                missing.append(f"{g.name}: urban_gym.render.PanoramaRenderer is not available")
            elif src == "touchdown" and g.image_dir is None:
                missing.append(f"{g.name}: the Touchdown graph has no image folder")
            elif src not in ("city", "touchdown"):
                missing.append(f"{g.name}: unknown graph source {src!r}")
        if missing and observation == "images":
            raise UrbanGymError("observation='images' is not possible: " + "; ".join(missing))
        return not missing

    # ------------------------------------------------------------------ gym API
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
        self.task = self._pick_task(options or {})
        t = self.task
        g = self.graph = self._graph_of(t)
        self._node_cache = self._node_caches.setdefault(graph_key(t.start["graph"]), {})
        self.node = g.index[t.start["node"]]
        self.heading = float(t.start.get("heading", 0.0)) % 360.0
        if t.type == "origin_destination":
            goal = tuple(sorted(g.index[n] for n in t.goal["nodes"]))
            self.route: list[int] | None = None
        else:
            self.route = [g.index[n] for n in t.goal["route"]]
            goal = (self.route[-1],)
        self.goal_nodes = frozenset(goal)
        self.goal_distances, self.goal_hops = self._distances(t, goal)
        self.link_travel = self.travel == "link" or (
            self.travel == "auto" and t.type == "instruction"
        )
        self.shortest_m = float(self.goal_distances[self.node])
        self.distance_m = 0.0
        self.steps = 0
        self.decisions = 0
        self.transitions = 0
        self.invalid_actions = 0
        self.trajectory = [self.node]
        self._before: list[float] = []
        self._after: list[float] = []
        self._done = False
        self._last_info: dict[str, Any] = {}
        self.options = self._options_at(self.node)
        info = self._info()
        self._last_info = info
        return self._observation(), info

    def step(self, action: Any):
        if self._done:
            raise gym.error.ResetNeeded(
                "StreetGraphEnv.step() called before reset() or after the episode ended; "
                "call reset()"
            )
        self.steps += 1
        try:
            kind, option = self._parse(action)
        except InvalidAction as exc:
            self.invalid_actions += 1
            info = self._info()
            info.update(invalid_step_info(str(exc), self.invalid_actions))
            truncated = self.steps >= self.max_decisions
            if truncated:
                self._finish(info, "decision_limit")
            return self._observation(), INVALID_ACTION_REWARD, False, truncated, info
        before = float(self.goal_distances[self.node])
        reason = None
        if kind == "stop":
            success = self._instruction_success()
            reason = "arrived" if success else "terminated_by_agent"
        else:
            self._travel(self.options[option])
            self.decisions += 1
            now = float(self.goal_distances[self.node])
            self._before.append(before)
            # a change under 1 mm is float noise (positions from lat/lon), not progress
            self._after.append(before if abs(now - before) <= 1e-3 else now)
            if self.task.type == "origin_destination" and self.node in self.goal_nodes:
                reason = "arrived"
            self.options = self._options_at(self.node)
        after = float(self.goal_distances[self.node])
        reward = self.progress_reward * _finite(before - after)
        terminated = reason is not None
        truncated = False
        if not terminated:
            if self.transitions >= self.max_transitions:
                reason, truncated = "transition_limit", True
            elif self.steps >= self.max_decisions:
                reason, truncated = "decision_limit", True
        info = self._info()
        info["action_valid"] = True
        info["invalid_actions"] = self.invalid_actions
        if reason is not None:
            self._finish(info, reason)
            if info["is_success"]:
                reward += self.success_reward
        return self._observation(), float(reward), terminated, truncated, info

    def map_markers(self) -> Any:
        """The task markers the agent may see on a map: none. As in CityNav, the agent
        knows only the destination's name; a map with the goal marked would give the
        task away."""
        from urban_gym.render import MapMarkers

        return MapMarkers()

    def render(self) -> np.ndarray | None:
        if self.render_mode != "rgb_array":
            return None
        return self._frame()

    def action_masks(self) -> np.ndarray:
        """The valid entries of the action table as booleans (for sb3-contrib MaskablePPO)."""
        return self._mask().astype(bool)

    def close(self) -> None:
        self._views.clear()
        self._view_bytes = 0
        self._renderers.clear()

    # ------------------------------------------------------------------ pickling
    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["_graphs"] = {}
        state["_views"] = OrderedDict()
        state["_view_bytes"] = 0
        state["_node_caches"] = {}
        state["_node_cache"] = {}
        state["_renderers"] = {}
        state["_dist_cache"] = OrderedDict()
        state["graph"] = None
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self.graph = self._graph_of(self.task)
        self._node_cache = self._node_caches.setdefault(graph_key(self.task.start["graph"]), {})

    # ------------------------------------------------------------------ hooks
    def _pick_task(self, options: dict[str, Any]) -> TaskSpec:
        if "task" in options:
            t = options["task"]
            t = t if isinstance(t, TaskSpec) else TaskSpec.from_dict(t)
            if t.family != "streetgraph":
                raise TaskError(f"task {t.id!r} has family {t.family!r}, not 'streetgraph'")
            self._check_task(t)
            g = self._graph_of(t)
            if int(g.out_degree.max()) > self.max_degree:
                raise TaskError(
                    f"task {t.id!r}: its graph has {int(g.out_degree.max())} options at a node, "
                    f"more than this env's max_degree={self.max_degree}"
                )
            return t
        if "task_id" in options:
            for t in self.tasks:
                if t.id == options["task_id"]:
                    return t
            raise TaskError(f"no task with id {options['task_id']!r} in this env's suite")
        if "task_index" in options:
            i = options["task_index"]
            if not isinstance(i, (int, np.integer)) or not 0 <= int(i) < len(self.tasks):
                raise TaskError(f"task_index={i!r} must be in [0, {len(self.tasks) - 1}]")
            return self.tasks[int(i)]
        return self.tasks[int(self.np_random.integers(len(self.tasks)))]

    def _distances(
        self, t: TaskSpec, goal: tuple[int, ...]
    ) -> tuple[np.ndarray, np.ndarray | None]:
        """Shortest distances (m) to the goal from every node, and for instruction tasks
        the hop counts, computed once per goal (LRU of :data:`DISTANCE_CACHE` goals)."""
        key = (graph_key(t.start["graph"]), goal)
        got = self._dist_cache.get(key)
        if got is None:
            g = self._graph_of(t)
            hops = g.hops_to(goal) if t.type == "instruction" else None
            got = (g.distances_to(goal), hops)
            self._dist_cache[key] = got
            while len(self._dist_cache) > DISTANCE_CACHE:
                self._dist_cache.popitem(last=False)
        else:
            self._dist_cache.move_to_end(key)
        return got

    def _options_at(self, node: int) -> list[Street]:
        """The streets leaving ``node`` in increasing bearing (cached per graph and node
        together with the padded bearing vector)."""
        got = self._node_cache.get(node)
        if got is None:
            opts = sorted(
                self.graph.streets_from(node), key=lambda s: (round(s.heading, 6), s.nodes[1])
            )
            bearings = np.zeros(self.max_degree, dtype=np.float32)
            for i, st in enumerate(opts):
                bearings[i] = min(np.float32(st.heading % 360.0), np.float32(359.999))
            got = (opts, bearings)
            self._node_cache[node] = got
        self._bearings = got[1]
        return got[0]

    def _parse(self, action: Any) -> tuple[str, int]:
        i = table_index(action)
        if i is not None:
            if not 0 <= i < len(self.action_table):
                raise InvalidAction(
                    f"action index {describe_value(i)} is outside the action table "
                    f"[0, {len(self.action_table) - 1}]"
                )
            act = self.action_table[i]
        else:
            act = self.action_set.normalise(action)
        if act["action"] == "stop":
            if self.task.type != "instruction":
                raise InvalidAction(
                    "stop is not available here: the episode ends when you reach the destination"
                )
            return "stop", -1
        option = int(act["option"])
        if option >= len(self.options):
            raise InvalidAction(
                f"go: option {option} does not exist here; the options are 0..{len(self.options) - 1}"
            )
        return "go", option

    def _travel(self, street: Street) -> None:
        xy = self.graph._xy_list
        nodes = street.nodes
        moved_from = self.transitions
        od = self.task.type == "origin_destination"
        if (
            not self.link_travel
            and self.transitions + street.hops <= self.max_transitions
            and (not od or self.goal_nodes.isdisjoint(nodes))
        ):
            # the whole street: its length and node list are known
            self.distance_m += street.length
            self.transitions += street.hops
            self.trajectory.extend(nodes[1:])
            last, prev = nodes[-1], nodes[-2]
        else:
            path = nodes[1:2] if self.link_travel else nodes[1:]
            last = prev = self.node
            for n in path:
                if self.transitions >= self.max_transitions:
                    break
                self.distance_m += math.dist(xy[last], xy[n])
                self.transitions += 1
                self.trajectory.append(n)
                prev, last = last, n
                if od and n in self.goal_nodes:
                    break
        if self.transitions > moved_from:
            (x0, y0), (x1, y1) = xy[prev], xy[last]
            if (x0, y0) != (x1, y1):
                self.heading = math.degrees(math.atan2(x1 - x0, y1 - y0)) % 360.0
        self.node = last

    def _instruction_success(self) -> bool:
        if self.task.type != "instruction" or self.route is None:
            return self.node in self.goal_nodes
        goal = self.route[-1]
        return M.task_completion(self.node, goal, self.graph.undirected_neighbours[goal])

    def _mask(self) -> np.ndarray:
        m = np.zeros(self.max_degree + 1, dtype=np.int8)
        m[: len(self.options)] = 1
        if self.task.type == "instruction":
            m[-1] = 1
        return m

    def _observation(self) -> dict[str, Any]:
        obs: dict[str, Any] = {
            "bearings": self._bearings.copy(),
            "heading": np.array([min(self.heading % 360.0, 359.999)], dtype=np.float32),
            "action_mask": self._mask(),
            "instruction": clean_text(self.task.instruction, self._charset),
        }
        if self.images:
            obs["views"] = self._option_views()
        return obs

    def _info(self) -> dict[str, Any]:
        g = self.graph
        return {
            "task": self.task,
            "node": g.ids[self.node],
            "position": (float(g.xy[self.node, 0]), float(g.xy[self.node, 1])),
            "remaining_m": float(self.goal_distances[self.node]),
            "decisions": self.decisions,
            "transitions": self.transitions,
            "action_valid": True,
            "invalid_actions": self.invalid_actions,
        }

    def _finish(self, info: dict[str, Any], reason: str) -> None:
        self._done = True
        od = self.task.type == "origin_destination"
        success = M.success(self.node in self.goal_nodes if od else self._instruction_success())
        m: dict[str, Any] = {
            "success": success,
            "spl": M.spl(success, self.shortest_m, self.distance_m),
            "decision_accuracy": M.decision_accuracy(self._before, self._after),
            "distance_m": round(self.distance_m, 3),
            "shortest_m": round(self.shortest_m, 3),
            "remaining_m": round(float(self.goal_distances[self.node]), 3),
            "decisions": self.decisions,
            "transitions": self.transitions,
            "invalid_actions": self.invalid_actions,
        }
        if not od and self.route is not None:
            xy = self.graph.xy
            query = [tuple(xy[n]) for n in self.trajectory]
            ref = [tuple(xy[n]) for n in self.route]
            m["task_completion"] = success
            m["spd"] = int(self.goal_hops[self.node])
            m["ndtw"] = M.ndtw(query, ref, self.dtw_threshold)
            m["sdtw"] = M.sdtw(success, query, ref, self.dtw_threshold)
        info["termination"] = check_reason(reason)
        info["metrics"] = m
        info["is_success"] = bool(success)

    # ------------------------------------------------------------------ images
    def _option_views(self) -> np.ndarray:
        d = self.max_degree
        w, h = self.image_wh
        out = np.zeros((d, h, w, 3), dtype=np.uint8)
        if not self.options:
            return out
        key = (graph_key(self.task.start["graph"]), self.node)
        views = self._views.get(key)
        if views is None:
            views = self._render_views(self.graph, self.node, [s.heading for s in self.options])
            self._views[key] = views
            self._view_bytes += views.nbytes
            while self._view_bytes > self.view_cache_bytes and self._views:
                self._view_bytes -= self._views.popitem(last=False)[1].nbytes
        else:
            self._views.move_to_end(key)
        out[: len(views)] = views
        return out

    def _render_views(self, g: StreetGraph, node: int, headings: list[float]) -> np.ndarray:
        from urban_gym.render import perspective_batch

        pano, pano_heading = self._panorama(g, node)
        return perspective_batch(
            pano,
            np.asarray(headings, dtype=float),
            pitch=VIEW_PITCH,
            fov=VIEW_FOV,
            size=self.image_wh,
            pano_heading=pano_heading,
        )

    def _panorama(self, g: StreetGraph, node: int) -> tuple[np.ndarray, float]:
        if g.meta.get("source") == "touchdown":
            return _read_equirect(g, node), float(g.pano_heading[node])
        key = g.meta["city"]
        r = self._renderers.get(key)
        if r is None:
            from urban_gym.world.loader import load_city

            r = _panorama_renderer_class()(
                load_city(key), width=self.pano_width, height=self.pano_width // 2
            )
            self._renderers[key] = r
        x, y = g.xy[node]
        return r.render(float(x), float(y), conditions=self.conditions).rgb, 0.0

    def _frame(self) -> np.ndarray:
        from PIL import Image, ImageDraw

        tile = 160
        k = max(1, len(self.options))
        width = max(4, k) * tile
        img = Image.new("RGB", (width, tile + 70), (32, 32, 36))
        draw = ImageDraw.Draw(img)
        font = _font(14)
        views = self._option_views() if self.images else None
        for i, s in enumerate(self.options):
            x0 = i * tile
            if views is not None:
                v = Image.fromarray(views[i]).resize((tile - 4, tile - 4))
                img.paste(v, (x0 + 2, 2))
            else:
                cx, cy, r = x0 + tile // 2, tile // 2, tile // 2 - 14
                draw.ellipse((cx - r, cy - r, cx + r, cy + r), outline=(120, 120, 130))
                rad = math.radians(s.heading)
                draw.line(
                    (cx, cy, cx + r * math.sin(rad), cy - r * math.cos(rad)),
                    fill=(250, 200, 60),
                    width=4,
                )
            draw.text(
                (x0 + 6, tile - 20), f"{i}: {s.heading:.0f}°", fill=(255, 255, 255), font=font
            )
        text = self.task.instruction
        draw.text((6, tile + 8), text[:120], fill=(230, 230, 230), font=font)
        draw.text(
            (6, tile + 36),
            f"decisions {self.decisions}  transitions {self.transitions}",
            fill=(160, 160, 170),
            font=font,
        )
        return np.asarray(img, dtype=np.uint8)


def _size(size: int | tuple[int, int]) -> tuple[int, int]:
    if isinstance(size, (int, np.integer)) and not isinstance(size, bool):
        w = h = int(size)
    elif isinstance(size, (tuple, list)) and len(size) == 2:
        w, h = (int(s) for s in size)
    else:
        raise UrbanGymError(f"image_size={size!r} must be an int or (width, height)")
    if w < 8 or h < 8 or w > 4096 or h > 4096:
        raise UrbanGymError(f"image_size={size!r} must be between 8 and 4096 pixels")
    return w, h


def _conditions(conditions: dict[str, Any] | None) -> Any:
    if conditions is None:
        return None
    if not isinstance(conditions, dict):
        raise UrbanGymError(f"conditions={conditions!r} must be a dict of Conditions fields")
    from urban_gym.render import Conditions

    try:
        return Conditions(**conditions)
    except TypeError as exc:
        raise UrbanGymError(f"conditions={conditions!r}: {exc}") from None


def _finite(x: float) -> float:
    return x if math.isfinite(x) else 0.0


def _panorama_renderer_class() -> Any:
    """``PanoramaRenderer`` from :mod:`urban_gym.render` (or its module), None if absent."""
    try:
        from urban_gym.render import PanoramaRenderer

        return PanoramaRenderer
    except ImportError:
        pass
    try:
        from urban_gym.render.panorama import PanoramaRenderer

        return PanoramaRenderer
    except ImportError:
        return None


def _renderer_available() -> bool:
    return _panorama_renderer_class() is not None


def _read_equirect(g: StreetGraph, node: int) -> np.ndarray:
    import cv2

    path = g.image_path(node)
    if path is None:
        raise StreetGraphError(
            f"no image for panorama {g.ids[node]!r} in {g.image_dir} (tried .jpg, .jpeg, .png)"
        )
    img = cv2.imread(str(path), cv2.IMREAD_COLOR)
    if img is None or img.size == 0:
        raise StreetGraphError(f"cannot read image {path} (corrupt or not an image)")
    h, w = img.shape[:2]
    if w != 2 * h:
        raise StreetGraphError(f"image {path} is {w}x{h}, not a 2:1 equirectangular panorama")
    return cv2.cvtColor(img, cv2.COLOR_BGR2RGB)


_FONTS: dict[int, Any] = {}


def _font(size: int):
    from PIL import ImageFont

    f = _FONTS.get(size)
    if f is None:
        p = Path(__file__).resolve().parent.parent / "data" / "fonts" / "DejaVuSans.ttf"
        f = ImageFont.truetype(str(p), size) if p.is_file() else ImageFont.load_default()
        _FONTS[size] = f
    return f
