"""The language-model path end to end on the recording env: scripted server on loopback,
client, prompt builder, agent, parser, the one episode loop and its record."""

from __future__ import annotations

import httpx

from tests.wrappers.recording_env import RecordingEnv, RecordingOracle, episode
from urban_gym.baselines.lmm import ChatClient, ClientConfig, LMMAgent, ScriptedServer
from urban_gym.baselines.lmm.prompt import PromptBuilder
from urban_gym.baselines.lmm.server import wrap_reply


def scripted(**kw) -> ScriptedServer:
    return ScriptedServer(
        env_factory=lambda i, k: RecordingEnv(**k),
        oracle_factory=lambda env: RecordingOracle(),
        **kw,
    ).start()


def agent(url: str, **kw) -> LMMAgent:
    cfg = ClientConfig(base_url=url, model="scripted", backoff_s=0.01, jitter=0.0, **kw)
    return LMMAgent(client=ChatClient(cfg))


def test_wrap_styles():
    assert wrap_reply("{}", "json", 0) == "{}"
    assert wrap_reply("{}", "fence", 0) == "```json\n{}\n```"
    assert wrap_reply("{}", "mixed", 3).count("```") == 2
    assert "{}" in wrap_reply("{}", "prose", 1) and wrap_reply("{}", "prose", 1) != "{}"


def test_scripted_episode_reaches_the_oracles_success(tmp_path):
    with scripted(env_id="rec", wrap="mixed") as s:
        r = httpx.post(s.url + "/scripted/episode", json={"seed": 11})
        assert r.status_code == 200 and r.json()["task"] == "rec-11"
        rec, steps = episode(agent(s.url), seed=11)
    assert rec["termination"] == "arrived" and rec["is_success"]
    assert rec["unreadable_replies"] == 0 and rec["invalid_actions"] == 0
    stages = [st["reply"]["stage"] for st in steps[1:]]
    # "mixed" wraps reply i as plain JSON, fenced, in prose, in prose around a fence (i % 4);
    # the parser finds them at the stages json, fence, braces (the balanced {...}), fence
    cycle = ("json", "fence", "braces", "fence")
    assert len(stages) == rec["steps"] >= 4  # one reply per step, every wrap at least once
    assert stages == [cycle[i % 4] for i in range(len(stages))]
    assert rec["tokens"]["requests"] == rec["steps"] and rec["tokens"]["total_tokens"] > 0
    # the same oracle run directly takes the same number of steps
    direct = RecordingEnv()
    direct.reset(seed=11)
    o = RecordingOracle()
    o.reset(direct)
    n = 0
    while True:
        n += 1
        *_, term, trunc, _ = direct.step(o.act(direct))
        if term or trunc:
            break
    assert rec["steps"] == n


def test_consecutive_episodes_follow_the_seeds_and_retries_do_not_step_twice():
    with scripted(env_id="rec", seed=3, wrap="prose") as s:
        a = agent(s.url)
        for seed in (3, 4):
            rec, _ = episode(a, seed=seed)
            assert rec["is_success"], rec["termination"]
        # a request repeated verbatim gets the same answer without stepping the env
        s.start_episode(seed=9)
        msgs = [{"role": "user", "content": "same"}]
        c = a.client
        t1, t2 = c.chat(msgs).text, c.chat(msgs).text
        assert t1 == t2 and s.steps == 1


def test_a_failing_server_ends_the_episode_as_model_error():
    with scripted(env_id="rec", seed=1, faults=[500] * 50) as s:
        rec, _ = episode(agent(s.url, max_retries=2), seed=1)
    assert rec["termination"] == "model_error" and "HTTP 500" in rec["error"]
    assert rec["steps"] == 0 and rec["tokens"]["requests"] == 3 and rec["task_id"] == "rec-1"


def test_prompt_builder_keeps_past_turns_as_text():
    with scripted(env_id="rec", seed=2) as s:
        client = ChatClient(ClientConfig(base_url=s.url, model="m"))
        a = LMMAgent(client=client, prompt_builder=PromptBuilder(history=2))
        env = a.wrap(RecordingEnv())
        obs, info = env.reset(seed=2)
        a.reset(env, env.unwrapped.task)
        for _ in range(3):
            obs, *_, info = env.step(a.act(obs, info))
        msgs = a.prompt_builder.build(env)
    roles = [m["role"] for m in msgs]
    assert roles == ["system", "user", "assistant", "user", "assistant", "user"]
    assert isinstance(msgs[1]["content"], str) and "images of this past turn" in msgs[1]["content"]
    assert isinstance(msgs[-1]["content"], list)  # the current turn keeps its image


def test_the_cli_server_in_a_subprocess_drives_an_episode():
    import subprocess
    import sys

    cmd = [
        sys.executable,
        "-m",
        "urban_gym.cli",
        "serve-scripted",
        "tests.wrappers.recording_env:UrbanGymTest/Recording-v0",
        "--port",
        "0",
        "--seed",
        "5",
        "--wrap",
        "mixed",
        "--fail",
        "503",
        "--oracle",
        "tests.wrappers.recording_env:RecordingOracle",
    ]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()
        assert line.startswith("serving "), line + proc.stderr.read()
        url = line.rsplit(" at ", 1)[1].strip()
        rec, _ = episode(agent(url), seed=5)
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    assert rec["is_success"] and rec["termination"] == "arrived"
    assert rec["tokens"]["retries"] == 1  # the 503 was retried
