"""The language-model agent in the harness, against a real loopback chat server (the
scripted oracle): replies, parse stages and tokens in the traces, the client settings in
the manifest without the API key, a client that gives up ends the episode as model_error."""

from __future__ import annotations

from tests.eval.conftest import SG, SYMBOLIC
from urban_gym.baselines.lmm.server import ScriptedServer
from urban_gym.eval.records import RunDir
from urban_gym.eval.runner import episode_keys, run

IDS = [f"streetgraph-procedural-00{i}" for i in range(3)]


def schedule(tasks_ids, seeding="task"):
    import gymnasium as gym

    env = gym.make(SG, **SYMBOLIC).unwrapped
    keys = episode_keys(env.tasks, tasks_ids, seeds=1, seed=0, seeding=seeding)
    return [(k.seed, {"task_id": k.task_id}) for k in keys]


def test_lmm_agent_run_through_a_loopback_server(tmp_path, monkeypatch):
    monkeypatch.setenv("URBAN_GYM_LMM_API_KEY", "sk-very-secret")
    with ScriptedServer(
        env_id=SG, env_kwargs=SYMBOLIC, wrap="mixed", schedule=schedule(IDS)
    ) as server:
        res = run(
            SG,
            tmp_path,
            agent="lmm",
            agent_options={
                "base_url": server.url.replace("http://", "http://user:pw@"),
                "model": server.model_name,
                "temperature": 0.7,
                "max_tokens": 256,
                "extra_body": {"seed": 1},
            },
            env_kwargs=SYMBOLIC,
            task_ids=IDS,
            seeding="task",
            progress=False,
        )
    assert (res.ran, res.successes, res.errors) == (3, 3, 0)
    assert res.tokens > 0
    d = RunDir(tmp_path)
    rec = d.read_episodes()[0]
    assert rec["tokens"]["total_tokens"] > 0 and rec["tokens"]["requests"] == rec["steps"]
    steps = d.read_trace(rec)
    stages = {s["reply"]["stage"] for s in steps[1:]}
    assert stages <= {"json", "fence", "braces", "bare"} and len(stages) >= 2  # mixed wraps
    assert all(s["reply"]["ok"] and s["tokens"]["total_tokens"] > 0 for s in steps[1:])
    assert steps[1]["action"]["action"] == "go"  # what the core env received
    text = (tmp_path / "manifest.json").read_text()
    assert "sk-very-secret" not in text and "user:pw" not in text
    cfg = d.read_manifest()["agent"]["config"]
    assert cfg["base_url"] == server.url and cfg["model"] == "urban-gym-scripted"
    assert (cfg["temperature"], cfg["max_tokens"], cfg["extra_body"]) == (0.7, 256, {"seed": 1})
    assert cfg["memory"] == "auto" and cfg["map"] is None  # not given: the family's
    # what the model saw: StreetGraph's symbolic face -- no images, AgentNav's memory texts
    face = cfg["face"]
    assert face["images"] == [] and face["maps"] == [] and face["family"] == "streetgraph"
    assert face["memory"] == {"kind": "agentnav", "budget": 2000}
    assert face["sources"]["memory"] == "family"
    # the lmm agent's env has the family's language-model views
    assert d.read_manifest()["env_kwargs"]["image_size"] == [512, 512]


def test_a_client_that_gives_up_ends_the_episode_as_model_error(tmp_path):
    with ScriptedServer(
        env_id=SG, env_kwargs=SYMBOLIC, faults=[500, 500, 500], schedule=schedule(IDS[:1])
    ) as server:
        res = run(
            SG,
            tmp_path,
            agent="lmm",
            agent_options={"base_url": server.url, "max_retries": 1, "model": "m"},
            env_kwargs=SYMBOLIC,
            task_ids=IDS[:1],
            seeding="task",
            progress=False,
        )
    rec = RunDir(tmp_path).read_episodes()[0]
    assert res.errors == 1
    assert rec["termination"] == "model_error" and rec["steps"] == 0
    assert "no completion after 2 attempts" in rec["error"]
    assert rec["metrics"]["success"] == 0.0 and "spl" in rec["metrics"]  # the family's metrics


def test_public_url_drops_credentials_and_query():
    from urban_gym.baselines.lmm.agent import public_url

    assert public_url("https://u:k@api.example.com:8443/v1?key=x#f") == (
        "https://api.example.com:8443/v1"
    )
