"""Every compiled kernel in one namespace: what :func:`urban_gym.render.kernels.compiled`
returns. Importing it compiles (or loads from numba's cache) nothing yet: each kernel
compiles on its first call.
"""

from urban_gym.render.kernels.blades import blade_rows, blit_blades
from urban_gym.render.kernels.columns import (
    cell_candidates,
    position_walls,
    run_params,
    sign_points,
    wall_candidates,
    wall_hits,
)
from urban_gym.render.kernels.frame import (
    finish_frame,
    finish_packed,
    frame_maps,
    haze_weights,
    one_minus,
    rgba_to_rgb,
)
from urban_gym.render.kernels.maps import blit_text, label_candidates, label_dots, label_layout
from urban_gym.render.kernels.post import post_frame
from urban_gym.render.kernels.sprites import blit_planned, sprite_plan

__all__ = [
    "blade_rows",
    "blit_blades",
    "blit_planned",
    "blit_text",
    "cell_candidates",
    "finish_frame",
    "finish_packed",
    "frame_maps",
    "haze_weights",
    "label_candidates",
    "label_dots",
    "label_layout",
    "one_minus",
    "position_walls",
    "post_frame",
    "rgba_to_rgb",
    "run_params",
    "sign_points",
    "sprite_plan",
    "wall_candidates",
    "wall_hits",
]
