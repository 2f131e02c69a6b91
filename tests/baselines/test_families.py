"""Each environment family through both faces: the language-model face against
``urban-gym serve-scripted`` on loopback (must reach the oracle's success), and the RL face
under MaskablePPO for 2,048 steps. Plus: every valid action of every env round-trips
through the reply parser."""

from __future__ import annotations

import json
import subprocess
import sys

import gymnasium as gym
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from urban_gym.baselines.lmm import ChatClient, ClientConfig, LMMAgent, run_episode
from urban_gym.envs.actions import InvalidAction
from urban_gym.wrappers.protocols import PROTOCOLS, protocol_for
from urban_gym.wrappers.stacks import family_of, make_lm_env

#: family -> (env id, gym.make kwargs of the LM test, of the RL test, reset options, seed).
#: Small images keep the tests fast; the RL views are rendered at 36 px (sb3's CNN minimum).
CASES = {
    "posegraph360": (
        "UrbanGym/PoseGraph360-v0",
        {"view_size": 96, "pano_width": 256, "task_types": ["map_navigation"],
         "difficulties": ["easy"]},
        {"view_size": 36, "pano_width": 128, "task_types": ["map_navigation"],
         "difficulties": ["easy"]},
        None,
        0,
    ),
    "streetgraph": (
        "UrbanGym/StreetGraph-v0", {"image_size": 64}, {"image_size": 36}, {"task_index": 0}, 0,
    ),
    "citywalk": (
        "UrbanGym/CityWalk-v0", {"view_size": 64, "task_types": ["SGN"]},
        {"view_size": 36, "task_types": ["SGN"]}, None, 0,
    ),
}  # fmt: skip


def serve(env_id: str, kwargs: dict, options: dict, seed: int, *extra: str):
    cmd = [sys.executable, "-m", "urban_gym.cli", "serve-scripted", env_id, "--port", "0",
           "--seed", str(seed), "--env-kwargs", json.dumps(kwargs), *extra]  # fmt: skip
    if options is not None:
        cmd += ["--options", json.dumps(options)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = proc.stdout.readline()
    if not line.startswith("serving "):
        proc.kill()
        raise AssertionError(line + proc.stderr.read())
    return proc, line.rsplit(" at ", 1)[1].strip()


@pytest.mark.parametrize("family", sorted(CASES))
def test_language_model_face_reaches_the_oracles_success(family):
    env_id, kwargs, _, options, seed = CASES[family]
    proc, url = serve(env_id, kwargs, options, seed, "--wrap", "mixed")
    try:
        env = make_lm_env(env_id, env_kwargs=kwargs)
        client = ChatClient(ClientConfig(base_url=url, model="scripted", backoff_s=0.05))
        rec = run_episode(env, LMMAgent(client), seed=seed, options=options)
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    assert family_of(env) == family
    assert rec["is_success"] and rec["metrics"]["success"] == 1.0, rec["termination"]
    assert rec["metrics"]["unreadable_replies"] == 0 and rec["metrics"]["invalid_actions"] == 0
    assert rec["l"] == rec["metrics"]["model_replies"] == rec["usage"]["requests"]
    assert {s["reply"]["stage"] for s in rec["steps"]} >= ({"json"} if rec["l"] < 2 else
                                                           {"json", "fence"})  # fmt: skip
    json.dumps(rec)


@pytest.mark.parametrize("family", sorted(CASES))
def test_rl_face_trains_maskable_ppo(family):
    from urban_gym.baselines.rl import train_maskable_ppo

    env_id, _, kwargs, _, _ = CASES[family]
    model, stats = train_maskable_ppo(
        env_id, total_timesteps=2048, n_steps=256, batch_size=64, n_epochs=1,
        image_size=(36, 36), seed=0, env_kwargs=kwargs,
    )  # fmt: skip
    assert stats["timesteps"] >= 2048


@pytest.fixture(scope="module")
def action_sets():
    out = {}
    for family, (env_id, kwargs, _, options, seed) in CASES.items():
        env = gym.make(env_id, **kwargs)
        env.reset(seed=seed, options=options)
        u = env.unwrapped
        valid = []
        for a in [*u.action_set.examples(), *u.action_table]:
            try:
                valid.append(u.action_set.normalise(a))
            except InvalidAction:  # e.g. an unused answer head without text
                pass
        out[family] = (u.action_set, valid)
        env.close()
    return out


PROSE = st.text(
    alphabet=st.characters(blacklist_characters="{}[]\"`\\'", blacklist_categories=("Cs",)),
    max_size=60,
)


@settings(max_examples=60, deadline=None)
@given(index=st.integers(0, 10_000), protocol=st.sampled_from(sorted(PROTOCOLS)),
       flat=st.booleans(), kind=st.integers(0, 3), before=PROSE, after=PROSE)  # fmt: skip
def test_every_valid_action_of_every_env_round_trips(
    action_sets, index, protocol, flat, kind, before, after
):
    p = protocol_for(protocol)
    for action_set, valid in action_sets.values():
        for action in (valid[index % len(valid)], valid[(index * 7) % len(valid)]):
            body = json.dumps(action) if flat else p.format_reply(
                action, {"thought": "t", "memory": "m"}, action_set)  # fmt: skip
            text = [body, f"{before}\n{body}\n{after}", f"```json\n{body}\n```",
                    f"{before}\n```\n{body}\n```\n{after}"][kind]  # fmt: skip
            r = p.parse(text, action_set)
            assert r.action == action, (r.error, text)
