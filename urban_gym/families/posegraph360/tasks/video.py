"""The grounded track's video tasks: a scripted walk along a PoseGraph360 trajectory,
shown as frames, asked about three ways.

A *walk* is a camera script of :data:`VIDEO_FRAMES` frames at :data:`FPS` frames per
second, frame ``k`` shown at ``k / FPS`` seconds; between two frames the camera does one
of the env's own moves (``W`` SMALL: one frame forward; ``A``/``D`` SMALL: 30 degrees
left/right; ``Q``/``E``: 24 degrees up/down) or stays (``-``). Its three tasks share the
walk (``meta["pair"]["key"]``) and its difficulty (the number of distinct atomic
behaviours: 2 easy, 3 medium, 4 hard):

* ``atomic_behaviour`` (agent state) -- which atomic behaviours happen and when;
* ``composite_behaviour`` (agent state) -- which composite behaviours happen and when;
* ``landmark_visibility`` (world state) -- in how many intervals, and when, a named sign
  is visible.

Atomic labels are read from the camera poses alone (:func:`step_labels`), step ``k`` (frame
``k`` to ``k + 1``) covering ``[k / FPS, (k + 1) / FPS]`` seconds, with the rates over
the step:

===============  ==============================================================
``walk_forward``  moves >= :data:`WALK_MIN_SPEED` m/s within :data:`FORWARD_CONE`
                  degrees of where the camera looks
``stop``          moves < :data:`STILL_MAX_SPEED` m/s, turns and tilts <
                  :data:`STILL_MAX_RATE` degrees/s
``turn_left``     compass bearing turns left >= :data:`TURN_MIN_RATE` degrees/s
``turn_right``    ... right >= :data:`TURN_MIN_RATE` degrees/s
``look_up``       pitch rises >= :data:`TILT_MIN_RATE` degrees/s
``look_down``     pitch falls >= :data:`TILT_MIN_RATE` degrees/s
===============  ==============================================================

An atomic interval is a maximal run of steps carrying the label. A composite behaviour
(:data:`COMPOSITE`) is a run of its first label immediately followed by a run of its
second; its interval spans both runs. A sign is visible in a frame when at least
:data:`~urban_gym.envs.visibility.MIN_GOAL_PIXELS` pixels of the frame's id image
(:func:`~urban_gym.envs.visibility.id_view_size` of :data:`FRAME_SIZE`) show it, what
``info["goal_visible"]`` reports there; visibility changes half way between two frames
that disagree, so frames ``i..j`` visible is ``[(i - 0.5) / FPS, (j + 0.5) / FPS]``
clipped to the video's ``[0, (VIDEO_FRAMES - 1) / FPS]``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from urban_gym.families.posegraph360.tasks.grounded import _loads
from urban_gym.families.posegraph360.world import State

#: Frames of a walk and their rate (frames per second).
VIDEO_FRAMES = 12
FPS = 1.0
#: Default frame size (w, h) and horizontal field of view (degrees) of a walk's frames.
FRAME_SIZE = (640, 480)
VIDEO_FOV = 90.0
#: Camera moves of the script: degrees per step (A/D SMALL, Q/E without a size).
TURN_STEP = 30.0
TILT_STEP = 24.0
#: Labelling thresholds (metres per second, degrees per second, degrees).
WALK_MIN_SPEED = 1.0
STILL_MAX_SPEED = 0.2
TURN_MIN_RATE = 15.0
TILT_MIN_RATE = 10.0
STILL_MAX_RATE = 5.0
FORWARD_CONE = 45.0

#: Atomic behaviours -> their wording in options.
ATOMIC: dict[str, str] = {
    "walk_forward": "walk forward",
    "stop": "stop (stand still)",
    "turn_left": "turn left",
    "turn_right": "turn right",
    "look_up": "look up",
    "look_down": "look down",
}
#: Composite behaviours -> (wording, (first atomic run, second atomic run)).
COMPOSITE: dict[str, tuple[str, tuple[str, str]]] = {
    "walk_then_stop": ("walk forward, then stop", ("walk_forward", "stop")),
    "stop_then_walk": ("stand still, then walk forward", ("stop", "walk_forward")),
    "look_left_and_back": ("turn left, then turn back right", ("turn_left", "turn_right")),
    "look_right_and_back": ("turn right, then turn back left", ("turn_right", "turn_left")),
    "look_up_and_back": ("look up, then back down", ("look_up", "look_down")),
    "look_down_and_back": ("look down, then back up", ("look_down", "look_up")),
}
#: Script moves -> (step action, the action that undoes it or None, run lengths).
_MOVES: dict[str, tuple[str, str | None, tuple[int, int]]] = {
    "walk": ("W", None, (2, 4)),
    "stop": ("-", None, (1, 3)),
    "glance_left": ("A", "D", (1, 2)),
    "glance_right": ("D", "A", (1, 2)),
    "glance_up": ("Q", "E", (1, 2)),
    "glance_down": ("E", "Q", (1, 2)),
}
#: How often each move is drawn, and the axis of each glance.
_MOVE_WEIGHTS = {
    "walk": 3.0,
    "stop": 2.0,
    "glance_left": 1.0,
    "glance_right": 1.0,
    "glance_up": 1.0,
    "glance_down": 1.0,
}
_AXIS = {"glance_left": "yaw", "glance_right": "yaw", "glance_up": "pitch", "glance_down": "pitch"}
#: Difficulty by the number of distinct atomic behaviours of a walk.
DIFFICULTY_BY_LABELS = {2: "easy", 3: "medium", 4: "hard"}
#: Letters of the options.
LETTERS = "ABCDEFGHIJKL"


# ------------------------------------------------------------------ labels from poses
def _wrap(deg: float) -> float:
    return (float(deg) + 180.0) % 360.0 - 180.0


def step_labels(poses: Sequence[Sequence[float]], fps: float = FPS) -> list[frozenset[str]]:
    """The atomic labels of each step between consecutive poses ``(x, y, bearing, pitch)``
    (metres, degrees clockwise from north, degrees up) with the module's thresholds.
    """
    out = []
    for (x0, y0, b0, p0), (x1, y1, b1, p1) in zip(poses, poses[1:]):
        dist = math.hypot(x1 - x0, y1 - y0)
        speed, turn, tilt = dist * fps, _wrap(b1 - b0) * fps, (p1 - p0) * fps
        labels = set()
        if speed >= WALK_MIN_SPEED:
            heading = math.degrees(math.atan2(x1 - x0, y1 - y0))
            if abs(_wrap(heading - b0)) <= FORWARD_CONE:
                labels.add("walk_forward")
        if speed < STILL_MAX_SPEED and abs(turn) < STILL_MAX_RATE and abs(tilt) < STILL_MAX_RATE:
            labels.add("stop")
        if turn <= -TURN_MIN_RATE:
            labels.add("turn_left")
        if turn >= TURN_MIN_RATE:
            labels.add("turn_right")
        if tilt >= TILT_MIN_RATE:
            labels.add("look_up")
        if tilt <= -TILT_MIN_RATE:
            labels.add("look_down")
        out.append(frozenset(labels))
    return out


def label_runs(labels: Sequence[frozenset[str]]) -> dict[str, list[tuple[int, int]]]:
    """Each label's maximal runs of steps ``(first, last)`` (inclusive)."""
    runs: dict[str, list[tuple[int, int]]] = {}
    for k, ls in enumerate(labels):
        for lab in sorted(ls):
            r = runs.setdefault(lab, [])
            if r and r[-1][1] == k - 1:
                r[-1] = (r[-1][0], k)
            else:
                r.append((k, k))
    return runs


def _sec(a: int, b: int, fps: float) -> list[float]:
    return [round(a / fps, 3), round(b / fps, 3)]


def atomic_intervals(labels: Sequence[frozenset[str]], fps: float = FPS) -> dict[str, list]:
    """Atomic label -> its intervals in seconds (a run of steps ``a..b`` is
    ``[a / fps, (b + 1) / fps]``).
    """
    return {
        lab: [_sec(a, b + 1, fps) for a, b in rs] for lab, rs in sorted(label_runs(labels).items())
    }


def composite_intervals(labels: Sequence[frozenset[str]], fps: float = FPS) -> dict[str, list]:
    """Composite behaviour -> its intervals in seconds: a run of its first label ending
    at step ``e`` and a run of its second starting at ``e + 1`` span both runs.
    """
    runs = label_runs(labels)
    out: dict[str, list] = {}
    for name, (_, (first, second)) in COMPOSITE.items():
        starts = {a: b for a, b in runs.get(second, [])}
        for a, e in runs.get(first, []):
            if e + 1 in starts:
                out.setdefault(name, []).append(_sec(a, starts[e + 1] + 1, fps))
    return out


def visible_intervals(flags: Sequence[bool], fps: float = FPS) -> list[list[float]]:
    """Seconds in which a sign is visible, from per-frame flags (see the module
    docstring: changes half way between frames, clipped to the video).
    """
    end = (len(flags) - 1) / fps
    out: list[list[float]] = []
    k = 0
    while k < len(flags):
        if not flags[k]:
            k += 1
            continue
        j = k
        while j + 1 < len(flags) and flags[j + 1]:
            j += 1
        lo, hi = max(0.0, (k - 0.5) / fps), min(end, (j + 0.5) / fps)
        out.append([round(lo, 3), round(hi, 3)])
        k = j + 1
    return out


# ------------------------------------------------------------------ scripts and walks
def plan_script(rng: np.random.Generator, steps: int) -> str:
    """A camera script of ``steps`` moves (``W``, ``A``, ``D``, ``Q``, ``E``, ``-``):
    walks, stops and glances (a turn or tilt and back) drawn with :data:`_MOVE_WEIGHTS`,
    never two moves of the same kind, nor two glances about the same axis, in a row.
    """
    out, prev = "", ""
    names = list(_MOVES)
    weights = np.array([_MOVE_WEIGHTS[n] for n in names])
    while len(out) < steps:
        m = names[int(rng.choice(len(names), p=weights / weights.sum()))]
        if m == prev or (m[:6] == prev[:6] == "glance" and _AXIS[m] == _AXIS[prev]):
            continue
        act, back, (lo, hi) = _MOVES[m]
        k = int(rng.integers(lo, hi + 1))
        out += act * k + (back * k if back else "")
        prev = m
    return out[:steps]


def camera_states(start: State, script: str) -> list[list[float]]:
    """``[trajectory, frame, yaw, pitch]`` of every frame of ``script`` from ``start``
    (camera ahead and level), as the env's moves make them.
    """
    t, f, yaw, pitch = start.trajectory, start.frame, 0.0, 0.0
    out = [[t, f, yaw, pitch]]
    for a in script:
        if a == "W":
            f += 1
        elif a in "AD":
            yaw = _wrap(yaw + (TURN_STEP if a == "D" else -TURN_STEP))
        elif a in "QE":
            pitch += TILT_STEP if a == "Q" else -TILT_STEP
        out.append([t, f, yaw, pitch])
    return out


def camera_poses(graph: Any, camera: Sequence[Sequence[float]]) -> list[tuple[float, ...]]:
    """``(x, y, bearing, pitch)`` of each ``[trajectory, frame, yaw, pitch]``."""
    out: list[tuple[float, ...]] = []
    for t, f, yaw, pitch in camera:
        s = State(int(t), int(f))
        x, y = graph.position(s)
        out.append((x, y, (graph.heading(s) + yaw) % 360.0, float(pitch)))
    return out


def draw_walk(gen: Any, rng: np.random.Generator, panoramas: Any) -> dict | None:
    """One walk past a lone named sign (None when the draw does not fit): its script,
    camera, labels, visibility and difficulty.
    """
    from urban_gym.envs.visibility import id_view_size, in_view, sign_ids

    if not gen.landmark_list:
        return None
    pl = gen.landmark_list[int(rng.integers(len(gen.landmark_list)))]
    script = plan_script(rng, VIDEO_FRAMES - 1)
    walked = script.count("W")
    g = gen.graph
    t = g.trajectories[pl.state.trajectory]
    if t.last < walked:
        return None
    back = int(rng.integers(0, walked + 4))
    first = int(np.clip(pl.state.frame - back, 0, t.last - walked))
    camera = camera_states(State(t.id, first), script)
    poses = camera_poses(g, camera)
    labels = step_labels(poses)
    intended = {"W": "walk_forward", "-": "stop", "A": "turn_left", "D": "turn_right"}
    intended.update(Q="look_up", E="look_down")
    if any(ls != {intended[a]} for a, ls in zip(script, labels)):
        return None  # a curve or a bend made a step more (or less) than scripted
    atomic = atomic_intervals(labels)
    composite = composite_intervals(labels)
    difficulty = DIFFICULTY_BY_LABELS.get(len(atomic))
    if difficulty is None or not 2 <= len(composite) <= 4:
        return None
    targets = sign_ids([pl.poi.id])
    size = id_view_size(FRAME_SIZE)
    flags = [in_view(panoramas.view(x, y, b, p, VIDEO_FOV, size), targets) for x, y, b, p in poses]
    if not any(flags) or all(flags):
        return None
    return {
        "place": pl,
        "start": State(t.id, first),
        "script": script,
        "camera": camera,
        "atomic": atomic,
        "composite": composite,
        "visible": visible_intervals(flags),
        "flags": flags,
        "difficulty": difficulty,
        "key": f"walk:{pl.poi.id}:{t.id}:{first}:{script}",
    }


def walk_pool(gen: Any, difficulty: str, index: int, attempts: int = 4000) -> dict | None:
    """The ``index``-th walk of ``difficulty`` of the generator's city: walks are drawn in
    one fixed sequence (its own random stream), so the three video types take the same
    walks in the same order and pair by walk.
    """
    from urban_gym.envs.visibility import ID_PANO_WIDTH, IdPanoramas

    pool = gen.__dict__.setdefault("_walk_pool", {"by": {}, "keys": set(), "tries": 0})
    if "rng" not in pool:
        pool["rng"] = np.random.default_rng([gen.seed, 36])
        pool["panos"] = IdPanoramas(gen.city, ID_PANO_WIDTH)
    by = pool["by"]
    while len(by.get(difficulty, [])) <= index and pool["tries"] < attempts:
        pool["tries"] += 1
        w = draw_walk(gen, pool["rng"], pool["panos"])
        if w is None or w["key"] in pool["keys"]:
            continue
        pool["keys"].add(w["key"])
        by.setdefault(w["difficulty"], []).append(w)
    got = by.get(difficulty, [])
    return got[index] if index < len(got) else None


def video_goal(walk: dict) -> dict[str, Any]:
    """The ``goal["video"]`` block the env renders frames from."""
    return {
        "fps": FPS,
        "frames": len(walk["camera"]),
        "fov": VIDEO_FOV,
        "script": walk["script"],
        "camera": walk["camera"],
    }


def lettered(names: Sequence[str]) -> dict[str, str]:
    """Letter -> name in the given order."""
    return {LETTERS[i]: n for i, n in enumerate(names)}


def behaviour_answer(options: dict[str, str], truth: dict[str, list]) -> str:
    """The strict-JSON answer of a behaviour task."""
    answers = [
        {"option_id": letter, "intervals_sec": truth[name]}
        for letter, name in options.items()
        if name in truth
    ]
    return json.dumps({"answers": answers})


# ------------------------------------------------------------------ answers and scores


def _intervals(v: Any) -> list[list[float]]:
    """The readable ``[t0, t1]`` pairs of a list (ends put in order; others left out)."""
    out: list[list[float]] = []
    if not isinstance(v, list):
        return out
    if len(v) == 2 and all(isinstance(c, (int, float)) and not isinstance(c, bool) for c in v):
        v = [v]  # one bare interval
    for iv in v:
        if not isinstance(iv, (list, tuple)) or len(iv) != 2:
            continue
        try:
            a, b = float(iv[0]), float(iv[1])
        except (TypeError, ValueError):
            continue
        if math.isfinite(a) and math.isfinite(b):
            out.append([min(a, b), max(a, b)])
    return out


def read_behaviours(answer: Any, options: dict[str, str]) -> dict[str, list] | None:
    """Class -> predicted intervals from ``{"answers": [{"option_id": "A", "intervals_sec":
    [[t0, t1], ...]}, ...]}`` (also ``option_ids`` lists, or the answers list bare). An
    option id that is not one of ``options`` (letter -> class) stays a class of its own,
    so its intervals count as false positives. None when the answer is unreadable.
    """
    v = _loads(answer)
    if isinstance(v, dict):
        v = v.get("answers")
    if not isinstance(v, list):
        return None
    names = {n.casefold(): n for n in options.values()}
    out: dict[str, list] = {}
    for item in v:
        if not isinstance(item, dict):
            continue
        ids = item.get("option_ids", item.get("option_id"))
        ids = ids if isinstance(ids, list) else [ids]
        ivs = _intervals(item.get("intervals_sec", item.get("intervals")))
        for i in ids:
            key = str(i).strip()
            cls = options.get(key.upper()) or names.get(key.casefold()) or f"?{key}"
            out.setdefault(cls, []).extend(ivs)
    return out


def score_behaviours(task_type: str, goal: dict, answer: Any) -> dict[str, float]:
    """The per-episode metrics of a behaviour task (``answer`` None: not answered)."""
    from urban_gym.tasks import metrics

    truth: dict[str, list] = goal["behaviours"]
    pred = read_behaviours(answer, goal["options"]) if answer is not None else None
    if pred is None:
        pred = {}
    f1 = metrics.temporal_f1(pred, truth)
    m = {"temporal_f1": f1, "mean_tiou": metrics.mean_tiou(pred, truth)}
    if task_type == "composite_behaviour":
        ok = float(answer is not None and set(pred) == set(truth))
        m["composite_correct"] = ok
    else:
        m["atomic_f1"] = metrics.label_set_f1(set(pred), set(truth)) if answer is not None else 0.0
        ok = float(m["atomic_f1"] == 1.0)
    m["semantic_ok"] = ok
    m["evidence_ok"] = float(m["temporal_f1"] >= metrics.IOU_THRESHOLD)
    m["success"] = ok
    m["score"] = ok
    return m


def read_visibility(answer: Any) -> tuple[int | None, list[list[float]]] | None:
    """``(visible_count, intervals)`` from ``{"visible_count": k, "visible_intervals_sec":
    [[t0, t1], ...]}`` (the count None when missing); None when unreadable.
    """
    v = _loads(answer)
    if not isinstance(v, dict):
        return None
    c = v.get("visible_count")
    count = int(c) if isinstance(c, (int, float)) and not isinstance(c, bool) else None
    key = next((k for k in ("visible_intervals_sec", "intervals_sec") if k in v), None)
    if key is None and count is None:
        return None
    return count, _intervals(v.get(key)) if key else []


def score_visibility(goal: dict, answer: Any) -> dict[str, float]:
    """Count accuracy, segment F1@0.5 and mean tIoU of a visibility answer, scored
    independently (``answer`` None: not answered).
    """
    from urban_gym.tasks import metrics

    truth = goal["intervals_sec"]
    got = read_visibility(answer) if answer is not None else None
    if got is None:
        m = {"count_correct": 0.0, "segment_f1": 0.0, "mean_tiou": 0.0}
    else:
        count, pred = got
        m = {
            "count_correct": metrics.count_accuracy(count, len(truth)),
            "segment_f1": metrics.temporal_f1(pred, truth),
            "mean_tiou": metrics.mean_tiou(pred, truth),
        }
    m["semantic_ok"] = m["count_correct"]
    m["evidence_ok"] = float(m["segment_f1"] >= metrics.IOU_THRESHOLD)
    m["success"] = m["score"] = m["semantic_ok"]
    return m
