"""benchmarks/busy_env.py: the control env of the vector-env scaling benchmark spends the
step times it is given, in order, and is a valid Gymnasium env."""

from __future__ import annotations

import time

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

from benchmarks import busy_env


def test_steps_spend_the_given_times_in_order_from_the_seed_offset():
    env = busy_env.BusySteps([0.0, 0.03, 0.0], view_size=8, actions=3)
    obs, info = env.reset(seed=1)  # offset 7919 % 3 = 2: times 0.0, 0.0, 0.03, 0.0, ...
    assert info == {} and obs["view"].shape == (8, 8, 3) and obs["action_mask"].tolist() == [1] * 3
    spent = []
    for _ in range(4):
        t = time.perf_counter()
        env.step(0)
        spent.append(time.perf_counter() - t)
    # the third step spins 30 ms; the others spin none (the longest of the four whatever
    # else the machine runs meanwhile)
    assert spent[2] >= 0.03 and spent.index(max(spent)) == 2


def test_is_a_registered_valid_env():
    check_env(busy_env.BusySteps([0.0], view_size=4), skip_render_check=True)
    env = gym.make(busy_env.ID, times=[0.0])
    obs, _ = env.reset(seed=0)
    assert np.all(obs["view"] == 0)


@pytest.mark.parametrize("times", [[], [0.1, -1.0]])
def test_bad_times_are_named(times):
    with pytest.raises(ValueError, match="times must be"):
        busy_env.BusySteps(times)


def test_routing_sources_are_the_ends_of_edges_around_random_places(small_city):
    from benchmarks.bench_routing import sources
    from urban_gym.world.routing import Router

    router = Router(small_city)
    src = sources(small_city, router, 6)
    assert len(src) == 6 and src == sources(small_city, router, 6)  # seeded
    for u, du, v, dv in src:
        length = small_city.network.edges[u, v]["length"]
        assert du >= 0 and dv >= 0 and du + dv == pytest.approx(length)
