"""PoseGraph360's model-settings presets (:mod:`urban_gym.eval.presets`).

``--preset 360cityarena``: the model settings 360CityArena ran its agents with (its
appendix A.4): temperature 1.0, at most 8,096 output tokens, and images kept under 5 MB by
downscaling them in 15% steps (each step multiplies both sides by 0.85). One setting for
every model, so a plain mapping of agent options.

``--preset grounded``: the inference modes of the strict-JSON grounding protocol (its
"Inference Mode Protocol") for the grounded suite. Every model runs *Instant* -- its
non-reasoning endpoint, the deployment default -- with at most 2,048 output tokens (row
``instant``, picked for any ``--model``). A model served only with reasoning runs at its
lowest effort, ``--preset grounded:low`` (``reasoning_effort: "low"`` in every request,
2,048 tokens); the protocol marks such rows with a T, and so does the grounded report
(the row is recorded in the run manifest's agent config under ``preset``). A model whose
lowest setting is not called ``low`` takes ``--extra-body`` on top (it wins over the
preset's request fields). The protocol sets no temperature: the client's default stays.
"""

from __future__ import annotations

from typing import Any

from urban_gym.eval.presets import ModelPreset, PresetRow

CITYARENA: dict[str, Any] = {
    "temperature": 1.0,
    "max_tokens": 8096,
    "image_budget_bytes": 5_000_000,
    "image_downscale_step": 0.85,
}

__all__ = ["CITYARENA"]


# ``--preset grounded``: the strict-JSON grounding protocol's inference modes.
GROUNDED = ModelPreset(
    name="grounded",
    source="strict-JSON grounding protocol, 'Inference Mode Protocol'",
    rows=(
        PresetRow(
            "instant",
            ("*",),
            {"max_tokens": 2048},
            "Instant: the model's non-reasoning endpoint (the default; nothing added to "
            "the request -- serve the model's instant variant)",
        ),
        PresetRow(
            "low",
            (),
            {"max_tokens": 2048, "extra_body": {"reasoning_effort": "low"}},
            "Low (marked T): a reasoning-only endpoint at its lowest effort, sent as "
            "reasoning_effort 'low'",
        ),
    ),
    unlisted="every model runs Instant unless named with --preset grounded:low",
)

__all__ += ["GROUNDED"]
