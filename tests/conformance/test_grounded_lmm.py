"""The grounded track through ``urban-gym eval --agent lmm`` against the real loopback
scripted server (its oracle policy): one task of each of the seven kinds of the strict-JSON
grounding protocol, asked with ``--preset grounded`` (2,048 output tokens, no reasoning
field), each answered, scored 1 on its semantic and evidence metrics, and rescored by the
grounded report layout from the records.
"""

from __future__ import annotations

import json

from urban_gym.baselines.lmm.server import ScriptedServer
from urban_gym.cli import main
from urban_gym.eval.records import RunDir
from urban_gym.families.posegraph360.tasks.suites import grounded_suite_path
from urban_gym.tasks.suite import load_suite, save_suite

ENV_ID = "UrbanGym/PoseGraph360-v0"
KINDS = (
    "relative_position",
    "future_observation",
    "self_position",
    "action_decision",
    "composite_behaviour",
    "atomic_behaviour",
    "landmark_visibility",
)


def test_each_grounded_kind_runs_through_the_language_model_agent(tmp_path, capsys):
    tasks = load_suite(grounded_suite_path("helsinki"))
    picked = [next(t for t in tasks if t.type == k) for k in KINDS]
    suite = save_suite(tmp_path / "grounded.jsonl", picked)
    small = {"view_size": [160, 120], "frame_size": [160, 120], "pano_width": 512}
    out = tmp_path / "run"
    with ScriptedServer(env_id=ENV_ID, env_kwargs={"suite": str(suite), **small}) as server:
        argv = ["eval", ENV_ID, "--out", str(out), "--agent", "lmm", "--suite", str(suite)]
        argv += ["--env-kwargs", json.dumps(small), "--base-url", server.url]
        argv += ["--model", "scripted", "--preset", "grounded", "--no-progress"]
        assert main(argv) == 0
    run = RunDir(out)
    recs = {r["task_type"]: r for r in run.read_episodes()}
    assert set(recs) == set(KINDS)
    for kind, rec in recs.items():
        assert rec["termination"] == "answered", kind
        m = rec["metrics"]
        assert (m["semantic_ok"], m["evidence_ok"]) == (1.0, 1.0), (kind, m)
    config = run.read_manifest()["agent"]["config"]
    assert config["preset"]["name"] == "grounded" and config["max_tokens"] == 2048
    capsys.readouterr()
    assert (
        main(
            [
                "report",
                str(out),
                "--layout",
                "grounded",
                "--out",
                str(tmp_path / "rep"),
                "--no-gifs",
            ]
        )
        == 0
    )
    md = (tmp_path / "rep" / "report.md").read_text(encoding="utf-8")
    assert "| run | task | Option Acc | BBox Acc@0.5 | BBox mIoU |" in md
    assert "Dual Semantic" in md
