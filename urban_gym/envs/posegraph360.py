"""``UrbanGym/PoseGraph360-v0``: a city as 360° video trajectories joined at junctions."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from functools import lru_cache
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
from urban_gym.render import perspective
from urban_gym.tasks import posegraph360 as T
from urban_gym.tasks.spec import TaskError, TaskSpec
from urban_gym.tasks.suite import load_suite
from urban_gym.world.grid import GridOverlay
from urban_gym.world.posegraph import (
    DEFAULT_SPACING_M,
    PoseGraph,
    RenderedFrames,
    State,
    load_posegraph,
)

#: Number of answer heads (``ANSWER_0`` .. ``ANSWER_24``): the most options of any task.
N_ANSWER_HEADS = 25
#: Max length of the instruction text.
MAX_INSTRUCTION = 2048
BRANCH_ACTIONS = ("LEFT", "UP", "RIGHT")
_SIZES = ("SMALL", "MEDIUM", "LARGE")


def default_suite_path(city: str) -> Path:
    """Where the committed default suite of a city lives (see
    :func:`urban_gym.tasks.posegraph360.suite_path`)."""
    return T.suite_path(city)


def make_action_set() -> ActionSet:
    """The structured actions of PoseGraph360 (the language-model face)."""
    size = Param(
        "size",
        "enum",
        "how far",
        choices=_SIZES,
        required=False,
        default=None,
        value_synonyms={
            "S": "SMALL",
            "M": "MEDIUM",
            "L": "LARGE",
            "SHORT": "SMALL",
            "LONG": "LARGE",
            "BIG": "LARGE",
        },
        key_synonyms=("amount", "magnitude", "distance", "angle"),
    )
    wsize = Param(
        "size",
        "enum",
        "SMALL 1 frame, MEDIUM 3 frames, LARGE 5 frames forward",
        choices=_SIZES,
        required=False,
        default="SMALL",
        value_synonyms=size.value_synonyms,
        key_synonyms=size.key_synonyms,
    )
    rsize = Param(
        "size",
        "enum",
        "SMALL 30°, MEDIUM 60°, LARGE 90° (24° when omitted)",
        choices=_SIZES,
        required=False,
        default=None,
        value_synonyms=size.value_synonyms,
        key_synonyms=size.key_synonyms,
    )
    text = Param(
        "text",
        "str",
        "your answer (for navigation tasks: anything, e.g. 'arrived')",
        key_synonyms=("answer", "value", "content", "response", "result"),
    )
    return ActionSet(
        [
            ActionSpec(
                "W",
                "move forward along the street (video plays forward)",
                (wsize,),
                ("forward", "move_forward", "go_forward", "walk"),
            ),
            ActionSpec(
                "A",
                "rotate the camera left",
                (rsize,),
                ("look_left", "rotate_left", "turn_camera_left", "pan_left"),
            ),
            ActionSpec(
                "D",
                "rotate the camera right",
                (rsize,),
                ("look_right", "rotate_right", "turn_camera_right", "pan_right"),
            ),
            ActionSpec("Q", "tilt the camera up (15°)", (), ("look_up", "tilt_up")),
            ActionSpec("E", "tilt the camera down (15°)", (), ("look_down", "tilt_down")),
            ActionSpec(
                "S",
                "reset the view to the direction of travel",
                (),
                ("reset_view", "look_forward", "recenter"),
            ),
            ActionSpec(
                "LEFT",
                "at a junction: take the branch marked LEFT",
                (),
                ("branch_left", "turn_left", "go_left"),
            ),
            ActionSpec(
                "UP",
                "at a junction: take the branch marked UP (ahead)",
                (),
                ("branch_up", "straight", "go_straight", "ahead", "branch_straight"),
            ),
            ActionSpec(
                "RIGHT",
                "at a junction: take the branch marked RIGHT",
                (),
                ("branch_right", "turn_right", "go_right"),
            ),
            ActionSpec(
                "ANSWER",
                "end the episode with your answer",
                (text,),
                ("submit", "final_answer", "stop", "done"),
            ),
        ]
    )


#: The fixed part of the discrete action table (index -> structured action).
MOVE_TABLE: tuple[dict[str, Any], ...] = (
    {"action": "W", "size": "SMALL"},
    {"action": "W", "size": "MEDIUM"},
    {"action": "W", "size": "LARGE"},
    {"action": "A", "size": None},
    {"action": "A", "size": "SMALL"},
    {"action": "A", "size": "MEDIUM"},
    {"action": "A", "size": "LARGE"},
    {"action": "D", "size": None},
    {"action": "D", "size": "SMALL"},
    {"action": "D", "size": "MEDIUM"},
    {"action": "D", "size": "LARGE"},
    {"action": "Q"},
    {"action": "E"},
    {"action": "S"},
    {"action": "LEFT"},
    {"action": "UP"},
    {"action": "RIGHT"},
)
ANSWER_BASE = len(MOVE_TABLE)


class PoseGraph360Env(gym.Env):
    """Walk a city recorded as 360° video: move along streets, look around, choose branches
    at junctions, and answer.

    ## Description

    The 360CityArena setting on a :class:`~urban_gym.world.posegraph.PoseGraph`: every
    street is a trajectory of panorama frames (one per ``spacing`` = 3 m, one trajectory
    per direction), joined at junctions. The agent sees a perspective crop of the current
    frame; moving forward plays the video forward, the camera turns freely, and at a
    junction (the first or last frame of a trajectory) the branches it may take are drawn
    into the view as red arrows labelled ``LEFT``/``UP``/``RIGHT``. Seven task types
    (:mod:`urban_gym.tasks.posegraph360`): localization, landmark search by name and by
    image, map navigation, vision-language navigation, object count and relational
    spatial reasoning. As in the benchmark, an episode scores only if the agent ends it
    with ``ANSWER`` (navigation tasks: ANSWER where you think the goal is).

    ## Action Space

    ``Discrete(42)``; ``env.unwrapped.action_table`` maps an index to the structured action:

    ====== ===========================================================================
    0-2    ``W`` SMALL / MEDIUM / LARGE: forward 1 / 3 / 5 frames (3 / 9 / 15 m at 3 m
           spacing; the benchmark plays 1/3/5 s of video)
    3-6    ``A`` (24°), SMALL (30°), MEDIUM (60°), LARGE (90°): camera yaw left
    7-10   ``D`` (24°), SMALL, MEDIUM, LARGE: camera yaw right
    11, 12 ``Q`` / ``E``: tilt up / down 15° (pitch stays within +-60°)
    13     ``S``: camera back to the direction of travel (yaw offset 0, pitch 0)
    14-16  ``LEFT`` / ``UP`` / ``RIGHT``: take that branch (only at a junction, only where it
           exists; see :meth:`PoseGraph.branch_choices` -- sectors relative to the camera)
    17-41  ``ANSWER_k``: answer option ``k`` of the task (grid cell, count, store name);
           navigation tasks: ``ANSWER_0`` = "arrived"
    ====== ===========================================================================

    W moves never pass the end of a trajectory; at its end W does not move (choose a
    branch). After a branch the camera looks along the new street (yaw offset 0).
    Structured actions (``{"action": "W", "size": "MEDIUM"}``, ``{"action": "ANSWER",
    "text": "x:2 y:3"}``) go through ``env.unwrapped.action_set``; an unknown action or
    size, a branch where none exists, ``ANSWER`` without text, or a masked index is an
    invalid-action step (state unchanged, reward ``INVALID_ACTION_REWARD``, message in
    ``info["invalid_action"]``).

    ## Observation Space

    A ``Dict``: ``view`` ``Box(0, 255, (view_size, view_size, 3), uint8)`` -- the
    perspective view (``fov`` degrees horizontal) with branch arrows at junctions;
    ``reference`` ``Box(0, 255, (reference_size, reference_size, 3), uint8)`` -- the task's
    reference image (grid map, route map with a blue start and red goal, or a photo of the
    landmark's facade; zeros when the task has none); ``map`` (only with
    ``location_prior=True``) -- a north-up map of the whole graph with the agent's marker;
    ``instruction`` ``Text`` -- the task text; ``action_mask`` ``Box(0, 1, (42,), int8)``.

    ## Starting State

    The task's start frame and camera (``yaw`` offset from the travel direction,
    ``pitch``). Without ``options`` the task is drawn from the suite with ``np_random``;
    ``reset(options={"task_id": ...})``, ``{"task_index": i}`` or ``{"task": TaskSpec}``
    picks one.

    ## Rewards

    At the end of an answered episode: the task's score (success 1/0; MRA for counts).
    ``INVALID_ACTION_REWARD`` (-0.01) for an invalid action; 0 otherwise. With
    ``reward_shaping=True`` a navigation step also earns (route distance before - after)
    / 100.

    ## Episode End

    Terminated: ``ANSWER`` (``answered``); ``stagnation`` (the same action
    ``stagnation_limit`` = 20 times in a row without a change of position);
    ``away_from_goal`` (navigation tasks: ``away_limit`` = 5 consecutive moves that
    increase the distance to the goal along the streets, either way -- so walking the
    wrong way down a street counts; :meth:`GoalDistances.geodesic`). Truncated:
    ``step_limit`` (50 steps).
    A task's ``limits`` (``step_limit``, ``stagnation_limit``, ``away_limit``) override
    the constructor's.

    ## Information

    Every step: ``task`` (the :class:`TaskSpec`), ``state`` (``trajectory``, ``frame``),
    ``position`` (x, y m), ``heading`` (travel bearing), ``yaw`` (camera bearing),
    ``yaw_offset``, ``pitch``, ``junction`` (id, -1 when not at a junction), ``branches``
    (action -> trajectory), ``distance_to_goal`` (metres of the shortest route from here,
    navigation; inf when the goal cannot be reached),
    ``geodesic_to_goal`` (metres along the streets either way), ``steps``,
    ``action_valid``, ``invalid_actions`` and ``message`` (e.g. W at the end of a street).
    At the end: ``termination``, ``metrics`` (:func:`urban_gym.tasks.posegraph360.evaluate`),
    ``is_success``.

    ## Arguments

    ``city`` (load_city spec, default ``"helsinki"``); ``suite`` (``"default"`` = the
    committed suite of the city, or a JSONL path; a procedural city without one gets 3
    generated tasks per type); ``tasks`` (TaskSpecs or dicts, instead of a suite);
    ``task_types``/``difficulties`` (filters); ``view_size`` (512; int or (w, h)),
    ``fov`` (90); ``reference_size`` (default: the view's height); ``location_prior``
    (False) and ``map_size``; ``step_limit`` (50), ``stagnation_limit`` (20),
    ``away_limit`` (5); ``forward_frames`` ((1, 3, 5)); ``spacing`` (3 m);
    ``posegraph`` (a ready :class:`PoseGraph` with a frame source), or ``capture`` +
    ``poses`` (a folder of equirect images or a 360° video with its pose CSV, imported
    with junction detection); ``pano_width`` (2048: rendered panorama width),
    ``time_of_day``, ``weather``, ``cache_mb`` (512: rendered-frame LRU);
    ``draw_branches`` (True); ``reward_shaping`` (False); ``answer_judge`` (the fuzzy
    name judge ``(prediction, candidate names) -> bool`` of relational answers; default:
    normalised names plus OSM aliases -- an LLM judge can be plugged in); ``render_mode``
    (``"rgb_array"``).

    ## Version History

    * v0: initial version.
    """

    metadata = {"render_modes": ["rgb_array"], "render_fps": 4}

    def __init__(
        self,
        city: str = "helsinki",
        suite: str | None = "default",
        tasks: Sequence[TaskSpec | dict] | None = None,
        task_types: Sequence[str] | None = None,
        difficulties: Sequence[str] | None = None,
        view_size: int | Sequence[int] = 512,
        fov: float = 90.0,
        reference_size: int | None = None,
        location_prior: bool = False,
        map_size: int | None = None,
        step_limit: int = 50,
        stagnation_limit: int = 20,
        away_limit: int = 5,
        forward_frames: Sequence[int] = T.DEFAULT_FORWARD_FRAMES,
        spacing: float = DEFAULT_SPACING_M,
        posegraph: PoseGraph | None = None,
        capture: str | None = None,
        poses: str | None = None,
        pano_width: int = 2048,
        time_of_day: str = "day",
        weather: str = "clear",
        cache_mb: float = 512.0,
        draw_branches: bool = True,
        reward_shaping: bool = False,
        answer_judge: Callable[[str, Sequence[str]], bool] | None = None,
        render_mode: str | None = None,
    ) -> None:
        self._init_kwargs = {k: v for k, v in locals().items() if k not in ("self", "__class__")}
        from urban_gym.world.loader import load_city

        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise UrbanGymError(
                f"render_mode={render_mode!r} is not one of {self.metadata['render_modes']}"
            )
        self.render_mode = render_mode
        self.city_spec = str(city)
        self.city = load_city(city)
        if isinstance(view_size, (int, np.integer)):
            self.view_wh = (int(view_size), int(view_size))
        elif isinstance(view_size, Sequence) and len(view_size) == 2:
            self.view_wh = (int(view_size[0]), int(view_size[1]))
        else:
            raise UrbanGymError(f"view_size={view_size!r} must be an int or (w, h)")
        if min(self.view_wh) < 8:
            raise UrbanGymError(f"view_size={view_size!r} must be at least 8 pixels")
        if not 10.0 <= float(fov) <= 170.0:
            raise UrbanGymError(f"fov={fov!r} must be in [10, 170] degrees")
        self.fov = float(fov)
        self.ref_size = int(reference_size or self.view_wh[1])
        self.location_prior = bool(location_prior)
        self.map_size = int(map_size or self.view_wh[1])
        for name, v in (
            ("step_limit", step_limit),
            ("stagnation_limit", stagnation_limit),
            ("away_limit", away_limit),
        ):
            if not isinstance(v, (int, np.integer)) or v < 1:
                raise UrbanGymError(f"{name}={v!r} must be a positive integer")
        self.limits = {
            "step_limit": int(step_limit),
            "stagnation_limit": int(stagnation_limit),
            "away_limit": int(away_limit),
        }
        ff = tuple(int(v) for v in forward_frames)
        if len(ff) != 3 or min(ff) < 1:
            raise UrbanGymError(f"forward_frames={forward_frames!r} must be 3 positive ints")
        self.forward_frames = ff
        self.pitch_step, self.pitch_limit = 15.0, 60.0
        self.draw_branches = bool(draw_branches)
        self.reward_shaping = bool(reward_shaping)
        self.answer_judge = answer_judge
        self.spacing = float(spacing)

        # world: a given graph, an imported capture, or the city's own graph
        if posegraph is not None:
            self.graph = posegraph
        elif capture is not None:
            self.graph = PoseGraph.from_capture(
                capture, poses, geo=self.city.frame, cache_mb=cache_mb
            )
        else:
            self.graph = load_posegraph(self.city_spec, spacing=self.spacing)
        if self.graph.source is None:
            self.graph = self.graph.with_source(
                _rendered_source(self.city, int(pano_width), time_of_day, weather, cache_mb)
            )
        self.tasks = self._load_tasks(suite, tasks, task_types, difficulties)
        self._task_index = {t.id: i for i, t in enumerate(self.tasks)}
        self._map_renderer: Any = None
        self._table_cache: tuple[Any, Any] = (None, None)
        self._mask_cache: tuple[Any, Any] = (None, None)
        self._branch_cache: tuple[Any, Any] = (None, None)
        self._text_cache: tuple[Any, str] = (None, "")
        self._prior_cache: tuple[Any, Any] = (None, None)

        self.action_set = make_action_set()
        self.action_space = spaces.Discrete(ANSWER_BASE + N_ANSWER_HEADS)
        w, h = self.view_wh
        obs: dict[str, spaces.Space] = {
            "view": spaces.Box(0, 255, (h, w, 3), np.uint8),
            "reference": spaces.Box(0, 255, (self.ref_size, self.ref_size, 3), np.uint8),
        }
        if self.location_prior:
            obs["map"] = spaces.Box(0, 255, (self.map_size, self.map_size, 3), np.uint8)
        self._charset = task_charset(self.tasks)
        obs["instruction"] = SharedMemoryText(MAX_INSTRUCTION, min_length=0, charset=self._charset)
        obs["action_mask"] = spaces.Box(0, 1, (self.action_space.n,), np.int8)
        self.observation_space = spaces.Dict(obs)

        self.task: TaskSpec = self.tasks[0]
        self._reset_episode_state()
        self.done = True  # no episode until reset()

    # ------------------------------------------------------------------ setup
    def _load_tasks(self, suite, tasks, task_types, difficulties) -> list[TaskSpec]:
        if tasks is not None:
            out = [t if isinstance(t, TaskSpec) else TaskSpec.from_dict(t) for t in tasks]
        elif suite == "default":
            p = default_suite_path(self.city_spec)
            if p.exists():
                out = load_suite(p)
            elif self.city_spec.startswith("procedural:"):
                gen = T.PoseGraphTaskGenerator(
                    self.city_spec,
                    seed=0,
                    spacing=self.spacing,
                    step_limit=self.limits["step_limit"],
                    forward_frames=self.forward_frames,
                )
                out = gen.suite(per_type=3)
            else:
                raise TaskError(
                    f"no default PoseGraph360 suite for city {self.city_spec!r} (looked for "
                    f"{p}); generate one with `urban-gym generate-suite posegraph360 --city ...`"
                )
        elif suite is None:
            raise TaskError("PoseGraph360Env needs a suite or a list of tasks")
        else:
            out = load_suite(suite)
        if task_types is not None:
            bad = sorted(set(task_types) - set(T.TASK_TYPES))
            if bad:
                raise TaskError(f"task_types {bad} are not among {', '.join(T.TASK_TYPES)}")
            out = [t for t in out if t.type in set(task_types)]
        if difficulties is not None:
            out = [t for t in out if t.difficulty in set(difficulties)]
        out = [T.check_task(t) for t in out]  # after the filters: a filtered-out task never fails
        if not out:
            raise TaskError(
                f"no PoseGraph360 tasks left (task_types={task_types}, difficulties={difficulties})"
            )
        return out

    def _reset_episode_state(self) -> None:
        self.state = State(0, 0)
        self.yaw = 0.0
        self.pitch = 0.0
        self.steps = 0
        self.invalid = 0
        self.path: list[tuple[float, float]] = []
        self.answer: str | None = None
        self.done = False
        self._same_key: Any = None
        self._same_count = 0
        self._away = 0
        self._field: Any = None
        self._dist = math.nan
        self._geo = math.nan
        self._departures: list[tuple[float, float]] = []
        self._reference = np.zeros((self.ref_size, self.ref_size, 3), np.uint8)
        self._ref_path: list[tuple[float, float]] = []
        self._shortest = 0.0
        self._message = ""
        self._task_limits = dict(self.limits)

    # ------------------------------------------------------------------ gym API
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
        options = dict(options or {})
        if "task" in options:
            t = options["task"]
            self.task = T.check_task(t if isinstance(t, TaskSpec) else TaskSpec.from_dict(t))
        elif "task_id" in options:
            tid = options["task_id"]
            if tid not in self._task_index:
                raise TaskError(f"task_id={tid!r} is not in this environment's tasks")
            self.task = self.tasks[self._task_index[tid]]
        elif "index" in options or "task_index" in options:
            i = int(options.get("index", options.get("task_index")))
            if not 0 <= i < len(self.tasks):
                raise TaskError(f"index={i} is outside [0, {len(self.tasks) - 1}]")
            self.task = self.tasks[i]
        else:
            self.task = self.tasks[int(self.np_random.integers(len(self.tasks)))]
        self._reset_episode_state()
        task = self.task
        for k in self._task_limits:
            if k in task.limits:
                self._task_limits[k] = int(task.limits[k])
        self.state = T.start_state(self.graph, task)
        self.yaw = float(task.start.get("yaw", 0.0))
        self.pitch = float(
            np.clip(float(task.start.get("pitch", 0.0)), -self.pitch_limit, self.pitch_limit)
        )
        self.path = [self.graph.position(self.state)]
        if task.type in T.NAVIGATION_TYPES:
            goals = T.goal_states(self.graph, task)
            self._field = self.graph.distance_field(goals)
            self._dist = self._field.distance(self.state)
            self._geo = self._field.geodesic(self.state)
            if math.isfinite(self._dist):
                from urban_gym.world.posegraph import route_points

                self._ref_path = route_points(self.graph, self._field.route(self.state))
            self._shortest = float(self._dist)
        self._reference = self._render_reference(task)
        return self._observation(), self._info()

    def step(self, action: Any):
        if self.done:
            raise gym.error.ResetNeeded(
                "PoseGraph360Env.step() called before reset() or after the episode ended; "
                "call reset()"
            )
        before_pos = self.graph.position(self.state)
        parsed, key, error = self._parse(action)
        self.steps += 1
        reward = 0.0
        self._message = ""
        valid = error is None
        if valid:
            try:
                reward += self._apply(parsed)
            except InvalidAction as exc:
                valid, error = False, str(exc)
        if not valid:
            self.invalid += 1
            reward += INVALID_ACTION_REWARD
        pos = self.graph.position(self.state)
        moved = pos != before_pos
        if moved:
            self.path.append(pos)
        # stagnation: the same action again without a change of position
        if key == self._same_key and not moved:
            self._same_count += 1
        else:
            self._same_key, self._same_count = key, 1
        reason = None
        if self.answer is not None:
            reason = "answered"
        elif self._away >= self._task_limits["away_limit"]:
            reason = "away_from_goal"
        elif self._same_count >= self._task_limits["stagnation_limit"]:
            reason = "stagnation"
        elif self.steps >= self._task_limits["step_limit"]:
            reason = "step_limit"
        info = self._info()
        if not valid:
            info.update(invalid_step_info(str(error), self.invalid))
        terminated = reason is not None and reason != "step_limit"
        truncated = reason == "step_limit"
        if reason is not None:
            self.done = True
            m = self._metrics()
            info["termination"] = check_reason(reason)
            info["metrics"] = m
            info["is_success"] = bool(m.get("success", 0.0) >= 1.0)
            reward += float(m["score"]) if self.answer is not None else 0.0
        return self._observation(), float(reward), terminated, truncated, info

    def render(self) -> np.ndarray | None:
        if self.render_mode != "rgb_array":
            return None
        return self._composite()

    def close(self) -> None:
        if self.graph.source is not None:
            self.graph.source.close()

    # ------------------------------------------------------------------ actions
    @property
    def action_table(self) -> list[dict[str, Any]]:
        """Index -> structured action for the current task (ANSWER heads carry the task's
        options; a navigation task's ANSWER_0 is "arrived")."""
        return [dict(a) for a in self._table()]

    def _table(self) -> tuple[dict[str, Any], ...]:
        if self._table_cache[0] != self.task.id:
            opts = self._answer_options()
            answers = tuple(
                {"action": "ANSWER", "text": opts[k] if k < len(opts) else None}
                for k in range(N_ANSWER_HEADS)
            )
            self._table_cache = (self.task.id, MOVE_TABLE + answers)
        return self._table_cache[1]

    def _answer_options(self) -> list[str]:
        if self.task.type in T.NAVIGATION_TYPES:
            return ["arrived"]
        return [str(o) for o in self.task.options[:N_ANSWER_HEADS]]

    def action_index(self, action: Any) -> int | None:
        """The table index of a structured action (None when no index matches, e.g. an
        ANSWER text that is not one of the options)."""
        a = self.action_set.normalise(action)
        if a["action"] == "ANSWER":
            if self.task.type in T.NAVIGATION_TYPES:
                return ANSWER_BASE
            from urban_gym.tasks.metrics import normalize_text

            for k, o in enumerate(self._answer_options()):
                if normalize_text(o) == normalize_text(a["text"]):
                    return ANSWER_BASE + k
            return None
        for i, m in enumerate(MOVE_TABLE):
            if all(a.get(k) == v for k, v in m.items()):
                return i
        return None

    def action_masks(self) -> np.ndarray:
        """The action mask as bool (sb3-contrib's MaskablePPO reads this method)."""
        return self._mask().astype(bool)

    def _mask(self) -> np.ndarray:
        """The action mask (a fresh array)."""
        return self._mask_now().copy()

    def _mask_now(self) -> np.ndarray:
        """The action mask, cached per (task, state, camera); do not modify."""
        key = (self.task.id, self.state, self.yaw, self.pitch)
        if self._mask_cache[0] == key:
            return self._mask_cache[1]
        m = np.zeros(self.action_space.n, np.int8)
        m[:ANSWER_BASE] = 1
        if self.pitch + self.pitch_step > self.pitch_limit + 1e-9:
            m[11] = 0
        if self.pitch - self.pitch_step < -self.pitch_limit - 1e-9:
            m[12] = 0
        choices = self._branch_choices()
        for i, name in enumerate(BRANCH_ACTIONS):
            m[14 + i] = 1 if name in choices else 0
        m[ANSWER_BASE : ANSWER_BASE + len(self._answer_options())] = 1
        self._mask_cache = (key, m)
        return m

    def _parse(self, action: Any) -> tuple[dict[str, Any] | None, Any, str | None]:
        """(structured action, stagnation key, error message)."""
        i = table_index(action)
        if i is not None:
            if not 0 <= i < self.action_space.n:
                return (
                    None,
                    ("index", describe_value(i)),
                    f"action index {describe_value(i)} is outside [0, {self.action_space.n - 1}]",
                )
            if not self._mask_now()[i]:
                return None, ("index", i), self._masked_message(i)
            return dict(self._table()[i]), ("index", i), None
        try:
            a = self.action_set.normalise(action)
        except InvalidAction as exc:
            return None, ("raw", describe_value(action, 200)), str(exc)
        return a, ("struct", tuple(sorted((k, str(v)) for k, v in a.items()))), None

    def _masked_message(self, i: int) -> str:
        if 14 <= i < 17:
            return self._branch_error(BRANCH_ACTIONS[i - 14])
        if i == 11:
            return f"Q: the camera pitch is already {self.pitch:+.0f}° (limit +{self.pitch_limit:.0f}°)"
        if i == 12:
            return f"E: the camera pitch is already {self.pitch:+.0f}° (limit -{self.pitch_limit:.0f}°)"
        n = len(self._answer_options())
        return f"ANSWER_{i - ANSWER_BASE}: this task has only {n} answer option(s)"

    def _branch_choices(self) -> dict[str, int]:
        j = self.graph.junction_at(self.state)
        if j is None:
            return {}
        key = (self.state, self.yaw)
        if self._branch_cache[0] != key:
            self._branch_cache = (key, self.graph.branch_choices(j, self.camera_bearing))
        return dict(self._branch_cache[1])

    def _branch_error(self, name: str) -> str:
        j = self.graph.junction_at(self.state)
        if j is None:
            return f"{name}: you are not at a junction; branches can only be taken at junctions"
        avail = ", ".join(self._branch_choices()) or "none in view (turn the camera)"
        return f"{name}: there is no branch {name} here; available: {avail}"

    def _apply(self, a: dict[str, Any]) -> float:
        """Carry out a valid structured action; returns the shaping reward."""
        name = a["action"]
        g = self.graph
        if name == "W":
            n = self.forward_frames[_SIZES.index(a.get("size") or "SMALL")]
            t = g.trajectories[self.state.trajectory]
            if self.state.frame >= t.last:
                self._message = (
                    "W: you are at the end of this street; choose a branch (LEFT/UP/RIGHT), "
                    "look around for the red arrows"
                )
                return 0.0
            old = self.state
            self.state = State(t.id, min(t.last, self.state.frame + n))
            return self._after_move(old)
        if name in ("A", "D"):
            deg = T.ROTATIONS[a.get("size")]
            self.yaw = (self.yaw + (deg if name == "D" else -deg) + 180.0) % 360.0 - 180.0
            return 0.0
        if name in ("Q", "E"):
            new = self.pitch + (self.pitch_step if name == "Q" else -self.pitch_step)
            if abs(new) > self.pitch_limit + 1e-9:
                raise InvalidAction(self._masked_message(11 if name == "Q" else 12))
            self.pitch = new
            return 0.0
        if name == "S":
            self.yaw, self.pitch = 0.0, 0.0
            return 0.0
        if name in BRANCH_ACTIONS:
            choices = self._branch_choices()
            if name not in choices:
                raise InvalidAction(self._branch_error(name))
            self.state = State(choices[name], 0)
            self.yaw = 0.0
            return 0.0
        if name == "ANSWER":
            text = a.get("text")
            if text is None or not str(text).strip():
                raise InvalidAction("ANSWER: text must not be empty")
            self.answer = str(text)
            return 0.0
        raise InvalidAction(f"unknown action {name!r}")  # pragma: no cover - set checks names

    def _after_move(self, old: State) -> float:
        if self._field is None:
            return 0.0
        before = self._dist
        self._dist = self._field.distance(self.state)
        if old.frame == 0:
            self._departures.append((before, self._dist))
        geo = self._field.geodesic(self.state)
        self._away = self._away + 1 if geo > self._geo + 1e-6 else 0
        self._geo = geo
        if self.reward_shaping and math.isfinite(before) and math.isfinite(self._dist):
            return (before - self._dist) / 100.0
        return 0.0

    # ------------------------------------------------------------------ observation
    @property
    def camera_bearing(self) -> float:
        """The camera's compass bearing: travel heading + yaw offset (degrees)."""
        return float((self.graph.heading(self.state) + self.yaw) % 360.0)

    def _observation(self) -> dict[str, Any]:
        obs: dict[str, Any] = {"view": self._view(), "reference": self._reference.copy()}
        if self.location_prior:
            obs["map"] = self._prior_map()
        if self._text_cache[0] != self.task.id:
            text = clean_text(self.task.instruction, self._charset, MAX_INSTRUCTION)
            self._text_cache = (self.task.id, text)
        obs["instruction"] = self._text_cache[1]
        obs["action_mask"] = self._mask()
        return obs

    def _view(self) -> np.ndarray:
        pano, ph = self.graph.panorama(self.state)
        yaw = round(self.camera_bearing, 1)
        img = perspective(pano, yaw, self.pitch, self.fov, self.view_wh, pano_heading=ph)
        if self.draw_branches:
            j = self.graph.junction_at(self.state)
            if j is not None:
                img = draw_branch_arrows(
                    img, self.graph.branches(j, self.camera_bearing), self._branch_choices()
                )
        return img

    def _maps(self) -> Any:
        if self._map_renderer is None:
            from urban_gym.render import MapRenderer

            self._map_renderer = MapRenderer(self.city)
        return self._map_renderer

    def _render_reference(self, task: TaskSpec) -> np.ndarray:
        size = self.ref_size
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
            return self._maps().render(
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
            return self._maps().render(tuple(m["center"]), mpp, size, markers=mk)
        if kind == "landmark":
            v = task.goal["view"]
            s = State(int(v["trajectory"]), int(v["frame"]))
            try:
                self.graph.check_state(s)
                ok = math.dist(self.graph.position(s), (task.goal["x"], task.goal["y"])) <= 1.0
            except UrbanGymError:
                ok = False
            if not ok:
                s = self.graph.nearest_state(float(task.goal["x"]), float(task.goal["y"]))
            pano, ph = self.graph.panorama(s)
            return perspective(
                pano,
                float(v["bearing"]),
                float(v.get("pitch", 10.0)),
                float(v.get("fov", 60.0)),
                size,
                pano_heading=ph,
            )
        raise TaskError(f"task {task.id!r}: unknown reference image {kind!r}")

    def map_markers(self) -> Any:
        """The task markers the agent may see on a map: the blue start and red goal of a
        map-navigation task, the grid of a localization task, nothing otherwise (the goal
        of a landmark or VLN task is what the agent must find). The agent's own marker is
        not included: whether the position is shown is the location-prior choice."""
        from urban_gym.render import MapMarkers

        task = self.task
        if task.reference_images and task.reference_images[0] == "route_map":
            return MapMarkers(
                start=(float(task.start["x"]), float(task.start["y"])),
                goal=(float(task.goal["x"]), float(task.goal["y"])),
            )
        if task.reference_images and task.reference_images[0] == "grid_map":
            x0, y0, x1, y1 = (float(v) for v in task.goal["grid"])
            return MapMarkers(
                grid=GridOverlay(
                    (x0, y0, x1, y1), int(task.goal.get("nx", 5)), int(task.goal.get("ny", 5))
                )
            )
        return MapMarkers()

    def _prior_map(self, size: int | None = None) -> np.ndarray:
        from urban_gym.render import MapMarkers

        size = int(size or self.map_size)
        x, y = self.graph.position(self.state)
        key = (size, round(x, 2), round(y, 2), round(self.camera_bearing, 1))
        if self._prior_cache[0] != key:
            x0, y0, x1, y1 = self.graph.bounds
            mpp = max(x1 - x0, y1 - y0) * 1.05 / size
            img = self._maps().render(
                ((x0 + x1) / 2, (y0 + y1) / 2),
                mpp,
                size,
                markers=MapMarkers(agent=(x, y, self.camera_bearing)),
            )
            self._prior_cache = (key, img)
        return self._prior_cache[1].copy()

    # ------------------------------------------------------------------ info
    def _info(self) -> dict[str, Any]:
        x, y = self.graph.position(self.state)
        info: dict[str, Any] = {
            "task": self.task,
            "task_id": self.task.id,
            "state": {"trajectory": self.state.trajectory, "frame": self.state.frame},
            "position": (x, y),
            "heading": self.graph.heading(self.state),
            "yaw": self.camera_bearing,
            "yaw_offset": self.yaw,
            "pitch": self.pitch,
            "junction": _junction_id(self.graph.junction_at(self.state)),
            "branches": self._branch_choices(),
            "steps": self.steps,
            "action_valid": True,
            "invalid_actions": self.invalid,
        }
        if self._field is not None:
            info["distance_to_goal"] = float(self._dist)
            info["geodesic_to_goal"] = float(self._geo)
        if self._message:
            info["message"] = self._message
        return info

    def _metrics(self) -> dict[str, float]:
        outcome = T.EpisodeOutcome(
            answer=self.answer,
            position=self.graph.position(self.state),
            path=list(self.path),
            reference_path=list(self._ref_path),
            shortest_length=self._shortest,
            departures=list(self._departures),
            steps=self.steps,
            invalid_actions=self.invalid,
            judge=self.answer_judge,
        )
        return T.evaluate(self.task, outcome)

    # ------------------------------------------------------------------ rendering
    def _composite(self) -> np.ndarray:
        view = self._view()
        h = view.shape[0]
        if self.location_prior or not self.task.reference_images:
            side = self._prior_map(size=h)  # the map shows the person where the agent is
        else:
            side = self._reference
        if side.shape[0] != h:
            import cv2

            side = cv2.resize(side, (h, h), interpolation=cv2.INTER_AREA)
        top = np.concatenate([view, side], axis=1)
        text = np.full((max(48, h // 4), top.shape[1], 3), 255, np.uint8)
        return np.concatenate([top, _text_panel(text, self.task.instruction, self.steps)], axis=0)

    # ------------------------------------------------------------------ pickling
    def __getstate__(self) -> dict[str, Any]:
        kw = dict(self._init_kwargs)
        return {
            "kwargs": kw,
            "episode": {k: getattr(self, k) for k in _EPISODE_FIELDS},
            "rng": None if self._np_random is None else self._np_random.bit_generator.state,
        }

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(**state["kwargs"])
        for k, v in state["episode"].items():
            setattr(self, k, v)
        if state["rng"] is not None:
            from gymnasium.utils import seeding

            rng, _ = seeding.np_random(0)
            rng.bit_generator.state = state["rng"]
            self._np_random = rng
        if self.task.type in T.NAVIGATION_TYPES:
            self._field = self.graph.distance_field(T.goal_states(self.graph, self.task))


_EPISODE_FIELDS = (
    "task",
    "state",
    "yaw",
    "pitch",
    "steps",
    "invalid",
    "path",
    "answer",
    "done",
    "_same_key",
    "_same_count",
    "_away",
    "_dist",
    "_geo",
    "_departures",
    "_reference",
    "_ref_path",
    "_shortest",
    "_message",
    "_task_limits",
)


def _junction_id(junction: int | None) -> int:
    """``info["junction"]``: the junction's id, -1 when not at a junction (one type on
    every step, so that vector envs can batch it)."""
    return -1 if junction is None else int(junction)


def _rendered_source(
    city: Any, width: int, time_of_day: str, weather: str, cache_mb: float
) -> RenderedFrames:
    """Frames rendered by :class:`urban_gym.render.PanoramaRenderer` (lazy import)."""
    from urban_gym.render import Conditions

    try:
        from urban_gym.render import PanoramaRenderer  # type: ignore[attr-defined]
    except ImportError:
        from urban_gym.render.panorama import PanoramaRenderer
    if width < 64 or width % 2:
        raise UrbanGymError(f"pano_width={width!r} must be an even number >= 64")
    renderer = PanoramaRenderer(city, width=width, height=width // 2)
    cond = Conditions(time_of_day=time_of_day, weather=weather)

    def render(x: float, y: float) -> np.ndarray:
        return renderer.render(x, y, conditions=cond).rgb

    return RenderedFrames(render, cache_mb)


def draw_branch_arrows(
    img: np.ndarray, branches: Sequence[Any], choices: dict[str, int]
) -> np.ndarray:
    """Draw a junction's branches into a view: a dial at the bottom centre with one red
    arrow per outgoing branch, pointing where the branch goes relative to the camera (up =
    ahead, right = to the right); the branches a branch action selects now are thick and
    labelled ``LEFT``/``UP``/``RIGHT``, the others (behind the camera) thin and dark."""
    import cv2

    out = np.ascontiguousarray(img).copy()
    h, w = out.shape[:2]
    r = max(4, int(0.16 * min(w, h)))
    cx, cy = w // 2, h - r - max(2, h // 40)
    # the translucent dial: blend only the square around it
    x0, y0, x1, y1 = max(0, cx - r - 1), max(0, cy - r - 1), min(w, cx + r + 2), min(h, cy + r + 2)
    roi = out[y0:y1, x0:x1]
    disc = roi.copy()
    cv2.circle(disc, (cx - x0, cy - y0), r, (255, 255, 255), -1, cv2.LINE_AA)
    out[y0:y1, x0:x1] = cv2.addWeighted(disc, 0.35, roi, 0.65, 0)
    label_of = {v: k for k, v in choices.items()}
    thick = max(1, int(round(min(w, h) / 90)))
    line = cv2.LINE_AA if min(w, h) >= 128 else cv2.LINE_8  # small views: crisp and fast
    for br in branches:
        a = math.radians(br.relative)
        tip = (int(round(cx + r * math.sin(a))), int(round(cy - r * math.cos(a))))
        name = label_of.get(br.trajectory)
        colour = (230, 20, 20) if name else (120, 30, 30)
        cv2.arrowedLine(
            out, (cx, cy), tip, colour, thick + (1 if name else 0), line, tipLength=0.35
        )
        if name and min(w, h) >= 64:
            scale = max(0.3, min(w, h) / 700)
            tw, th = _text_size(name, scale, thick)
            # the label's centre sits beyond the arrow tip, far enough not to cover it
            reach = r + 4 + abs(math.sin(a)) * tw / 2 + abs(math.cos(a)) * th / 2
            lx = int(min(max(cx + reach * math.sin(a) - tw / 2, 0), w - tw))
            ly = int(min(max(cy - reach * math.cos(a) + th / 2, th), h - 1))
            cv2.putText(
                out, name, (lx, ly), cv2.FONT_HERSHEY_SIMPLEX, scale, (230, 20, 20), thick, line
            )
    return out


@lru_cache(maxsize=64)
def _text_size(text: str, scale: float, thick: int) -> tuple[int, int]:
    import cv2

    (tw, th), _ = cv2.getTextSize(text, cv2.FONT_HERSHEY_SIMPLEX, scale, thick)
    return tw, th


def _text_panel(panel: np.ndarray, text: str, steps: int) -> np.ndarray:
    from PIL import Image, ImageDraw

    from urban_gym.render.fonts import load_font

    im = Image.fromarray(panel)
    d = ImageDraw.Draw(im)
    size = max(10, panel.shape[0] // 8)
    font = load_font(size)
    words = f"[step {steps}] {text}".replace("\n", " ").split()
    lines, cur = [], ""
    for wd in words:
        trial = f"{cur} {wd}".strip()
        if font.getlength(trial) > panel.shape[1] - 8 and cur:
            lines.append(cur)
            cur = wd
        else:
            cur = trial
    lines.append(cur)
    for k, line in enumerate(lines[: max(1, (panel.shape[0] - 4) // (size + 2))]):
        d.text((4, 2 + k * (size + 2)), line, fill=(0, 0, 0), font=font)
    return np.asarray(im)
