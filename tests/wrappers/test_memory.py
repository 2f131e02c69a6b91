"""Reflection memory and the memory helpers."""

from __future__ import annotations

import pytest
from gymnasium.utils.env_checker import check_env

from tests.wrappers.recording_env import RecordingEnv
from urban_gym.errors import UrbanGymError
from urban_gym.wrappers.lmm_interface import LMMInterface
from urban_gym.wrappers.memory import (
    TRUNCATION_MARK,
    ReflectionMemory,
    compass_name,
    fit_budget,
)


def test_fit_budget_keeps_the_end_behind_a_mark():
    assert fit_budget("abc", 5) == ("abc", False)
    text, cut = fit_budget("0123456789" * 3, 16)
    assert cut and len(text) == 16 and text == TRUNCATION_MARK + "0123456789"


def test_reflection_memory_is_kept_verbatim_and_cut_by_the_rule():
    env = RecordingEnv()
    mem = ReflectionMemory(env, budget=20)
    obs, info = mem.reset(seed=0)
    assert obs["memory"] == "" and info["memory_truncations"] == 0
    obs, *_, info = mem.step({"action": "turn", "angle": 90, "memory": "saw a red door"})
    assert obs["memory"] == "saw a red door" and info["memory_truncations"] == 0
    # the env never sees the memory key
    assert env.received[-1] == {"action": "turn", "angle": 90}
    obs, *_, info = mem.step({"action": "turn", "angle": 90})  # nothing written: kept
    assert obs["memory"] == "saw a red door"
    obs, *_, info = mem.step({"action": "turn", "angle": 90, "memory": "A" * 10 + "B" * 20})
    assert obs["memory"] == TRUNCATION_MARK + "B" * 14 and info["memory_truncations"] == 1
    obs, *_ = mem.step({"action": "turn", "angle": 90, "memory": "naïve → ☃"})
    assert obs["memory"] == "naïve → ?"  # outside the charset -> "?"
    assert mem.observation_space.contains(obs)
    obs, _ = mem.reset(seed=0)
    assert obs["memory"] == "" and mem.truncations == 0


def test_reflection_memory_reads_the_reply_field_through_the_lmm_face():
    env = RecordingEnv()
    lm = LMMInterface(ReflectionMemory(env, budget=50), protocol="react")
    lm.reset(seed=0)
    lm.step('{"thought": "x", "action": {"name": "turn", "angle": 45}, "memory": "goal is east"}')
    user = lm.messages()[1]["content"][0]["text"]
    assert "## Your memory (what you wrote last step)\ngoal is east" in user


@pytest.mark.filterwarnings("ignore:.*different from the unwrapped")
def test_reflection_memory_passes_check_env_and_rejects_bad_setup():
    check_env(ReflectionMemory(RecordingEnv()), skip_render_check=True)
    with pytest.raises(UrbanGymError, match="budget=0"):
        ReflectionMemory(RecordingEnv(), budget=0)


def test_compass_names():
    assert [compass_name(b) for b in (0, 44, 46, 90, 180, 270, 337.6, 359)] == [
        "north",
        "north-east",
        "north-east",
        "east",
        "south",
        "west",
        "north",
        "north",
    ]
