"""Instructions per step of one env, counted by valgrind's callgrind: deterministic where
wall-clock time on a shared machine is not, so a small change to a step can be measured.

The loop is ``bench_throughput.py``'s (seeded random masked actions, resets counted); it
runs once to warm the caches, then again with the same seeds while callgrind counts.

    .venv/bin/python benchmarks/count_instructions.py UrbanGym/StreetGraph-v0 \\
        --env-kwargs '{"observation": "symbolic"}' --steps 5000

Needs ``valgrind`` on the PATH; under it a step runs some 50 times slower.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def _loop(env, steps: int, seed: int = 0) -> None:
    import numpy as np

    from benchmarks.bench_throughput import masked_choice

    rng = np.random.default_rng(seed)
    obs, _ = env.reset(seed=seed)
    n, episode = env.action_space.n, 0
    for _ in range(steps):
        obs, _, term, trunc, _ = env.step(masked_choice(rng, obs, n))
        if term or trunc:
            episode += 1
            obs, _ = env.reset(seed=seed + 1000 * episode)


def _child(env_id: str, kwargs: dict, steps: int) -> None:
    from benchmarks._common import toggle_counting
    from benchmarks.bench_throughput import make

    env = make(env_id, kwargs)
    _loop(env, steps)  # warm: the same seeds as the counted pass
    toggle_counting(True)
    _loop(env, steps)
    toggle_counting(False)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("env_id")
    p.add_argument("--env-kwargs", default="{}", help="JSON object of gym.make keyword arguments")
    p.add_argument("--steps", type=int, default=5000, help="steps counted (default 5000)")
    p.add_argument(
        "--out", help="keep callgrind's profile here (callgrind_annotate --inclusive=yes OUT)"
    )
    p.add_argument("--_child", action="store_true", help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    kwargs = json.loads(a.env_kwargs)
    if a.steps < 1:
        p.error(f"--steps {a.steps}: count at least one step")
    if a._child:
        _child(a.env_id, kwargs, a.steps)
        return 0
    from benchmarks._common import callgrind_instructions

    args = [__file__, a.env_id, "--env-kwargs", a.env_kwargs, "--steps", str(a.steps), "--_child"]
    total = callgrind_instructions(args, out_file=a.out)
    print(f"{a.env_id} {kwargs}: {total / a.steps:,.0f} instructions a step ({a.steps} steps)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
