"""PoseGraph360's part of ``urban-gym report`` and ``urban-gym sensitivity``.

**Threshold sensitivity** (360CityArena, section 3.4): coordinate_match counts an answer as
a success when the final position is within epsilon of the goal -- 10 m for every navigation
task but Map Navigation, 20 m for Map Navigation. The paper checks that model rankings stay
stable with the thresholds scaled 0.75x-1.5x (Kendall's tau >= 0.89) and that Map Navigation
changes by at most 2 points for epsilon 15-25 m: :data:`THRESHOLD_SWEEP`; :func:`rescore`
rescores a recorded episode at another radius from its record (the final straight-line
distance to the goal, whether it answered, its own radius).

**Grounded boxes**: stage 5 of the strict-JSON grounding
protocol over a run -- the boxes of a run's ``landmark_bbox`` episodes normalised once for
the whole run, with both results kept.

The env scores each episode's box on its own, as given (``bbox_iou`` / ``bbox_acc50`` in
the episode's metrics: a box that is not normalised to [0, 1] scores 0). The protocol's
stage 5 decides the coordinate scale of a model's boxes once per *run* -- [0, 1], [0, 1000]
or pixels (:func:`urban_gym.tasks.grounding.resolve_scale`) -- and reports the original
result beside the compatible one. Pixel boxes are read against the view the env rendered
(``view_size`` of the run's env, before any downscaling of the request's images).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from urban_gym.tasks.families import ThresholdSweep

BOX_TASK_TYPE = "landmark_bbox"
#: The thresholds 360CityArena's sensitivity check varies (its section 3.4).
THRESHOLD_SWEEP = ThresholdSweep(
    scales=(0.75, 1.0, 1.25, 1.5),
    radii={"map_navigation": (15.0, 20.0, 25.0)},
    source="360CityArena, section 3.4 (coordinate_match)",
)


def rescore(record: Mapping[str, Any], scale: float = 1.0, radius_m: float | None = None):
    """Whether a navigation episode's answer lies within ``scale`` times its goal radius
    (or ``radius_m`` metres) of the goal, as the evaluator scores it (answered and final
    straight-line distance <= radius); None for a question or a record without those
    numbers (an episode that ended in an error).
    """
    from urban_gym.families.posegraph360.tasks.types import NAVIGATION_TYPES

    if record.get("task_type") not in NAVIGATION_TYPES:
        return None
    m = record.get("metrics") or {}
    distance, answered = m.get("distance_to_goal"), m.get("answered")
    radius = (record.get("task_info") or {}).get("goal_radius_m")
    if distance is None or answered is None or radius is None:
        return None
    r = float(radius_m) if radius_m is not None else float(radius) * float(scale)
    return bool(answered) and float(distance) <= r


def view_frame(env_kwargs: Mapping[str, Any]) -> tuple[int, int]:
    """``(width, height)`` in pixels of the view of a run's env kwargs (the env's
    default ``view_size`` when the run did not set one).
    """
    size = env_kwargs.get("view_size")
    if size is None:  # the env's default
        from urban_gym.families.posegraph360.tasks.suites import default_view_size

        size = default_view_size(env_kwargs.get("suite"))
    if isinstance(size, (list, tuple)):
        return int(size[0]), int(size[1])
    return int(size), int(size)


def run_box_scores(
    records: Sequence[Mapping[str, Any]], frame: tuple[int, int]
) -> dict[str, Any] | None:
    """BBox Acc@0.5IoU and mean IoU of a run's ``landmark_bbox`` episodes, as given
    (``original``) and after the run-level normalisation (``compatible``), with the scale
    decided for the run: ``{"episodes", "answered", "scale", "frame", "original":
    {"acc50", "mean_iou"}, "compatible": {...}}``. None when the run has no such episode
    with its true box in ``task_info``.
    """
    from urban_gym.families.posegraph360.tasks.grounded import read_box
    from urban_gym.tasks.grounding import score_run_boxes

    recs = [r for r in records if r.get("task_type") == BOX_TASK_TYPE]
    truth: list[Any] = [(r.get("task_info") or {}).get("bbox") for r in recs]
    if not recs or any(t is None for t in truth):
        return None
    boxes = [read_box(r.get("answer")) if r.get("answer") is not None else None for r in recs]
    s = score_run_boxes(boxes, truth, image_size=frame)
    return {
        "episodes": len(recs),
        "answered": sum(b is not None for b in boxes),
        "scale": s["scale"],
        "frame": list(frame),
        "original": s["original"],
        "compatible": s["compatible"],
    }


def box_section(g: Mapping[str, Any]) -> list[str]:
    """The Markdown lines of a :func:`run_box_scores` result."""
    o, c = g["original"], g["compatible"]
    return [
        "#### Grounded boxes (strict-JSON stage 5: one coordinate scale for the run)",
        "",
        f"{g['episodes']} landmark_bbox episodes, {g['answered']} with a box; scale of the "
        f"run: {g['scale']} (pixel coordinates refer to the {g['frame'][0]}x{g['frame'][1]} "
        "view).",
        "",
        "| result | Acc@0.5IoU | mean IoU |",
        "|---|---:|---:|",
        f"| original (boxes as given) | {100 * o['acc50']:.1f}% | {o['mean_iou']:.3f} |",
        f"| compatible (run-level scale) | {100 * c['acc50']:.1f}% | {c['mean_iou']:.3f} |",
        "",
    ]


def task_calibration(manifest: Mapping[str, Any], task_ids: set[str]) -> list[dict] | None:
    """The statistics of the run's tasks beside 360CityArena's (its section 3.3), one
    entry per statistic the paper reports for a type and difficulty the run has
    (:func:`~.tasks.calibration.calibration_check`: ``ours``, ``paper``, ``deviation``,
    ``ok`` within +-15%); None when the run's suite file is gone or changed since the run.
    """
    import hashlib
    from pathlib import Path

    from urban_gym.families.posegraph360.tasks.calibration import calibration_check
    from urban_gym.families.posegraph360.tasks.suites import suite_statistics
    from urban_gym.tasks.suite import load_suite

    suite = manifest.get("suite") or {}
    path = Path(str(suite.get("path") or ""))
    # only the file the run recorded (its SHA-256): a manifest naming any other file
    # of this machine has it read by nothing
    if not suite.get("path") or not suite.get("sha256") or not path.is_file():
        return None
    if hashlib.sha256(path.read_bytes()).hexdigest() != suite["sha256"]:
        return None
    tasks = [t for t in load_suite(path) if t.id in task_ids]
    return calibration_check(suite_statistics(tasks)) or None


def calibration_section(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """The Markdown lines of a :func:`task_calibration` result."""
    out = [
        "#### Task calibration against 360CityArena (section 3.3)",
        "",
        "| type | difficulty | statistic | ours | paper | deviation | within +-15% |",
        "|---|---|---|---:|---:|---:|---|",
    ]
    for r in rows:
        ours = "-" if r["ours"] is None else f"{r['ours']:.1f}"
        dev = "-" if r["deviation"] is None else f"{r['deviation']:+.0%}"
        ok = {True: "yes", False: "**no**", None: "-"}[r["ok"]]
        out.append(
            f"| {r['type']} | {r['difficulty']} | {r['statistic']} | {ours} | "
            f"{r['paper']:.1f} | {dev} | {ok} |"
        )
    off = [r for r in rows if r["ok"] is False]
    if off:
        out += [
            "",
            "Outside the paper's +-15%: "
            + "; ".join(f"{r['type']} {r['difficulty']} {r['statistic']}" for r in off)
            + " (see the fidelity page for why).",
        ]
    return [*out, ""]


def sections(run: Any, table: Any, resamples: int, seed: int) -> dict[str, Any]:
    """``grounded_boxes`` of a run with ``landmark_bbox`` episodes, and the
    ``task_calibration`` of its tasks against the paper's statistics (where it has tasks
    of a type the paper gives statistics for).
    """
    out: dict[str, Any] = {}
    boxes = run_box_scores(run.records, view_frame(run.manifest.get("env_kwargs") or {}))
    if boxes is not None:
        out["grounded_boxes"] = boxes
    calibration = task_calibration(run.manifest, {str(r["task_id"]) for r in run.records})
    if calibration:
        out["task_calibration"] = calibration
    return out


def markdown(res: Mapping[str, Any]) -> list[str]:
    """The tables of ``grounded_boxes`` and ``task_calibration`` (those the run has)."""
    out = box_section(res["grounded_boxes"]) if res.get("grounded_boxes") else []
    if res.get("task_calibration"):
        out += calibration_section(res["task_calibration"])
    return out


__all__ = [
    "BOX_TASK_TYPE",
    "THRESHOLD_SWEEP",
    "box_section",
    "calibration_section",
    "markdown",
    "rescore",
    "run_box_scores",
    "sections",
    "task_calibration",
    "view_frame",
]
