"""The language-model agents of the source papers and the reasoning baselines, by name.

``urban-gym eval ID --agent lmm --scheme NAME [--scheme-config FILE.yaml]
[--prompts FILE.yaml]``:

=====================  ==================  ===========================================
scheme                 defined on          what it is
=====================  ==================  ===========================================
``react-reflection``   PoseGraph360        360CityArena's ReAct agent, reflection memory
``agentnav``           StreetGraph         CityNav's AgentNav, every component a switch
``urbanground-react``  CityWalk            UrbanGround's observation/reason/action loop
``cot``                every family        chain of thought on the family's prompts
``reflexion``          every family        self-reflection across attempts of a task
``gepa``               every family        instructions evolved by :mod:`urban_gym.eval.gepa`
=====================  ==================  ===========================================

See :mod:`.base` for the framework and :mod:`.texts` for the prompt texts.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from urban_gym.baselines.lmm.schemes.agentnav import AgentNav
from urban_gym.baselines.lmm.schemes.base import Scheme, SchemeProtocol, read_mapping
from urban_gym.baselines.lmm.schemes.cot import ChainOfThought, Reflexion
from urban_gym.baselines.lmm.schemes.gepa import GEPAPrompt
from urban_gym.baselines.lmm.schemes.react_reflection import ReactReflection
from urban_gym.baselines.lmm.schemes.urbanground import UrbanGroundReAct
from urban_gym.errors import UrbanGymError

#: Scheme name -> class.
SCHEMES: dict[str, type[Scheme]] = {
    s.name: s
    for s in (ReactReflection, AgentNav, UrbanGroundReAct, ChainOfThought, Reflexion, GEPAPrompt)
}


def load_scheme(
    name: str,
    config: str | Path | Mapping[str, Any] | None = None,
    prompts: str | Path | Mapping[str, str] | None = None,
) -> Scheme:
    """A scheme by name, with its config and prompt texts (a mapping or a YAML/JSON file);
    :class:`UrbanGymError` naming a bad name, key or file.
    """
    cls = SCHEMES.get(name)
    if cls is None:
        raise UrbanGymError(f"unknown scheme {name!r}; use one of {', '.join(SCHEMES)}")
    if config is not None and not isinstance(config, Mapping):
        config = read_mapping(config, "scheme config")
    if prompts is not None and not isinstance(prompts, Mapping):
        prompts = read_mapping(prompts, "prompts")
        bad = [k for k, v in prompts.items() if not isinstance(v, str)]
        if bad:
            raise UrbanGymError(f"prompts: the texts of {bad} must be strings")
    return cls(config, prompts)


__all__ = ["SCHEMES", "Scheme", "SchemeProtocol", "load_scheme"]
