"""Human play in the browser: how long one task takes per family when played by keys, and
the page's latency per action.

Each family's registered default id (default env settings: the views a person would play)
is served by ``urban-gym play``'s server in this process; headless Chromium (Debian's
``chromium`` + ``chromium-driver``) plays three navigation tasks per family (each once: a
repeat would find its frames in the render caches) by pressing the keys the oracle's next
action calls for (:class:`urban_gym.play.browser.ScriptedPlayer`, the browser test's
player). Measured:

* task time: from the first frame on the page to the episode's record written, with the
  scripted player's own time (Selenium commands: typing a duration, pressing a key,
  polling the page) included -- a person's thinking time is not;
* server latency per action: the server's milliseconds from a command's request to its new
  frame ready (the env's step, the observation's JPEGs), median and 95th percentile;
* page latency per action: the page's milliseconds from the key press to the new frame
  drawn (request, JSON, image decoding), median and 95th percentile;
* first frame: opening the session (env reset, first observation) until drawn.

Run: ``python benchmarks/bench_play.py [--tasks 3] [--quick]`` (``--quick``: the
procedural PoseGraph360 id and 256-px StreetGraph views, as the browser test plays them).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

PG_TASKS = ["map_navigation-easy-000", "landmark_name-easy-000", "vln-easy-000"]
SG_TASKS = [f"streetgraph-helsinki-{i:03d}" for i in (9, 27, 65)]
CW_TASKS = [f"citywalk-helsinki-sgn-{i:03d}" for i in range(3)]
#: (env id, env kwargs, tasks): navigation tasks the oracle solves in 4-30 steps
CASES = {
    "full": [
        ("UrbanGym/PoseGraph360-v0", {}, PG_TASKS),
        ("UrbanGym/StreetGraph-v0", {}, SG_TASKS),
        ("UrbanGym/CityWalk-v0", {}, CW_TASKS),
    ],
    "quick": [
        ("UrbanGym/PoseGraph360-Procedural-v0", {}, PG_TASKS),
        ("UrbanGym/StreetGraph-v0", {"image_size": 256}, SG_TASKS),
        ("UrbanGym/CityWalk-v0", {}, CW_TASKS),
    ],
}


#: After which step of its first task each family's page is photographed (``--screenshots``).
SHOT_STEP = {"posegraph360": 2, "streetgraph": 0, "citywalk": 0}


def pct(values: list[float], q: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, int(round(q * (len(s) - 1))))]


def small_png(path: Path, width: int = 960, colours: int = 128) -> None:
    """Shrink a screenshot for the README: ``width`` px wide, a ``colours`` palette."""
    from PIL import Image

    img = Image.open(path).convert("RGB")
    h = round(img.height * width / img.width)
    img = img.resize((width, h), Image.Resampling.LANCZOS)
    img.quantize(colours, method=Image.Quantize.MEDIANCUT).save(path, optimize=True)


def play_family(
    driver, env_id: str, kwargs: dict, tasks: list[str], n: int, shots: Path | None = None
) -> dict:
    from urban_gym.eval.records import RunDir
    from urban_gym.play.app import PlayServer
    from urban_gym.play.browser import ScriptedPlayer
    from urban_gym.play.run import PlayRun

    out = tempfile.mkdtemp(prefix="bench_play_")
    t0 = time.perf_counter()
    run = PlayRun(env_id, out, env_kwargs=kwargs, task_ids=tasks[:n])
    setup_s = time.perf_counter() - t0
    task_s, steps, first = [], [], []
    with PlayServer(run) as srv:
        p = ScriptedPlayer(driver, run, timeout=300)
        for r in range(len(run.keys)):
            t1 = time.perf_counter()
            if r == 0:
                p.load(srv.page_url)
            else:
                p.next_task()
            first.append(time.perf_counter() - t1)
            t2 = time.perf_counter()

            def shot(player, k, r=r):
                # the README's picture of the first task, while it is running
                if shots is not None and r == 0 and k == SHOT_STEP[run.family]:
                    if player.body("phase") == "playing":
                        small_png(player.screenshot(shots / f"play_{run.family}.png"))

            shot(p, 0)

            steps.append(p.play_oracle_episode(on_step=shot))
            task_s.append(time.perf_counter() - t2)
        client = p.client_latencies()
    records = RunDir(out).read_episodes()
    server = [x["server_ms"] for x in client]
    page = [x["client_ms"] for x in client]
    return {
        "env_id": env_id,
        "family": run.family,
        "tasks": len(run.keys),
        "episodes": len(records),
        "success": sum(bool(r["is_success"]) for r in records),
        "steps": statistics.median(steps),
        "task_s": statistics.median(task_s),
        "first_s": statistics.median(first),
        "setup_s": setup_s,
        "server_med": statistics.median(server),
        "server_p95": pct(server, 0.95),
        "page_med": statistics.median(page),
        "page_p95": pct(page, 0.95),
        "actions": len(client),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tasks", type=int, default=3, help="tasks per family (at most 3)")
    ap.add_argument("--quick", action="store_true", help="the browser test's smaller settings")
    ap.add_argument("--screenshots", default=None, help="save a picture of each family's page here")
    args = ap.parse_args()
    from urban_gym.play.browser import open_chromium

    driver = open_chromium(1280, 900)
    rows = []
    try:
        for env_id, kwargs, tasks in CASES["quick" if args.quick else "full"]:
            shots = Path(args.screenshots) if args.screenshots else None
            rows.append(play_family(driver, env_id, kwargs, tasks, args.tasks, shots))
    finally:
        driver.quit()
    print("\n### Human play: tasks played by keys in headless Chromium\n")
    print(
        "| env id (settings) | server start (s) | tasks | steps | success | task time (s) | "
        "first frame (s) | "
        "server ms/action (median, p95) | page ms/action (median, p95) |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        kw = next(k for e, k, t in CASES["quick" if args.quick else "full"] if e == r["env_id"])
        settings = ", ".join(f"{k}={v}" for k, v in kw.items()) or "defaults"
        print(
            f"| {r['env_id']} ({settings}) | {r['setup_s']:.1f} | {r['tasks']} | {r['steps']:.0f} | "
            f"{r['success']}/{r['episodes']} | {r['task_s']:.2f} | {r['first_s']:.2f} | "
            f"{r['server_med']:.1f}, {r['server_p95']:.1f} | "
            f"{r['page_med']:.1f}, {r['page_p95']:.1f} |"
        )
    print(
        "\nMedians over the tasks (steps, task time, first frame) and over all their actions "
        "(latencies); the task time includes the scripted player's Selenium commands, not a "
        "person's thinking. Server start: the run's first env and manifest (the world's load)."
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
