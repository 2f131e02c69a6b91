"""Every environment id of urban_gym, registered with Gymnasium as data.

All ``register()`` calls live here (string entry points, JSON-serialisable kwargs);
variants are separate ids. ``import urban_gym`` calls :func:`register_envs`.
Bump ``-vN`` whenever an environment's behaviour changes.
"""

from __future__ import annotations

from typing import Any

from gymnasium.envs.registration import register, registry

#: id -> (entry point, kwargs). Each environment family adds its ids below.
ENV_SPECS: dict[str, tuple[str, dict[str, Any]]] = {
    # --- PoseGraph360 (issue 4) ---
    # no city pinned: the default suite is Helsinki's, and a suite of other cities (a
    # procedural one, say) runs each task in its own city
    "UrbanGym/PoseGraph360-v0": ("urban_gym.families.posegraph360.env:PoseGraph360Env", {}),
    "UrbanGym/PoseGraph360-Procedural-v0": (
        "urban_gym.families.posegraph360.env:PoseGraph360Env",
        {"city": "procedural:seed=3,blocks=2x2", "view_size": 128, "pano_width": 512},
    ),
    # --- StreetGraph (issue 5) ---
    "UrbanGym/StreetGraph-v0": (
        "urban_gym.families.streetgraph.env:StreetGraphEnv",
        {"suite": "helsinki"},
    ),
    "UrbanGym/StreetGraph-Procedural-v0": (
        "urban_gym.families.streetgraph.env:StreetGraphEnv",
        {"suite": "procedural"},
    ),
    # --- CityWalk (issue 6) ---
    "UrbanGym/CityWalk-v0": ("urban_gym.families.citywalk.env:CityWalkEnv", {}),
    "UrbanGym/CityWalk-NoView-v0": (
        "urban_gym.families.citywalk.env:CityWalkEnv",
        {"view_size": None},
    ),
}


def register_envs() -> None:
    """Register all ids (idempotent)."""
    for env_id, (entry_point, kwargs) in ENV_SPECS.items():
        if env_id not in registry:
            register(id=env_id, entry_point=entry_point, kwargs=dict(kwargs))
