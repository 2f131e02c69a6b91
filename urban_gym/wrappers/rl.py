"""The RL face: observations stable-baselines3 accepts, and the action mask it needs.

The env's ``action_space`` already is the ``Discrete`` action table. These wrappers make the
observation numeric and small:

* :class:`DropTextObservation` -- Gymnasium's ``FilterObservation`` keeping every entry that
  is not ``Text``;
* :class:`EncodeTextObservation` -- each ``Text`` entry becomes a ``Box`` of hashed
  bag-of-words counts (so an instruction can still condition the policy);
* :class:`ResizeImageObservation` -- every image entry (``Box`` uint8, (H, W, C)) resized
  with OpenCV, built on Gymnasium's ``TransformObservation``; a stack of images
  (K, H, W, C) -- e.g. one view per street -- is resized and laid side by side into one
  (h, K*w, C) image so CNN policies read it;
* :class:`EncodeAngleObservation` -- every compass entry (a float ``Box`` from 0 to 360
  degrees: option bearings, heading) becomes its sines then its cosines, ``Box(-1, 1,
  (2n,))``, so a policy compares directions without the wrap-around at north;
* :class:`ExposeActionMask` -- an ``action_masks()`` method returning the latest
  ``action_mask`` entry (all True when the env has none): what sb3-contrib's
  ``MaskablePPO`` calls. The mask also stays in the observation.

:func:`make_rl_env` builds the stack for any registered id.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeGuard, cast

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from gymnasium.wrappers import FilterObservation, TransformObservation

from urban_gym.envs.goals import hash_words
from urban_gym.envs.spaces import dict_space
from urban_gym.errors import InputError


def is_image_space(space: spaces.Space) -> TypeGuard[spaces.Box]:
    """A ``Box`` of uint8 shaped (H, W, C) or (K, H, W, C) with C in 1, 3, 4."""
    return (
        isinstance(space, spaces.Box)
        and space.dtype == np.uint8
        and len(space.shape) in (3, 4)
        and space.shape[-1] in (1, 3, 4)
    )


class DropTextObservation(FilterObservation):
    """Keep every observation entry that is not ``gymnasium.spaces.Text``."""

    def __init__(self, env: gym.Env) -> None:
        base = dict_space(env, "DropTextObservation")
        keep = [k for k, s in base.spaces.items() if not isinstance(s, spaces.Text)]
        if not keep:
            raise InputError("DropTextObservation: the observation holds only text")
        gym.utils.RecordConstructorArgs.__init__(self)
        super().__init__(env, keep)


class EncodeTextObservation(TransformObservation):
    """Each ``Text`` entry becomes a ``Box(0, max_count, (dim,), float32)`` of hashed
    word counts (:func:`hash_words`, capped at ``max_count``).
    """

    def __init__(self, env: gym.Env, dim: int = 64, max_count: float = 16.0) -> None:
        base = dict_space(env, "EncodeTextObservation")
        if int(dim) < 1:
            raise InputError(f"EncodeTextObservation dim={dim!r} must be >= 1")
        self.text_keys = [k for k, s in base.spaces.items() if isinstance(s, spaces.Text)]
        box = spaces.Box(0.0, float(max_count), (int(dim),), np.float32)
        new = spaces.Dict({k: (box if k in self.text_keys else s) for k, s in base.spaces.items()})
        self.dim, self.max_count = int(dim), float(max_count)
        gym.utils.RecordConstructorArgs.__init__(self, dim=dim, max_count=max_count)
        super().__init__(env, self._encode, new)

    def _encode(self, obs: Mapping[str, Any]) -> dict[str, Any]:
        out = dict(obs)
        for k in self.text_keys:
            out[k] = np.minimum(hash_words(out[k], self.dim), self.max_count)
        return out


def is_angle_space(space: spaces.Space) -> TypeGuard[spaces.Box]:
    """A float ``Box`` whose bounds are 0 and 360 everywhere (compass degrees)."""
    return (
        isinstance(space, spaces.Box)
        and np.issubdtype(space.dtype, np.floating)
        and bool(np.all(space.low == 0.0))
        and bool(np.all(space.high == 360.0))
    )


class EncodeAngleObservation(TransformObservation):
    """Each compass entry (degrees, :func:`is_angle_space`) of shape ``(n,)`` becomes
    ``[sin(a_1) .. sin(a_n), cos(a_1) .. cos(a_n)]``, a ``Box(-1, 1, (2n,), float32)``.
    """

    def __init__(self, env: gym.Env) -> None:
        base = dict_space(env, "EncodeAngleObservation")
        self.angle_keys = [k for k, s in base.spaces.items() if is_angle_space(s)]
        new = {
            k: (spaces.Box(-1.0, 1.0, (2 * int(np.prod(s.shape)),), np.float32))
            if is_angle_space(s)
            else s
            for k, s in base.spaces.items()
        }
        gym.utils.RecordConstructorArgs.__init__(self)
        super().__init__(env, self._encode, spaces.Dict(new))

    def _encode(self, obs: Mapping[str, Any]) -> dict[str, Any]:
        out = dict(obs)
        for k in self.angle_keys:
            a = np.radians(np.asarray(out[k], dtype=np.float64).reshape(-1))
            out[k] = np.concatenate([np.sin(a), np.cos(a)]).astype(np.float32)
        return out


class ResizeImageObservation(TransformObservation):
    """Resize every image entry to ``size = (width, height)`` pixels (OpenCV, area
    interpolation); image stacks (K, H, W, C) become one (height, K*width, C) image.
    """

    def __init__(self, env: gym.Env, size: tuple[int, int] = (64, 64)) -> None:
        base = dict_space(env, "ResizeImageObservation")
        if len(size) != 2 or min(int(s) for s in size) < 1:
            raise InputError(f"ResizeImageObservation size={size!r} must be (width, height)")
        w, h = int(size[0]), int(size[1])
        self.size = (w, h)
        self.image_keys = [k for k, s in base.spaces.items() if is_image_space(s)]
        new: dict[str, spaces.Space] = {}
        for k, s in base.spaces.items():
            if is_image_space(s):
                c = s.shape[-1]
                k_imgs = s.shape[0] if len(s.shape) == 4 else 1
                new[k] = spaces.Box(0, 255, (h, w * k_imgs, c), np.uint8)
            else:
                new[k] = s
        gym.utils.RecordConstructorArgs.__init__(self, size=size)
        super().__init__(env, self._resize, spaces.Dict(new))

    def _resize(self, obs: Mapping[str, Any]) -> dict[str, Any]:
        out = dict(obs)
        for k in self.image_keys:
            out[k] = resize_image(out[k], self.size)
        return out


def resize_image(image: np.ndarray, size: tuple[int, int]) -> np.ndarray:
    """``image`` (H, W, C) or a stack (K, H, W, C) resized to ``size = (w, h)``; a stack is
    laid out side by side as (h, K*w, C). uint8 in, uint8 out.
    """
    import cv2

    a = np.asarray(image, dtype=np.uint8)
    w, h = size
    if a.ndim == 4:
        if a.shape[0] == 0:
            return np.zeros((h, 0, a.shape[-1]), np.uint8)
        return np.concatenate([resize_image(im, size) for im in a], axis=1)
    if a.shape[:2] == (h, w):
        return a
    interp = cv2.INTER_AREA if a.shape[0] >= h and a.shape[1] >= w else cv2.INTER_LINEAR
    out = cv2.resize(a, (w, h), interpolation=interp)
    if out.ndim == 2:
        out = out[:, :, None]
    return out


class ExposeActionMask(gym.Wrapper, gym.utils.RecordConstructorArgs):
    """Adds ``action_masks()`` (bool array over the ``Discrete`` actions) from the latest
    observation's ``mask_key`` entry; all True when the observation has none.
    """

    def __init__(self, env: gym.Env, mask_key: str = "action_mask") -> None:
        gym.utils.RecordConstructorArgs.__init__(self, mask_key=mask_key)
        gym.Wrapper.__init__(self, env)
        if not isinstance(env.action_space, spaces.Discrete):
            raise InputError(
                f"ExposeActionMask needs a Discrete action space, got {env.action_space}"
            )
        self.mask_key = mask_key
        self._mask = np.ones(int(env.action_space.n), dtype=bool)

    def _update(self, obs: Any) -> None:
        n = int(cast(spaces.Discrete, self.env.action_space).n)  # checked in __init__
        if isinstance(obs, Mapping) and self.mask_key in obs:
            m = np.asarray(obs[self.mask_key]).reshape(-1)[:n] > 0
            self._mask = m if m.any() else np.ones(n, dtype=bool)
        else:
            self._mask = np.ones(n, dtype=bool)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        """Reset the env and keep the observation's action mask."""
        obs, info = self.env.reset(seed=seed, options=options)
        self._update(obs)
        return obs, info

    def step(self, action: Any):
        """Step the env and keep the observation's action mask."""
        obs, reward, terminated, truncated, info = self.env.step(action)
        self._update(obs)
        return obs, reward, terminated, truncated, info

    def action_masks(self) -> np.ndarray:
        """The valid actions now (True = valid)."""
        return self._mask.copy()


def make_rl_env(
    env_id: str | gym.Env,
    image_size: tuple[int, int] | None = (64, 64),
    text: str = "drop",
    text_dim: int = 64,
    env_kwargs: Mapping[str, Any] | None = None,
    angles: str = "raw",
) -> ExposeActionMask:
    """The RL face of ``env_id``: ``gym.make(env_id, **env_kwargs)`` (or a given env),
    text dropped or encoded, images resized to ``image_size = (width, height)`` (None:
    kept), compass entries kept in degrees (``angles="raw"``) or as sines and cosines
    (``"sincos"``: :class:`EncodeAngleObservation`), and :class:`ExposeActionMask` on top.

    ``text`` is ``"drop"`` or ``"encode"``.
    """
    env = gym.make(env_id, **dict(env_kwargs or {})) if isinstance(env_id, str) else env_id
    if text == "drop":
        if any(isinstance(s, spaces.Text) for s in dict_space(env, "make_rl_env").spaces.values()):
            env = DropTextObservation(env)
    elif text == "encode":
        env = EncodeTextObservation(env, dim=text_dim)
    else:
        raise InputError(f"make_rl_env text={text!r} must be 'drop' or 'encode'")
    if image_size is not None:
        env = ResizeImageObservation(env, cast(tuple[int, int], tuple(image_size)))
    if angles == "sincos":
        env = EncodeAngleObservation(env)
    elif angles != "raw":
        raise InputError(f"make_rl_env angles={angles!r} must be 'raw' or 'sincos'")
    return ExposeActionMask(env)
