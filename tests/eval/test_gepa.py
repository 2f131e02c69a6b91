"""The GEPA-style optimiser through the harness against ``serve-scripted``: candidates
scored on the val split, revisions asked for, the chosen prompt reported and usable as
the ``gepa`` scheme's config."""

from __future__ import annotations

import json

import yaml

from tests.eval.conftest import SG, SYMBOLIC
from urban_gym.baselines.lmm.server import ScriptedServer
from urban_gym.eval.gepa import pareto_front, val_split
from urban_gym.eval.records import RunDir

IDS = [f"streetgraph-procedural-{i:03d}" for i in range(10)]


def test_val_split_is_stable_and_never_empty():
    val = val_split(IDS, 0.3)
    assert set(val) == set(val_split(list(reversed(IDS)), 0.3))  # order does not matter
    assert 0 < len(val) < len(IDS)
    assert set(val) <= set(val_split(IDS + ["other"], 0.3))  # adding tasks moves none
    assert len(val_split(IDS, 0.0)) == 1


def test_pareto_front_by_hand():
    a = {"val": {"t1": 1.0, "t2": 0.0}}
    b = {"val": {"t1": 0.0, "t2": 1.0}}
    c = {"val": {"t1": 0.0, "t2": 0.0}}
    assert pareto_front([a, b, c], ["t1", "t2"]) == [0, 1]
    assert pareto_front([a, a], ["t1"]) == [0, 1]


def test_optimiser_evolves_and_reports_the_chosen_prompt(tmp_path):
    from urban_gym.eval.gepa import optimise

    with ScriptedServer(env_id=SG, env_kwargs=SYMBOLIC, policy="noisy-oracle:0.3") as server:
        report = optimise(
            SG,
            tmp_path,
            {"base_url": server.url, "model": "m"},
            env_kwargs=SYMBOLIC,
            iterations=2,
            minibatch=2,
            metric="spl",
            val_fraction=0.3,
            task_ids=IDS,
        )
        assert server.calls["prompt_revision"] == 2
    saved = json.loads((tmp_path / "gepa.json").read_text())
    assert saved["chosen"] == report["chosen"] and saved["val_task_ids"] == val_split(IDS, 0.3)
    cands = report["candidates"] + report["rejected"]
    assert len(cands) == 3 and report["revisions"] == 2
    assert "Hint 1:" in cands[1]["instructions"]  # the scripted revision of candidate 0
    best = max(c["val_score"] for c in report["candidates"])
    chosen = next(c for c in report["candidates"] if c["id"] == report["chosen"])
    assert chosen["val_score"] == best
    assert yaml.safe_load((tmp_path / "best.yaml").read_text()) == {
        "instructions": chosen["instructions"]
    }
    # each val run of a candidate is a harness run of the gepa scheme with its instructions
    d = RunDir(tmp_path / f"cand{chosen['id']}-val")
    cfg = d.read_manifest()["agent"]["config"]["scheme"]
    assert cfg["name"] == "gepa" and cfg["config"]["instructions"] == chosen["instructions"]
    assert {r["task_id"] for r in d.read_episodes()} == set(saved["val_task_ids"])
