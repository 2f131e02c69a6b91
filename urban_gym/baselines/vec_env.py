"""stable-baselines3 on the native batched vector env: :class:`NativeSB3VecEnv`.

stable-baselines3 steps a ``VecEnv`` of its own interface (``step_async`` / ``step_wait``,
``reset()`` returning observations only, ``dones`` with the episode's final observation in
``info["terminal_observation"]`` and the env already reset). :class:`NativeSB3VecEnv` gives
that interface to an urban_gym :class:`~urban_gym.envs.vector.NativeVectorEnv` run in
``same_step`` autoreset mode, with the RL face of :func:`urban_gym.wrappers.rl.make_rl_env`
at the env's own image size: text entries dropped, compass entries encoded as sines and
cosines, ``action_masks()`` the batch's masks for sb3-contrib's ``MaskablePPO``.
:func:`make_native_vec_env` builds one from an id, inside sb3's ``VecMonitor``.
torch and stable-baselines3 are imported here only.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from gymnasium.vector import AutoresetMode
from stable_baselines3.common.vec_env import VecEnv, VecMonitor

from urban_gym.envs.vector import ARRAY_SPACES, NativeVectorEnv
from urban_gym.envs.workers import ShardedVectorEnv
from urban_gym.errors import InputError
from urban_gym.wrappers.rl import is_angle_space


class NativeSB3VecEnv(VecEnv):
    """stable-baselines3's ``VecEnv`` over a :class:`NativeVectorEnv` in ``same_step``
    autoreset mode (see the module docstring).
    """

    def __init__(self, venv: NativeVectorEnv | ShardedVectorEnv) -> None:
        if not isinstance(venv, (NativeVectorEnv, ShardedVectorEnv)):
            raise InputError(
                "NativeSB3VecEnv needs a NativeVectorEnv or a ShardedVectorEnv, got "
                f"{type(venv).__name__}"
            )
        if venv.autoreset_mode != AutoresetMode.SAME_STEP:
            raise InputError(
                f"NativeSB3VecEnv needs autoreset_mode='same_step' (stable-baselines3 resets "
                f"in the step that ends an episode), got {venv.autoreset_mode.value!r}"
            )
        single = venv.single_observation_space
        if not isinstance(single, spaces.Dict):
            raise InputError(f"NativeSB3VecEnv needs a Dict observation space, got {single}")
        self.venv = venv
        self.keys = [k for k, s in single.spaces.items() if isinstance(s, ARRAY_SPACES)]
        self.angle_keys = {k for k in self.keys if is_angle_space(single.spaces[k])}
        obs_space = spaces.Dict(
            {
                k: spaces.Box(
                    -1.0, 1.0, (2 * int(np.prod(single.spaces[k].shape or ())),), np.float32
                )
                if k in self.angle_keys
                else single.spaces[k]
                for k in self.keys
            }
        )
        super().__init__(venv.num_envs, obs_space, venv.single_action_space)
        self._actions: np.ndarray | None = None

    # ------------------------------------------------------------------ observations
    def _face(self, obs: dict[str, Any], batched: bool = True) -> dict[str, Any]:
        out = {}
        for k in self.keys:
            v = obs[k]
            if k in self.angle_keys:
                a = np.radians(np.asarray(v, dtype=np.float64))
                a = a.reshape(len(a), -1) if batched else a.reshape(1, -1)
                v = np.concatenate([np.sin(a), np.cos(a)], axis=1).astype(np.float32)
                v = v if batched else v[0]
            out[k] = v
        return out

    # ------------------------------------------------------------------ VecEnv
    def reset(self) -> dict[str, Any]:
        """Reset every env (with the seeds and options given by ``seed`` /
        ``set_options`` since the last reset); the observations of the RL face.
        """
        seeds = None if all(s is None for s in self._seeds) else list(self._seeds)
        opts = self._options[0] if self._options and self._options[0] else None
        obs, _ = self.venv.reset(seed=seeds, options=opts)
        self._reset_seeds()
        self._reset_options()
        self.reset_infos = [dict(i or {}) for i in self.venv.last_infos]
        return self._face(obs)

    def step_async(self, actions: np.ndarray) -> None:
        """Keep the actions for :meth:`step_wait`."""
        self._actions = np.asarray(actions)

    def step_wait(self) -> tuple[dict[str, Any], np.ndarray, np.ndarray, list[dict]]:
        """Step every env: observations, rewards (float32), dones and one info dict each
        (an ended episode's: its final info, ``terminal_observation`` and
        ``TimeLimit.truncated``; the env is already reset).
        """
        if self._actions is None:
            raise InputError("step_wait() called without step_async(actions) before it")
        obs, rew, term, trunc, info = self.venv.step(self._actions)
        self._actions = None
        dones = np.logical_or(term, trunc)
        # a running env's info is the native env's own dict, not copied (stable-baselines3
        # only reads it; a native env may fill it when first used); an ended episode's is
        # a copy with the keys stable-baselines3 needs added
        infos: list[dict] = [raw if raw is not None else {} for raw in self.venv.last_infos]
        for i in np.flatnonzero(dones).tolist():
            d = dict(infos[i])
            d["terminal_observation"] = self._face(info["final_obs"][i], batched=False)
            d["TimeLimit.truncated"] = bool(trunc[i] and not term[i])
            infos[i] = d
        return self._face(obs), rew.astype(np.float32), dones, infos

    def close(self) -> None:
        """Close the native vector env."""
        self.venv.close()

    def _indices(self, indices: Any) -> Sequence[int]:
        if indices is None:
            return range(self.num_envs)
        if isinstance(indices, (int, np.integer)):
            return [int(indices)]
        return [int(i) for i in indices]

    def get_attr(self, attr_name: str, indices: Any = None) -> list[Any]:
        """The attribute of the envs ``indices`` (all by default)."""
        if isinstance(self.venv, ShardedVectorEnv):
            return self.venv.get_attr_at(self._indices(indices), attr_name)
        envs = self.venv.envs
        return [getattr(envs[i], attr_name) for i in self._indices(indices)]

    def set_attr(self, attr_name: str, value: Any, indices: Any = None) -> None:
        """Set the attribute of the envs ``indices`` (all by default)."""
        if isinstance(self.venv, ShardedVectorEnv):
            self.venv.set_attr_at(self._indices(indices), attr_name, value)
            return
        for i in self._indices(indices):
            setattr(self.venv.envs[i], attr_name, value)

    def env_method(
        self, method_name: str, *method_args: Any, indices: Any = None, **method_kwargs: Any
    ) -> list[Any]:
        """Call the method on the envs ``indices``; ``action_masks`` reads the batch's
        masks at once.
        """
        idx = self._indices(indices)
        if method_name == "action_masks" and not method_args and not method_kwargs:
            masks = self.venv.action_masks()
            return [masks[i] for i in idx]
        if isinstance(self.venv, ShardedVectorEnv):
            return self.venv.call_at(idx, method_name, *method_args, **method_kwargs)
        envs = self.venv.envs
        return [getattr(envs[i], method_name)(*method_args, **method_kwargs) for i in idx]

    def env_is_wrapped(self, wrapper_class: type[gym.Wrapper], indices: Any = None) -> list[bool]:
        """False for every env: the native vector env's envs are not wrapped."""
        return [False for _ in self._indices(indices)]

    def action_masks(self) -> np.ndarray:
        """The batch's action masks, ``(N, n)`` booleans."""
        return self.venv.action_masks()

    def get_images(self) -> Sequence[np.ndarray | None]:
        """Every env's ``render()`` frame."""
        return list(self.venv.render() or ())


def make_native_vec_env(
    env_id: str, num_envs: int, workers: int = 1, **env_kwargs: Any
) -> VecMonitor:
    """``gym.make_vec(env_id, num_envs, autoreset_mode="same_step", workers=workers,
    **env_kwargs)`` (the id's native vector env; in ``workers`` processes where more than
    one, :class:`~urban_gym.envs.workers.ShardedVectorEnv`) as a stable-baselines3
    ``VecEnv`` inside ``VecMonitor`` (episode returns and lengths in ``info["episode"]``,
    ``is_success`` kept).
    """
    extra: dict[str, Any] = {"workers": workers} if workers != 1 else {}
    venv = gym.make_vec(
        env_id, num_envs=num_envs, autoreset_mode="same_step", **extra, **env_kwargs
    )
    if not isinstance(venv, (NativeVectorEnv, ShardedVectorEnv)):
        venv.close()
        raise InputError(f"env id {env_id!r} has no native vector env (its family registers none)")
    return VecMonitor(NativeSB3VecEnv(venv), info_keywords=("is_success",))


__all__ = ["NativeSB3VecEnv", "make_native_vec_env"]
