"""Train a MaskablePPO policy (sb3-contrib) on an urban_gym environment's RL face and
evaluate it.

    python examples/train_ppo.py                     # StreetGraph, 2,048 steps: about a minute
    python examples/train_ppo.py --timesteps 20000 --eval-episodes 5   # about 9 minutes

(wall times on a 2-core machine with 48x48 images; the first run also builds the city's
cache). The short default shows the whole loop -- training, then evaluation with the action
mask -- quickly; learning anything takes the longer run or more.

The RL face (``urban_gym.wrappers.make_rl_env``): the env's Discrete action table, its
``action_mask`` (MaskablePPO never picks an invalid action), text dropped, images resized.
"""

from __future__ import annotations

import argparse
import json

import urban_gym  # noqa: F401  (registers the UrbanGym/... ids)
from urban_gym.baselines.rl import make_sb3_env, train_maskable_ppo


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--env", default="UrbanGym/StreetGraph-v0", help="environment id")
    p.add_argument("--env-kwargs", type=json.loads, default={}, help="gym.make kwargs (JSON)")
    p.add_argument("--timesteps", type=int, default=2048, help="training steps (2048)")
    p.add_argument("--n-steps", type=int, default=256, help="rollout length per update")
    p.add_argument("--image-size", type=int, default=48, help="image side after resizing (>= 36)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--eval-episodes", type=int, default=3, help="evaluation episodes (3)")
    p.add_argument("--save", default=None, help="where to save the model (.zip)")
    args = p.parse_args()

    size = (args.image_size, args.image_size)
    model, stats = train_maskable_ppo(
        args.env,
        total_timesteps=args.timesteps,
        n_steps=args.n_steps,
        image_size=size,
        seed=args.seed,
        save_path=args.save,
        env_kwargs=args.env_kwargs,
    )
    print("training:", json.dumps(stats))

    env = make_sb3_env(args.env, image_size=size, env_kwargs=args.env_kwargs)
    successes = 0
    for i in range(args.eval_episodes):
        obs, info = env.reset(seed=10_000 + args.seed + i)
        done = False
        while not done:
            action, _ = model.predict(
                obs, action_masks=env.get_wrapper_attr("action_masks")(), deterministic=True
            )
            obs, _, terminated, truncated, info = env.step(int(action))
            done = terminated or truncated
        successes += bool(info.get("is_success"))
        print(
            f"eval episode {i}: termination={info.get('termination')} "
            f"success={info.get('is_success')} metrics={json.dumps(info.get('metrics', {}))}"
        )
    print(f"evaluation success rate: {successes}/{args.eval_episodes}")


if __name__ == "__main__":
    main()
