"""StreetGraph: loading + preprocessing a synthetic 30,000-node Touchdown graph, and env
steps per second (symbolic, and with 4 cached 84x84 views), each next to a reference
measured in the same run.

* load + preprocess: ``read_touchdown`` + ``preprocess`` of ~30k nodes / ~65k links;
  reference: a bare ``csv.reader`` pass over the same two files. Goal: <= 10 s.
* symbolic step: ``StreetGraphEnv`` (observation ``symbolic``) on the procedural suite,
  valid random actions; reference: a bare ``gymnasium`` ``CartPole-v1`` step. Goal: <= 3x.
* image step: the same env with 84x84 views on a 4-way grid graph whose option views are
  all cached (rendered once before timing); reference: the CartPole step again.

Run: ``python benchmarks/bench_streetgraph.py``.
"""

from __future__ import annotations

import csv
import math
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks._common import print_table, time_call  # noqa: E402


def write_synthetic_touchdown(
    directory: str | Path, n_nodes: int = 30_000, seed: int = 0, images: int = 0
) -> Path:
    """Write a Touchdown-format street grid of about ``n_nodes`` panoramas: intersections
    every 60 m with 5 panoramas between them (10 m apart, jittered by up to 1 m), 3% of the
    links written one way only, a 3-panorama dead-end spur at 5% of the intersections.
    Panorama ids are 22 random characters, like Street View's. With ``images > 0`` an
    ``images/`` folder gets that many tiny equirectangular PNGs (for the first panoramas).
    Returns the directory."""
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    pts, edges = _street_grid(rng, n_nodes)
    alphabet = np.array(list("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"))
    ids = ["".join(row) for row in alphabet[rng.integers(0, 64, (len(pts), 22))]]
    _write_nodes_and_links(d, np.array(pts), edges, ids, rng)
    if images:
        _write_images(d, ids[: min(images, len(pts))])
    return d


def _street_grid(
    rng: np.random.Generator, n_nodes: int, per: int = 5
) -> tuple[list[tuple[float, float]], list[tuple[int, int]]]:
    """The panorama positions (m) and links of the grid described in
    :func:`write_synthetic_touchdown` (``per`` panoramas between intersections)."""
    g = max(2, int(math.sqrt(n_nodes / (1 + 2 * per))) + 1)
    pts: list[tuple[float, float]] = []
    node_at: dict[tuple[int, int], int] = {}

    def add(x: float, y: float) -> int:
        pts.append((x + rng.uniform(-1, 1), y + rng.uniform(-1, 1)))
        return len(pts) - 1

    for j in range(g):
        for i in range(g):
            node_at[i, j] = add(60.0 * i, 60.0 * j)
    edges: list[tuple[int, int]] = []
    for j in range(g):
        for i in range(g):
            for di, dj in ((1, 0), (0, 1)):
                if i + di >= g or j + dj >= g:
                    continue
                chain = [node_at[i, j]]
                for k in range(1, per + 1):
                    chain.append(add(60.0 * i + 10.0 * k * di, 60.0 * j + 10.0 * k * dj))
                chain.append(node_at[i + di, j + dj])
                edges.extend(zip(chain[:-1], chain[1:]))
            if rng.random() < 0.05:
                prev = node_at[i, j]
                for k in range(1, 4):
                    cur = add(60.0 * i + 3.0 * k, 60.0 * j + 4.0 * k)
                    edges.append((prev, cur))
                    prev = cur
    return pts, edges


def _write_nodes_and_links(
    d: Path, xy: np.ndarray, edges: list[tuple[int, int]], ids: list[str], rng: np.random.Generator
) -> None:
    """``nodes.txt`` (id, yaw, lat, lon around Manhattan) and ``links.txt`` (both ways
    except for 3% of the links)."""
    from urban_gym.world.geo import GeoFrame, bearing

    lat, lon = GeoFrame(40.75, -73.98).to_latlon(xy[:, 0], xy[:, 1])
    yaw = rng.uniform(0, 360, len(xy))
    with open(d / "nodes.txt", "w", encoding="utf-8") as f:
        for k in range(len(xy)):
            f.write(f"{ids[k]},{yaw[k]:.2f},{lat[k]:.8f},{lon[k]:.8f}\n")
    one_way = rng.random(len(edges)) < 0.03
    with open(d / "links.txt", "w", encoding="utf-8") as f:
        for (a, b), ow in zip(edges, one_way):
            dx, dy = xy[b] - xy[a]
            h = bearing(dx, dy)
            f.write(f"{ids[a]},{h:.2f},{ids[b]}\n")
            if not ow:
                f.write(f"{ids[b]},{(h + 180.0) % 360.0:.2f},{ids[a]}\n")


def _write_images(d: Path, ids: list[str]) -> None:
    """A tiny 64x128 equirectangular PNG per panorama id in ``d/images``."""
    import cv2

    (d / "images").mkdir(exist_ok=True)
    for k, pid in enumerate(ids):
        img = np.zeros((64, 128, 3), np.uint8)
        img[:, :, 0] = np.linspace(0, 255, 128, dtype=np.uint8)[None, :]
        img[:, :, 1] = (k * 37) % 256
        cv2.imwrite(str(d / "images" / f"{pid}.png"), img)


def bare_csv(d: Path) -> None:
    for name in ("nodes.txt", "links.txt"):
        with open(d / name, newline="", encoding="utf-8") as f:
            for _ in csv.reader(f):
                pass


def load_and_preprocess(d: Path) -> tuple[float, object]:
    from urban_gym.families.streetgraph.world import preprocess, read_touchdown

    t = time.perf_counter()
    g = read_touchdown(d)
    g2, rep = preprocess(g)
    return time.perf_counter() - t, (g, g2, rep)


def cartpole_step_time() -> float:
    import gymnasium as gym

    env = gym.make("CartPole-v1").unwrapped
    env.reset(seed=0)
    n = 20_000
    t = time.perf_counter()
    for _ in range(n):
        _, _, term, trunc, _ = env.step(0 if env.state[2] > 0 else 1)
        if term or trunc:
            env.reset()
    return (time.perf_counter() - t) / n


def env_step_time(env, n: int = 5_000) -> tuple[float, float]:
    """Seconds per ``step`` call alone, and per step including the resets, over ``n``
    steps of valid random actions."""
    from urban_gym.baselines.random_agent import RandomAgent

    agent = RandomAgent(env.action_space, seed=0)
    actions = []
    obs, _ = env.reset(seed=0)
    in_step = 0.0
    t0 = time.perf_counter()
    for _ in range(n):
        a = agent.act(obs)
        actions.append(a)
        t = time.perf_counter()
        obs, _, term, trunc, _ = env.step(a)
        in_step += time.perf_counter() - t
        if term or trunc:
            obs, _ = env.reset()
    total = time.perf_counter() - t0
    t = time.perf_counter()
    for _ in range(n):
        agent.act(obs)
    agent_time = time.perf_counter() - t
    return in_step / n, (total - agent_time) / n


def image_env(d: Path):
    """An 84x84 image env on a small grid graph whose views are all cached."""
    from urban_gym.families.streetgraph.env import StreetGraphEnv
    from urban_gym.families.streetgraph.tasks import touchdown_graph_spec
    from urban_gym.families.streetgraph.world import load_streetgraph
    from urban_gym.tasks.spec import TaskSpec

    spec = touchdown_graph_spec(d, d / "images")
    g = load_streetgraph(spec)
    task = TaskSpec(
        id="bench",
        family="streetgraph",
        type="origin_destination",
        difficulty="n/a",
        city="bench",
        instruction="Go to the far corner.",
        start={"node": g.ids[0], "heading": 0.0, "graph": spec},
        goal={"nodes": [g.ids[-1]], "name": "corner"},
    )
    env = StreetGraphEnv(
        tasks=[task],
        observation="images",
        image_size=84,
        view_cache_mb=4096,
        max_decisions=10**6,
        max_transitions=10**7,
    )
    env.reset(seed=0)
    for node in range(g.num_nodes):  # warm the view cache
        env.node = node
        env.options = env._options_at(node)
        env._option_views()
    return env


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        d = write_synthetic_touchdown(Path(tmp) / "synthetic", 30_000)
        ref = time_call(lambda: bare_csv(d), repeat=5)
        times = []
        for _ in range(3):
            dt, (g, g2, rep) = load_and_preprocess(d)
            times.append(dt)
        load = float(np.median(times))
        print(f"synthetic graph: {g.num_nodes} nodes, {g.num_links} links; preprocessing:")
        print(rep)

        from urban_gym.families.streetgraph.env import StreetGraphEnv

        cart = cartpole_step_time()
        sym_env = StreetGraphEnv(suite="procedural", observation="symbolic")
        sym, sym_reset = env_step_time(sym_env)

        small = write_synthetic_touchdown(Path(tmp) / "small", 400, seed=1, images=10_000)
        img_env = image_env(small)
        img, img_reset = env_step_time(img_env)
        cart2 = cartpole_step_time()
        cart = float(np.median([cart, cart2]))
    print_table(
        "StreetGraph",
        [
            (
                "bare csv pass over nodes.txt + links.txt (reference)",
                f"{ref * 1000:.0f} ms",
                "1.0x",
                "",
            ),
            (
                f"read_touchdown + preprocess ({g.num_nodes} nodes, {g.num_links} links)",
                f"{load:.2f} s",
                f"{load / ref:.1f}x",
                "<= 10 s",
            ),
            ("bare CartPole-v1 step (reference)", f"{cart * 1e6:.1f} us", "1.0x", ""),
            (
                "symbolic step (procedural suite)",
                f"{sym * 1e6:.1f} us ({1 / sym:,.0f}/s)",
                f"{sym / cart:.2f}x",
                "<= 3x",
            ),
            (
                "symbolic step incl. resets (Dijkstra per new goal)",
                f"{sym_reset * 1e6:.1f} us ({1 / sym_reset:,.0f}/s)",
                f"{sym_reset / cart:.2f}x",
                "",
            ),
            (
                "step with 4 cached 84x84 views",
                f"{img * 1e6:.1f} us ({1 / img:,.0f}/s)",
                f"{img / cart:.2f}x",
                "",
            ),
            (
                "step with 4 cached 84x84 views incl. resets",
                f"{img_reset * 1e6:.1f} us ({1 / img_reset:,.0f}/s)",
                f"{img_reset / cart:.2f}x",
                "",
            ),
        ],
    )


if __name__ == "__main__":
    main()
