"""``urban-gym streetgraph-info``, ``streetgraph-routes`` and ``streetgraph-eval``."""

from __future__ import annotations

import json

from tests.families.streetgraph.streetgraph_fixture import write_fixture
from urban_gym.cli import main
from urban_gym.tasks.suite import load_suite


def test_streetgraph_info_on_a_touchdown_folder(tmp_path, capsys):
    d = write_fixture(tmp_path / "td")
    assert main(["streetgraph-info", str(d), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["raw"]["nodes"] == 25 and out["preprocessed"]["nodes"] == 15
    steps = {s["step"]: s for s in out["report"]["steps"]}
    assert steps["prune_dead_ends"]["nodes_removed"] == 7
    assert steps["contract"]["decision_points"] == 2
    (d / "nodes.txt").write_text("X,0,60.1\n", encoding="utf-8")
    assert main(["streetgraph-info", str(d)]) == 2
    assert "nodes.txt, line 1: expected 4 fields" in capsys.readouterr().err


def test_streetgraph_routes_and_eval(tmp_path, capsys):
    d = write_fixture(tmp_path / "td")
    routes = tmp_path / "routes.jsonl"
    routes.write_text(
        json.dumps(
            {
                "route_id": "r1",
                "route_panoids": ["X", "a1", "a2", "a3", "Y"],
                "navigation_text": "East to the corner.",
                "start_heading": 90,
            }
        )
        + "\n",
        encoding="utf-8",
    )
    out = tmp_path / "suite.jsonl"
    assert main(["streetgraph-routes", str(d), str(routes), "--out", str(out)]) == 0
    assert len(load_suite(out)) == 1
    capsys.readouterr()
    assert main(["streetgraph-eval", "--suite", str(out), "--json"]) == 0
    res = {r["agent"]: r for r in json.loads(capsys.readouterr().out)["results"]}
    assert res["oracle"]["mean"]["success"] == 1.0 and res["oracle"]["mean"]["ndtw"] == 1.0
    assert 0.0 <= res["random"]["mean"]["sdtw"] <= res["random"]["mean"]["success"] + 1e-9
