"""``urban-gym train``: configs, intervals, a tiny run whose checkpoint the harness loads,
and (slow) a policy that learns: MaskablePPO beats the random agent on held-out cities."""

import json
import math

import numpy as np
import pytest

pytest.importorskip("sb3_contrib")

from urban_gym.baselines.random_agent import RandomAgent  # noqa: E402
from urban_gym.baselines.train import (  # noqa: E402
    TrainConfig,
    evaluate_policy,
    mean_interval,
    shipped_configs,
    train,
    wilson,
)
from urban_gym.cli import main  # noqa: E402
from urban_gym.errors import UrbanGymError  # noqa: E402

TINY = {
    "env_id": "UrbanGym/StreetGraph-v0",
    "env_kwargs": {
        "observation": "symbolic",
        "goal": "vector",
        "max_degree": 8,
        "max_decisions": 12,
    },
    "train_suite": "procedural:blocks=3x3-4x4,split=train,cities=16",
    "val_suite": "procedural:blocks=4x4,split=val,cities=8",
    "test_suite": "procedural:blocks=4x4,split=test,cities=8",
    "eval_tasks": 4,
    "total_timesteps": 256,
    "eval_every": 128,
    "n_envs": 1,
    "ppo": {"n_steps": 128, "batch_size": 64, "n_epochs": 1},
}


def test_wilson_and_mean_interval_by_hand():
    lo, hi = wilson(5, 10)
    assert math.isclose(lo, 0.2366, abs_tol=1e-4) and math.isclose(hi, 0.7634, abs_tol=1e-4)
    lo, hi = wilson(0, 10)
    assert lo == 0.0 and math.isclose(hi, 0.2775, abs_tol=1e-4)
    m, lo, hi = mean_interval([0.0, 1.0, 0.0, 1.0])
    # sd 0.5774, se 0.2887
    assert m == 0.5 and math.isclose(hi - m, 1.96 * 0.57735 / 2, rel_tol=1e-4)


def test_configs_ship_one_per_id_and_goal_and_load():
    files = sorted(shipped_configs().values())
    assert len(files) == 10
    for f in files:
        cfg = TrainConfig.load(f)
        assert cfg.env_kwargs.get("goal", "none") in f.stem or "none" in f.stem
    with pytest.raises(UrbanGymError, match="unknown train config keys \\['lr'\\]"):
        TrainConfig.from_dict({"env_id": "UrbanGym/StreetGraph-v0", "lr": 1})
    with pytest.raises(UrbanGymError, match="algo='DQN'"):
        TrainConfig.from_dict({"env_id": "UrbanGym/StreetGraph-v0", "algo": "DQN"})
    with pytest.raises(UrbanGymError, match="does not exist"):
        TrainConfig.load("nope.json")


def test_tiny_run_writes_checkpoints_the_harness_loads(tmp_path):
    res = train(TrainConfig.from_dict(TINY), tmp_path / "run", progress=None)
    assert res.model.exists() and res.best is not None and res.best.exists()
    lines = [json.loads(x) for x in (tmp_path / "run" / "evals.jsonl").read_text().splitlines()]
    assert {r["split"] for r in lines} == {"val", "test"}
    assert all(r["episodes"] == 4 and 0 <= r["success"] <= 1 for r in lines)
    assert res.model.stat().st_size < 400_000  # small checkpoints
    out = tmp_path / "eval"
    rc = main(
        [
            "eval",
            "UrbanGym/StreetGraph-v0",
            "--agent",
            f"sb3:{res.model}",
            "--suite",
            str(tmp_path / "run" / "test.jsonl"),
            "--env-kwargs",
            json.dumps(TINY["env_kwargs"]),
            "--out",
            str(out),
            "--no-progress",
            "--no-visibility",
        ]
    )
    assert rc == 0
    eps = [json.loads(x) for x in (out / "episodes.jsonl").read_text().splitlines()]
    assert len(eps) == 4
    # the harness and the trainer's own evaluation agree episode by episode
    mine = [r for r in lines if r["split"] == "test"][-1]
    assert sum(e["is_success"] for e in eps) == round(mine["success"] * 4)


def test_posegraph360_config_trains_and_the_harness_agrees(tmp_path):
    """The shipped PoseGraph360 config, shrunk to a few hundred steps: held-out val and
    test cities, a checkpoint the harness runs episode by episode as the trainer did."""
    cfg = TrainConfig.load("posegraph360_procedural_vector.json")
    small = {
        **cfg.to_dict(),
        "eval_tasks": 4,
        "total_timesteps": 256,
        "eval_every": 256,
        "ppo": {"n_steps": 128, "batch_size": 64, "n_epochs": 1},
    }
    res = train(TrainConfig.from_dict(small), tmp_path / "run", progress=None)
    run = tmp_path / "run"
    splits = {
        s: [json.loads(x) for x in (run / f"{s}.jsonl").read_text().splitlines()]
        for s in ("train", "test")
    }
    assert all(
        t["id"].startswith(f"posegraph360-proc-{s}-") for s, ts in splits.items() for t in ts
    )
    assert not {t["city"] for t in splits["train"]} & {t["city"] for t in splits["test"]}
    out = tmp_path / "eval"
    args = ["eval", cfg.env_id, "--agent", f"sb3:{res.model}", "--suite", str(run / "test.jsonl")]
    kw = ["--env-kwargs", json.dumps(cfg.env_kwargs), "--out", str(out), "--no-progress"]
    assert main([*args, *kw, "--no-visibility"]) == 0
    eps = [json.loads(x) for x in (out / "episodes.jsonl").read_text().splitlines()]
    mine = [json.loads(x) for x in (run / "evals.jsonl").read_text().splitlines()][-1]
    assert mine["split"] == "test" and len(eps) == 4
    assert sum(e["is_success"] for e in eps) == round(mine["success"] * 4)


def test_train_cli_overrides_and_errors(tmp_path, capsys):
    cfg = tmp_path / "tiny.json"
    cfg.write_text(json.dumps(TINY))
    rc = main(["train", str(cfg), "--out", str(tmp_path / "r"), "--timesteps", "128"])
    assert rc == 0
    assert "harness (test): urban-gym eval" in capsys.readouterr().out
    assert json.loads((tmp_path / "r" / "config.json").read_text())["total_timesteps"] == 128
    rc = main(["train", str(cfg), "--out", str(tmp_path / "s"), "--set", "colour=1"])
    assert rc == 2


def _random_success(cfg, suite, seed=0):
    import gymnasium as gym

    env = gym.make(cfg.env_id, **cfg.kwargs_for(str(suite)))
    agent = RandomAgent(env.action_space, seed)
    wins = []
    for i in range(len(env.unwrapped.tasks)):
        obs, info = env.reset(seed=i, options={"task_index": i})
        while True:
            obs, _, term, trunc, info = env.step(agent.act(obs))
            if term or trunc:
                break
        wins.append(bool(info["is_success"]))
    return sum(wins), len(wins)


@pytest.mark.slow
def test_maskable_ppo_beats_random_on_held_out_cities(tmp_path):
    """Tiny procedural StreetGraph with the point-goal: the trained policy's success on
    held-out (test-seed) cities is above the random agent's by more than both 95%
    intervals (the intervals do not overlap)."""
    data = dict(TINY)
    data.update(
        train_suite="procedural:blocks=3x3-4x4,split=train,cities=32",
        eval_tasks=80,
        total_timesteps=8_000,
        eval_every=100_000,
        ppo={"n_steps": 512, "batch_size": 128, "n_epochs": 8, "learning_rate": 5e-4},
    )
    data["ppo"]["gamma"] = 0.95
    cfg = TrainConfig.from_dict(data)
    res = train(cfg, tmp_path / "run", progress=None)
    from sb3_contrib import MaskablePPO

    model = MaskablePPO.load(str(res.model), device="cpu")
    ppo = evaluate_policy(model, cfg, tmp_path / "run" / "test.jsonl")
    k, n = _random_success(cfg, tmp_path / "run" / "test.jsonl")
    r_lo, r_hi = wilson(k, n)
    assert n == ppo["episodes"] == 80
    assert ppo["success_low"] > r_hi, (ppo, k / n, (r_lo, r_hi))
    assert np.isfinite(ppo["spl"]) and ppo["spl"] <= ppo["success"] + 1e-9


def test_train_cli_trains_through_the_native_vector_env(tmp_path, capsys):
    from stable_baselines3.common.vec_env import DummyVecEnv

    from urban_gym.baselines.train import make_train_vec_env, vec_env_kind
    from urban_gym.baselines.vec_env import NativeSB3VecEnv

    cfg = tmp_path / "tiny.json"
    cfg.write_text(json.dumps(TINY))
    args = ["train", str(cfg), "--out", str(tmp_path / "r"), "--timesteps", "128"]
    assert main([*args, "--vec", "native", "--n-envs", "2"]) == 0
    assert "2 envs in a native vector env" in capsys.readouterr().out
    assert (tmp_path / "r" / "model.zip").stat().st_size > 0
    ran = TrainConfig.load(tmp_path / "r" / "config.json")
    assert ran.vec_env == "native" and ran.n_envs == 2
    venv = make_train_vec_env(ran)
    assert isinstance(venv.venv, NativeSB3VecEnv) and venv.num_envs == 2
    venv.close()
    # auto: native where it fits, else in-process; native where it does not fit is named
    assert vec_env_kind(TrainConfig.from_dict(TINY)) == "native"
    resized = TrainConfig.from_dict({**TINY, "image_size": [32, 32]})
    assert vec_env_kind(resized) == "dummy"
    dummy = make_train_vec_env(resized)
    assert isinstance(dummy, DummyVecEnv)
    dummy.close()
    with pytest.raises(UrbanGymError, match="text='encode'"):
        vec_env_kind(TrainConfig.from_dict({**TINY, "text": "encode", "vec_env": "native"}))
    with pytest.raises(UrbanGymError, match="vec_env='pool'"):
        TrainConfig.from_dict({**TINY, "vec_env": "pool"})


def test_train_cli_spreads_the_native_vector_env_over_workers(tmp_path, capsys):
    from urban_gym.envs.workers import ShardedVectorEnv

    cfg = tmp_path / "tiny.json"
    cfg.write_text(json.dumps(TINY))
    args = ["train", str(cfg), "--out", str(tmp_path / "r"), "--timesteps", "128"]
    assert main([*args, "--vec", "native", "--n-envs", "2", "--workers", "2"]) == 0
    assert "2 envs in a native vector env over 2 worker processes" in capsys.readouterr().out
    assert (tmp_path / "r" / "model.zip").stat().st_size > 0
    ran = TrainConfig.load(tmp_path / "r" / "config.json")
    assert ran.workers == 2
    from urban_gym.baselines.train import make_train_vec_env

    venv = make_train_vec_env(ran)
    assert isinstance(venv.venv.venv, ShardedVectorEnv) and venv.num_envs == 2
    venv.close()
    with pytest.raises(UrbanGymError, match="workers=3 must not exceed n_envs=2"):
        TrainConfig.from_dict({**TINY, "n_envs": 2, "workers": 3})
    with pytest.raises(UrbanGymError, match="vec_env='subproc' does not use it"):
        TrainConfig.from_dict({**TINY, "n_envs": 2, "workers": 2, "vec_env": "subproc"})
    with pytest.raises(UrbanGymError, match="workers=0 must be a positive integer"):
        TrainConfig.from_dict({**TINY, "workers": 0})
