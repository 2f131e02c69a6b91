"""``gym.make_vec`` on every id, in sync and async mode.

Gymnasium 1.4's ``AsyncVectorEnv`` with shared memory (the default) decodes a ``Text``
entry of its shared buffer once, at construction, and returns that stale decoding
(``"\\t\\t\\t..."``) ever after; urban_gym's Text observations use
:class:`~urban_gym.envs.spaces.SharedMemoryText`, whose buffer is read at every step.
The rollouts below run the same seeded, masked random actions through a sync and an
async vector env and require identical observations (texts included), rewards and ends,
and ``close()`` returning."""

from __future__ import annotations

import copy
import threading
import time

import gymnasium as gym
import numpy as np
import pytest
from gymnasium import spaces

from tests.reliability.small import IDS, small_kwargs
from urban_gym.wrappers import make_rl_env

# ------------------------------------------------------------------ a toy env

WORDS = ("Go to Nyström.", "Иди к Охриду", "前往 渋谷駅", "اذهب إلى السوق", "emoji 🚶 \ud800")
CHARSET = frozenset("".join(WORDS))


class TextToy(gym.Env):
    """Says ``WORDS[step % 5]``; its Text space is ``spaces.Text`` or, with ``ours``,
    urban_gym's ``SharedMemoryText``."""

    metadata: dict = {"render_modes": []}

    def __init__(self, ours: bool = False) -> None:
        if ours:
            from urban_gym.envs.spaces import SharedMemoryText as text_space
        else:
            text_space = spaces.Text
        self.observation_space = spaces.Dict(
            {"text": text_space(32, charset=CHARSET), "n": spaces.Box(0, 100, (1,), np.int64)}
        )
        self.action_space = spaces.Discrete(2)
        self.t = 0

    def _obs(self):
        return {"text": WORDS[self.t % len(WORDS)], "n": np.array([self.t], np.int64)}

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = int(self.np_random.integers(3))
        return self._obs(), {}

    def step(self, action):
        self.t += 1 + int(action)
        return self._obs(), 0.0, False, False, {}


def expected(ns) -> tuple[str, ...]:
    return tuple(WORDS[int(n) % len(WORDS)] for n in np.asarray(ns).reshape(-1))


def test_gymnasium_text_is_garbled_by_shared_memory_and_ours_is_not():
    plain = gym.vector.AsyncVectorEnv([lambda: TextToy()] * 2)
    obs, _ = plain.reset(seed=0)
    # the reproduction of the Gymnasium bug: the charset's first character, max_length times
    assert obs["text"] == (min(CHARSET) * 32,) * 2 != expected(obs["n"])
    plain.close()

    ours = gym.vector.AsyncVectorEnv([lambda: TextToy(ours=True)] * 2)
    obs, _ = ours.reset(seed=0)
    assert obs["text"] == expected(obs["n"]) and type(obs["text"]) is tuple
    for a in ([0, 1], [1, 1], [0, 0]):
        obs, *_ = ours.step(np.array(a))
        assert obs["text"] == expected(obs["n"])
    ours.close()


def test_shared_texts_without_copy_is_a_live_view():
    from urban_gym.envs.spaces import SharedTexts

    v = gym.vector.AsyncVectorEnv([lambda: TextToy(ours=True)] * 2, copy=False)
    obs, _ = v.reset(seed=0)
    view = obs["text"]
    assert isinstance(view, SharedTexts) and len(view) == 2
    first = tuple(view)
    obs, *_ = v.step(np.array([0, 0]))
    assert obs["text"] is view and tuple(view) != first and view == expected(obs["n"])
    assert copy.deepcopy(view) == tuple(view) and view[0:1] == (view[0],)
    v.close()


def test_shared_memory_text_is_still_a_gymnasium_text():
    from urban_gym.envs.spaces import SharedMemoryText

    s = SharedMemoryText(8, charset="ab")
    assert s == spaces.Text(8, charset="ab") and s.contains("abba") and not s.contains("abc")
    assert isinstance(s.sample(), str)


# ------------------------------------------------------------------ every id


def same(a, b) -> bool:
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, np.ndarray):
        return np.array_equal(a, b)
    return a == b


def closes(env, timeout: float = 60.0) -> bool:
    """Whether ``env.close()`` returns within ``timeout`` seconds."""
    t = threading.Thread(target=env.close, daemon=True)
    t.start()
    t.join(timeout)
    return not t.is_alive()


def masked_actions(obs, rng: np.random.Generator) -> np.ndarray:
    return np.array([int(rng.choice(np.flatnonzero(m))) for m in obs["action_mask"]])


def sync_and_async_rollout(env_id: str, steps: int, images: bool) -> dict:
    kw = small_kwargs(env_id, images)
    sync = gym.make_vec(env_id, num_envs=2, vectorization_mode="sync", **kw)
    asy = gym.make_vec(env_id, num_envs=2, vectorization_mode="async", **kw)
    text_keys = [
        k for k, s in sync.single_observation_space.spaces.items() if isinstance(s, spaces.Text)
    ]
    assert text_keys
    rng = np.random.default_rng(11)
    obs_s, info_s = sync.reset(seed=5)
    obs_a, info_a = asy.reset(seed=5)
    assert same(obs_s, obs_a) and info_s.keys() == info_a.keys()
    ends = 0
    for _ in range(steps):
        action = masked_actions(obs_s, rng)
        obs_s, r_s, te_s, tr_s, info_s = sync.step(action)
        obs_a, r_a, te_a, tr_a, info_a = asy.step(action)
        assert same(obs_s, obs_a), (obs_s, obs_a)
        assert np.array_equal(r_s, r_a) and np.array_equal(te_s | tr_s, te_a | tr_a)
        assert info_s.keys() == info_a.keys()
        ends += int(np.sum(te_s | tr_s))
    instr = obs_a["instruction"]
    assert all(len(set(t)) > 3 for t in instr), instr  # real sentences, not "\t\t\t..."
    assert all(asy.single_observation_space[k].contains(t) for k in text_keys for t in obs_a[k])
    assert closes(sync) and closes(asy)
    return {"ends": ends}


@pytest.mark.parametrize("env_id", IDS)
def test_sync_and_async_vector_envs_agree(env_id):
    out = sync_and_async_rollout(env_id, steps=60, images=False)
    assert out["ends"] >= 0


@pytest.mark.slow
@pytest.mark.parametrize("env_id", IDS)
def test_sync_and_async_vector_envs_agree_500_steps_with_images(env_id):
    t0 = time.perf_counter()
    out = sync_and_async_rollout(env_id, steps=500, images=True)
    assert out["ends"] >= 1, "500 steps of two envs should end an episode"
    print(f"{env_id}: 500 vector steps in {time.perf_counter() - t0:.1f} s")


@pytest.mark.parametrize("env_id", IDS)
def test_rl_face_in_an_async_vector_env(env_id):
    v = gym.make_vec(
        env_id,
        num_envs=2,
        vectorization_mode="async",
        wrappers=[lambda e: make_rl_env(e, image_size=(16, 16))],
        **small_kwargs(env_id, images=False),
    )
    rng = np.random.default_rng(0)
    obs, _ = v.reset(seed=0)
    for _ in range(40):
        obs, *_ = v.step(masked_actions(obs, rng))
    assert not any(isinstance(s, spaces.Text) for s in v.single_observation_space.spaces.values())
    assert closes(v)
