"""PoseGraph360 in a minute: one oracle episode per task type on Helsinki, printed, with
the first and last frame of each saved as PNG (what ``render_mode="rgb_array"`` shows).

Run: ``python examples/posegraph360_quickstart.py [--out posegraph360_frames]``.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import gymnasium as gym
from PIL import Image

import urban_gym  # noqa: F401  (registers the UrbanGym/... ids)
from urban_gym.families.posegraph360.oracle import PoseGraphOracle
from urban_gym.families.posegraph360.tasks import TASK_TYPES


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--out", default="posegraph360_frames", help="folder for the PNGs")
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    env = gym.make("UrbanGym/PoseGraph360-v0", render_mode="rgb_array", view_size=256)
    tasks = env.unwrapped.tasks
    oracle = PoseGraphOracle()
    for task_type in TASK_TYPES:
        task = next(t for t in tasks if t.type == task_type)
        obs, info = env.reset(seed=0, options={"task_id": task.id})
        oracle.reset(env)
        Image.fromarray(env.render()).save(out / f"{task.id}_start.png")
        print(f"\n{task.id}: {task.instruction}")
        while True:
            action = oracle.act(env)  # a structured action; env.unwrapped.action_index(action)
            obs, reward, terminated, truncated, info = env.step(action)  # gives the RL index
            if terminated or truncated:
                break
        Image.fromarray(env.render()).save(out / f"{task.id}_end.png")
        m = info["metrics"]
        print(
            f"  {info['termination']} after {info['steps']} steps: score {m['score']:.2f}"
            f" (answer: {action.get('text')!r}, truth: {task.answer!r})"
        )
    print(f"\nframes saved in {out}/")


if __name__ == "__main__":
    main()
