"""Ray RLlib's PPO on any registered id, through the env registry (beyond one machine).

RLlib builds its envs by name in every ``EnvRunner`` process; :func:`register_rllib_env`
registers a name with Ray's registry whose creator imports urban_gym (which registers the
ids with Gymnasium) and builds the same RL face as ``urban-gym train``
(:func:`urban_gym.wrappers.rl.make_rl_env`: text dropped or encoded, compass entries as
sines and cosines), flattened into one ``Box`` (Gymnasium's ``FlattenObservation``) so
RLlib's default model reads it. RLlib does not read the action mask: a masked action is
an invalid-action step (a small penalty), which PPO learns to avoid.

.. code-block:: python

    import ray
    from urban_gym.baselines.rllib import ppo_config

    ray.init()  # or ray.init(address="auto") on a cluster
    algo = ppo_config(
        ENV_ID,  # a registered id (an intersection-graph family here)
        {"suite": "procedural:blocks=2x2-4x4", "observation": "symbolic", "goal": "vector",
         "max_degree": 8, "max_decisions": 20},
        num_env_runners=4,
    ).build_algo()
    for _ in range(50):
        result = algo.train()

The same ``env_kwargs`` work with ``gymnasium.make_vec(id, num_envs=N, **env_kwargs)``.
Needs the ``ray[rllib]`` extra (``pip install urban_gym[rllib]``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import gymnasium as gym


def make_flat_rl_env(
    env_id: str,
    env_kwargs: Mapping[str, Any] | None = None,
    text: str = "drop",
    image_size: tuple[int, int] | None = (48, 48),
) -> gym.Env:
    """The RL face of ``env_id`` (compass entries as sin/cos) with its ``Dict``
    observation flattened into one ``Box``.
    """
    import urban_gym  # noqa: F401  (registers the ids in this process)
    from urban_gym.wrappers.rl import make_rl_env

    env = make_rl_env(
        env_id, image_size=image_size, text=text, env_kwargs=env_kwargs, angles="sincos"
    )
    return gym.wrappers.FlattenObservation(env)


def register_rllib_env(env_id: str, name: str | None = None, **face: Any) -> str:
    """Register ``env_id`` with Ray's env registry under ``name`` (default: ``env_id``);
    the env config RLlib passes is ``gym.make``'s ``env_kwargs``. Returns the name.
    """
    from ray.tune.registry import register_env

    def creator(env_config: Mapping[str, Any]) -> gym.Env:
        from urban_gym.render.threads import one_thread_in_worker

        one_thread_in_worker()  # an env runner process: the runners use the cores already
        return make_flat_rl_env(env_id, dict(env_config or {}), **face)

    register_env(name or env_id, creator)
    return name or env_id


def ppo_config(
    env_id: str,
    env_kwargs: Mapping[str, Any] | None = None,
    num_env_runners: int = 0,
    train_batch_size: int = 512,
    minibatch_size: int = 128,
    num_epochs: int = 4,
    lr: float = 3e-4,
    seed: int = 0,
    **face: Any,
) -> Any:
    """An RLlib ``PPOConfig`` training on ``env_id`` with ``env_kwargs`` (see the module
    docstring); ``num_env_runners=0`` samples in the driver process.
    """
    from ray.rllib.algorithms.ppo import PPOConfig

    name = register_rllib_env(env_id, f"urban_gym:{env_id}", **face)
    return (
        PPOConfig()
        .environment(env=name, env_config=dict(env_kwargs or {}))
        .env_runners(num_env_runners=num_env_runners)
        .training(
            train_batch_size_per_learner=train_batch_size,
            minibatch_size=minibatch_size,
            num_epochs=num_epochs,
            lr=lr,
        )
        .debugging(seed=seed)
    )


__all__ = ["make_flat_rl_env", "ppo_config", "register_rllib_env"]
