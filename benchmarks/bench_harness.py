"""The evaluation harness: its overhead, its parallel speed-up and the time of a large
report, each next to a reference measured in the same run.

* overhead: ``urban-gym eval`` (records and traces; goal visibility off, then on) with the
  oracle on the symbolic StreetGraph procedural suite (the goal's case) and on the
  procedural PoseGraph360 suite (84x84 views), one process, the episode loop (set-up
  excluded); reference: a bare loop over the same episodes (``gym.make``, reset by task
  id, the oracle's actions, nothing written). CPU time of the process and wall time, with
  the run folder on the working disk and (symbolic case) on a RAM disk (/dev/shm: no
  file-creation cost). Goal: <= 5% more time.
* overhead in instructions (``--only callgrind``, a few minutes per process under
  valgrind): the same loops counted by ``valgrind --tool=callgrind`` (counting switched on
  just for the loop, ``--callgrind-seeds`` repeats): deterministic, whatever else runs on
  the machine.
* local workers: the random agent on the same suite (800 episodes) with ``--workers 2``
  vs 1. Goal: >= 1.7x faster (on 2 cores). Wall clock end to end and of the episode loop,
  and -- since a shared machine distorts those -- CPU-time figures: the episode CPU of
  every process (the parent's loop plus each worker's CPU after its set-up, which the
  workers report with each chunk), the busiest worker's, and the bound they put on the
  wall time with 2 free cores (:func:`parallel_figures`).
* Ray: the same with ``--backend ray --workers 2`` vs 1 local worker; ``ray.init()`` is
  done (and timed) before, and the actors' start-up is reported apart from the episodes'
  phase (from every actor ready to the last record). Goal: >= 1.5x.
* report: ``urban-gym report`` of a 10,000-episode run (tables with 10,000-resample
  bootstrap CIs, failure causes from 10,000 traces, plots; no GIFs): ``--report-real``
  (500) episodes of the random agent made by the runner, repeated to 10,000 (new repeat
  numbers, the same traces: :func:`replicate_run`). Goal: < 30 s.
* goal visibility: the cost of ``track_visibility=True`` per env step (random valid
  actions, the same seeds with and without), per family: PoseGraph360 landmark tasks
  (84x84 view, 512-px panoramas), CityWalk SGN (128x128 view), StreetGraph Helsinki with
  84x84 option views. Off by default, so RL training pays nothing.

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

from benchmarks._common import callgrind_instructions, print_table, toggle_counting  # noqa: E402

SG = "UrbanGym/StreetGraph-Procedural-v0"
KW = {"observation": "symbolic"}


def bare_loop(
    seeds: int, env_id: str = SG, kwargs: dict | None = None, freeze: bool = False
) -> tuple[float, float]:
    """``(wall, cpu)`` seconds of the bare oracle loop over every task and seed (the env is
    made first, as the harness makes its own before its loop; its distance fields are
    computed in the loop in both). ``freeze``: the loop runs with the set-up frozen out of
    the garbage collector's passes, as the harness runs its episodes -- the reference that
    leaves only the harness's own work in the difference."""
    import gc

    import gymnasium as gym

    import urban_gym  # noqa: F401
    from urban_gym.baselines.oracles import make_oracle

    env = gym.make(env_id, **(KW if kwargs is None else kwargs))
    tasks = [t.id for t in env.unwrapped.tasks]
    if freeze:
        gc.freeze()
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
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    if freeze:
        gc.unfreeze()
    return wall, cpu


def harness(
    out: Path,
    agent: str,
    seeds: int,
    workers: int = 1,
    backend: str = "local",
    env_id: str = SG,
    kwargs: dict | None = None,
    visibility: bool = True,
):
    """``(loop wall, loop cpu, total wall)`` seconds of a harness run (the world is
    already loaded in this process)."""
    import resource

    from urban_gym.eval.runner import run

    shutil.rmtree(out, ignore_errors=True)
    ru0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    r = run(
        env_id,
        out,
        agent=agent,
        env_kwargs=KW if kwargs is None else kwargs,
        seeds=seeds,
        workers=workers,
        backend=backend,
        progress=False,
        track_visibility=visibility,
    )
    ru1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    harness.last = r  # the RunResult, for parallel_rows
    # CPU of the local worker processes (reaped when their pool shuts down)
    harness.children_cpu = (ru1.ru_utime + ru1.ru_stime) - (ru0.ru_utime + ru0.ru_stime)
    return r.wall_s, r.cpu_s, time.perf_counter() - t0


# --------------------------------------------------------------------------- callgrind
def _toggle_instrumentation(on: bool) -> None:
    """Switch callgrind's counting on/off for this process (no-op outside valgrind)."""
    import os

    if os.environ.get("BENCH_UNDER_CALLGRIND") == "1":
        toggle_counting(on)


def _callgrind_child(mode: str, seeds: int, out: str) -> None:
    """Body of one callgrind process: set up (not counted: imports, world, env, a warm-up
    pass as in the timed rounds), then the counted loop -- the bare oracle loop or the harness's episode loop (``EpisodeWorker``
    built first, counting from its first episode to its close)."""
    from urban_gym.eval import runner

    bare_loop(1)  # the same warm-up as the timed rounds (imports, world, caches)
    if mode in ("bare", "bare-frozen"):
        # bare_loop makes its env, then times; the env is made before counting too
        import gymnasium as gym

        real_make = gym.make

        def make(*a, **k):
            env = real_make(*a, **k)
            _toggle_instrumentation(True)
            return env

        gym.make = make
        try:
            bare_loop(seeds, freeze=mode == "bare-frozen")
        finally:
            gym.make = real_make
            _toggle_instrumentation(False)
        return

    class CountedWorker(runner.EpisodeWorker):
        def __init__(self, *a, **k):
            super().__init__(*a, **k)
            _toggle_instrumentation(True)

        def close(self):
            _toggle_instrumentation(False)
            super().close()

    runner.EpisodeWorker = CountedWorker
    harness(Path(out), "oracle", seeds, visibility=mode == "harness-vis")


def callgrind_count(mode: str, seeds: int, tmp: Path) -> int:
    """Instructions (callgrind ``Ir``) of the counted loop of :func:`_callgrind_child`."""
    args = [__file__, "--_callgrind-child", mode, str(seeds), str(tmp / f"run-{mode}")]
    return callgrind_instructions(args, {"BENCH_UNDER_CALLGRIND": "1"})


def callgrind_rows(tmp: Path, seeds: int) -> list[tuple[str, str, str, str]]:
    """The harness loop against the bare loop in instructions (deterministic: unaffected
    by the other processes on the machine)."""
    bare = callgrind_count("bare", seeds, tmp)
    frozen = callgrind_count("bare-frozen", seeds, tmp)
    rows = []
    for mode, label in (("harness", "visibility off"), ("harness-vis", "visibility on")):
        n = callgrind_count(mode, seeds, tmp)
        rows.append(
            (
                f"oracle, symbolic StreetGraph procedural, 100 tasks x {seeds} seed(s), "
                f"harness loop ({label}) vs bare loop, instructions (callgrind)",
                f"{n / 1e9:.3f} G vs {bare / 1e9:.3f} G",
                f"{100 * (n / bare - 1):+.1f}%; {100 * (n / frozen - 1):+.1f}% vs the bare "
                f"loop with its set-up frozen too ({frozen / 1e9:.3f} G)",
                "<= +5%",
            )
        )
    return rows


VISIBILITY_CASES = (
    (
        "PoseGraph360 landmark tasks",
        "UrbanGym/PoseGraph360-v0",
        {"view_size": 84, "pano_width": 512, "task_types": ["landmark_name", "landmark_image"]},
    ),
    ("CityWalk SGN, 128x128 view", "UrbanGym/CityWalk-v0", {"task_types": ["SGN"]}),
    ("StreetGraph, 84x84 option views", "UrbanGym/StreetGraph-v0", {"image_size": 84}),
)


def step_time(env_id: str, kwargs: dict, track: bool, steps: int = 300) -> tuple[float, float]:
    """Mean seconds per env step (random valid actions, episodes from seed 0 on): a first
    pass with empty caches (every panorama and view rendered on first use: what an
    evaluation run pays) and the best of two passes over the same steps again (cached)."""
    import gymnasium as gym
    import numpy as np

    import urban_gym  # noqa: F401

    env = gym.make(env_id, track_visibility=track, **kwargs)

    def go() -> float:
        rng = np.random.default_rng(0)
        obs, _ = env.reset(seed=0)
        ep = 0
        t0 = time.perf_counter()
        for _ in range(steps):
            a = int(rng.choice(np.flatnonzero(obs["action_mask"])))
            obs, _, term, trunc, _ = env.step(a)
            if term or trunc:
                ep += 1
                obs, _ = env.reset(seed=ep)
        return (time.perf_counter() - t0) / steps

    cold = go()
    warm = min(go() for _ in range(2))
    env.close()
    return cold, warm


#: (label, env id, kwargs, repeats) of the overhead measurement: the cheapest env (the
#: goal's case) and one that renders.
OVERHEAD_CASES = (
    ("symbolic StreetGraph procedural, 100 tasks", SG, KW, 5),
    (
        "PoseGraph360 procedural, 21 tasks, 84x84 views",
        "UrbanGym/PoseGraph360-Procedural-v0",
        {"view_size": 84},
        10,
    ),
)


def overhead_rows(tmp: Path, rounds: int, quick: bool) -> list[tuple[str, str, str, str]]:
    """The harness loop against the bare loop (oracle): records and traces alone
    (``track_visibility`` off), on disk and -- the symbolic case -- on a RAM disk (no
    file-system cost), and the default run (visibility on)."""
    shm_root = Path("/dev/shm") if Path("/dev/shm").is_dir() else tmp
    shm = Path(tempfile.mkdtemp(prefix="bench-harness-", dir=shm_root))
    rows = []
    inf = float("inf")
    try:
        for i, (label, env_id, kwargs, seeds) in enumerate(OVERHEAD_CASES):
            seeds = max(1, seeds // 2) if quick else seeds
            bare_loop(1, env_id, kwargs)  # warm up: world, graph, caches
            places = [("disk", tmp, False)]
            if i == 0:
                places.append(("RAM disk", shm, False))
            places.append(("disk, goal visibility on (the default)", tmp, True))
            best = {p: (inf, inf) for p, _, _ in places}
            bw = bc = fc = inf
            for _ in range(rounds):
                w, c = bare_loop(seeds, env_id, kwargs)
                bw, bc = min(bw, w), min(bc, c)
                fc = min(fc, bare_loop(seeds, env_id, kwargs, freeze=True)[1])
                for place, root, vis in places:
                    w, c, _ = harness(
                        root / "oracle",
                        "oracle",
                        seeds,
                        env_id=env_id,
                        kwargs=kwargs,
                        visibility=vis,
                    )
                    best[place] = (min(best[place][0], w), min(best[place][1], c))
            for place, (w, c) in best.items():
                rows.append(
                    (
                        f"oracle, {label} x {seeds} seeds, 1 process, run folder on {place}: "
                        "harness loop vs bare loop, CPU (wall)",
                        f"{c:.2f} s vs {bc:.2f} s ({w:.2f} s vs {bw:.2f} s)",
                        f"{100 * (c / bc - 1):+.1f}% CPU ({100 * (w / bw - 1):+.1f}% wall); "
                        f"{100 * (c / fc - 1):+.1f}% CPU vs the bare loop with its set-up "
                        f"frozen too ({fc:.2f} s)",
                        "<= +5%",
                    )
                )
    finally:
        shutil.rmtree(shm, ignore_errors=True)
    return rows


def parallel_figures(r, total_wall: float, cores: int) -> dict[str, float]:
    """Wall and CPU figures of one harness run (``r``: its RunResult).

    ``work``: CPU seconds of the episodes in all processes (the parent's loop CPU -- in a
    parallel run: receiving and writing records -- plus each worker's CPU after its
    set-up). ``bound``: the wall time a machine with ``cores`` free cores would need at
    least: the busiest worker's episode CPU, or the work spread over the cores if more.
    Both ignore the other users of the machine, unlike the wall-clock figures.
    """
    par = getattr(r, "parallel", None) or {}  # (None: a harness older than the counters)
    workers = par.get("workers") or []
    per_worker = [w["cpu_s"] - w["setup_cpu_s"] for w in workers]
    work = r.cpu_s + sum(per_worker)
    bound = max([*per_worker, work / cores]) if per_worker else r.cpu_s
    if not workers and getattr(harness, "children_cpu", 0.0) > 0.05:
        # a harness without per-worker counters (before they were added): the workers'
        # CPU from getrusage, set-up included; the bound is then the work over the cores
        work = r.cpu_s + harness.children_cpu
        bound = work / cores
    return {
        "total": total_wall,
        "loop": r.wall_s,
        "work": work,
        "bound": bound,
        "setup": max((w["setup_wall_s"] for w in workers), default=0.0),
        "ready": par.get("ready_s") or 0.0,
        # the throughput phase: from every worker ready to the last record
        "episodes": par.get("episodes_s") or r.wall_s,
    }


def parallel_rows(
    tmp: Path, rounds: int, seeds: int, ray_too: bool
) -> list[tuple[str, str, str, str]]:
    """``--workers 2`` and the Ray backend against one local worker (random agent):
    wall-clock (end to end and the episode loop) and CPU-time figures (see
    :func:`parallel_figures`); the best of ``rounds`` for each figure."""
    import os

    cores = 2
    cases = [("w1", 1, "local"), ("w2", 2, "local")]
    init = None
    if ray_too:
        import ray

        t0 = time.perf_counter()
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level="WARNING")
        init = time.perf_counter() - t0
        cases.append(("ray", 2, "ray"))
    best: dict[str, dict[str, float]] = {}
    try:
        for _ in range(rounds):
            for name, workers, backend in cases:
                _, _, total = harness(tmp / name, "random", seeds, workers, backend)
                fig = parallel_figures(harness.last, total, cores)
                old = best.get(name)
                best[name] = fig if old is None else {k: min(old[k], fig[k]) for k in fig}
    finally:
        if ray_too:
            ray.shutdown()
    n = 100 * seeds
    one = best["w1"]
    rows = []
    labels = {"w2": ("--workers 2", ">= 1.7x"), "ray": ("--backend ray --workers 2", ">= 1.5x")}
    for name in ("w2", "ray"):
        if name not in best:
            continue
        f = best[name]
        label, goal = labels[name]
        rows.append(
            (
                f"random, {n} episodes: {label} vs 1 local; wall, end to end (episode loop)",
                f"{f['total']:.2f} s vs {one['total']:.2f} s "
                f"({f['loop']:.2f} s vs {one['loop']:.2f} s)",
                f"{one['total'] / f['total']:.2f}x ({one['loop'] / f['loop']:.2f}x) faster",
                goal + " (wall)",
            )
        )
        rows.append(
            (
                f"random, {n} episodes: {label} vs 1 local; CPU-time bound on {cores} free "
                "cores (episode CPU of all processes)",
                f"{f['bound']:.2f} s vs {one['bound']:.2f} s "
                f"({f['work']:.2f} s vs {one['work']:.2f} s)",
                f"{one['bound'] / f['bound']:.2f}x faster (work x{f['work'] / one['work']:.2f})",
                goal + " (CPU)",
            )
        )
        extra = (
            f"all workers ready after {f['ready']:.2f} s (each built its env in at most "
            f"{f['setup']:.2f} s); then the episodes took {f['episodes']:.2f} s, "
            f"{one['episodes'] / f['episodes']:.2f}x faster than 1 local"
        )
        if name == "ray" and init is not None:
            extra = f"ray.init {init:.2f} s (not in the figures above); " + extra
        rows.append((f"{label}: start-up apart from throughput (wall)", extra, "", ""))
    rows.append(
        (
            "load while measuring (1-min load average, cores)",
            f"{os.getloadavg()[0]:.1f}, {os.cpu_count()}",
            "",
            "",
        )
    )
    return rows


def replicate_run(src: Path, dest: Path, copies: int) -> int:
    """A run folder at ``dest`` holding ``copies`` copies of the run at ``src``: copy ``c``
    of every record gets repeat ``repeat + c * R`` (``R``: the source's repeats), its own
    key and a trace line of its own (the same steps under its key). Returns the
    episodes."""
    import json

    from urban_gym.eval.records import RunDir, episode_name, strict_line
    from urban_gym.eval.tracefile import TraceAppender

    s, d = RunDir(src), RunDir(dest)
    manifest = s.read_manifest()
    recs = s.read_episodes()
    reps = 1 + max(int(r["repeat"]) for r in recs)
    manifest["seeds"] = reps * copies
    manifest["episodes"] = len(recs) * copies
    d.write_manifest(manifest)
    traces = TraceAppender(d.traces_dir)
    lines = []
    for r in recs:
        where = r["trace"]
        with open(s.path / where["file"], "rb") as f:
            f.seek(where["offset"])
            r["trace"] = json.loads(f.read(where["length"]))
    for c in range(copies):
        for r in recs:
            r = dict(r)
            r["repeat"] = int(r["repeat"]) + c * reps
            r["key"] = episode_name(r["task_id"], r["seed"], r["repeat"])
            line = strict_line({**r["trace"], "key": r["key"]}, small_ints=True) + "\n"
            r["trace"] = traces.write(line.encode("utf-8"))
            lines.append(strict_line(r))
    traces.close()
    d.episodes_path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return len(lines)


def report_rows(tmp: Path, episodes: int, real: int) -> list[tuple[str, str, str, str]]:
    """The report of an ``episodes``-episode run of the random agent on the symbolic
    StreetGraph suite (100 tasks; mostly failures, so every trace is read for the failure
    causes). ``real`` episodes come from the runner (``real / 100`` repeats); the rest
    repeat their records (new repeat numbers, the same steps in traces of their own), so the report
    sees ``episodes / 100`` repeats of each of the 100 tasks -- what a run with that many
    seeds would give it. ``real == episodes``: the runner makes them all."""
    from urban_gym.eval.report import build_report, write_report
    from urban_gym.eval.runner import run

    small = tmp / "small"
    t0 = time.perf_counter()
    r = run(SG, small, agent="random", env_kwargs=KW, seeds=real // 100, workers=2, progress=False)
    made = time.perf_counter() - t0
    copies = max(1, episodes // r.ran)
    big = tmp / "big"
    n = replicate_run(small, big, copies) if copies > 1 else r.ran
    if copies == 1:
        big = small
    t0, c0 = time.perf_counter(), time.process_time()
    report = build_report([big])
    built, built_cpu = time.perf_counter() - t0, time.process_time() - c0
    write_report(report, tmp / "big-report")
    took = time.perf_counter() - t0
    how = "runner" if copies == 1 else f"{r.ran:,} from the runner, repeated x{copies}"
    return [
        (
            f"report of a {n:,}-episode run ({how}; CIs, failures, plots): build (+ write, "
            "plots) wall; build CPU",
            f"{built:.1f} s (+ {took - built:.1f} s); {built_cpu:.1f} s CPU",
            f"the {r.ran:,} real episodes took {made:.0f} s to run",
            "< 30 s",
        )
    ]


def visibility_rows() -> list[tuple[str, str, str, str]]:
    """The cost of ``track_visibility`` per env step, per family."""
    rows = []
    for label, env_id, kwargs in VISIBILITY_CASES:
        off_cold, off_warm = step_time(env_id, kwargs, False)
        on_cold, on_warm = step_time(env_id, kwargs, True)
        rows.append(
            (
                f"track_visibility, {label}: step time on vs off, first pass (cached pass)",
                f"{1000 * on_cold:.2f} ms vs {1000 * off_cold:.2f} ms "
                f"({1000 * on_warm:.2f} vs {1000 * off_warm:.2f} ms)",
                f"{100 * (on_cold / off_cold - 1):+.0f}% ({100 * (on_warm / off_warm - 1):+.0f}%)",
                "off by default",
            )
        )
    return rows


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rounds", type=int, default=3, help="alternating rounds (best is kept)")
    p.add_argument("--quick", action="store_true", help="smaller workloads")
    p.add_argument("--no-ray", action="store_true", help="skip the Ray measurement")
    p.add_argument(
        "--only",
        choices=("overhead", "callgrind", "parallel", "report", "visibility"),
        default=None,
        help="run one measurement",
    )
    p.add_argument(
        "--report-real",
        type=int,
        default=500,
        help="episodes of the report's run made by the runner (the rest repeat them)",
    )
    p.add_argument("--callgrind-seeds", type=int, default=1, help="repeats counted by callgrind")
    p.add_argument("--_callgrind-child", nargs=3, default=None, help=argparse.SUPPRESS)
    args = p.parse_args()
    if args._callgrind_child:
        mode, seeds, out = args._callgrind_child
        _callgrind_child(mode, int(seeds), out)
        return
    tmp = Path(tempfile.mkdtemp(prefix="bench-harness-"))
    rows: list[tuple[str, str, str, str]] = []
    want = {args.only} if args.only else {"overhead", "parallel", "report", "visibility"}
    try:
        if "overhead" in want:
            rows += overhead_rows(tmp, args.rounds, args.quick)
        if "callgrind" in want:
            rows += callgrind_rows(tmp, args.callgrind_seeds)
        if "parallel" in want:
            rows += parallel_rows(tmp, args.rounds, 3 if args.quick else 8, not args.no_ray)
        if "report" in want:
            rows += report_rows(tmp, 1000 if args.quick else 10_000, args.report_real)
        if "visibility" in want:
            rows += visibility_rows()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print_table("Evaluation harness", rows)


if __name__ == "__main__":
    main()
