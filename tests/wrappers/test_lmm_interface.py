"""The language-model face on the recording env: messages, images, replies -> actions."""

from __future__ import annotations

import json

import numpy as np
import pytest

from tests.wrappers.recording_env import RecordingEnv
from urban_gym.envs.actions import UnreadableReply
from urban_gym.wrappers.images import decode_data_url, fit_images
from urban_gym.wrappers.lmm_interface import (
    LMMInterface,
    ReplyAction,
)


def make(**kw):
    env = RecordingEnv(**kw)
    return env, LMMInterface(env)


def test_messages_carry_schema_task_mask_and_image():
    env, lm = make(family="citywalk")
    lm.reset(seed=1)
    system, user = lm.messages()
    assert system["role"] == "system" and user["role"] == "user"
    # the action schema from the env's ActionSet, and the family's protocol fields
    assert "`move`" in system["content"] and '"oneOf"' in system["content"]
    assert '"observation"' in system["content"] and '"reason"' in system["content"]
    texts = [p["text"] for p in user["content"] if p["type"] == "text"]
    assert "## Task\n" + env.task.instruction in texts[0]
    assert "## Actions possible now" in texts[0]
    urls = [p["image_url"]["url"] for p in user["content"] if p["type"] == "image_url"]
    assert len(urls) == 1 and urls[0].startswith("data:image/jpeg;base64,")
    assert decode_data_url(urls[0]).shape == (24, 32, 3)


def test_images_are_downscaled_in_steps_to_fit_the_budget():
    rng = np.random.default_rng(0)
    noisy = [rng.integers(0, 256, (256, 256, 3), dtype=np.uint8) for _ in range(2)]
    full = fit_images(noisy, 10**9, fmt="PNG")
    assert full.scale == 1.0 and full.steps == 0
    budget = full.total_bytes // 5
    fit = fit_images(noisy, budget, fmt="PNG")
    assert fit.total_bytes <= budget and fit.dropped == 0 and fit.steps >= 2
    assert fit.scale == pytest.approx(0.75**fit.steps)
    side = decode_data_url(fit.urls[0]).shape[0]
    assert side == round(256 * fit.scale)
    tiny = fit_images(noisy, 2_000, fmt="PNG")  # cannot fit even at the minimum side
    assert tiny.dropped == 2 and tiny.urls == []


def test_reply_text_drives_the_env_and_reaches_the_wrappers_below():
    env, lm = make()
    lm.reset(seed=3)
    obs, r, term, trunc, info = lm.step('{"thought": "t", "action": {"name": "turn", "angle": 90}}')
    got = env.received[-1]
    assert isinstance(got, ReplyAction) and dict(got) == {"action": "turn", "angle": 90.0}
    assert got.reply.fields["thought"] == "t" and info["reply"]["stage"] == "json"
    assert info["action_valid"] and lm.feedback == ""
    # ints and dicts pass through unchanged (scripted agents use the same stack)
    lm.step(4)
    assert env.received[-1] == 4


def test_unreadable_reply_costs_a_step_is_fed_back_and_counted():
    env, lm = make()
    lm.reset(seed=3)
    _, reward, term, trunc, info = lm.step("I would like to go north please")
    got = env.received[-1]  # the env took its own invalid-reply path
    assert isinstance(got, UnreadableReply) and got.message.startswith("your reply could not")
    assert env.steps == 1 and env.invalid == 1 and not info["action_valid"]
    assert info["invalid_actions"] == 1 and info["unreadable_replies"] == 1
    assert info["invalid_action"].startswith("your reply could not be read: no JSON object")
    user = lm.messages()[1]["content"][0]["text"]
    assert "## Your last reply was not carried out" in user and "no JSON object" in user
    # a found but invalid action goes to the env, whose own message is fed back
    lm.step('{"action": "turn", "angle": 720}')
    assert env.received[-1] == {"action": "turn", "angle": 720}
    assert "outside [-180, 180]" in lm.feedback and env.invalid == 2
    _, _, _, _, info = lm.step('{"action": "turn", "angle": 10}')
    assert info["action_valid"] and lm.feedback == "" and info["unreadable_replies"] == 1


@pytest.mark.parametrize(
    "reply",
    [
        "",
        '{"action": "move", "direction": "no',
        "just prose, no json",
        '{"actoin": "move"}',
        '{"action": "move", "direction": "north", "steps": 99}',
        '{"action": "answer", "text": ""}',
        "[]",
        "null",
        '{"action": null}',
        '{"action": {"name": {"x": 1}}}',
        "x" * 10_000_000,
        "{" * 5_000_000,
        json.dumps({"action": "move", "direction": "north"}) * 3,
    ],
)
def test_bad_replies_never_raise_from_step(reply):
    env, lm = make()
    lm.reset(seed=5)
    obs, r, term, trunc, info = lm.step(reply)
    assert env.steps == 1  # the reply cost exactly one step
    assert "reply" in info and isinstance(lm.messages()[1]["content"], list)


class Replies:
    """An agent that sends the given reply texts in order (on the language-model face)."""

    kind = "replies"

    def __init__(self, *texts):
        self.texts = list(texts)

    def wrap(self, env):
        return LMMInterface(env)

    def reset(self, env, task, seed=None):
        self.todo = list(self.texts)

    def act(self, obs, info):
        return self.todo.pop(0)

    def usage(self):
        return {}


def test_the_episode_record_keeps_the_model_replies():
    from tests.wrappers.recording_env import episode

    agent = Replies("nonsense", "nonsense", "nonsense", '```json\n{"action": "stop"}\n```')
    rec, steps = episode(agent, seed=2)
    json.dumps(rec)
    replies = [s["reply"] for s in steps[1:]]
    assert [r["ok"] for r in replies] == [False, False, False, True]
    assert replies[-1]["stage"] == "fence" and replies[0]["text"] == "nonsense"
    assert rec["unreadable_replies"] == 3 and rec["invalid_actions"] == 3


def test_the_face_declares_a_text_action_space_and_the_env_reads_the_reply_once(monkeypatch):
    """``spaces.Text`` in, one parse: the env takes the parser's canonical action as it is
    and does not normalise it a second time."""
    import gymnasium as gym

    import urban_gym  # noqa: F401
    from urban_gym.wrappers.stacks import make_lmm_env

    lm = make_lmm_env("UrbanGym/StreetGraph-Procedural-v0", env_kwargs={"observation": "symbolic"})
    assert isinstance(lm.action_space, gym.spaces.Text)
    reply = '{"thought": "t", "action": {"name": "go", "option": 0}}'
    assert lm.action_space.contains(reply) and isinstance(lm.action_space.sample(), str)
    lm.reset(seed=0)
    aset = lm.unwrapped.action_set
    calls = []
    real = aset.normalise
    monkeypatch.setattr(aset, "normalise", lambda a: calls.append(a) or real(a))
    *_, info = lm.step(reply)
    assert info["action_valid"] and len(calls) == 1
    *_, info = lm.step("no action here")
    assert not info["action_valid"] and info["invalid_action"].startswith(
        "your reply could not be read"
    )
