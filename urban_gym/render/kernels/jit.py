"""Every compiled kernel in one namespace: what :func:`urban_gym.render.kernels.compiled`
returns. Importing it compiles (or loads from numba's cache) nothing yet: each kernel
compiles on its first call.
"""

from urban_gym.render.kernels.columns import (
    band_maps,
    blit_sprite,
    blit_sprites,
    cell_candidates,
    run_ids,
    run_params,
    sign_points,
    wall_candidates,
    wall_hits,
)
from urban_gym.render.kernels.maps import label_layout
from urban_gym.render.kernels.sprites import sprite_plan

__all__ = [
    "band_maps",
    "blit_sprite",
    "blit_sprites",
    "cell_candidates",
    "label_layout",
    "run_ids",
    "run_params",
    "sign_points",
    "sprite_plan",
    "wall_candidates",
    "wall_hits",
]
