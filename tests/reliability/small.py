"""Small, cheap variants of every registered id for the reliability tests: the same
environment with tiny images (the dynamics, tasks and text are those of the id)."""

from __future__ import annotations

from typing import Any

import gymnasium as gym

import urban_gym  # noqa: F401  (registers the ids)
from urban_gym.tasks.families import env_specs, family_of_id

ENV_SPECS = env_specs()

IDS = sorted(ENV_SPECS)

#: family module -> kwargs that shrink its images.
_SMALL: dict[str, dict[str, Any]] = {
    "posegraph360": {"view_size": 16, "pano_width": 128},
    "streetgraph": {"image_size": 16},
    "citywalk": {"view_size": 16},
}


def family(env_id: str) -> str:
    """The family of a registered id (``"streetgraph"`` ...)."""
    return family_of_id(env_id).name


def small_kwargs(env_id: str, images: bool = True) -> dict[str, Any]:
    """Kwargs for ``gym.make(env_id, ...)`` with small images; an id that switches images
    off (``view_size=None``) keeps them off. ``images=False`` also drops StreetGraph's
    option views (rendering a city's panoramas costs seconds per process)."""
    base = ENV_SPECS[env_id][1]
    fam = family(env_id)
    if fam == "streetgraph" and not images:
        return {"observation": "symbolic"}
    return {k: v for k, v in _SMALL.get(fam, {}).items() if base.get(k, 0) is not None}


def make_small(env_id: str, images: bool = True) -> gym.Env:
    """``gym.make(env_id)`` with :func:`small_kwargs`."""
    return gym.make(env_id, **small_kwargs(env_id, images))
