"""How many threads draw a native vector env's batch (:class:`ThreadChoice`): measured on
the env's own batches when not given, fixed when given; the observations never depend on it.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import urban_gym  # noqa: F401 - registers the ids
from urban_gym.envs.vector import ThreadChoice


def test_the_faster_count_per_env_is_kept_after_the_trials():
    c = ThreadChoice((1, 2), trials=2, warmup=1)
    c.record(1, 4, 9.0)  # the warm-up batch: not timed
    assert c.chosen is None and [c.now(), c.now()] == [1, 1]  # no trial recorded yet
    c.record(1, 4, 0.40)  # 0.10 s an env on one thread
    assert c.now() == 2
    c.record(2, 4, 0.60)  # 0.15 s an env on two
    c.record(1, 1, 9.00)  # one env: not a trial (below min_envs)
    assert c.now() == 1 and c.chosen is None
    c.record(1, 8, 0.96)  # 0.12
    c.record(2, 8, 1.28)  # 0.16
    # medians: one thread 0.11 s an env, two 0.155: one thread is kept
    assert c.chosen == 1 and c.now() == 1
    c.record(2, 8, 0.01)  # after the choice nothing changes it
    assert c.chosen == 1


def test_two_threads_win_when_they_are_faster():
    c = ThreadChoice((1, 2), trials=1, warmup=0)
    c.record(1, 4, 0.8)
    c.record(2, 4, 0.5)
    assert c.chosen == 2


def test_a_given_count_is_fixed():
    c = ThreadChoice((3,))
    assert c.chosen == 3 and c.now() == 3
    c.record(3, 10, 1.0)
    assert c.chosen == 3


@pytest.mark.parametrize("threads", [None, 1, 2])
def test_make_vec_chooses_and_the_observations_do_not_depend_on_it(threads):
    def rollout(th):
        v = gym.make_vec("UrbanGym/CityWalk-v0", num_envs=4, view_size=32, threads=th)
        rng = np.random.default_rng(0)
        obs, _ = v.reset(seed=3)
        views = [obs["view"]]
        for _ in range(24):
            m = v.action_masks()
            obs, *_ = v.step((rng.random(m.shape) * m).argmax(1))
            views.append(obs["view"])
        choice = v.thread_choice
        v.close()
        return np.stack(views), choice

    views, choice = rollout(threads)
    reference, _ = rollout(1)
    np.testing.assert_array_equal(views, reference)
    if threads is None:  # 25 batches of 4 envs: 4 warm-up and 16 trials done, one count kept
        assert choice.chosen in choice.candidates and 1 in choice.candidates
    else:
        assert choice.chosen == threads


def test_a_lap_times_a_batch_until_the_next_one_starts():
    c = ThreadChoice((1, 2), trials=1, warmup=0)
    c.lap(1, 4, 10.0)  # batch 1 starts on one thread
    c.lap(2, 4, 10.5)  # batch 2 starts: batch 1 took 0.5 s, 0.125 s an env
    assert c.times == {1: [0.125], 2: []} and c.chosen is None
    c.lap(1, 4, 11.25)  # batch 2 took 0.75 s on two threads: 0.1875 s an env
    assert c.times[2] == [0.1875] and c.chosen == 1
    c.lap(1, 4, 99.0)  # chosen: nothing more is timed
    assert c.times == {1: [0.125], 2: [0.1875]}
