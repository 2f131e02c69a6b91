"""The arguments and runs of ``urban-gym train`` and ``urban-gym split-suite``
(registered by :mod:`urban_gym.cli`; torch and stable-baselines3 load only when a
training starts).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from urban_gym.errors import InputError


def add_train(p: argparse.ArgumentParser) -> None:
    """The arguments of ``urban-gym train``."""
    p.add_argument(
        "config",
        help="config JSON file, or the name of one a family ships (urban_gym/families/*/configs/)",
    )
    p.add_argument("--out", required=True, help="run folder (checkpoints, evals, logs)")
    p.add_argument("--seed", type=int, default=None, help="training seed (default: config)")
    p.add_argument("--timesteps", type=int, default=None, help="total env steps")
    p.add_argument("--n-envs", type=int, default=None, help="parallel env workers")
    p.add_argument(
        "--vec",
        "--vec-env",
        dest="vec_env",
        choices=("auto", "native", "subproc", "dummy"),
        default=None,
        help="how the n envs run: the id's native batched vector env, SubprocVecEnv "
        "workers or in-process one after another (default: the config's; 'auto', "
        "native where it fits the config, else dummy)",
    )
    p.add_argument(
        "--workers",
        type=int,
        default=None,
        help="processes the native vector env's n envs are spread over (default: the config's, 1)",
    )
    p.add_argument("--eval-every", type=int, default=None, help="env steps between evals")
    p.add_argument("--eval-tasks", type=int, default=None, help="held-out tasks per eval")
    p.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=JSON",
        help='override a config key, e.g. --set \'env_kwargs={"goal": "text"}\'',
    )
    p.add_argument("--torch-threads", type=int, default=1)


def run_train(args: argparse.Namespace) -> int:
    """Train, print the evaluations as they come and the harness commands at the end."""
    from urban_gym.baselines.train import TrainConfig, train

    cfg = TrainConfig.load(args.config)
    changes = {}
    for item in args.set:
        key, eq, val = item.partition("=")
        if not eq:
            raise InputError(f"--set {item!r} must be KEY=JSON")
        try:
            changes[key] = json.loads(val)
        except json.JSONDecodeError:
            changes[key] = val
    for key, val in (
        ("seed", args.seed),
        ("total_timesteps", args.timesteps),
        ("n_envs", args.n_envs),
        ("vec_env", args.vec_env),
        ("workers", args.workers),
        ("eval_every", args.eval_every),
        ("eval_tasks", args.eval_tasks),
    ):
        if val is not None:
            changes[key] = val
    if changes:
        cfg = TrainConfig.from_dict({**cfg.to_dict(), **changes})
    res = train(cfg, args.out, torch_threads=args.torch_threads)
    print(f"trained {cfg.algo} on {cfg.env_id} in {res.wall_s:.0f} s: {res.model}")
    kw = json.dumps(cfg.env_kwargs)
    for split in ("val", "test"):
        suite = Path(args.out) / f"{split}.jsonl"
        if suite.exists():
            print(
                f"  harness ({split}): urban-gym eval {cfg.env_id} --agent sb3:{res.model} "
                f"--suite {suite} --env-kwargs '{kw}' --out {Path(args.out) / ('eval_' + split)}"
            )
    return 0


def add_split_suite(p: argparse.ArgumentParser) -> None:
    """The arguments of ``urban-gym split-suite``."""
    p.add_argument("suite", help="a JSONL suite (any family)")
    p.add_argument("--out", required=True, help="prefix: writes PREFIX_train.jsonl etc.")
    p.add_argument("--test-polygon", default=None, help="JSON [[x, y], ...] (or [[lat, lon], ...])")
    p.add_argument("--val-polygon", default=None, help="JSON polygon of the val area")
    p.add_argument("--latlon", action="store_true", help="polygons are [lat, lon] degrees")
    p.add_argument("--test-fraction", type=float, default=0.2, help="without polygons")
    p.add_argument("--val-fraction", type=float, default=0.1, help="without polygons")


def _frame_of(task: Any) -> object:
    from urban_gym.tasks.families import get_family

    return get_family(task.family).task_frame(task)


def run_split_suite(args: argparse.Namespace) -> int:
    """Split a suite by area and write the three files."""
    from urban_gym.tasks.splits import (
        HeldOutAreas,
        default_areas,
        polygon,
        task_points,
        write_splits,
    )
    from urban_gym.tasks.suite import load_suite

    tasks = load_suite(args.suite)
    if args.test_polygon:
        frame = _frame_of(tasks[0]) if args.latlon else None

        def read(text: str):
            p = Path(text)
            data = json.loads(p.read_text() if p.exists() else text)
            return polygon(data, args.latlon, frame)

        val = read(args.val_polygon) if args.val_polygon else None
        areas = HeldOutAreas(read(args.test_polygon), val)
    else:
        pts = [p for t in tasks for s, gs in [task_points(t)] for p in (s, *gs)]
        areas = default_areas(pts, args.test_fraction, args.val_fraction)
    paths = write_splits(tasks, args.out, areas)
    for name, path in paths.items():
        print(f"{name}: {sum(1 for _ in open(path))} tasks -> {path}")
    left = len(tasks) - sum(sum(1 for _ in open(p)) for p in paths.values())
    print(
        f"{left} of {len(tasks)} tasks left out (across a held-out border, or a train task going to a held-out destination)"
    )
    return 0


__all__ = ["add_split_suite", "add_train", "run_split_suite", "run_train"]
