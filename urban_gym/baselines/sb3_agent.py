"""Trained stable-baselines3 policies as harness agents (``--agent sb3:PATH``), and the
record of the RL face a checkpoint was trained on.

**What a checkpoint records.** A policy only works on the observations it was trained on:
the same RL-face wrappers with the same settings. :func:`urban_gym.baselines.rl.
train_maskable_ppo` therefore writes, inside the checkpoint's zip file (stable-baselines3
reads only its own members and ignores others), a member :data:`FACE_MEMBER`
(``urban_gym_face.json``):

.. code-block:: json

    {"format": 1, "algo": "MaskablePPO", "env_id": "UrbanGym/<Family>-Procedural-v0",
     "env_kwargs": {"observation": "symbolic"},
     "rl_face": {"image_size": [48, 48], "text": "drop", "text_dim": 64, "angles": "raw"},
     "urban_gym_version": "0.1.0"}

``rl_face`` holds the arguments of :func:`urban_gym.wrappers.rl.make_rl_env`; ``env_id``
and ``env_kwargs`` the env it was trained on (None when it was trained on an env object).
:func:`write_face` adds the member to any checkpoint (e.g. one trained by hand);
:func:`read_face` reads it. :class:`SB3Agent` rebuilds exactly that face on the harness's
env and checks that its observation and action spaces are the policy's.
"""

from __future__ import annotations

import json
import zipfile
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import gymnasium as gym

from urban_gym.baselines.agents import BaseAgent
from urban_gym.errors import InputError, MissingFileError

if TYPE_CHECKING:
    from urban_gym.wrappers.rl import ExposeActionMask

#: Name of the face record inside a checkpoint's zip file.
FACE_MEMBER = "urban_gym_face.json"
FACE_FORMAT = 1
#: Algorithms :class:`SB3Agent` loads, by the ``algo`` name in the face record.
ALGORITHMS: dict[str, str] = {
    "MaskablePPO": "sb3_contrib:MaskablePPO",
    "RecurrentPPO": "sb3_contrib:RecurrentPPO",
    "PPO": "stable_baselines3:PPO",
    "A2C": "stable_baselines3:A2C",
    "DQN": "stable_baselines3:DQN",
}


def checkpoint_path(path: str | Path) -> Path:
    """The checkpoint file of ``path`` (stable-baselines3 adds ``.zip`` when saving)."""
    p = Path(path)
    if not p.exists() and p.with_suffix(p.suffix + ".zip").exists():
        p = p.with_suffix(p.suffix + ".zip")
    if not p.is_file():
        raise MissingFileError(f"sb3 checkpoint {str(path)!r} does not exist")
    return p


def write_face(
    path: str | Path,
    algo: str,
    env_id: str | None,
    env_kwargs: Mapping[str, Any] | None,
    image_size: tuple[int, int] | None,
    text: str = "drop",
    text_dim: int = 64,
    angles: str = "raw",
) -> dict[str, Any]:
    """Add the face record (see the module docstring) to the checkpoint at ``path``
    (replacing an older one); returns it.
    """
    from urban_gym import __version__

    p = checkpoint_path(path)
    face = {
        "format": FACE_FORMAT,
        "algo": algo,
        "env_id": env_id,
        "env_kwargs": dict(env_kwargs or {}),
        "rl_face": {
            "image_size": list(image_size) if image_size is not None else None,
            "text": text,
            "text_dim": int(text_dim),
            "angles": angles,
        },
        "urban_gym_version": __version__,
    }
    with zipfile.ZipFile(p) as z:
        has = FACE_MEMBER in z.namelist()
    if has:  # rewrite the archive without the old member
        with zipfile.ZipFile(p) as z:
            members = [(i, z.read(i)) for i in z.infolist() if i.filename != FACE_MEMBER]
        with zipfile.ZipFile(p, "w", zipfile.ZIP_DEFLATED) as z:
            for info, data in members:
                z.writestr(info, data)
    with zipfile.ZipFile(p, "a", zipfile.ZIP_DEFLATED) as z:
        z.writestr(FACE_MEMBER, json.dumps(face, indent=1))
    return face


def read_face(path: str | Path) -> dict[str, Any]:
    """The face record of a checkpoint; :class:`UrbanGymError` naming the file when it
    has none or it is malformed.
    """
    p = checkpoint_path(path)
    try:
        with zipfile.ZipFile(p) as z:
            if FACE_MEMBER not in z.namelist():
                raise InputError(
                    f"sb3 checkpoint {str(p)!r} has no {FACE_MEMBER} (the RL face it was trained "
                    "on); add it with urban_gym.baselines.sb3_agent.write_face(path, algo, "
                    "env_id, env_kwargs, image_size, text)"
                )
            face = json.loads(z.read(FACE_MEMBER))
    except zipfile.BadZipFile as exc:
        raise InputError(f"sb3 checkpoint {str(p)!r} is not a zip file ({exc})") from None
    except json.JSONDecodeError as exc:
        raise InputError(f"{str(p)!r}: {FACE_MEMBER} is not JSON ({exc})") from None
    if not isinstance(face, dict) or face.get("format") != FACE_FORMAT:
        raise InputError(f"{str(p)!r}: {FACE_MEMBER} has an unknown format: {face!r}")
    if face.get("algo") not in ALGORITHMS:
        raise InputError(
            f"{str(p)!r}: algo={face.get('algo')!r} is not one of {', '.join(ALGORITHMS)}"
        )
    return face


class SB3Agent(BaseAgent):
    """A stable-baselines3 policy from a checkpoint with a face record.

    Args:
        path: the checkpoint (``.zip``).
        deterministic: act with the policy's most likely action (default) or sample.
        torch_threads: threads torch may use per process (default 1: the harness runs
            episodes in parallel processes).
    """

    kind = "sb3"

    def __init__(
        self, path: str | Path, deterministic: bool = True, torch_threads: int | None = 1
    ) -> None:
        import importlib

        self.path = checkpoint_path(path)
        self.face = read_face(self.path)
        self.deterministic = bool(deterministic)
        if torch_threads:
            import torch

            torch.set_num_threads(int(torch_threads))
        module, _, name = ALGORITHMS[self.face["algo"]].partition(":")
        algo = getattr(importlib.import_module(module), name)
        self.model = algo.load(str(self.path), device="cpu")
        self.masked = self.face["algo"] == "MaskablePPO"
        self.recurrent = self.face["algo"] == "RecurrentPPO"
        self._state: Any = None
        self._start = True
        self.stack: ExposeActionMask | None = None

    def reset(self, env: gym.Env, task: Any, seed: int | None = None) -> None:
        """Start an episode (a recurrent policy forgets its memory)."""
        super().reset(env, task, seed)
        self._state, self._start = None, True

    def wrap(self, env: gym.Env) -> gym.Env:
        """The RL face recorded in the checkpoint, on ``env``; its spaces must be the
        policy's.
        """
        from urban_gym.wrappers.rl import make_rl_env

        f = self.face["rl_face"]
        size = f.get("image_size")
        self.stack = make_rl_env(
            env,
            image_size=tuple(size) if size is not None else None,
            text=f.get("text", "drop"),
            text_dim=int(f.get("text_dim", 64)),
            angles=f.get("angles", "raw"),
        )
        self._check_spaces(self.stack)
        return self.stack

    def _check_spaces(self, stack: gym.Env) -> None:
        want_obs, got_obs = self.model.observation_space, stack.observation_space
        problems = []
        if isinstance(want_obs, gym.spaces.Dict) and isinstance(got_obs, gym.spaces.Dict):
            for k in sorted(set(want_obs.spaces) | set(got_obs.spaces)):
                a, b = want_obs.spaces.get(k), got_obs.spaces.get(k)
                if a is None or b is None or a.shape != b.shape:
                    problems.append(
                        f"{k}: policy {getattr(a, 'shape', None)}, env {getattr(b, 'shape', None)}"
                    )
        elif want_obs.shape != got_obs.shape:
            problems.append(f"observation: policy {want_obs.shape}, env {got_obs.shape}")
        if getattr(self.model.action_space, "n", None) != getattr(stack.action_space, "n", None):
            problems.append(f"actions: policy {self.model.action_space}, env {stack.action_space}")
        if problems:
            raise InputError(
                f"sb3 checkpoint {str(self.path)!r} (trained on {self.face.get('env_id')}) "
                "does not fit this env's RL face: " + "; ".join(problems)
            )

    def act(self, obs: Any, info: dict[str, Any]) -> int:
        """The policy's action index for ``obs`` (masked where the face has a mask)."""
        kw: dict[str, Any] = {"deterministic": self.deterministic}
        if self.masked and self.stack is not None:
            kw["action_masks"] = self.stack.action_masks()
        if self.recurrent:
            import numpy as np

            kw["state"] = self._state
            kw["episode_start"] = np.array([self._start])
            action, self._state = self.model.predict(obs, **kw)
            self._start = False
            return int(action)
        action, _ = self.model.predict(obs, **kw)
        return int(action)

    def config(self) -> dict[str, Any]:
        """The checkpoint path, algorithm, face record and sampling mode, for the manifest."""
        return {
            "kind": self.kind,
            "checkpoint": str(self.path),
            "algo": self.face["algo"],
            "trained_on": {
                "env_id": self.face.get("env_id"),
                "env_kwargs": self.face.get("env_kwargs"),
            },
            "rl_face": self.face["rl_face"],
            "deterministic": self.deterministic,
        }


__all__ = ["ALGORITHMS", "FACE_MEMBER", "SB3Agent", "checkpoint_path", "read_face", "write_face"]
