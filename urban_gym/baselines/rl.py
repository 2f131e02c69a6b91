"""Training stable-baselines3 policies on the RL face: sb3-contrib's ``MaskablePPO``.

:func:`make_sb3_env` builds the RL face of any registered id
(:func:`urban_gym.wrappers.rl.make_rl_env`: text dropped or encoded, images resized, the
action mask exposed as ``action_masks()``) inside sb3's ``Monitor``; :func:`train_maskable_ppo`
trains ``MaskablePPO`` with the ``MultiInputPolicy`` on it and reports episodes and success.
torch and stable-baselines3 are imported here only.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import gymnasium as gym
from sb3_contrib import MaskablePPO
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.monitor import Monitor

from urban_gym.wrappers.rl import make_rl_env


def make_sb3_env(
    env: str | gym.Env,
    image_size: tuple[int, int] | None = (64, 64),
    text: str = "drop",
    env_kwargs: dict[str, Any] | None = None,
) -> gym.Env:
    """The RL face of ``env`` (an id with ``env_kwargs`` for ``gym.make``, or an env)
    wrapped in sb3's ``Monitor`` (which logs ``is_success`` from the last ``info``).
    """
    return Monitor(
        make_rl_env(env, image_size=image_size, text=text, env_kwargs=env_kwargs),
        info_keywords=("is_success",),
    )


class EpisodeCounter(BaseCallback):
    """Counts finished episodes, successes, returns and invalid actions during training.

    ``invalid_actions`` counts the steps whose ``info["action_valid"]`` is False: with the
    action mask in use it stays 0 wherever the mask is exact.
    """

    def __init__(self) -> None:
        super().__init__()
        self.episodes = 0
        self.successes = 0
        self.invalid_actions = 0
        self.returns: list[float] = []

    def _on_step(self) -> bool:
        for done, info in zip(self.locals["dones"], self.locals["infos"]):
            if info.get("action_valid") is False:
                self.invalid_actions += 1
            if done:
                self.episodes += 1
                self.successes += int(bool(info.get("is_success", False)))
                ep = info.get("episode")
                if isinstance(ep, dict) and "r" in ep:
                    self.returns.append(float(ep["r"]))
        return True


def train_maskable_ppo(
    env: str | gym.Env,
    total_timesteps: int = 2048,
    n_steps: int = 256,
    batch_size: int = 64,
    n_epochs: int = 2,
    learning_rate: float = 3e-4,
    image_size: tuple[int, int] | None = (48, 48),
    text: str = "drop",
    seed: int | None = 0,
    torch_threads: int | None = 1,
    save_path: str | Path | None = None,
    verbose: int = 0,
    env_kwargs: dict[str, Any] | None = None,
) -> tuple[MaskablePPO, dict[str, Any]]:
    """Train ``MaskablePPO`` (``MultiInputPolicy``) on the RL face of ``env``.

    Images smaller than 36 pixels a side are not accepted by sb3's default CNN; keep
    ``image_size`` >= (36, 36). With ``save_path`` the checkpoint is saved with the record
    of its RL face (env id and kwargs, ``image_size``, ``text``:
    :mod:`urban_gym.baselines.sb3_agent`), so that ``urban-gym eval --agent sb3:PATH``
    rebuilds the same face. Returns ``(model, stats)`` with ``timesteps``, ``episodes``,
    ``success_rate`` (of the episodes finished while training), ``mean_return``,
    ``invalid_actions`` (steps the env rejected), ``updates`` (gradient steps),
    ``param_change`` (L2 norm of the change of the policy's parameters), ``loss`` (PPO's
    loss at the last update; NaN if there was none) and ``wall_s`` (seconds).
    """
    import torch
    from torch.nn.utils import parameters_to_vector

    if torch_threads:
        torch.set_num_threads(int(torch_threads))
    venv = make_sb3_env(env, image_size=image_size, text=text, env_kwargs=env_kwargs)
    model = MaskablePPO(
        "MultiInputPolicy",
        venv,
        n_steps=n_steps,
        batch_size=batch_size,
        n_epochs=n_epochs,
        learning_rate=learning_rate,
        seed=seed,
        verbose=verbose,
        device="cpu",
    )
    counter = EpisodeCounter()
    before = parameters_to_vector(model.policy.parameters()).detach().clone()
    t0 = time.perf_counter()
    model.learn(total_timesteps=total_timesteps, callback=counter)
    wall = time.perf_counter() - t0
    change = parameters_to_vector(model.policy.parameters()).detach() - before
    if save_path is not None:
        from urban_gym.baselines.sb3_agent import write_face

        model.save(str(save_path))
        write_face(
            save_path,
            "MaskablePPO",
            env if isinstance(env, str) else getattr(getattr(env, "spec", None), "id", None),
            env_kwargs if isinstance(env, str) else None,
            image_size,
            text,
        )
    stats = {
        "timesteps": int(model.num_timesteps),
        "episodes": counter.episodes,
        "success_rate": counter.successes / counter.episodes if counter.episodes else 0.0,
        "mean_return": sum(counter.returns) / len(counter.returns) if counter.returns else 0.0,
        "invalid_actions": counter.invalid_actions,
        "updates": int(getattr(model, "_n_updates", 0)),
        "param_change": float(change.norm()),
        "loss": float(model.logger.name_to_value.get("train/loss", float("nan"))),
        "wall_s": round(wall, 2),
    }
    return model, stats
