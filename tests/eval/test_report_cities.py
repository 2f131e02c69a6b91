"""``urban-gym report`` groups by city when runs span several (CityNav reports its results
per city): a run over two cities gets a "By city" table, and a "Success by city" table
sets the runs side by side, a single-city run's overall figure in its city's column.
Hand-built records; every figure below is a share a person can count.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from urban_gym.eval.records import RunDir
from urban_gym.eval.report import build_report, format_markdown

SG = "UrbanGym/StreetGraph-v0"


def rec(task_id: str, city: str, success: bool) -> dict[str, Any]:
    return {
        "task_id": task_id,
        "seed": 0,
        "repeat": 0,
        "key": f"{task_id}__s0__r0",
        "family": "streetgraph",
        "city": city,
        "task_type": "origin_destination",
        "difficulty": "medium",
        "category": "navigation",
        "kind": "navigation",
        "termination": "arrived" if success else "step_limit",
        "is_success": success,
        "metrics": {"success": float(success)},
        "steps": 10,
        "tokens": {},
        "task_info": {},
    }


def write_run(path: Path, records: list[dict]) -> Path:
    """A run folder of ``records``; the report names it after its agent (the folder's name)."""
    d = RunDir(path)
    d.write_manifest(
        {
            "env_id": SG,
            "family": "streetgraph",
            "agent": {"spec": path.name, "kind": path.name},
            "env_kwargs": {},
            "episodes": len(records),
        }
    )
    for r in records:
        d.append(r)
    d.close()
    return path


def test_runs_over_several_cities_are_reported_per_city(tmp_path):
    # run "both": london 3 of 4, munich 1 of 2; run "one": helsinki only, 1 of 2
    both = write_run(
        tmp_path / "both",
        [rec(f"l{i}", "london", i < 3) for i in range(4)]
        + [rec(f"m{i}", "munich", i < 1) for i in range(2)],
    )
    one = write_run(tmp_path / "one", [rec(f"h{i}", "helsinki", i < 1) for i in range(2)])
    report = build_report([both, one], resamples=200, failures=False)
    res = report["results"]
    assert res["both"]["cities"] == ["london", "munich"]
    by_city = res["both"]["by_city"]
    assert by_city["london"]["metrics"]["success"]["mean"] == 0.75
    assert by_city["munich"]["metrics"]["success"]["mean"] == 0.5
    assert "by_city" not in res["one"] and res["one"]["cities"] == ["helsinki"]
    md = format_markdown(report)
    assert "## Success by city" in md and "| run | helsinki | london | munich |" in md
    row_both = next(line for line in md.splitlines() if line.startswith("| both | -"))
    assert "75.0%" in row_both and "50.0%" in row_both
    row_one = next(line for line in md.splitlines() if line.startswith("| one | 50.0%"))
    assert row_one.endswith("| - | - |")
    assert "#### By city" in md


def test_a_report_of_one_city_has_no_city_tables(tmp_path):
    run = write_run(tmp_path / "r", [rec(f"h{i}", "helsinki", True) for i in range(2)])
    md = format_markdown(build_report([run], resamples=200, failures=False))
    assert "Success by city" not in md and "By city" not in md
