"""``--preset 360cityarena``: the model settings 360CityArena ran its agents with (its
appendix A.4): temperature 1.0, at most 8,096 output tokens, and images kept under 5 MB by
downscaling them in 15% steps (each step multiplies both sides by 0.85). One setting for
every model, so a plain mapping of agent options (:mod:`urban_gym.eval.presets`).
"""

from __future__ import annotations

from typing import Any

CITYARENA: dict[str, Any] = {
    "temperature": 1.0,
    "max_tokens": 8096,
    "image_budget_bytes": 5_000_000,
    "image_downscale_step": 0.85,
}

__all__ = ["CITYARENA"]
