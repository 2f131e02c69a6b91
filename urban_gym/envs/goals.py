"""Goals a policy can condition on: the ``goal=`` argument of every environment.

A language model reads where to go from the instruction; a policy trained from scratch
cannot, so every env takes ``goal=`` (one of :data:`GOAL_MODES`) and adds the goal to its
observation ``Dict`` under a ``goal_*`` key. The default, ``"none"``, adds nothing: the
papers' settings stay as they were.

==============  ==========================================================================
mode            observation key and content
==============  ==========================================================================
``none``        nothing (the env's own pixels and text only)
``vector``      ``goal_vector``: ``Box(-1, 1, (8,), float32)`` -- the point-goal of
                Habitat's PointNav with the agent's own heading: ``sin`` and ``cos`` of the
                goal's bearing relative to the agent's heading, the straight-line distance
                ``d`` to the goal on a log scale, ``ln(1 + d / 10 m) / ln(1 + R / 10 m)``
                with ``R =`` :data:`VECTOR_RANGE_M` (capped at 1; 15 m -> 0.17, 100 m ->
                0.45, so short and long ranges both resolve), ``sin`` and
                ``cos`` of the agent's compass heading, ``sin`` and ``cos`` of the goal's
                compass bearing from the agent, and 1 when the task has a goal place (0
                for question tasks, whose other entries are then 0)
``landmarks``   ``goal_landmarks``: ``Box(0, 1, (K,), float32)`` -- StreetLearn's goal
                code: the straight-line distances ``d_k`` from the goal to K fixed
                landmarks of the city, as ``softmax(-d_k / T)`` with ``K =``
                :data:`LANDMARK_COUNT` and temperature ``T =`` :data:`LANDMARK_TEMPERATURE_M`
                metres; all zeros when the task has no goal place
``image``       ``goal_image``: ``Box(0, 255, (h, w, 3), uint8)`` -- a view taken at the
                goal with the env's own camera and image size (image-goal navigation);
                zeros when the task has no goal place. Needs an env that renders views.
``text``        ``goal_text``: ``Box(0, 16, (D,), float32)`` -- the instruction as a hashed
                bag of words (lower-cased words counted in :data:`TEXT_DIM` CRC32 buckets,
                capped at 16): no downloaded model, the same code on every machine
==============  ==========================================================================

Landmarks are the city's named places (POIs) chosen by farthest-point sampling, starting
from urban_gym.errors import GoalModeError
from the one nearest the city's centre, so they spread over the city and are the same in
every process; a world with fewer than K named places adds points of a regular grid over
its bounds. The goal position is the task's goal place (a multi-stop task: its first
stop not reached yet); each env says where it is through its goal hooks (:class:`~urban_gym.envs.base.UrbanEnv`: ``_goal_point``, ``_goal_landmarks``,
``_view_shape``, ``_goal_view``).

A mode that cannot apply to an env (``image`` without views) raises
:class:`GoalModeError` naming the env ids and the mode when the env is made.
"""

from __future__ import annotations

import math
import re
import zlib
from typing import TYPE_CHECKING, Any

import numpy as np
from gymnasium import spaces

from urban_gym.errors import GoalModeError

if TYPE_CHECKING:
    from urban_gym.tasks.spec import TaskSpec

#: The values of ``goal=``.
GOAL_MODES: tuple[str, ...] = ("none", "vector", "landmarks", "image", "text")
#: Distance (m) that ``goal_vector``'s distance entry maps to 1 (log scale, see above).
VECTOR_RANGE_M = 2000.0
#: Number of landmarks K of ``goal_landmarks``.
LANDMARK_COUNT = 16
#: Softmax temperature T of ``goal_landmarks`` (metres).
LANDMARK_TEMPERATURE_M = 100.0
#: Buckets D of ``goal_text``.
TEXT_DIM = 64
#: Cap of one bucket of ``goal_text``.
TEXT_MAX_COUNT = 16.0

_WORD = re.compile(r"[\w']+", re.UNICODE)


def hash_words(text: str, dim: int) -> np.ndarray:
    """Hashed bag-of-words: counts of lower-cased words by CRC32 bucket, (dim,) float32."""
    out = np.zeros(dim, dtype=np.float32)
    for w in _WORD.findall(str(text).casefold()):
        out[zlib.crc32(w.encode("utf-8")) % dim] += 1.0
    return out


def env_ids_of(env: Any) -> str:
    """The registered ids of ``env``'s family (for error messages): its own id when it
    was made with ``gym.make``, else its family's ids, else its class name.
    """
    from urban_gym.tasks.families import family_of

    spec = getattr(env, "spec", None)
    if spec is not None and getattr(spec, "id", None):
        return str(spec.id)
    fam = family_of(env)
    ids = list(fam.env_ids) if fam is not None else []
    return " / ".join(ids) if ids else type(env).__name__


def check_goal_mode(env: Any, mode: Any) -> str:
    """``mode`` if it is one of :data:`GOAL_MODES`, else :class:`GoalModeError`."""
    if not isinstance(mode, str) or mode not in GOAL_MODES:
        raise GoalModeError(
            f"{env_ids_of(env)}: goal={mode!r} is not a goal mode; valid: {', '.join(GOAL_MODES)}"
        )
    return mode


# ---------------------------------------------------------------- goal positions
def goal_point(env: Any) -> tuple[float, float] | None:
    """The goal place of the env's running task (metres, the env's frame), or None: the
    env's ``_goal_point`` hook (:class:`~urban_gym.envs.base.UrbanEnv`).
    """
    return env._goal_point()


def task_goal_point(task: TaskSpec) -> tuple[float, float] | None:
    """The goal place a task's ``goal`` states: its first stop (``stops``, each with
    ``x``/``y``), else its ``x``/``y``; None without one.
    """
    g = task.goal or {}
    stops = g.get("stops")
    if stops and isinstance(stops[0], dict) and "x" in stops[0]:
        return float(stops[0]["x"]), float(stops[0]["y"])
    if "x" in g and "y" in g:
        return float(g["x"]), float(g["y"])
    return None


def goal_vector(pose: tuple[float, float, float], goal: tuple[float, float] | None) -> np.ndarray:
    """``goal_vector`` (see the module docstring) of an agent at ``pose = (x, y,
    heading)`` (metres, degrees clockwise from north) with the goal at ``goal``.
    """
    x, y, heading = pose
    h = math.radians(heading)
    out = np.zeros(8, dtype=np.float32)
    out[3], out[4] = math.sin(h), math.cos(h)
    if goal is None:
        return out
    dx, dy = goal[0] - x, goal[1] - y
    dist = math.hypot(dx, dy)
    absolute = math.atan2(dx, dy) if dist > 1e-9 else h
    rel = absolute - h
    out[0], out[1] = math.sin(rel), math.cos(rel)
    out[2] = min(math.log1p(dist / 10.0) / math.log1p(VECTOR_RANGE_M / 10.0), 1.0)
    out[5], out[6] = math.sin(absolute), math.cos(absolute)
    out[7] = 1.0
    return out


# ---------------------------------------------------------------- landmarks
_LANDMARKS: dict[str, np.ndarray] = {}


def farthest_points(points: np.ndarray, k: int, centre: tuple[float, float]) -> np.ndarray:
    """``k`` of ``points`` (N, 2) by farthest-point sampling from the one nearest
    ``centre`` (all of them when N <= k).
    """
    pts = np.asarray(points, dtype=np.float64).reshape(-1, 2)
    if len(pts) <= k:
        return pts.copy()
    first = int(np.argmin(np.hypot(*(pts - np.asarray(centre)).T)))
    chosen = [first]
    d = np.hypot(*(pts - pts[first]).T)
    while len(chosen) < k:
        i = int(np.argmax(d))
        chosen.append(i)
        d = np.minimum(d, np.hypot(*(pts - pts[i]).T))
    return pts[chosen]


def landmarks_of(key: str, points: np.ndarray, bounds: tuple[float, float, float, float]):
    """The :data:`LANDMARK_COUNT` landmarks of a world (cached by ``key``): named places
    ``points`` spread by :func:`farthest_points`, topped up with grid points over
    ``bounds = (x0, y0, x1, y1)``.
    """
    got = _LANDMARKS.get(key)
    if got is None:
        x0, y0, x1, y1 = bounds
        chosen = farthest_points(points, LANDMARK_COUNT, ((x0 + x1) / 2, (y0 + y1) / 2))
        if len(chosen) < LANDMARK_COUNT:
            n = math.ceil(math.sqrt(LANDMARK_COUNT))
            gx, gy = np.meshgrid(np.linspace(x0, x1, n), np.linspace(y0, y1, n))
            grid = np.column_stack([gx.ravel(), gy.ravel()])
            chosen = np.vstack([chosen, grid[: LANDMARK_COUNT - len(chosen)]])
        got = _LANDMARKS[key] = chosen
    return got


def city_landmarks(city_spec: str) -> np.ndarray:
    """The landmarks of a city (by its spec): its named places' positions, spread over
    it (:func:`landmarks_of`).
    """
    from urban_gym.world.loader import load_city

    city = load_city(city_spec)
    pts = np.array([p.position for p in city.pois if p.name], dtype=np.float64).reshape(-1, 2)
    return landmarks_of(f"city:{city_spec}", pts, city.bounds)


def landmark_code(landmarks: np.ndarray, goal: tuple[float, float] | None) -> np.ndarray:
    """``softmax(-d_k / T)`` over the distances (m) from ``goal`` to ``landmarks``; zeros
    when there is no goal.
    """
    out = np.zeros(LANDMARK_COUNT, dtype=np.float32)
    if goal is None:
        return out
    d = np.hypot(*(np.asarray(landmarks) - np.asarray(goal)).T)
    z = -(d - d.min()) / LANDMARK_TEMPERATURE_M
    e = np.exp(z)
    out[: len(e)] = e / e.sum()
    return out


# ---------------------------------------------------------------- goal images
def image_shape(env: Any) -> tuple[int, int] | None:
    """``(height, width)`` of the env's views, or None when it renders none (the env's
    ``_view_shape`` hook).
    """
    return env._view_shape()


def goal_image(env: Any, task: TaskSpec, goal: tuple[float, float] | None) -> np.ndarray:
    """A view taken at ``goal`` (``task``'s goal place) with the env's camera (the env's
    ``_goal_view`` hook; zeros without a goal).
    """
    h, w = image_shape(env) or (1, 1)
    if goal is None:
        return np.zeros((h, w, 3), np.uint8)
    return np.asarray(env._goal_view(task, goal), dtype=np.uint8)


# ---------------------------------------------------------------- the component
class GoalObservation:
    """The ``goal_*`` entries of one env's observation for one goal mode."""

    def __init__(self, mode: str) -> None:
        self.mode = mode
        self._cache: tuple[str, Any] = ("", None)

    def check(self, env: Any) -> None:
        """Raise :class:`GoalModeError` when the mode cannot apply to ``env``."""
        if self.mode == "image" and image_shape(env) is None:
            why = env.no_view_reason
            raise GoalModeError(
                f"{env_ids_of(env)}: goal='image' cannot apply: {why} "
                f"(valid here: {', '.join(m for m in GOAL_MODES if m != 'image')})"
            )

    def spaces(self, env: Any) -> dict[str, spaces.Space]:
        """The entries this mode adds to the observation space."""
        if self.mode == "vector":
            return {"goal_vector": spaces.Box(-1.0, 1.0, (8,), np.float32)}
        if self.mode == "landmarks":
            return {"goal_landmarks": spaces.Box(0.0, 1.0, (LANDMARK_COUNT,), np.float32)}
        if self.mode == "text":
            return {"goal_text": spaces.Box(0.0, TEXT_MAX_COUNT, (TEXT_DIM,), np.float32)}
        if self.mode == "image":
            h, w = image_shape(env) or (1, 1)
            return {"goal_image": spaces.Box(0, 255, (h, w, 3), np.uint8)}
        return {}

    def observe(self, env: Any) -> dict[str, Any]:
        """The entries of the observation now."""
        if self.mode == "vector":
            return {"goal_vector": goal_vector(env._pose(), goal_point(env))}
        if self.mode == "none":
            return {}
        # the other modes depend on the task only (and, for multi-stop, on the next stop)
        goal = goal_point(env)
        key = f"{env.task.id}|{env.task.city}|{goal}"
        if self._cache[0] != key:
            self._cache = (key, self._per_task(env, goal))
        return {k: v.copy() for k, v in self._cache[1].items()}

    def _per_task(self, env: Any, goal: tuple[float, float] | None) -> dict[str, np.ndarray]:
        if self.mode == "landmarks":
            return {"goal_landmarks": landmark_code(env._goal_landmarks(env.task), goal)}
        if self.mode == "text":
            words = hash_words(env.task.instruction, TEXT_DIM)
            return {"goal_text": np.minimum(words, TEXT_MAX_COUNT)}
        return {"goal_image": goal_image(env, env.task, goal)}

    def __getstate__(self) -> dict[str, Any]:
        return {"mode": self.mode, "_cache": ("", None)}


__all__ = [
    "GOAL_MODES",
    "LANDMARK_COUNT",
    "LANDMARK_TEMPERATURE_M",
    "TEXT_DIM",
    "VECTOR_RANGE_M",
    "GoalModeError",
    "GoalObservation",
    "check_goal_mode",
    "city_landmarks",
    "goal_image",
    "goal_point",
    "goal_vector",
    "hash_words",
    "landmark_code",
    "landmarks_of",
    "task_goal_point",
]
