"""The evaluation harness: its overhead, its parallel speed-up and the time of a large
report, each next to a reference measured in the same run.

* overhead: ``urban-gym eval`` (records, traces, goal visibility on) with the oracle on the
  symbolic StreetGraph procedural suite, one process, its episode loop (set-up excluded);
  reference: a bare loop over the same episodes (``gym.make``, reset by task id, the
  oracle's actions, nothing written). CPU time of the process and wall time, with the run
  folder on the working disk and on a RAM disk (/dev/shm: no file-creation cost). Goal:
  <= 5% more time.
* local workers: the random agent on the same suite with ``--workers 2`` vs 1. Goal: >=
  1.7x faster (on 2 cores).
* Ray: the same with ``--backend ray --workers 2`` (``ray.init()`` done before timing;
  the actors' start-up, world load included, is timed) vs 1 local worker. Goal: >= 1.5x.
* report: ``urban-gym report`` of a 10,000-episode run (tables with 10,000-resample
  bootstrap CIs, failure causes from 10,000 traces, plots; no GIFs). Goal: < 30 s.

Timings are the best of ``--rounds`` alternating rounds (other processes share the
machine). Run: ``python benchmarks/bench_harness.py [--rounds 3] [--quick]``.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks._common import print_table  # noqa: E402

SG = "UrbanGym/StreetGraph-Procedural-v0"
KW = {"observation": "symbolic"}


def bare_loop(seeds: int) -> tuple[float, float]:
    """``(wall, cpu)`` seconds of the bare oracle loop over every task and seed (the env is
    made first, as the harness makes its own before its loop; its distance fields are
    computed in the loop in both)."""
    import gymnasium as gym

    import urban_gym  # noqa: F401
    from urban_gym.baselines.oracles import make_oracle

    env = gym.make(SG, **KW)
    tasks = [t.id for t in env.unwrapped.tasks]
    t0, c0 = time.perf_counter(), time.process_time()
    for r in range(seeds):
        for tid in tasks:
            env.reset(seed=r, options={"task_id": tid})
            oracle = make_oracle(env)
            oracle.reset(env)
            done = False
            while not done:
                _, _, term, trunc, _ = env.step(oracle.act(env))
                done = term or trunc
    return time.perf_counter() - t0, time.process_time() - c0


def harness(out: Path, agent: str, seeds: int, workers: int = 1, backend: str = "local"):
    """``(loop wall, loop cpu, total wall)`` seconds of a harness run (the world is
    already loaded in this process)."""
    from urban_gym.eval.runner import run

    shutil.rmtree(out, ignore_errors=True)
    t0 = time.perf_counter()
    r = run(
        SG,
        out,
        agent=agent,
        env_kwargs=KW,
        seeds=seeds,
        workers=workers,
        backend=backend,
        progress=False,
    )
    return r.wall_s, r.cpu_s, time.perf_counter() - t0


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rounds", type=int, default=3, help="alternating rounds (best is kept)")
    p.add_argument("--quick", action="store_true", help="smaller workloads")
    p.add_argument("--no-ray", action="store_true", help="skip the Ray measurement")
    args = p.parse_args()
    seeds_oracle = 2 if args.quick else 5
    seeds_random = 3 if args.quick else 8
    tmp = Path(tempfile.mkdtemp(prefix="bench-harness-"))
    rows = []
    try:
        bare_loop(1)  # warm up: world, graph, caches
        shm = (
            Path(tempfile.mkdtemp(prefix="bench-harness-", dir="/dev/shm"))
            if Path("/dev/shm").is_dir()
            else tmp
        )
        inf = float("inf")
        bw = bc = hw = hc = sw = sc = inf
        for _ in range(args.rounds):
            w, c = bare_loop(seeds_oracle)
            bw, bc = min(bw, w), min(bc, c)
            w, c, _ = harness(tmp / "oracle", "oracle", seeds_oracle)
            hw, hc = min(hw, w), min(hc, c)
            w, c, _ = harness(shm / "oracle", "oracle", seeds_oracle)
            sw, sc = min(sw, w), min(sc, c)
        shutil.rmtree(shm, ignore_errors=True)
        n = 100 * seeds_oracle
        for label, w, c in (("disk", hw, hc), ("RAM disk", sw, sc)):
            rows.append(
                (
                    f"oracle, {n} episodes, 1 process, run folder on {label}: harness loop "
                    "vs bare loop, CPU (wall)",
                    f"{c:.2f} s vs {bc:.2f} s ({w:.2f} s vs {bw:.2f} s)",
                    f"{100 * (c / bc - 1):+.1f}% CPU ({100 * (w / bw - 1):+.1f}% wall)",
                    "<= +5%",
                )
            )
        one = two = inf
        for _ in range(args.rounds):
            one = min(one, harness(tmp / "w1", "random", seeds_random, 1)[2])
            two = min(two, harness(tmp / "w2", "random", seeds_random, 2)[2])
        n = 100 * seeds_random
        rows.append(
            (
                f"random, {n} episodes: --workers 2 vs 1",
                f"{two:.2f} s vs {one:.2f} s",
                f"{one / two:.2f}x faster",
                ">= 1.7x",
            )
        )
        if not args.no_ray:
            import ray

            t0 = time.perf_counter()
            ray.init(
                num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level="WARNING"
            )
            init = time.perf_counter() - t0
            best_r = float("inf")
            for _ in range(args.rounds):
                best_r = min(best_r, harness(tmp / "ray", "random", seeds_random, 2, "ray")[2])
            ray.shutdown()
            rows.append(
                (
                    f"random, {n} episodes: --backend ray --workers 2 vs 1 local",
                    f"{best_r:.2f} s vs {one:.2f} s (+ {init:.1f} s ray.init)",
                    f"{one / best_r:.2f}x faster ({one / (best_r + init):.2f}x with init)",
                    ">= 1.5x",
                )
            )
        # a 10,000-episode run (random agent: mostly failures, so 10,000 traces are read)
        from urban_gym.eval.report import build_report, write_report
        from urban_gym.eval.runner import run

        big = tmp / "big"
        seeds_big = 10 if args.quick else 100
        t0 = time.perf_counter()
        run(SG, big, agent="random", env_kwargs=KW, seeds=seeds_big, workers=2, progress=False)
        made = time.perf_counter() - t0
        t0 = time.perf_counter()
        rep = build_report([big])
        write_report(rep, tmp / "big-report")
        took = time.perf_counter() - t0
        rows.append(
            (
                f"report of a {100 * seeds_big:,}-episode run (CIs, failures, plots)",
                f"{took:.1f} s",
                f"{took / made:.2f}x the run's {made:.0f} s",
                "< 30 s",
            )
        )
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print_table("Evaluation harness", rows)


if __name__ == "__main__":
    main()
