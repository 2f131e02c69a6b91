"""The fuzzy-match judge a run was scored by: recorded in its manifest (rules, or a
language model with its prompt's SHA-256), stated in every report (markdown and terminal),
and a report of runs judged differently says so. ``urban-gym eval --judge lmm`` runs end
to end against the real scripted server."""

from __future__ import annotations

import hashlib
import json

import pytest

from urban_gym.baselines.lmm.judge import SYSTEM_PROMPT, USER_MARKER, USER_TEMPLATE
from urban_gym.eval.judging import (
    RULES,
    judge_label,
    judge_setting,
    judges_summary,
    prompt_sha256,
    run_judge,
    same_judge,
)
from urban_gym.eval.records import RunDir, manifest_differences

PG = "UrbanGym/PoseGraph360-v0"
SMALL = {"view_size": 32, "pano_width": 128}


def relational_ids(n: int) -> list[str]:
    """The first ``n`` relational tasks of the shipped suite (ids are not pinned)."""
    import gymnasium as gym

    env = gym.make(PG, task_types=["relational"], **SMALL)
    ids = [t.id for t in env.unwrapped.tasks][:n]
    env.close()
    assert len(ids) == n
    return ids


def test_settings_by_hand(tmp_path):
    assert judge_setting(None) == RULES and judge_setting({"kind": "rules"}) == RULES
    s = judge_setting({"kind": "lmm", "base_url": "http://u:p@h:1/v1?k=1", "model": "j"})
    assert s["kind"] == "lmm" and s["model"] == "j" and s["base_url"] == "http://h:1/v1"
    assert s["prompt"] == "urban_gym default"
    text = f"{SYSTEM_PROMPT}\n{USER_MARKER}\n{USER_TEMPLATE}"
    assert s["prompt_sha256"] == hashlib.sha256(text.encode()).hexdigest()
    f = tmp_path / "judge.txt"
    f.write_text(f"Judge.\n{USER_MARKER}\nA: {{answer}} E: {{expected}}\n")
    own = judge_setting({"kind": "lmm", "model": "j", "prompt_file": str(f)})
    assert own["prompt"] == str(f)
    assert own["prompt_sha256"] == prompt_sha256("Judge.", "A: {answer} E: {expected}")
    assert judge_label(None) == judge_label(RULES) == "rules"
    assert judge_label(own) == f"lmm j (prompt {f}, sha256 {own['prompt_sha256'][:12]})"
    # an older run recorded no judge (null): the rules judge; a null judge resumes as rules
    assert run_judge({"judge": None}) == RULES and run_judge({}) == RULES
    assert same_judge(None, RULES) and not same_judge(RULES, s) and not same_judge(s, own)
    assert manifest_differences({"judge": None}, {"judge": RULES}) == []
    assert manifest_differences({"judge": s}, {"judge": own})
    assert judges_summary([RULES, None]) == {"same": True, "labels": ["rules", "rules"]}
    assert judges_summary([RULES, own])["same"] is False


@pytest.fixture(scope="module")
def judged_runs(tmp_path_factory):
    """An oracle run scored by the rules judge and one by the language-model judge --
    ``urban-gym eval --judge lmm`` against the scripted server, which answers the judge's
    requests from the city's POI names."""
    from urban_gym.baselines.lmm.judge import server_judge_responder
    from urban_gym.baselines.lmm.server import ScriptedServer
    from urban_gym.cli import main

    base = tmp_path_factory.mktemp("judged")
    ids = ",".join(relational_ids(3))
    common = ["--agent", "oracle", "--task-ids", ids, "--env-kwargs", json.dumps(SMALL)]
    common += ["--no-progress", "--no-visibility"]
    assert main(["eval", PG, "--out", str(base / "rules"), *common]) == 0
    server = ScriptedServer(env_id=PG, env_kwargs=SMALL)
    server.responders.append(server_judge_responder(server))
    with server:
        args = ["--judge", "lmm", "--judge-base-url", server.url, "--judge-model", "judge-m"]
        assert main(["eval", PG, "--out", str(base / "lmm"), *common, *args]) == 0
        answered = server.answered
    return base, answered


def test_eval_with_the_lmm_judge_end_to_end(judged_runs):
    base, answered = judged_runs
    assert answered == 3  # one verdict per relational answer, over HTTP
    m = RunDir(base / "lmm").read_manifest()
    j = m["judge"]
    assert (j["kind"], j["model"], j["prompt"]) == ("lmm", "judge-m", "urban_gym default")
    assert j["prompt_sha256"] == prompt_sha256(SYSTEM_PROMPT, USER_TEMPLATE)
    assert RunDir(base / "rules").read_manifest()["judge"] == RULES
    recs = RunDir(base / "lmm").read_episodes()
    assert [r["is_success"] for r in recs] == [True] * 3  # the oracle names the place


def test_every_report_states_the_judge(judged_runs, tmp_path, capsys):
    from urban_gym.cli import main

    base, _ = judged_runs
    out = tmp_path / "one"
    args = ["--resamples", "200", "--no-gifs", "--no-plots"]
    assert main(["report", str(base / "lmm"), "--out", str(out), *args]) == 0
    label = judge_label(RunDir(base / "lmm").read_manifest()["judge"])
    assert label.startswith("lmm judge-m (prompt urban_gym default, sha256 ")
    term = capsys.readouterr().out
    assert f"Fuzzy-match judge (the run): {label}." in term
    md = (out / "report.md").read_text()
    assert f"Fuzzy-match judge (the run): {label}." in md
    assert f"| {label} |" in md  # the runs table's column
    # two runs judged differently: the report says so, in markdown and on the terminal
    both = tmp_path / "both"
    assert main(["report", str(base / "rules"), str(base / "lmm"), "--out", str(both), *args]) == 0
    term = capsys.readouterr().out
    md = (both / "report.md").read_text()
    rep = json.loads((both / "report.json").read_text())
    assert rep["judges"] == {"same": False, "labels": ["rules", label]}
    for text in (term, md):
        assert "The runs differ in their fuzzy-match judge" in text
        assert f"oracle (rules): rules; oracle (lmm): {label}" in text
