"""StreetGraph's batched vector env (symbolic observations as arrays, one compiled step for
all N) against N single ``StreetGraphEnv`` with the same seeds.

Each rollout runs 500+ steps of seeded random actions -- valid ones, and one in four drawn
from the whole table, so options that do not exist, ``stop`` where it is masked and
indices outside the table are mixed in -- over episodes short enough to end and restart
many times. Every step the batch's observations, rewards, terminations and truncations
must equal the single envs', and its ``info`` must equal ``batch_infos`` of the single
envs' infos key for key, dtype for dtype (Gymnasium's layout, the ``_key`` masks, the
final observation and info of ``same_step``).
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import pytest

import urban_gym  # noqa: F401  (registers the ids)
from tests.families.streetgraph.streetgraph_fixture import write_fixture
from urban_gym.envs.vector import batch_infos
from urban_gym.families.streetgraph.env import StreetGraphEnv
from urban_gym.families.streetgraph.tasks import touchdown_graph_spec
from urban_gym.families.streetgraph.vector import StreetGraphVectorEnv
from urban_gym.tasks.spec import TaskSpec

N = 4
STEPS = 520


def _same(a: Any, b: Any, where: str = "") -> None:
    """``a`` equals ``b``: dicts key for key, arrays in shape, dtype and value, other
    values in type and value (a metric with no decisions to score is NaN on both sides).
    """
    if isinstance(a, dict):
        assert isinstance(b, dict) and a.keys() == b.keys(), (where, sorted(a), sorted(b))
        for k in a:
            _same(a[k], b[k], f"{where}/{k}")
    elif isinstance(a, np.ndarray):
        assert isinstance(b, np.ndarray), where
        assert (a.dtype, a.shape) == (b.dtype, b.shape), (where, a.dtype, b.dtype)
        if a.dtype == object:
            for x, y in zip(a, b):
                _same(x, y, where)
        else:
            assert np.array_equal(a, b, equal_nan=a.dtype.kind == "f"), (where, a, b)
    else:
        assert type(a) is type(b) and (a == b or (a != a and b != b)), (where, a, b)


def _fixture_tasks(directory) -> list[TaskSpec]:
    """Origin-destination tasks on the hand-written fixture graph: goals mid-street (c4,
    g2) and at an intersection (Y), so random walks arrive often and streets get cut.
    """
    spec = touchdown_graph_spec(write_fixture(directory))
    return [
        TaskSpec(
            id=f"od-{goal}",
            family="streetgraph",
            type="origin_destination",
            difficulty="easy",
            city="fixture",
            instruction=f"Go to {goal}.",
            start={"node": start, "heading": 0.0, "graph": spec},
            goal={"name": goal, "nodes": [goal]},
        )
        for start, goal in (("X", "c4"), ("X", "Y"), ("Y", "g2"))
    ]


#: name -> env kwargs of one rollout (``tasks`` filled in by the test for the fixture)
CASES: dict[str, dict[str, Any]] = {
    # Helsinki's suite: street travel, decision and transition limits
    "od-helsinki": {"max_decisions": 30, "max_transitions": 60},
    # the fixture: arrivals at mid-street goals (streets cut at the goal)
    "od-fixture": {"max_decisions": 12},
    # one link a step on origin-destination tasks
    "od-link": {"max_decisions": 25, "travel": "link"},
    # Touchdown-format instruction routes (link travel, stop ends the episode)
    "instruction": {"suite": "touchdown", "max_decisions": 20},
    # instruction routes followed a whole street at a time
    "instruction-street": {"suite": "touchdown", "max_decisions": 15, "travel": "street"},
}


#: name -> the episode ends its rollout must meet
ENDS: dict[str, set[str]] = {
    "od-helsinki": {"transition_limit"},
    "od-fixture": {"arrived", "decision_limit"},
    "od-link": {"decision_limit"},
    "instruction": {"terminated_by_agent", "decision_limit"},
    "instruction-street": {"arrived", "terminated_by_agent", "decision_limit"},
}


def _kwargs(case: str, tmp_path) -> dict[str, Any]:
    kw = {"observation": "symbolic", **CASES[case]}
    if case == "od-fixture":
        kw["tasks"] = _fixture_tasks(tmp_path / "fixture")
    return kw


def _actions(rng: np.random.Generator, masks: np.ndarray) -> np.ndarray:
    """Random valid actions, one in four replaced by any index of the table or just
    outside it.
    """
    a = (rng.random(masks.shape) * masks).argmax(1)
    wild = rng.random(len(a)) < 0.25
    a[wild] = rng.integers(-1, masks.shape[1] + 1, int(wild.sum()))
    return a


def _rollout(case: str, mode: str, tmp_path) -> tuple[int, set[str]]:
    """Step the batch and the single envs side by side; returns the episodes ended and
    the kinds of ends and invalid actions seen.
    """
    kw = _kwargs(case, tmp_path)
    v = gym.make_vec("UrbanGym/StreetGraph-v0", num_envs=N, autoreset_mode=mode, **kw)
    singles = [StreetGraphEnv(**kw) for _ in range(N)]
    assert isinstance(v, StreetGraphVectorEnv) and v.batched_reason == ""
    rng = np.random.default_rng(7)
    try:
        obs, info = v.reset(seed=3)
        first = [s.reset(seed=3 + i) for i, s in enumerate(singles)]
        _same(info, batch_infos([f[1] for f in first]))
        _same(obs, _stack([f[0] for f in first]))
        ended = np.zeros(N, bool)
        ends = 0
        seen: set[str] = set()
        for _ in range(STEPS):
            masks = v.action_masks()
            assert np.array_equal(masks, np.stack([s.action_masks() for s in singles]))
            a = _actions(rng, masks)
            if mode == "disabled" and ended.any():
                obs, info = v.reset(options={"reset_mask": ended})
                firsts = {i: singles[i].reset() for i in np.flatnonzero(ended)}
                _same(
                    info, batch_infos([firsts[i][1] if i in firsts else None for i in range(N)], N)
                )
                ended[:] = False
            obs, rew, term, trunc, info = v.step(a)
            got_obs, infos, finals = [], [], [None] * N
            for i, s in enumerate(singles):
                if mode == "next_step" and ended[i]:
                    o, inf = s.reset()
                    r, te, tr = 0.0, False, False
                else:
                    o, r, te, tr, inf = s.step(int(a[i]))
                    if mode == "same_step" and (te or tr):
                        finals[i] = {"final_obs": o, "final_info": inf}
                        o, inf = s.reset()
                assert (rew[i], term[i], trunc[i]) == (r, te, tr), (case, i, a[i])
                got_obs.append(o)
                infos.append(inf)
                end = finals[i]["final_info"] if finals[i] else inf
                seen.add(end.get("termination") or end["invalid_action"].split(" ")[0])
            _same(obs, _stack(got_obs))
            want = batch_infos(infos)
            if any(finals):
                want.update(batch_infos(finals, N))
            _same(info, want)
            ended = term | trunc
            ends += int(ended.sum())
        assert v.batched_reason == ""
        return ends, seen
    finally:
        v.close()


def _stack(observations: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        k: tuple(o[k] for o in observations)
        if k == "instruction"
        else np.stack([o[k] for o in observations])
        for k in observations[0]
    }


@pytest.mark.parametrize("case", sorted(CASES))
def test_batched_steps_equal_single_envs_next_step(case, tmp_path):
    ends, seen = _rollout(case, "next_step", tmp_path)
    assert ends >= 2 * N
    # the rollout met the ends of its case and every kind of invalid action: a missing
    # option ("go: ..."), an index outside the table ("action index ..."), a masked stop
    invalid = {"go:", "action"} | ({"stop"} if case.startswith("od") else set())
    assert ENDS[case] | invalid <= seen, seen


@pytest.mark.parametrize("case", ["od-fixture", "instruction", "od-helsinki"])
@pytest.mark.parametrize("mode", ["same_step", "disabled"])
def test_batched_steps_equal_single_envs_other_autoreset_modes(case, mode, tmp_path):
    ends, seen = _rollout(case, mode, tmp_path)
    assert ends >= 2 * N and ENDS[case] <= seen


@pytest.mark.parametrize(
    ("kwargs", "reason"),
    [
        ({"observation": "images", "image_size": 16}, "image observations"),
        ({"observation": "symbolic", "goal": "vector"}, "goal='vector'"),
        ({"observation": "symbolic", "track_visibility": True}, "track_visibility=True"),
    ],
)
def test_what_the_batch_cannot_reproduce_runs_per_env(kwargs, reason):
    v = gym.make_vec("UrbanGym/StreetGraph-v0", num_envs=2, **kwargs)
    single = StreetGraphEnv(**kwargs)
    try:
        assert v.batched_reason == reason
        obs, _ = v.reset(seed=0)
        o, _ = single.reset(seed=0)
        _, r, *_ = v.step(np.array([0, 0]))
        o, r0, *_ = single.step(0)
        assert r[0] == r0 and set(obs) == set(o)
    finally:
        v.close()


def _pair(**kwargs: Any) -> tuple[StreetGraphVectorEnv, list[StreetGraphEnv]]:
    kw = {"observation": "symbolic", "max_decisions": 8, **kwargs}
    v = StreetGraphVectorEnv(2, **kw)
    singles = [StreetGraphEnv(**kw) for _ in range(2)]
    v.reset(seed=0)
    for i, s in enumerate(singles):
        s.reset(seed=i)
    return v, singles


def _step_both(v, singles, actions) -> None:
    """One step of the batch and the singles: the same outcome, and ``last_infos`` (each
    env's own info dict, Python values) the singles' infos."""
    _, rew, term, trunc, info = v.step(np.asarray(actions))
    for i, s in enumerate(singles):
        _, r, te, tr, inf = s.step(int(actions[i]))
        assert (rew[i], term[i], trunc[i]) == (r, te, tr)
        assert info["node"][i] == inf["node"] and info["steps"][i] == inf["steps"]
        _same(v.last_infos[i], inf)


def test_env_objects_and_last_infos_follow_the_batch():
    """``get_attr``, ``call``, ``set_attr`` and ``last_infos`` see the batch's episodes;
    what is set through the env objects holds in the next batched step."""
    v, singles = _pair()
    try:
        _step_both(v, singles, [0, 1])
        _step_both(v, singles, [0, 9])  # an index outside the table
        assert v.get_attr("steps") == (2, 2)
        assert v.get_attr("node") == tuple(s.node for s in singles)
        assert v.get_attr("trajectory") == tuple(s.trajectory for s in singles)
        assert v.call("_distance_to_goal") == tuple(s._distance_to_goal() for s in singles)
        infos = v.last_infos
        assert infos[1]["invalid_action"].startswith("action index 9 is outside")
        assert type(infos[0]["steps"]) is int and type(infos[0]["pose"]["x"]) is float
        v.set_attr("max_decisions", 3)
        for s in singles:
            s.max_decisions = 3
        _, _, _, trunc, info = v.step(np.array([0, 0]))  # the 3rd step: the new limit
        assert trunc.all() and list(info["termination"]) == ["decision_limit"] * 2
    finally:
        v.close()


def test_structured_actions_take_the_per_env_path_for_that_step():
    v, singles = _pair()
    try:
        acts = [{"action": "go", "option": 0}, {"action": "stop"}]
        _, rew, *_, info = v.step(acts)
        want = [s.step(a) for s, a in zip(singles, acts)]
        assert list(rew) == [w[1] for w in want]
        assert info["invalid_action"][1] == want[1][4]["invalid_action"] != ""
        assert v.batched_reason == ""  # the next steps are batched again
        _step_both(v, singles, [1, 0])
    finally:
        v.close()


def test_a_reset_to_a_task_on_another_graph_leaves_the_batch(tmp_path):
    v, singles = _pair()
    other = _fixture_tasks(tmp_path / "fixture")[0]
    try:
        obs, info = v.reset(options={"task": other})
        assert v.batched_reason == "a reset with a task on another graph"
        assert list(info["node"]) == ["X", "X"]
        o, inf = singles[0].reset(options={"task": other})
        assert np.array_equal(obs["bearings"][0], o["bearings"])
    finally:
        v.close()


def test_stepping_an_ended_episode_without_reset_is_refused():
    kw = {"observation": "symbolic", "max_decisions": 1}
    v = StreetGraphVectorEnv(2, autoreset_mode="disabled", **kw)
    try:
        with pytest.raises(gym.error.ResetNeeded, match="before reset"):
            v.step(np.array([0, 0]))
        v.reset(seed=0)
        _, _, _, trunc, _ = v.step(np.array([0, 0]))
        assert trunc.all()
        with pytest.raises(gym.error.ResetNeeded, match="after the episode ended"):
            v.step(np.array([0, 0]))
    finally:
        v.close()


def test_maskable_ppo_trains_through_the_batched_path():
    """stable-baselines3's adapter (``same_step`` autoreset, ``last_infos``, masks) over
    the batch: a short MaskablePPO run completes and logs the episodes it ended."""
    pytest.importorskip("sb3_contrib")
    import torch
    from sb3_contrib import MaskablePPO

    from urban_gym.baselines.vec_env import make_native_vec_env

    torch.set_num_threads(1)
    venv = make_native_vec_env(
        "UrbanGym/StreetGraph-v0", 4, observation="symbolic", max_decisions=10
    )
    try:
        assert venv.venv.venv.batched_reason == ""
        model = MaskablePPO("MultiInputPolicy", venv, n_steps=32, batch_size=64, n_epochs=1, seed=0)
        model.learn(256)
        assert model.num_timesteps == 256
        # 4 envs x 64 steps of 10-decision episodes: at least 4 x 6 ended
        assert len(model.ep_info_buffer) >= 24
        assert all(ep["l"] <= 10 for ep in model.ep_info_buffer)
    finally:
        venv.close()


def test_env_objects_are_written_back_when_taken_out(monkeypatch):
    """``venv.envs[i]`` holds env ``i``'s true state, and only the env objects taken out
    of ``venv.envs`` are written back (a loop that looks at one env a step pays for one);
    what is changed through one holds in the next batched step."""
    from urban_gym.families.streetgraph.batch import BatchEpisodes

    written: list[int] = []
    store = BatchEpisodes.store

    def counted(self, i, env):
        written.append(i)
        store(self, i, env)

    monkeypatch.setattr(BatchEpisodes, "store", counted)
    kw = {"observation": "symbolic", "max_decisions": 40}
    v = StreetGraphVectorEnv(4, **kw)
    singles = [StreetGraphEnv(**kw) for _ in range(4)]
    try:
        v.reset(seed=0)
        for i, s in enumerate(singles):
            s.reset(seed=i)
        for step in range(6):
            _step_both(v, singles, [0, 1, 0, 1])
            written.clear()
            envs = v.envs
            assert len(envs) == 4 and written == []  # reading the list writes nothing
            k = step % 4
            env = envs[k]
            assert written == [k]
            assert (env.node, env.steps, env.trajectory, env.distance_m) == (
                singles[k].node,
                singles[k].steps,
                singles[k].trajectory,
                singles[k].distance_m,
            )
            assert v.envs[k] is env and written == [k]  # unchanged since: not written again
        # every object taken out by iteration holds its episode
        assert [e.trajectory for e in v.envs] == [s.trajectory for s in singles]
        assert [e.node for e in v.envs[1:3]] == [s.node for s in singles[1:3]]
        # a change through an object taken out holds in the next batched step
        v.envs[2].max_decisions = singles[2].max_decisions = 7
        _step_both(v, singles, [0, 0, 0, 0])
    finally:
        v.close()


def test_sb3_adapter_hands_over_the_native_infos_filled_only_when_read(monkeypatch):
    """stable-baselines3's adapter over the batch: N info dicts a step equal to single
    envs' infos, an ended episode's with ``terminal_observation`` and
    ``TimeLimit.truncated``; a running env's dict is the native env's own, and
    stable-baselines3's own reads of it (``get("episode")``, ``get("is_success")``) do
    not turn the batch's arrays into its values."""
    pytest.importorskip("stable_baselines3")
    import urban_gym.families.streetgraph.batch_info as bi
    from urban_gym.baselines.vec_env import NativeSB3VecEnv

    rows: list[int] = []
    row = bi.info_row

    def counted(batch, i):
        if "task_id" in batch:  # an env's info (not a nested pose)
            rows.append(i)
        return row(batch, i)

    monkeypatch.setattr(bi, "info_row", counted)
    kw = {"observation": "symbolic", "max_decisions": 5}
    native = StreetGraphVectorEnv(3, autoreset_mode="same_step", **kw)
    venv = NativeSB3VecEnv(native)
    singles = [StreetGraphEnv(**kw) for _ in range(3)]
    rng = np.random.default_rng(1)
    try:
        venv.seed(5)
        venv.reset()
        for i, s in enumerate(singles):
            s.reset(seed=5 + i)
        ends = 0
        for _ in range(24):
            a = _actions(rng, venv.action_masks())
            rows.clear()
            _, rew, dones, infos = venv.step(a)
            assert len(infos) == 3 and all(isinstance(d, dict) for d in infos)
            assert [d.get("episode") for d in infos] == [None] * 3
            assert all(d.get("is_success") is None for d, done in zip(infos, dones) if not done)
            assert rows == []  # nothing unbatched for stable-baselines3's reads
            for i, s in enumerate(singles):
                o, r, te, tr, inf = s.step(int(a[i]))
                assert (np.float32(r), te or tr) == (rew[i], dones[i])
                if dones[i]:
                    ends += 1
                    got = dict(infos[i])
                    assert got.pop("TimeLimit.truncated") == (tr and not te)
                    final = got.pop("terminal_observation")
                    assert np.array_equal(final["action_mask"], o["action_mask"])
                    _same(got, inf)
                    s.reset()
                else:
                    assert infos[i] is native.last_infos[i]
                    _same(infos[i], inf)
            assert sorted(rows) == [i for i in range(3) if not dones[i]]  # read: filled
        assert ends >= 6
    finally:
        venv.close()
