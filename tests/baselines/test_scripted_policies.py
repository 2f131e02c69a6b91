"""``serve-scripted`` policies (oracle, noisy-oracle:P, random, replay:FILE) and its
ground-truth answers to the calls that are not actions, through the harness against a
real loopback server."""

from __future__ import annotations

import json

import pytest

from tests.eval.conftest import SG, SYMBOLIC
from urban_gym.baselines.lmm.calls import CALL_HEADINGS, episode_header
from urban_gym.baselines.lmm.client import ChatClient, ClientConfig
from urban_gym.baselines.lmm.policies import parse_policy
from urban_gym.baselines.lmm.server import ScriptedServer
from urban_gym.errors import UrbanGymError
from urban_gym.eval.records import RunDir
from urban_gym.eval.runner import run

IDS = [f"streetgraph-procedural-00{i}" for i in range(4)]


def run_policy(tmp_path, policy: str, name: str | None = None, **agent):
    out = tmp_path / (name or policy.replace(":", "_").replace("/", "_"))
    with ScriptedServer(env_id=SG, env_kwargs=SYMBOLIC, wrap="mixed", policy=policy) as server:
        res = run(
            SG,
            out,
            agent="lmm",
            agent_options={"base_url": server.url, "model": "m", **agent},
            env_kwargs=SYMBOLIC,
            task_ids=IDS,
            progress=False,
        )
    return res, RunDir(out).read_episodes(), server


def mean(records, metric):
    return sum(r["metrics"][metric] for r in records) / len(records)


def test_noisy_oracle_lands_between_random_and_oracle(tmp_path):
    _, oracle, _ = run_policy(tmp_path, "oracle")
    _, noisy, server = run_policy(tmp_path, "noisy-oracle:0.3")
    _, rand, _ = run_policy(tmp_path, "random")
    # the oracle walks the shortest path: SPL 1 on every task
    assert [r["metrics"]["spl"] for r in oracle] == pytest.approx([1.0] * 4)
    assert mean(rand, "success") == 0.0  # 150 random decisions never reach a goal 3 km away
    assert mean(rand, "spl") < mean(noisy, "spl") < mean(oracle, "spl")
    # about 30% of the noisy decisions were wrong (and valid: no invalid action)
    steps = sum(r["steps"] for r in noisy)
    assert all(r["invalid_actions"] == 0 for r in noisy)
    assert sum(r["steps"] for r in noisy) > sum(r["steps"] for r in oracle)
    assert server.requests >= steps


def test_a_noisy_rerun_gives_the_same_episodes(tmp_path):
    _, a, _ = run_policy(tmp_path, "noisy-oracle:0.3", "a")
    _, b, _ = run_policy(tmp_path, "noisy-oracle:0.3", "b")
    assert [(r["task_id"], r["steps"], r["metrics"]) for r in a] == [
        (r["task_id"], r["steps"], r["metrics"]) for r in b
    ]


def test_replay_repeats_a_recorded_run(tmp_path):
    _, first, _ = run_policy(tmp_path, "noisy-oracle:0.5", "first")
    d = RunDir(tmp_path / "first")
    lines = []
    for rec in first:
        lines += [json.dumps(s) for s in d.read_trace(rec)]
    (tmp_path / "replies.jsonl").write_text("\n".join(lines) + "\n")
    _, again, _ = run_policy(tmp_path, f"replay:{tmp_path / 'replies.jsonl'}", "again")
    assert [(r["task_id"], r["steps"], r["metrics"]) for r in again] == [
        (r["task_id"], r["steps"], r["metrics"]) for r in first
    ]
    # the run's own trace file (one line per episode) replays it as well
    (part,) = (tmp_path / "first" / "traces").iterdir()
    _, third, _ = run_policy(tmp_path, f"replay:{part}", "third")
    assert [(r["task_id"], r["steps"], r["metrics"]) for r in third] == [
        (r["task_id"], r["steps"], r["metrics"]) for r in first
    ]


@pytest.mark.parametrize(
    "spec", ["", "noisy-oracle", "noisy-oracle:x", "noisy-oracle:1.5", "oracle:1", "best"]
)
def test_bad_policy_specs_are_named(spec):
    with pytest.raises(UrbanGymError, match="policy"):
        parse_policy(spec)


def test_replay_of_a_missing_file_is_named(tmp_path):
    with pytest.raises(UrbanGymError, match="nope.jsonl"):
        parse_policy(f"replay:{tmp_path / 'nope.jsonl'}")


def test_non_action_calls_are_answered_from_ground_truth():
    with ScriptedServer(env_id=SG, env_kwargs=SYMBOLIC) as server:
        client = ChatClient(ClientConfig(base_url=server.url, model="m", max_retries=0))
        headers = episode_header(0, IDS[0])
        ask = [{"role": "user", "content": "where now?"}]

        def call(kind: str) -> dict:
            sys_msg = {"role": "system", "content": CALL_HEADINGS[kind] + "\n..."}
            return json.loads(client.chat([sys_msg, *ask], headers=headers).text)

        pos = call("self_positioning")
        session = server.sessions[headers["X-Urban-Gym-Episode"]]
        x = session.info["pose"]["x"]
        assert f"x {x:.0f} m" in pos["estimated_position"] and pos["confidence"] == 1.0
        d0 = session.info["distance_to_goal_m"]
        assert f"{d0:.0f} m away" in pos["estimated_position"]
        assert session.steps == 0  # a call that is not an action does not step
        client.chat([{"role": "system", "content": "act"}, *ask], headers=headers)
        assert session.steps == 1
        reflection = call("reflection")["reflection"]
        assert reflection.startswith("The attempt ended as unfinished after 1 steps")
        assert server.calls == {"self_positioning": 1, "reflection": 1}
        client.close()
