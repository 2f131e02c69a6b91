"""Every scheme end-to-end through the harness against ``serve-scripted`` on every family
where its paper defines it, and a clear error where it does not."""

from __future__ import annotations

import math

import gymnasium as gym
import pytest

from urban_gym.baselines.lmm.schemes import load_scheme, schemes
from urban_gym.baselines.lmm.server import ScriptedServer
from urban_gym.errors import UrbanGymError
from urban_gym.eval.records import RunDir
from urban_gym.eval.runner import run

#: family -> (env id, small gym.make kwargs, task types to run)
FAMILY_CASES = {
    "posegraph360": (
        "UrbanGym/PoseGraph360-v0",
        {"view_size": 48, "pano_width": 256},
        ["landmark_name", "object_count"],
    ),
    "streetgraph": ("UrbanGym/StreetGraph-Procedural-v0", {"observation": "symbolic"}, None),
    "citywalk": ("UrbanGym/CityWalk-v0", {"view_size": 48}, ["VR", "SGN"]),
}
WHERE = {
    "react-reflection": ["posegraph360"],
    "agentnav": ["streetgraph"],
    "prep": ["streetgraph"],
    "urbanground-react": ["citywalk"],
    "cot": ["posegraph360", "streetgraph", "citywalk"],
    "self-reflection": ["posegraph360", "streetgraph", "citywalk"],
    "reflexion": ["posegraph360", "streetgraph", "citywalk"],
    "gepa": ["posegraph360", "streetgraph", "citywalk"],
}


def task_ids(env_id, kw, types, n=2):
    tasks = gym.make(env_id, **kw).unwrapped.tasks
    if types is None:
        return [t.id for t in tasks[:n]]
    return [next(t.id for t in tasks if t.type == ty) for ty in types]


def run_scheme(tmp_path, family, scheme, policy="oracle", seeds=1, config=None):
    env_id, kw, types = FAMILY_CASES[family]
    ids = task_ids(env_id, kw, types)
    opts = {"model": "m", "scheme": scheme, "max_image_side": 48}
    if config is not None:
        opts["scheme_config"] = config
    with ScriptedServer(env_id=env_id, env_kwargs=kw, wrap="mixed", policy=policy) as server:
        res = run(
            env_id,
            tmp_path / f"{scheme}-{family}",
            agent="lmm",
            agent_options={"base_url": server.url, **opts},
            env_kwargs=kw,
            task_ids=ids,
            seeds=seeds,
            progress=False,
        )
    d = RunDir(tmp_path / f"{scheme}-{family}")
    return res, d, server


CASES = [(s, f) for s, fams in WHERE.items() for f in fams]


def test_the_table_covers_every_scheme():
    assert set(WHERE) == set(schemes())


def test_the_eval_help_names_every_scheme():
    from urban_gym.cli import build_parser

    sub = build_parser()._subparsers._group_actions[0].choices["eval"]
    (opt,) = [a for a in sub._actions if "--scheme" in a.option_strings]
    named = {w.strip(" ,:") for w in opt.help.split()}
    assert set(schemes()) <= named, set(schemes()) - named


@pytest.mark.parametrize("scheme,family", CASES)
def test_scheme_runs_end_to_end(tmp_path, scheme, family):
    res, d, server = run_scheme(tmp_path, family, scheme)
    assert (res.errors, res.successes) == (0, res.ran) and res.ran >= 2  # the oracle's replies
    manifest = d.read_manifest()["agent"]["config"]
    assert manifest["scheme"]["name"] == scheme
    assert manifest["scheme"]["config"] == load_scheme(scheme).config
    recs = d.read_episodes()
    assert all(r["tokens"]["total_tokens"] > 0 for r in recs)
    steps = [s for r in recs for s in d.read_trace(r)[1:]]
    assert all(s["reply"]["ok"] for s in steps)


@pytest.mark.parametrize("scheme", ["react-reflection", "agentnav", "prep", "urbanground-react"])
def test_paper_schemes_refuse_other_families(tmp_path, scheme):
    for other in [f for f in FAMILY_CASES if f not in WHERE[scheme]]:
        with pytest.raises(UrbanGymError, match=f"only, not on '{other}'"):
            run_scheme(tmp_path, other, scheme)


def test_paper_scheme_on_another_family_is_an_error_naming_it():
    from urban_gym.baselines.lmm.agent import LMMAgent

    env = gym.make("UrbanGym/StreetGraph-Procedural-v0", observation="symbolic")
    agent = LMMAgent(base_url="http://127.0.0.1:9/v1", scheme="react-reflection")
    with pytest.raises(UrbanGymError, match="posegraph360 only, not on 'streetgraph'"):
        agent.wrap(env)


def test_agentnav_self_positions_every_third_decision(tmp_path):
    res, d, server = run_scheme(tmp_path, "streetgraph", "agentnav")
    decisions = [r["steps"] for r in d.read_episodes()]
    assert server.calls["self_positioning"] == sum(math.ceil(n / 3) for n in decisions)
    trace = d.read_trace(d.read_episodes()[0])
    assert [s["calls"][0]["kind"] for s in trace[1:4] if "calls" in s] == ["self_positioning"]
    assert "m away" in trace[2]["scheme"]["estimate"]  # the ground-truth estimate, carried


def test_agentnav_components_switch_off(tmp_path):
    config = {"self_positioning_every": 0, "vop": "none", "previous_visits": False}
    res, d, server = run_scheme(tmp_path, "streetgraph", "agentnav", config=config)
    assert res.successes == res.ran and "self_positioning" not in server.calls


def test_urbanground_asks_for_the_final_answer_after_terminate(tmp_path):
    res, d, server = run_scheme(tmp_path, "citywalk", "urbanground-react")
    recs = {r["task_type"]: r for r in d.read_episodes()}
    assert server.calls == {"final_answer": 1}  # the VR question; SGN terminates on arrival
    last = d.read_trace(recs["VR"])[-1]
    assert last["calls"][0]["kind"] == "final_answer" and last["action"]["answer"] in "ABCD"
    assert recs["VR"]["is_success"]


def test_reflexion_reflects_after_a_failed_attempt(tmp_path):
    res, d, server = run_scheme(tmp_path, "streetgraph", "reflexion", policy="random", seeds=2)
    recs = d.read_episodes()
    assert not any(r["is_success"] for r in recs)
    second = [r for r in recs if r["repeat"] == 1]
    for r in second:
        notes = d.read_trace(r)[1]["scheme"]
        assert notes["attempt"] == 2
        assert notes["reflections"][0].startswith("The attempt ended as decision_limit")
    assert server.calls["reflection"] >= len(second)


def test_self_reflection_reviews_every_draft_before_acting(tmp_path):
    res, d, server = run_scheme(tmp_path, "streetgraph", "self-reflection")
    recs = d.read_episodes()
    steps = [s for r in recs for s in d.read_trace(r)[1:]]
    # one review per decision, after its draft; the scripted review keeps the action
    assert server.calls == {"draft_review": len(steps)} and res.successes == res.ran
    assert all(s["calls"][0]["kind"] == "draft_review" for s in steps)
    assert all(
        s["scheme"]["changed"] is False and '"action"' in s["scheme"]["draft"] for s in steps
    )
    assert all("scripted review" in s["reply"]["text"] for s in steps)
