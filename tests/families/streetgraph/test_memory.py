"""CityNav's AgentNav memory on an intersection-graph env and on StreetGraph."""

from __future__ import annotations

import gymnasium as gym

from tests.wrappers.recording_env import RecordingGraphEnv
from urban_gym.families.streetgraph.memory import AgentNavMemory
from urban_gym.wrappers.memory import compass_name


def test_agentnav_memory_history_and_previous_visits():
    env = RecordingGraphEnv()
    mem = AgentNavMemory(env)
    obs, info = mem.reset()
    assert obs["decision_history"] == "" and obs["previous_visits"] == ""
    # node 0: option 0 -> node 1 (east, 90°)
    obs, *_ = mem.step({"action": "go", "option": 0, "memory": "heading east"})
    assert obs["decision_history"] == "1. east (90°)" and obs["memory"] == "heading east"
    assert obs["previous_visits"] == ""
    # node 1: option 1 -> back to node 0 (west, 270°)
    obs, *_ = mem.step(3 - 2)  # Discrete index 1 = option 1
    assert obs["decision_history"] == "1. east (90°)\n2. west (270°)"
    assert (
        obs["previous_visits"]
        == "You have been at this intersection 1 time before; you went: east (90°)."
    )
    assert obs["memory"] == "heading east"  # not rewritten
    # node 0 again: option 1 -> node 3 (north)
    obs, *_ = mem.step({"action": "go", "option": 1})
    obs, *_ = mem.step({"action": "go", "option": 0})  # node 3 -> node 0 (south)
    assert obs["previous_visits"] == (
        "You have been at this intersection 2 times before; you went: east (90°), north (0°)."
    )
    # an invalid action records no decision
    obs, *_ = mem.step({"action": "go", "option": 5})
    assert obs["decision_history"].count("\n") == 3
    assert mem.observation_space.contains(obs)


def test_agentnav_memory_on_streetgraph_records_the_chosen_bearings():

    from urban_gym.baselines.oracles import make_oracle

    env = AgentNavMemory(gym.make("UrbanGym/StreetGraph-v0", observation="symbolic"))
    obs, _ = env.reset(seed=0, options={"task_index": 0})
    oracle = make_oracle(env)
    oracle.reset(env)
    expected = []
    for _ in range(3):
        action = oracle.act(env)
        b = float(obs["bearings"][action["option"]]) % 360
        expected.append(f"{compass_name(b)} ({b:.0f}°)")
        obs, *_ = env.step({**action, "memory": f"after {len(expected)}"})
    lines = obs["decision_history"].splitlines()
    assert lines == [f"{i}. {e}" for i, e in enumerate(expected, start=1)]
    assert obs["memory"] == "after 3"
    env.close()
