"""The native vector env over worker processes (``workers=P``,
:class:`urban_gym.envs.workers.ShardedVectorEnv`) against the same vector env in one
process: seeded masked random actions over episodes that end and restart, every array,
text, reward, end and info key equal, in every autoreset mode.
"""

from __future__ import annotations

import os
import signal
from typing import Any

import gymnasium as gym
import numpy as np
import pytest

from tests.reliability.small import small_kwargs
from urban_gym.envs.vector import NativeVectorEnv, batch_infos
from urban_gym.envs.workers import ShardedVectorEnv, merge_infos, shard_sizes
from urban_gym.errors import InputError, UrbanGymError, WorkerError

CITY = "UrbanGym/CityWalk-v0"


def _kw() -> dict[str, Any]:
    return small_kwargs(CITY)


def _same(a: Any, b: Any, where: str = "") -> None:
    """``a`` and ``b`` equal all the way down: keys (in any order), dtypes, shapes and
    values."""
    if isinstance(a, dict):
        assert isinstance(b, dict) and sorted(a) == sorted(b), (where, set(a) ^ set(b))
        for k in a:
            _same(a[k], b[k], f"{where}.{k}")
    elif isinstance(a, np.ndarray):
        assert isinstance(b, np.ndarray), where
        assert a.dtype == b.dtype and a.shape == b.shape, (where, a.dtype, b.dtype)
        if a.dtype == object:
            for x, y in zip(a, b):
                _same(x, y, where)
        else:
            assert np.array_equal(a, b), where
    elif isinstance(a, (tuple, list)):
        assert type(a) is type(b) and len(a) == len(b), where
        for x, y in zip(a, b):
            _same(x, y, where)
    else:
        assert a == b, (where, a, b)


def test_shard_sizes_split_the_envs_as_evenly_as_can_be():
    assert shard_sizes(10, 3) == [4, 3, 3]
    assert shard_sizes(5, 2) == [3, 2]
    assert shard_sizes(4, 4) == [1, 1, 1, 1]


def test_merge_infos_joins_the_shards_row_blocks():
    """Shard one (2 envs) has ``extra`` on its second env; shard two (1 env) lacks it and
    has ``is_success``: the joined columns are the three envs' in order, with zeros/None
    and False masks where a shard has no such key -- what batch_infos makes of the three
    envs' infos in one go."""
    envs = [
        {"steps": 3, "pose": {"x": 1.5}},
        {"steps": 4, "pose": {"x": -2.0}, "extra": "a"},
        {"steps": 5, "pose": {"x": 0.25}, "is_success": True},
    ]
    got = merge_infos([(batch_infos(envs[:2]), 2), (batch_infos(envs[2:]), 1)])
    assert got["steps"].tolist() == [3, 4, 5] and got["_steps"].tolist() == [True] * 3
    assert got["pose"]["x"].tolist() == [1.5, -2.0, 0.25]
    assert got["extra"].tolist() == [None, "a", None]
    assert got["_extra"].tolist() == [False, True, False]
    assert got["is_success"].tolist() == [False, False, True]
    assert got["_is_success"].tolist() == [False, False, True]
    _same({k: got[k] for k in batch_infos(envs)}, batch_infos(envs))
    # a shard that gave no info at all (not reset) adds False rows
    alone = merge_infos([({}, 2), (batch_infos(envs[2:]), 1)])
    assert alone["steps"].tolist() == [0, 0, 5] and alone["_steps"].tolist() == [False, False, True]


def test_bad_worker_counts_are_named():
    with pytest.raises(InputError, match="workers=0"):
        gym.make_vec(CITY, num_envs=2, workers=0, **_kw())
    with pytest.raises(InputError, match="workers=3 must be an integer from 2 to num_envs=2"):
        gym.make_vec(CITY, num_envs=2, workers=3, **_kw())
    with pytest.raises(InputError, match="workers=1.5"):
        gym.make_vec(CITY, num_envs=2, workers=1.5, **_kw())
    with pytest.raises(InputError, match="start_method='thread'"):
        gym.make_vec(CITY, num_envs=2, workers=2, start_method="thread", **_kw())


def _masked(rng: np.random.Generator, masks: np.ndarray) -> np.ndarray:
    return np.array([rng.choice(np.flatnonzero(m)) for m in masks])


@pytest.mark.parametrize("mode", ["next_step", "same_step"])
def test_workers_equal_one_process_over_episodes(mode):
    """5 envs in shards of 3 and 2 against the same 5 in one process, 45 steps with
    episodes of at most 8 steps (every env restarts several times)."""
    kw = {**_kw(), "max_steps": 8, "autoreset_mode": mode}
    one = gym.make_vec(CITY, num_envs=5, threads=1, **kw)
    two = gym.make_vec(CITY, num_envs=5, workers=2, **kw)
    assert isinstance(two, ShardedVectorEnv) and isinstance(one, NativeVectorEnv)
    assert two.sizes == [3, 2] and len(set(two.worker_pids)) == 2
    assert two.single_observation_space == one.single_observation_space
    assert two.metadata["autoreset_mode"] == one.metadata["autoreset_mode"]
    rng = np.random.default_rng(7)
    try:
        o1, i1 = one.reset(seed=21)
        o2, i2 = two.reset(seed=21)
        _same(o2, o1)
        _same(i2, i1)
        ends = 0
        for _ in range(45):
            m = one.action_masks()
            _same(two.action_masks(), m)
            a = _masked(rng, m)
            r1, r2 = one.step(a), two.step(a)
            for x, y, name in zip(r2, r1, ("obs", "reward", "terminated", "truncated", "info")):
                _same(x, y, name)
            ends += int((r1[2] | r1[3]).sum())
        assert ends >= 10
        _same(two.last_infos, one.last_infos)
        assert two.get_attr("steps") == one.get_attr("steps")
    finally:
        one.close()
        two.close()


def test_a_reset_mask_leaves_other_shards_alone_and_calls_reach_every_env():
    kw = {**_kw(), "autoreset_mode": "disabled"}
    v = gym.make_vec(CITY, num_envs=4, workers=2, **kw)
    try:
        v.reset(seed=0)
        v.step(_masked(np.random.default_rng(0), v.action_masks()))
        before = v.get_attr("steps")
        assert before == (1, 1, 1, 1)
        obs, info = v.reset(options={"reset_mask": np.array([False, True, False, False])})
        assert info["_steps"].tolist() == [False, True, False, False] and info["steps"][1] == 0
        assert v.get_attr("steps") == (1, 0, 1, 1)  # the second shard was not asked
        v.set_attr("probe", [10, 11, 12, 13])
        assert v.get_attr("probe") == (10, 11, 12, 13)
        assert v.get_attr_at([3, 0, 2], "probe") == [13, 10, 12]  # across shards, in order
        v.set_attr_at([2], "probe", 7)
        assert v.get_attr("probe") == (10, 11, 7, 13)
        with pytest.raises(InputError, match=r"env index 4 is outside \[0, 3\]"):
            v.get_attr_at([4], "probe")
        assert v.call("action_masks")[3].shape == (v.single_action_space.n,)
        # masks sent with a step are not handed out after a call that may change them
        v.action_masks()
        v.step(np.zeros(4, np.int64))
        assert v._masks is not None  # came with the step: the loop reads them
        v.call("action_masks")
        assert v._masks is None
        with pytest.raises(UrbanGymError, match="reset_mask"):
            v.reset(options={"reset_mask": [True] * 4})
        with pytest.raises(InputError, match="worker processes"):
            v.envs  # noqa: B018
    finally:
        v.close()


def test_an_error_in_a_worker_is_raised_as_itself_and_the_env_goes_on():
    v = gym.make_vec(CITY, num_envs=2, workers=2, **_kw())
    try:
        v.reset(seed=1)
        with pytest.raises(AttributeError, match="no_such_method") as err:
            v.call("no_such_method")
        assert any("raised in worker 0" in n for n in err.value.__notes__)
        v.step(_masked(np.random.default_rng(1), v.action_masks()).tolist())  # still usable
        with pytest.raises(InputError, match="3 actions for num_envs=2"):
            v.step([0, 0, 0])
    finally:
        v.close()


def test_a_dead_worker_is_named():
    v = gym.make_vec(CITY, num_envs=2, workers=2, **_kw())
    try:
        v.reset(seed=1)
        os.kill(v.worker_pids[1], signal.SIGKILL)
        with pytest.raises(WorkerError, match=r"worker 1 \(pid \d+\).*exited with code -9"):
            v.step(np.zeros(2, np.int64))
    finally:
        v.close()


def test_streetgraphs_batched_shards_equal_one_process():
    """StreetGraph's symbolic vector env steps its episodes as arrays: in workers each shard
    runs that batched path over its rows of the shared map."""
    env_id = "UrbanGym/StreetGraph-v0"
    kw = {"observation": "symbolic", "max_decisions": 6}
    one = gym.make_vec(env_id, num_envs=6, threads=1, **kw)
    three = gym.make_vec(env_id, num_envs=6, workers=3, **kw)
    assert one.batched_reason == "" and three.sizes == [2, 2, 2]
    rng = np.random.default_rng(3)
    try:
        _same(three.reset(seed=4), one.reset(seed=4))
        for _ in range(40):
            m = one.action_masks()
            a = _masked(rng, m)
            _same(three.step(a), one.step(a))
    finally:
        one.close()
        three.close()


def test_the_wire_codec_rebuilds_an_info_and_sends_each_schema_once():
    """Numbers through one buffer, objects as themselves, nested dicts; each schema sent the
    first time it is met, then only its number."""
    from urban_gym.envs.wire import InfoDecoder, InfoEncoder

    envs = [{"steps": 3, "pose": {"x": 1.5}, "task_id": "a"}, {"steps": 4, "pose": {"x": -2.0}}]
    info = batch_infos(envs)
    enc, dec = InfoEncoder(), InfoDecoder()
    first = enc.encode(info)
    assert first[:1] == (1,) and first[1] is not None  # the schema
    _same(dec.decode(first), info)
    again = enc.encode(info)
    # bytes: steps (2 int64), _steps, pose.x (2 float64), pose._x, _pose, _task_id (2 bools each)
    assert again[:2] == (1, None) and len(again[2]) == 16 + 2 + 16 + 2 + 2 + 2
    assert list(again[3][0]) == ["a", None]  # task_id: an object array, as itself
    _same(dec.decode(again), info)
    ended = batch_infos([{**envs[0], "is_success": True}, envs[1]])
    changed = enc.encode(ended)
    assert changed[0] == 2 and changed[1] is not None
    _same(dec.decode(changed), ended)
    back = enc.encode(info)  # the first shape again: its number, no schema
    assert back[:2] == (1, None)
    _same(dec.decode(back), info)
    with pytest.raises(WorkerError, match="schema 1, never received"):
        InfoDecoder().decode(back)
