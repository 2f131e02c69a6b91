"""Model-settings presets of the harness's ``lmm`` agent: the settings a source benchmark
ran its models with, by name (``urban-gym eval ... --agent lmm --preset NAME``).

* ``360cityarena`` -- 360CityArena's model settings (its appendix A.4): temperature 1.0,
  at most 8,096 output tokens, and images kept under 5 MB by downscaling them in 15%
  steps (each step multiplies both sides by 0.85).

A preset fills options the user did not give: an explicit ``--temperature`` (or an
``--agent-kwargs`` entry) wins over the preset's.
"""

from __future__ import annotations

import argparse
from typing import Any

from urban_gym.errors import InputError

#: Preset name -> options of :class:`~urban_gym.baselines.lmm.agent.LMMAgent`.
LMM_PRESETS: dict[str, dict[str, Any]] = {
    "360cityarena": {
        "temperature": 1.0,
        "max_tokens": 8096,
        "image_budget_bytes": 5_000_000,
        "image_downscale_step": 0.85,
    },
}


def lmm_preset(name: str) -> dict[str, Any]:
    """The agent options of preset ``name`` (a copy); a clear error for an unknown name."""
    key = str(name).strip().casefold()
    if key not in LMM_PRESETS:
        raise InputError(f"preset {name!r} is not one of {', '.join(sorted(LMM_PRESETS))}")
    return dict(LMM_PRESETS[key])


def agent_options(args: argparse.Namespace) -> dict:
    """The agent's options of ``urban-gym eval``: for ``lmm``, the ``--preset``'s settings,
    overridden by the explicit client options, overridden by ``--agent-kwargs``.
    """
    options = dict(args.agent_kwargs or {})
    if args.agent != "lmm":
        if args.preset:
            raise InputError(f"--preset {args.preset} applies to --agent lmm only")
        return options
    from urban_gym.baselines.lmm.options import lmm_options

    preset = lmm_preset(args.preset) if args.preset else {}
    options = {**preset, **lmm_options(args), **options}
    if args.location_prior is not None:  # a location map: main setting or its ablation
        options.setdefault("location", args.location_prior)
    return options
