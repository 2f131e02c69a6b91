"""Run folders written by hand: a manifest and episode records with the fields the report
and the sensitivity check read, so that their figures can be checked by hand."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from urban_gym.eval.records import RunDir
from urban_gym.families.posegraph360 import CATEGORIES

PG_ID = "UrbanGym/PoseGraph360-v0"
CATEGORY = CATEGORIES  # 360CityArena's categories of its seven task types (its Fig. 2)
RADIUS = {"map_navigation": 20.0}  # else 10 m (360CityArena, section 3.4)


def nav_record(task_id: str, task_type: str, distance: float, answered: bool = True, **kw):
    """A navigation episode that ended ``distance`` metres (straight line) from its goal."""
    radius = RADIUS.get(task_type, 10.0)
    ok = answered and distance <= radius
    metrics = {"answered": float(answered), "distance_to_goal": distance, "success": float(ok)}
    return record(task_id, task_type, ok, metrics, goal_radius_m=radius, **kw)


def record(
    task_id: str,
    task_type: str,
    success: bool,
    metrics: Mapping[str, Any] | None = None,
    difficulty: str = "easy",
    repeat: int = 0,
    goal_radius_m: float | None = None,
) -> dict[str, Any]:
    """An episode record of a PoseGraph360 task (the fields the report reads)."""
    return {
        "task_id": task_id,
        "seed": repeat,
        "repeat": repeat,
        "key": f"{task_id}__s{repeat}__r{repeat}",
        "family": "posegraph360",
        "task_type": task_type,
        "difficulty": difficulty,
        "category": CATEGORY[task_type],
        "kind": "question"
        if task_type in ("object_count", "relational", "localization")
        else "navigation",
        "termination": "answered",
        "is_success": bool(success),
        "metrics": dict(metrics or {"success": float(success)}),
        "steps": 5,
        "tokens": {},
        "task_info": {"goal_radius_m": goal_radius_m},
    }


def write_run(
    path: str | Path, agent: str, records: Iterable[Mapping[str, Any]], judge: Any = None
) -> Path:
    """Write a run folder of ``records`` run by agent ``agent`` (its display name)."""
    d = RunDir(path)
    recs = list(records)
    d.write_manifest(
        {
            "env_id": PG_ID,
            "family": "posegraph360",
            "agent": {"spec": agent, "kind": agent},
            "judge": judge,
            "episodes": len(recs),
        }
    )
    for r in recs:
        d.append(r)
    d.close()
    return Path(path)
