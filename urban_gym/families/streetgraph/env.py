"""``UrbanGym/StreetGraph-v0``: long-range navigation on a Street-View intersection graph.

The env's settings, spaces, episode and ending live here; its seams beside it: the actions
(:mod:`~urban_gym.families.streetgraph.actions`), the moves
(:mod:`~urban_gym.families.streetgraph.dynamics`) and what the agent sees
(:mod:`~urban_gym.families.streetgraph.observation`).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import numpy as np
from gymnasium import spaces

from urban_gym.caching import LRUCache
from urban_gym.envs.actions import InvalidAction
from urban_gym.envs.base import UrbanEnv, is_success
from urban_gym.envs.spaces import SharedMemoryText
from urban_gym.envs.text import task_charset
from urban_gym.errors import InputError
from urban_gym.families.streetgraph.actions import (
    STOP_UNAVAILABLE,
    make_action_set,
    missing_option,
)
from urban_gym.families.streetgraph.dynamics import (
    DISTANCE_CACHE,
    StreetGraphDynamics,
    distance_cache,
    finite,
    option_bearings,
    ordered_streets,
)
from urban_gym.families.streetgraph.observation import (
    FRAME_TILE,
    VIEW_FOV,
    VIEW_PITCH,
    StreetGraphObservation,
    renderer_available,
)
from urban_gym.families.streetgraph.tasks import EpisodeOutcome, graph_spec
from urban_gym.families.streetgraph.world import (
    Street,
    StreetGraph,
    graph_key,
    load_streetgraph,
)
from urban_gym.tasks.spec import TaskError, TaskSpec
from urban_gym.world.names import DEFAULT_NAMES

# importable from here as before the family's seams were split out
__all__ = [
    "DISTANCE_CACHE",
    "FRAME_TILE",
    "STOP_UNAVAILABLE",
    "VIEW_FOV",
    "VIEW_PITCH",
    "StreetGraphEnv",
    "distance_cache",
    "make_action_set",
    "missing_option",
    "option_bearings",
    "ordered_streets",
]


class StreetGraphEnv(StreetGraphObservation, StreetGraphDynamics, UrbanEnv):
    """Navigate a Street-View-style panorama graph to a named destination.

    ## Description

    The CityNav setting on a :class:`~urban_gym.families.streetgraph.world.StreetGraph`: the agent
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
      route description of an instruction task;
    * ``goal_vector`` / ``goal_landmarks`` / ``goal_image`` / ``goal_text`` (with
      ``goal=``): the goal a policy conditions on (:mod:`urban_gym.envs.goals`).

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

    The schema of :mod:`urban_gym.envs.info`: ``pose`` (the panorama's position, metres,
    and the direction of travel), ``distance_to_goal_m`` (the shortest walking distance to
    the goal), ``steps``, ``invalid_actions``, ``action_valid``, ``invalid_action``,
    ``task_id``; and the family's own keys: ``task`` (the TaskSpec), ``node`` (panorama
    id: a stable identity of the intersection, the same on every visit -- what AgentNav's
    "previous visits" memory needs), ``option_bearings`` (the compass bearing of each
    option, as in the observation, unpadded), ``decisions`` (intersections decided at so
    far), ``transitions``. Parallel links are merged when the graph is built, so every
    option is a distinct street (:func:`~urban_gym.families.streetgraph.world.preprocess.merge_parallel_streets`). At the end ``termination``, ``is_success`` and
    ``metrics`` (:func:`urban_gym.families.streetgraph.tasks.evaluate`): ``success``, ``spl``,
    ``decision_accuracy`` (a decision is correct when the remaining shortest walking
    distance shrank by more than 1 mm), ``distance_m``, ``shortest_m``, ``remaining_m``,
    ``decisions``, ``transitions``, ``invalid_actions``, and for instruction tasks
    ``task_completion``, ``spd`` (hops from the final panorama to the goal), ``ndtw``,
    ``sdtw``.

    ## Arguments

    * ``suite``: a committed suite's name (``"helsinki"``, the default, ``"london"``,
      ``"munich"``, ``"sao_paulo"``, ``"procedural"``), ``"touchdown"`` (Touchdown's own
      routes on its Manhattan graph, see ``split``) or a JSONL path.
    * ``tasks``: TaskSpecs (or dicts) to use instead of ``suite``.
    * ``task_types``, ``difficulties``: keep only the tasks of these types / difficulties.
    * ``city``: the city every task must name (default: the tasks' own); without ``suite``
      and ``tasks``, the committed suite of that city (``city="london"``). A task's world is
      its ``task.city`` and its graph parameters ``start["graph"]``
      (:func:`urban_gym.families.streetgraph.tasks.graph_spec`).
    * ``observation``: ``"auto"`` (images when the graph has them or can render them),
      ``"images"`` or ``"symbolic"`` (no ``views``).
    * ``image_size``: view size in pixels, an int or ``(width, height)`` (default 512).
    * ``max_decisions`` (150), ``max_transitions`` (2000): episode limits.
    * ``travel``: ``"street"`` (whole contracted street), ``"link"`` (one panorama) or
      ``"auto"`` (street for origin-destination, link for instruction tasks).
    * ``max_degree``: pad options to this many (default: the graphs' maximum).
    * ``dtw_threshold``: nDTW's success distance ``d_th`` (metres, default 25; links with
      ``dtw_distance="hops"``).
    * ``dtw_distance``: nDTW's step cost, ``"euclidean"`` (metres, default) or ``"hops"``
      (fewest links on the graph, :func:`~urban_gym.families.streetgraph.tasks.evaluate.hop_costs`).
    * ``names``: which name of each place the rendered views' signs show: ``"local"``,
      ``"english"`` or ``"both"`` (the default; :mod:`urban_gym.world.names`).
    * ``split``, ``images`` (with ``suite="touchdown"``): which of Touchdown's installed
      splits (``train``, ``dev`` -- the default -- or ``test``; ``urban-gym data
      touchdown`` installs them) and a folder of the user's Touchdown panoramas
      (``<panoid>.jpg|jpeg|png``; default none: symbolic observations).
    * ``success_reward`` (1.0), ``progress_reward`` (0.001 per metre).
    * ``pano_width``: rendered panorama width (default ``4 * view width``, at least 256).
    * ``view_cache_mb``: memory for cached option views, MB (LRU over nodes, default 256;
      a node's views are rendered once while they stay in the cache).
    * ``conditions``: light and weather of rendered panoramas, e.g.
      ``{"time_of_day": "dusk", "weather": "fog", "seed": 0}`` (keys of
      :class:`~urban_gym.render.Conditions`; default day, clear).
    * ``render_mode``: ``"rgb_array"`` (the option views with their bearings and the
      instruction; one frame size per env, 160 px per ``max_degree`` option wide, which
      the options shown share equally, so videos can be recorded).
    * ``track_visibility``: False; True adds ``info["goal_visible"]``
      (:mod:`urban_gym.envs.visibility`).
    * ``goal``: ``"none"`` (default: the observation above), ``"vector"``, ``"landmarks"``,
      ``"image"`` or ``"text"``: adds the ``goal_*`` entry a policy conditions on
      (:mod:`urban_gym.envs.goals`); ``"image"`` (the view at the goal's
      panorama) needs image observations.

    ``UrbanGym/StreetGraph-Touchdown-v0`` is ``suite="touchdown", split="dev",
    dtw_distance="hops", dtw_threshold=1``: Touchdown's routes, scored as Touchdown and
    VELMA report them (task completion, SPD in links, nDTW over graph distances).

    ## Version History

    * v0: ``info`` in the shared schema (``pose``, ``distance_to_goal_m``) with the
      family's ``option_bearings``; parallel links merged when a graph is built (Helsinki:
      5,570 links merge into 5,530, with at most 4 options at an intersection, so
      ``Discrete(5)``), and the Helsinki suite generated on the merged graph.
    """

    metadata = {"render_modes": ["rgb_array"], "render_fps": 2}
    family = "streetgraph"
    cache_attributes = (
        "_graphs",
        "_task_keys",
        "_views",
        "_node_caches",
        "_node_cache",
        "_renderers",
        "_dist_cache",
        "_starts",
        "_task_family",
        "graph",
    )

    def __init__(
        self,
        suite: str | os.PathLike | None = None,
        tasks: Sequence[TaskSpec | dict] | None = None,
        task_types: Sequence[str] | None = None,
        difficulties: Sequence[str] | None = None,
        city: str | None = None,
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
        track_visibility: bool = False,
        goal: str = "none",
        split: str | None = None,
        images: str | os.PathLike | None = None,
        dtw_distance: str = "euclidean",
        names: str = DEFAULT_NAMES,
    ) -> None:
        self._init_base(render_mode, track_visibility, goal, names)
        self._check_settings(observation, travel, max_decisions, max_transitions, dtw_threshold)
        if not (view_cache_mb >= 0):
            raise InputError(f"view_cache_mb={view_cache_mb!r} must be >= 0")
        if dtw_distance not in ("euclidean", "hops"):
            raise InputError(f"dtw_distance={dtw_distance!r} must be 'euclidean' or 'hops'")
        self.dtw_distance = dtw_distance
        if tasks is None and (suite == "touchdown" or split is not None or images is not None):
            tasks = _touchdown_tasks(suite, split, images)
        self.tasks = self._load_tasks(suite, tasks, task_types, difficulties, city)
        self.image_wh = _size(image_size)
        self.max_decisions = max_decisions
        self.max_transitions = max_transitions
        self.travel = travel
        self.dtw_threshold = float(dtw_threshold)
        self.success_reward = float(success_reward)
        self.progress_reward = float(progress_reward)
        self.pano_width = int(pano_width) if pano_width else max(256, 4 * self.image_wh[0])
        self.view_cache_bytes = int(view_cache_mb * 1024 * 1024)
        self.conditions = _conditions(conditions)
        self._init_caches()
        most = max(int(self._graph_of(t).out_degree.max()) for t in self.tasks)
        if max_degree is not None:
            if max_degree < most:
                raise InputError(
                    f"max_degree={max_degree!r} is smaller than the graphs' largest out-degree {most}"
                )
            most = int(max_degree)
        self.max_degree = most
        self._bearings = np.zeros(most, dtype=np.float32)
        self.images = self._choose_images(observation)
        self._build_spaces()
        self.task: TaskSpec = self.tasks[0]
        self.graph: StreetGraph = self._graph_of(self.task)
        self._graph_key = graph_key(graph_spec(self.task))
        self.node = -1
        self.options: list[Street] = []

    # ------------------------------------------------------------------ setup
    @staticmethod
    def _check_settings(
        observation: str,
        travel: str,
        max_decisions: int,
        max_transitions: int,
        dtw_threshold: float,
    ) -> None:
        if observation not in ("auto", "images", "symbolic"):
            raise InputError(f"observation={observation!r} must be 'auto', 'images' or 'symbolic'")
        if travel not in ("auto", "street", "link"):
            raise InputError(f"travel={travel!r} must be 'auto', 'street' or 'link'")
        for key, val in (("max_decisions", max_decisions), ("max_transitions", max_transitions)):
            if isinstance(val, bool) or not isinstance(val, int) or val < 1:
                raise InputError(f"{key}={val!r} must be a positive integer")
        if not (dtw_threshold > 0):
            raise InputError(f"dtw_threshold={dtw_threshold!r} must be > 0 metres")

    def _build_spaces(self) -> None:
        """The action table, action set and spaces for :attr:`max_degree` options."""
        d = self.max_degree
        self.action_table: list[dict[str, Any]] = [{"action": "go", "option": i} for i in range(d)]
        self.action_table.append({"action": "stop"})
        self.action_set = make_action_set(d)
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
        self.observation_space = spaces.Dict({**obs, **self.goal_spaces()})

    def _init_caches(self) -> None:
        """The per-process caches (dropped when pickled, see :attr:`cache_attributes`)."""
        self._graphs: dict[str, StreetGraph] = {}
        self._task_keys: dict[str, tuple[TaskSpec, str]] = {}
        self._starts: dict[str, _Start] = {}
        self._task_family: ModuleType | None = None  # looked up on first use
        self._views: LRUCache[tuple[str, int], np.ndarray] = LRUCache(self.view_cache_bytes)
        self._node_caches: dict[str, dict[int, tuple[list[Street], np.ndarray, list[float]]]] = {}
        self._node_cache: dict[int, tuple[list[Street], np.ndarray, list[float]]] = {}
        self._masks: dict[tuple[int, bool], np.ndarray] = {}
        self._clean_for: TaskSpec | None = None
        self._clean_text = ""
        self._renderers: dict[str, Any] = {}
        self._dist_cache = distance_cache()

    def _restore_caches(self) -> None:
        self._init_caches()
        self.graph = self._graph_of(self.task)
        self._node_cache = self._node_caches.setdefault(self._graph_key, {})

    @property
    def task_family(self) -> ModuleType:
        """The family's task package (:attr:`UrbanEnv.task_family
        <urban_gym.envs.base.UrbanEnv.task_family>`), looked up once per env: an episode's
        end asks for it.
        """
        got = self.__dict__.get("_task_family")
        if got is None:
            got = self._task_family = UrbanEnv.task_family.fget(self)  # type: ignore[attr-defined]
        return got

    def _key_of(self, task: TaskSpec) -> str:
        """The :func:`graph_key` of ``task``'s graph (remembered per task)."""
        got = self._task_keys.get(task.id)
        if got is None or got[0] is not task:
            got = self._task_keys[task.id] = (task, graph_key(graph_spec(task)))
        return got[1]

    def _graph_of(self, task: TaskSpec) -> StreetGraph:
        key = self._key_of(task)
        g = self._graphs.get(key)
        if g is None:
            g = load_streetgraph(graph_spec(task))
            self._graphs[key] = g
        return g

    def _choose_images(self, observation: str) -> bool:
        if observation == "symbolic":
            return False
        missing = []
        for g in self._graphs.values():
            src = g.meta.get("source")
            if src == "city" and not renderer_available():
                missing.append(f"{g.name}: urban_gym.render.PanoramaRenderer is not available")
            elif src == "touchdown" and g.image_dir is None:
                missing.append(f"{g.name}: the Touchdown graph has no image folder")
            elif src not in ("city", "touchdown"):
                missing.append(f"{g.name}: unknown graph source {src!r}")
        if missing and observation == "images":
            raise InputError("observation='images' is not possible: " + "; ".join(missing))
        return not missing

    def map_markers(self) -> Any:
        """The task markers the agent may see on a map: none. As in CityNav, the agent
        knows only the destination's name; a map with the goal marked would give the
        task away.
        """
        from urban_gym.render import MapMarkers

        return MapMarkers()

    def render(self) -> np.ndarray | None:
        """The frame a person watches (``rgb_array`` mode), else None."""
        if self.render_mode != "rgb_array":
            return None
        return self._frame()

    def close(self) -> None:
        """Drop the cached option views and renderers (rebuilt on demand)."""
        self._views.clear()
        self._renderers.clear()

    # ------------------------------------------------------------------ episode
    def _accept_task(self, task: TaskSpec) -> TaskSpec:
        most = int(self._graph_of(task).out_degree.max())
        if most > self.max_degree:
            raise TaskError(
                f"task {task.id!r}: its graph has {most} options at a node, "
                f"more than this env's max_degree={self.max_degree}"
            )
        return task

    def _start_of(self, task: TaskSpec) -> _Start:
        """``task``'s start and goal on its graph (remembered per task: an episode's
        reset reads them again for every episode of the task).
        """
        got = self._starts.get(task.id)
        if got is not None and got.task is task:
            return got
        g = self._graph_of(task)
        if task.type == "origin_destination":
            goal = tuple(sorted(g.index[n] for n in task.goal["nodes"]))
            route: tuple[int, ...] | None = None
        else:
            route = tuple(g.index[n] for n in task.goal["route"])
            goal = (route[-1],)
        got = self._starts[task.id] = _Start(
            task=task,
            graph=g,
            key=self._key_of(task),
            node=g.index[task.start["node"]],
            heading=float(task.start.get("heading", 0.0)) % 360.0,
            route=route,
            goal=goal,
            goal_nodes=frozenset(goal),
        )
        return got

    def _start_episode(self, task: TaskSpec) -> None:
        start = self._start_of(task)
        goal = start.goal
        self.graph = start.graph
        self._graph_key = start.key
        self._node_cache = self._node_caches.setdefault(start.key, {})
        self.node = start.node
        self.heading = start.heading
        self.route: list[int] | None = None if start.route is None else list(start.route)
        self.goal_nodes = start.goal_nodes
        self.goal_distances, self.goal_hops, self._goal_d = self._distances(task, goal)
        self.link_travel = self.travel == "link" or (
            self.travel == "auto" and task.type == "instruction"
        )
        self.shortest_m = self._goal_d[self.node]
        self.distance_m = 0.0
        self.decisions = 0
        self.transitions = 0
        self.trajectory = [self.node]
        self._before: list[float] = []
        self._after: list[float] = []
        self._reason: str | None = None
        self.options = self._options_at(self.node)

    def _begin_step(self) -> None:
        self._reason = None
        self._step_before = self._goal_d[self.node]

    def _apply(self, action: dict[str, Any]) -> None:
        if action["action"] == "stop":
            if self.task.type != "instruction":
                raise InvalidAction(STOP_UNAVAILABLE)
            self._reason = "arrived" if self._instruction_success() else "terminated_by_agent"
            return
        option = int(action["option"])
        if option >= len(self.options):
            raise InvalidAction(missing_option(option, len(self.options)))
        before = self._step_before
        self._travel(self.options[option])
        self.decisions += 1
        now = self._goal_d[self.node]
        self._before.append(before)
        # a change under 1 mm is float noise (positions from lat/lon), not progress
        self._after.append(before if abs(now - before) <= 1e-3 else now)
        if self.task.type == "origin_destination" and self.node in self.goal_nodes:
            self._reason = "arrived"
        self.options = self._options_at(self.node)

    def _reward(self) -> float:
        return self.progress_reward * finite(self._step_before - self._goal_d[self.node])

    def _check_end(self, valid: bool) -> tuple[str | None, bool]:
        if valid and self._reason is not None:
            return self._reason, False
        if valid and self.transitions >= self.max_transitions:
            return "transition_limit", True
        if self.steps >= self.max_decisions:
            return "decision_limit", True
        return None, False

    def _end_reward(self, metrics: dict[str, Any], valid: bool) -> float:
        return self.success_reward if valid and is_success(metrics) else 0.0

    def _outcome(self) -> EpisodeOutcome:
        return EpisodeOutcome(
            node=self.node,
            trajectory=self.trajectory,
            distance_m=self.distance_m,
            shortest_m=self.shortest_m,
            remaining_m=self._goal_d[self.node],
            remaining_hops=-1 if self.goal_hops is None else int(self.goal_hops[self.node]),
            before=self._before,
            after=self._after,
            decisions=self.decisions,
            transitions=self.transitions,
            invalid_actions=self.invalid_actions,
            dtw_threshold=self.dtw_threshold,
            dtw_distance=self.dtw_distance,
            graph=self.graph,
        )

    def _pose(self) -> tuple[float, float, float]:
        x, y = self.graph._xy_list[self.node]
        return x, y, self.heading

    def _distance_to_goal(self) -> float:
        return self._goal_d[self.node]

    def _extra_info(self) -> dict[str, Any]:
        return {
            "task": self.task,
            "node": self.graph.ids[self.node],
            "option_bearings": list(self._option_bearings),
            "decisions": self.decisions,
            "transitions": self.transitions,
        }


@dataclass(frozen=True)
class _Start:
    """A task's start and goal on its graph (node indices; see ``_start_of``)."""

    task: TaskSpec
    graph: StreetGraph
    key: str
    node: int
    heading: float
    route: tuple[int, ...] | None
    goal: tuple[int, ...]
    goal_nodes: frozenset[int]


def _size(size: int | tuple[int, int]) -> tuple[int, int]:
    if isinstance(size, (int, np.integer)) and not isinstance(size, bool):
        w = h = int(size)
    elif isinstance(size, (tuple, list)) and len(size) == 2:
        w, h = (int(s) for s in size)
    else:
        raise InputError(f"image_size={size!r} must be an int or (width, height)")
    if w < 8 or h < 8 or w > 4096 or h > 4096:
        raise InputError(f"image_size={size!r} must be between 8 and 4096 pixels")
    return w, h


def _conditions(conditions: dict[str, Any] | None) -> Any:
    if conditions is None:
        return None
    if not isinstance(conditions, dict):
        raise InputError(f"conditions={conditions!r} must be a dict of Conditions fields")
    from urban_gym.render import Conditions

    try:
        return Conditions(**conditions)
    except TypeError as exc:
        raise InputError(f"conditions={conditions!r}: {exc}") from None


def _touchdown_tasks(
    suite: Any, split: str | None, images: str | os.PathLike | None
) -> list[TaskSpec]:
    """The tasks of ``suite="touchdown"``: Touchdown's installed ``split`` (default
    ``dev``) on the shipped graph, with the panoramas in ``images`` when given
    (``tasks=`` wins over both, as over ``suite``).
    """
    if suite != "touchdown":
        raise InputError(
            f"split={split!r} and images={images!r} choose Touchdown's routes: they need "
            f"suite='touchdown' (got suite={suite!r})"
        )
    from urban_gym.families.streetgraph.tasks.touchdown import touchdown_tasks

    return touchdown_tasks(split if split is not None else "dev", images)
