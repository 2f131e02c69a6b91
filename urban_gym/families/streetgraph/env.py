"""``UrbanGym/StreetGraph-v0``: long-range navigation on a Street-View intersection graph."""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from typing import Any

import numpy as np
from gymnasium import spaces

from urban_gym.caching import LRUCache
from urban_gym.envs.actions import ActionSet, ActionSpec, InvalidAction, Param
from urban_gym.envs.base import UrbanEnv, is_success
from urban_gym.envs.spaces import SharedMemoryText
from urban_gym.envs.text import clean_text, task_charset
from urban_gym.errors import InputError
from urban_gym.families.streetgraph.tasks import EpisodeOutcome, graph_spec, reached
from urban_gym.families.streetgraph.world import (
    Street,
    StreetGraph,
    StreetGraphError,
    graph_key,
    load_streetgraph,
)
from urban_gym.tasks.spec import TaskError, TaskSpec
from urban_gym.world.names import DEFAULT_NAMES

#: Camera of the option views: horizontal field of view and pitch (degrees, positive up).
VIEW_FOV = 90.0
VIEW_PITCH = 30.0
#: Side of one option's tile in the ``rgb_array`` frame (pixels).
FRAME_TILE = 160
#: Goals whose distance arrays an env keeps (LRU).
DISTANCE_CACHE = 128


#: Why ``stop`` is invalid on an origin-destination task.
STOP_UNAVAILABLE = "stop is not available here: the episode ends when you reach the destination"


def missing_option(option: int, count: int) -> str:
    """Why ``go`` with ``option`` is invalid at a node with ``count`` options."""
    return f"go: option {option} does not exist here; the options are 0..{count - 1}"


def make_action_set(max_degree: int) -> ActionSet:
    """The structured actions of StreetGraph (the language-model face) for up to
    ``max_degree`` options at a node.
    """
    return ActionSet(
        [
            ActionSpec(
                "go",
                "travel along the street of this option to the next intersection (to the "
                "next viewpoint on a task that moves one link at a time)",
                (
                    Param(
                        "option",
                        "int",
                        "the option number as listed",
                        low=0,
                        high=max_degree - 1,
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


class StreetGraphEnv(UrbanEnv):
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
            if src == "city" and not _renderer_available():
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

    def _start_episode(self, task: TaskSpec) -> None:
        g = self.graph = self._graph_of(task)
        self._graph_key = self._key_of(task)
        self._node_cache = self._node_caches.setdefault(self._graph_key, {})
        self.node = g.index[task.start["node"]]
        self.heading = float(task.start.get("heading", 0.0)) % 360.0
        if task.type == "origin_destination":
            goal = tuple(sorted(g.index[n] for n in task.goal["nodes"]))
            self.route: list[int] | None = None
        else:
            self.route = [g.index[n] for n in task.goal["route"]]
            goal = (self.route[-1],)
        self.goal_nodes = frozenset(goal)
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
        return self.progress_reward * _finite(self._step_before - self._goal_d[self.node])

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

    # ------------------------------------------------------------------ dynamics
    def _distances(
        self, t: TaskSpec, goal: tuple[int, ...]
    ) -> tuple[np.ndarray, np.ndarray | None, list[float]]:
        """Shortest distances (m) to the goal from every node, and for instruction tasks
        the hop counts, computed once per goal (LRU of :data:`DISTANCE_CACHE` goals); the
        distances also as a list of Python floats (what a step reads, without numpy's
        per-element cost).
        """

        def compute() -> tuple[np.ndarray, np.ndarray | None, list[float]]:
            g = self._graph_of(t)
            hops = g.hops_to(goal) if t.type == "instruction" else None
            d = g.distances_to(goal)
            return d, hops, d.tolist()

        return self._dist_cache.get_or_create((self._graph_key, goal), compute)

    def _options_at(self, node: int) -> list[Street]:
        """The streets leaving ``node`` in increasing bearing (cached per graph and node
        together with the padded bearing vector).
        """
        got = self._node_cache.get(node)
        if got is None:
            opts = ordered_streets(self.graph, node)
            bearings = option_bearings(opts, self.max_degree)
            bearings.setflags(write=False)
            got = (opts, bearings, [float(b) for b in bearings[: len(opts)]])
            self._node_cache[node] = got
        self._bearings = got[1]
        self._option_bearings = got[2]
        return got[0]

    def _travel(self, street: Street) -> None:
        xy = self.graph._xy_list
        nodes = street.nodes
        hops = len(nodes) - 1
        moved_from = self.transitions
        od = self.task.type == "origin_destination"
        if (
            not self.link_travel
            and moved_from + hops <= self.max_transitions
            and (not od or self.goal_nodes.isdisjoint(nodes))
        ):
            # the whole street: its length and node list are known
            self.distance_m += street.length
            self.transitions = moved_from + hops
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
                # geo.bearing of two floats, inline (the hottest line of a symbolic step)
                self.heading = math.degrees(math.atan2(x1 - x0, y1 - y0)) % 360.0
        self.node = last

    def _instruction_success(self) -> bool:
        return reached(self.task, self.node, self.graph)

    def _mask(self) -> np.ndarray:
        key = (len(self.options), self.task.type == "instruction")
        m = self._masks.get(key)
        if m is None:
            m = np.zeros(self.max_degree + 1, dtype=np.int8)
            m[: key[0]] = 1
            m[-1] = int(key[1])
            m.setflags(write=False)
            self._masks[key] = m
        return m.copy()

    def _observe(self) -> dict[str, Any]:
        heading = _ONE_FLOAT32.copy()  # a copy and a store: half a np.array([...]) call
        heading[0] = min(self.heading % 360.0, 359.999)
        obs: dict[str, Any] = {
            "bearings": self._bearings.copy(),
            "heading": heading,
            "action_mask": self._mask(),
            "instruction": self._instruction_text(),
        }
        if self.images:
            obs["views"] = self._option_views()
        return obs

    def _instruction_text(self) -> str:
        """The task's instruction in the observation's charset (cleaned once per task)."""
        task = self.task
        if self._clean_for is not task:
            self._clean_text = clean_text(task.instruction, self._charset)
            self._clean_for = task
        return self._clean_text

    # ------------------------------------------------------------------ goal modes
    no_view_reason = "observation='symbolic' renders no views"

    def _goal_point(self) -> tuple[float, float] | None:
        """The destination's position, or the panorama of the goal node (the last one of an
        instruction route).
        """
        task = self.task
        g = task.goal or {}
        if "position" in g:
            return float(g["position"][0]), float(g["position"][1])
        if "route" in g or "node" in g:
            node = g["route"][-1] if "route" in g else g["node"]
            graph = self._graph_of(task)
            x, y = graph.xy[graph.index[node]]
            return float(x), float(y)
        return None

    def _goal_landmarks(self, task: TaskSpec) -> np.ndarray:
        """The city's landmarks; for a graph of imported panoramas (no city data), its
        nodes spread over it.
        """
        g = self._graph_of(task)
        if g.meta.get("source") == "city":
            return super()._goal_landmarks(task)
        from urban_gym.envs.goals import landmarks_of

        xy = np.asarray(g.xy)
        x0, y0 = xy.min(axis=0)
        x1, y1 = xy.max(axis=0)
        key = f"streetgraph:{g.meta.get('source')}:{len(xy)}:{x0:.1f}:{y0:.1f}"
        return landmarks_of(key, xy, (x0, y0, x1, y1))

    def _view_shape(self) -> tuple[int, int] | None:
        return (self.image_wh[1], self.image_wh[0]) if self.images else None

    def _goal_view(self, task: TaskSpec, goal: tuple[float, float]) -> np.ndarray:
        """The view down the first street of the goal node nearest ``goal``."""
        g = self._graph_of(task)
        gl = task.goal
        names = gl.get("nodes") or [gl["route"][-1] if "route" in gl else gl["node"]]
        idx = [g.index[n] for n in names]
        d = np.hypot(*(g.xy[idx] - np.asarray(goal)).T)
        node = idx[int(np.argmin(d))]
        streets = g.streets_from(node)
        heading = float(streets[0].heading) if streets else 0.0
        return np.asarray(self._render_views(g, node, [heading])[0], dtype=np.uint8)

    def _goal_visible(self) -> bool:
        """The goal place's sign in one of the option views (observations with images of a
        graph built from a city; False otherwise): :mod:`urban_gym.envs.visibility`.
        """
        g = self.graph
        if not self.images or not self.options or g.meta.get("source") != "city":
            return False
        from urban_gym.envs.visibility import id_view_size, in_view, tracker_for_spec

        tr = tracker_for_spec(self, str(g.meta["city"]))
        targets = tr.targets(self.task)
        if targets.size == 0:
            return False
        x, y = g.xy[self.node]

        def look() -> bool:  # the option views of a node never change
            pano = tr.panoramas.panorama(float(x), float(y))
            size = id_view_size(self.image_wh)
            for s in self.options:
                ids = tr.panoramas.view(x, y, s.heading, VIEW_PITCH, VIEW_FOV, size, pano=pano)
                if in_view(ids, targets):
                    return True
            return False

        return tr.remember((self.task.id, self._graph_key, self.node), look)

    # ------------------------------------------------------------------ images
    def _option_views(self) -> np.ndarray:
        d = self.max_degree
        w, h = self.image_wh
        out = np.zeros((d, h, w, 3), dtype=np.uint8)
        if not self.options:
            return out
        key = (self._graph_key, self.node)
        views = self._views.get_or_create(
            key,
            lambda: self._render_views(self.graph, self.node, [s.heading for s in self.options]),
        )
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
            r = _panorama_renderer_class()(
                self.load_world(key), width=self.pano_width, height=self.pano_width // 2
            )
            self._renderers[key] = r
        x, y = g.xy[node]
        return r.render(float(x), float(y), conditions=self.conditions).rgb, 0.0

    def _frame(self) -> np.ndarray:
        """The ``rgb_array`` frame, one size for the whole env (a video needs that):
        ``FRAME_TILE * max_degree`` pixels wide. The options shown here share that width
        equally, each tile holding its view (covering the tile, its middle kept) or, without
        images, a dial of its bearing in its middle, labelled with its index and bearing;
        under them the instruction and the decision counts.
        """
        from urban_gym.render import frame as F

        bg = (32, 32, 36)
        w = FRAME_TILE * max(1, self.max_degree)
        views = self._option_views() if self.images and self.options else None
        k = len(self.options)
        edges = [w * i // max(1, k) for i in range(k + 1)]
        tiles = [
            F.label(
                F.tile(views[i], FRAME_TILE, background=bg, width=edges[i + 1] - edges[i])
                if views is not None
                else F.centre(
                    F.bearing_dial(FRAME_TILE, s.heading, background=bg),
                    edges[i + 1] - edges[i],
                    background=bg,
                ),
                f"{i}: {s.heading:.0f}°",
                (6, FRAME_TILE - 20),
            )
            for i, s in enumerate(self.options)
        ] or [F.text_panel("no way on from here", w, FRAME_TILE, background=bg)]
        text = F.text_panel(
            self.task.instruction, w, 48, colour=(230, 230, 230), background=bg, margin=(6, 8)
        )
        status = F.text_panel(
            f"decisions {self.decisions} | transitions {self.transitions}",
            w,
            22,
            colour=(160, 160, 170),
            background=bg,
            margin=(6, 0),
        )
        return F.vstack([F.hstack(tiles), text, status])


def distance_cache() -> LRUCache[
    tuple[str, tuple[int, ...]], tuple[np.ndarray, np.ndarray | None, list[float]]
]:
    """A new cache of goal distances (``(graph key, goal nodes)`` -> distances, hops, the
    distances as floats), :data:`DISTANCE_CACHE` goals at most.
    """
    return LRUCache(max_items=DISTANCE_CACHE, size=_distances_nbytes)


def ordered_streets(graph: StreetGraph, node: int) -> list[Street]:
    """The streets leaving ``node``: the options of the node, in increasing bearing (ties
    by the first hop's node).
    """
    return sorted(graph.streets_from(node), key=lambda s: (round(s.heading, 6), s.nodes[1]))


def option_bearings(options: Sequence[Street], max_degree: int) -> np.ndarray:
    """The observation's ``bearings`` of ``options``: each street's compass bearing
    (degrees in [0, 359.999], float32), zeros up to ``max_degree``.
    """
    bearings = np.zeros(max_degree, dtype=np.float32)
    for i, st in enumerate(options):
        bearings[i] = min(np.float32(st.heading % 360.0), np.float32(359.999))
    return bearings


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


_ONE_FLOAT32 = np.zeros(1, np.float32)


def _distances_nbytes(value: tuple[np.ndarray, np.ndarray | None, list[float]]) -> int:
    """Bytes of a cached ``(distances, hops, distances as floats)`` entry: the arrays and
    8 bytes a float, without walking the list (the cache's default size function would
    visit every float: milliseconds a new goal on the Touchdown graph).
    """
    d, hops, floats = value
    return d.nbytes + (hops.nbytes if hops is not None else 0) + 8 * len(floats)


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
