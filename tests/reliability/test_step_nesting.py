"""Deeply nested actions (the env) and replies (the parser) are invalid-action steps, never
a ``RecursionError``."""

from __future__ import annotations

import json

import pytest

from tests.reliability.small import IDS, make_small
from urban_gym.wrappers.lmm_interface import LMMInterface
from urban_gym.wrappers.parsing import parse_reply


def nested(depth: int, kind: str, leaf: object = "W") -> object:
    """``depth`` levels of ``{"action": ...}`` (kind ``"dict"``), ``[...]`` (``"list"``)
    or ``{"x": [...]}`` alternating (``"mixed"``) around ``leaf``, built without
    recursion."""
    value = leaf
    for level in range(depth):
        if kind == "dict":
            value = {"action": value}
        elif kind == "list":
            value = [value]
        else:
            value = {"x": value} if level % 2 else [value]
    return value


@pytest.fixture(scope="module", params=IDS)
def env(request):
    e = make_small(request.param, images=False)
    yield e
    e.close()


@pytest.mark.parametrize("kind", ["dict", "list", "mixed"])
def test_5000_deep_action_is_an_invalid_step(env, kind):
    env.reset(seed=0)
    obs, reward, terminated, truncated, info = env.step(nested(5000, kind))
    assert info["action_valid"] is False and env.observation_space.contains(obs)
    assert len(info["invalid_action"]) < 400
    assert ("..." in info["invalid_action"]) or ("[[[" in info["invalid_action"])


def test_5000_deep_parameter_values_are_invalid_steps(env):
    from urban_gym.envs.actions import describe_value

    env.reset(seed=0)
    aset = env.unwrapped.action_set
    for spec, example in zip(aset.specs, aset.examples()):
        for p in spec.params:
            deep = nested(5000, "mixed")
            _, _, terminated, truncated, info = env.step({**example, p.name: deep})
            assert info["action_valid"] is False
            assert f"{p.name}={describe_value(deep)}" in info["invalid_action"]
            if terminated or truncated:
                env.reset(seed=0)


def reply_500_deep(kind: str) -> str:
    if kind == "action":  # {"action": {"action": ... "go" ...}}
        return '{"action":' * 500 + '"go"' + "}" * 500
    if kind == "field":  # a deep reply field beside a valid-looking action
        return '{"action": "stop", "thought": ' + "[" * 500 + "]" * 500 + "}"
    if kind == "no_action":
        return '{"thought":' * 500 + '"x"' + "}" * 500
    return "```json\n" + "[" * 500 + '"W"' + "]" * 500 + "\n```"  # a fenced deep list


@pytest.mark.parametrize("env_id", IDS)
def test_500_deep_replies_through_the_language_model_interface(env_id):
    """The parser and the env on replies nested 500 deep (the episode record of such replies
    is tested with the records, ``tests/reliability/test_records.py``)."""
    env = LMMInterface(make_small(env_id, images=False))
    env.reset(seed=0)
    for kind in ("action", "field", "no_action", "fenced"):
        obs, reward, terminated, truncated, info = env.step(reply_500_deep(kind))
        assert env.observation_space.contains(obs)
        json.dumps(info["reply"])  # the reply summary stays writable
        if kind in ("action", "no_action"):
            assert info["action_valid"] is False
            assert len(info["invalid_action"]) < 400
        if terminated or truncated:
            env.reset(seed=0)
        env.messages()  # the next prompt can be built
    env.close()


def test_parse_reply_summarises_deep_and_huge_fields():
    from urban_gym.envs.actions import describe_value
    from urban_gym.families.posegraph360.env import make_action_set

    aset = make_action_set()
    r = parse_reply('{"action": "W", "memory": ' + "[" * 900 + "]" * 900 + "}", aset)
    assert r.ok and r.action == {"action": "W", "size": "SMALL"}
    assert json.loads(json.dumps(r.to_dict()))["action"] == {"action": "W", "size": "SMALL"}
    r = parse_reply('{"action":' * 6 + '"X"' + "}" * 6, aset)
    assert not r.ok and "unknown action {'action': {'action': {'action': {...}}}}" in r.error
    # a value no json.dumps can write is kept as its shortened repr
    deep = nested(5000, "list")
    r.fields = {"thought": deep}
    assert r.to_dict()["fields"] == describe_value({"thought": deep}, 200)
