"""CPU time a step of one env in a warm loop: steadier than steps/s on a shared machine,
and able to time another checkout's code for an A/B comparison. A secondary figure: the
passes repeat the seeds of the first, so the caches (frames, distance fields) are warm;
``bench_throughput.py`` gives the cold figure a rollout sees.

The loop is ``count_instructions.py``'s (seeded random masked actions, resets counted): it
runs once to warm the caches, then ``--passes`` times again over the same seeds, each
timed with ``time.process_time`` (the CPU of every thread of the process, OpenCV's
included); the best pass is printed. ``--root DIR`` imports ``urban_gym`` from another
checkout (a worktree of an older commit, say), with this script's loop::

    git worktree add /tmp/old f102823
    .venv/bin/python benchmarks/cpu_per_step.py UrbanGym/CityWalk-v0 \\
        --env-kwargs '{"view_size": 84}' --steps 1500 --root /tmp/old
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("env_id")
    p.add_argument("--env-kwargs", default="{}", help="JSON object of gym.make keyword arguments")
    p.add_argument("--steps", type=int, default=1500, help="steps a pass (default 1500)")
    p.add_argument("--passes", type=int, default=3, help="timed passes (default 3)")
    p.add_argument("--root", type=Path, help="import urban_gym from this checkout instead")
    a = p.parse_args(argv)
    if a.steps < 1 or a.passes < 1:
        p.error(f"--steps {a.steps} --passes {a.passes}: both must be at least 1")
    if a.root is not None and not (a.root / "urban_gym" / "__init__.py").is_file():
        p.error(f"--root {a.root}: no urban_gym package there")
    sys.path.insert(0, str(ROOT))
    if a.root is not None:
        sys.path.insert(0, str(a.root.resolve()))
    # urban_gym first, from --root where given: what the benchmark modules import is then it
    urban_gym = importlib.import_module("urban_gym")
    from benchmarks.bench_throughput import make
    from benchmarks.count_instructions import _loop

    kwargs = json.loads(a.env_kwargs)
    env = make(a.env_id, kwargs)
    _loop(env, a.steps)  # warm: the same seeds as the timed passes
    best = float("inf")
    for _ in range(a.passes):
        t = time.process_time()
        _loop(env, a.steps)
        best = min(best, time.process_time() - t)
    print(
        f"{a.env_id} {kwargs} ({Path(urban_gym.__file__).parent.parent}): "
        f"{best / a.steps * 1e6:,.0f} us CPU a step "
        f"(best of {a.passes} warm passes of {a.steps} steps)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
