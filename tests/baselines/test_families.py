"""Each environment family through both faces: the language-model face against
``urban-gym serve-scripted`` on loopback (must reach the oracle's success), and the RL face
under MaskablePPO for 2,048 steps. Plus: every valid action of every env round-trips
through the reply parser."""

from __future__ import annotations

import json
import math
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from urban_gym.baselines.lmm import ChatClient, ClientConfig, LMMAgent
from urban_gym.envs.actions import InvalidAction
from urban_gym.eval.trace import run_episode
from urban_gym.tasks.families import family_of
from urban_gym.wrappers.protocols import PROTOCOLS, protocol_for
from urban_gym.wrappers.stacks import make_lmm_env

#: family -> (env id, gym.make kwargs of the LM test, of the RL test, reset options, seed).
#: Small images keep the tests fast; the RL views are rendered at 36 px (sb3's CNN minimum).
CASES = {
    "posegraph360": (
        "UrbanGym/PoseGraph360-v0",
        {
            "view_size": 96,
            "pano_width": 256,
            "task_types": ["map_navigation"],
            "difficulties": ["easy"],
        },
        {
            "view_size": 36,
            "pano_width": 128,
            "task_types": ["map_navigation"],
            "difficulties": ["easy"],
        },
        None,
        0,
    ),
    "streetgraph": (
        "UrbanGym/StreetGraph-v0",
        {"image_size": 64},
        {"image_size": 36},
        {"task_index": 0},
        0,
    ),
    "citywalk": (
        "UrbanGym/CityWalk-v0",
        {"view_size": 64, "task_types": ["SGN"]},
        {"view_size": 36},
        {"task_index": 0},
        0,
    ),
}


def _citywalk_rl_tasks() -> list[dict]:
    """Four daylight SGN tasks: few distinct light conditions keep the renderer's caches warm
    while the random early policy resets often."""
    from urban_gym.families.citywalk.tasks import DEFAULT_SUITE_PATH as DEFAULT_SUITE
    from urban_gym.tasks.suite import load_suite

    tasks = [t for t in load_suite(DEFAULT_SUITE) if t.type == "SGN" and t.difficulty == "l2"]
    return [t.to_dict() for t in tasks[:4]]


def serve(env_id: str, kwargs: dict, options: dict, seed: int, *extra: str):
    cmd = [
        sys.executable,
        "-m",
        "urban_gym.cli",
        "serve-scripted",
        env_id,
        "--port",
        "0",
        "--seed",
        str(seed),
        "--env-kwargs",
        json.dumps(kwargs),
        *extra,
    ]
    if options is not None:
        cmd += ["--options", json.dumps(options)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = proc.stdout.readline()
    if not line.startswith("serving "):
        proc.kill()
        raise AssertionError(line + proc.stderr.read())
    return proc, line.rsplit(" at ", 1)[1].strip()


@pytest.fixture(scope="module")
def lmm_envs():
    """The language-model stack of each family (built once: worlds take seconds to load)."""
    envs = {f: make_lmm_env(c[0], env_kwargs=c[1]) for f, c in CASES.items()}
    yield envs
    for e in envs.values():
        e.close()


@pytest.mark.parametrize("family", sorted(CASES))
def test_lmm_face_reaches_the_oracles_success(family, lmm_envs):
    env_id, kwargs, _, options, seed = CASES[family]
    env = lmm_envs[family]
    proc, url = serve(env_id, kwargs, options, seed, "--wrap", "mixed")
    client = ChatClient(ClientConfig(base_url=url, model="scripted", backoff_s=0.05))
    try:
        rec, trace = run_episode(env, LMMAgent(client=client), seed=seed, options=options)
    finally:
        client.close()
        proc.terminate()
        proc.wait(timeout=10)
    assert family_of(env).name == family
    assert rec["is_success"] and rec["metrics"]["success"] == 1.0, rec["termination"]
    assert rec["unreadable_replies"] == 0 and rec["invalid_actions"] == 0
    assert rec["steps"] == rec["tokens"]["requests"] == len(trace) - 1
    assert {s["reply"]["stage"] for s in trace.steps()[1:]} >= (
        {"json"} if rec["steps"] < 2 else {"json", "fence"}
    )
    json.dumps(rec)


BAD_REPLIES = [
    "",
    '{"thought": "I will go',  # truncated
    "Let me walk towards the goal.",  # not JSON
    '{"thoughts": "x", "heading": 3, "where": "there"}',  # wrong keys
    '{"action": "nonexistent_action"}',
    "x" * 10_000_000,
]


@pytest.mark.parametrize("family", sorted(CASES))
def test_bad_replies_cost_a_step_each_and_never_raise(family, lmm_envs):
    _, _, _, options, seed = CASES[family]
    env = lmm_envs[family]
    env.reset(seed=seed, options=options)
    out_of_range = {
        "posegraph360": '{"action": "A", "size": "HUGE"}',
        "streetgraph": '{"action": "go", "option": 99}',
        "citywalk": '{"action": "look", "yaw": 720}',
    }[family]
    for k, reply in enumerate([*BAD_REPLIES, out_of_range], start=1):
        _, _, terminated, truncated, info = env.step(reply)
        assert not (terminated or truncated)
        assert not info["action_valid"] and info["invalid_actions"] == k
        assert env.feedback and env.messages()[1]["content"]
    assert info["unreadable_replies"] == 5  # empty, truncated, prose, wrong keys, 10 MB


@pytest.mark.parametrize("family", sorted(CASES))
def test_rl_face_trains_maskable_ppo(family):
    from urban_gym.baselines.rl import train_maskable_ppo

    env_id, _, kwargs, _, _ = CASES[family]
    if family == "citywalk":
        kwargs = {**kwargs, "tasks": _citywalk_rl_tasks()}
    model, stats = train_maskable_ppo(
        env_id,
        total_timesteps=2048,
        n_steps=256,
        batch_size=64,
        n_epochs=1,
        image_size=(36, 36),
        seed=0,
        env_kwargs=kwargs,
    )
    assert stats["timesteps"] >= 2048
    # the masks reached the policy: over 2,048 steps of an untrained policy, not one action
    # the env rejected (unmasked, most of StreetGraph's and PoseGraph360's are invalid)
    assert stats["invalid_actions"] == 0, stats
    # the policy was trained: one epoch on each of the 2048 / 256 = 8 rollouts
    assert stats["updates"] == 8, stats
    assert math.isfinite(stats["loss"]), stats
    assert 0.0 < stats["param_change"] < 1e3, stats


@pytest.fixture(scope="module")
def action_sets(lmm_envs):
    out = {}
    for family, env in lmm_envs.items():
        _, _, _, options, seed = CASES[family]
        env.reset(seed=seed, options=options)
        u = env.unwrapped
        valid = []
        for a in [*u.action_set.examples(), *u.action_table]:
            try:
                valid.append(u.action_set.normalise(a))
            except InvalidAction:  # e.g. an unused answer head without text
                pass
        out[family] = (u.action_set, valid)
    return out


PROSE = st.text(
    alphabet=st.characters(blacklist_characters="{}[]\"`\\'", blacklist_categories=("Cs",)),
    max_size=60,
)


@settings(max_examples=40, deadline=None)
@given(
    protocol=st.sampled_from(sorted(PROTOCOLS)),
    flat=st.booleans(),
    kind=st.integers(0, 3),
    before=PROSE,
    after=PROSE,
)
def test_every_valid_action_of_every_env_round_trips(
    action_sets, protocol, flat, kind, before, after
):
    p = protocol_for(protocol)
    for action_set, valid in action_sets.values():
        for action in valid:
            body = (
                json.dumps(action)
                if flat
                else p.format_reply(action, {"thought": "t", "memory": "m"}, action_set)
            )
            text = [
                body,
                f"{before}\n{body}\n{after}",
                f"```json\n{body}\n```",
                f"{before}\n```\n{body}\n```\n{after}",
            ][kind]
            r = p.parse(text, action_set)
            assert r.action == action, (r.error, text)
