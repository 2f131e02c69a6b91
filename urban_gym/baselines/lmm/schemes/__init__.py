"""The language-model agents of the source papers and the reasoning baselines, by name.

``urban-gym eval ID --agent lmm --scheme NAME [--scheme-config FILE.yaml]
[--prompts FILE.yaml]``:

=====================  ===========================================================
scheme                 what it is
=====================  ===========================================================
``cot``                chain of thought on the family's prompts (every family)
``self-reflection``    each step's draft reviewed and refined before acting (every family)
``reflexion``          reflection across failed attempts of a task (every family)
``gepa``               instructions evolved by :mod:`urban_gym.eval.gepa` (every family)
=====================  ===========================================================

plus the agents of the papers each family follows, which the family names in
:meth:`~urban_gym.tasks.families.Family.lmm_schemes` (its ``agent`` module; their texts
are in its ``prompts`` module). See :mod:`.base` for the framework and :mod:`.texts` for
the texts of the schemes above.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from urban_gym.baselines.lmm.schemes.base import Scheme, SchemeProtocol, read_mapping
from urban_gym.baselines.lmm.schemes.cot import ChainOfThought, Reflexion
from urban_gym.baselines.lmm.schemes.gepa import GEPAPrompt
from urban_gym.baselines.lmm.schemes.self_reflection import SelfReflection
from urban_gym.errors import InputError
from urban_gym.tasks.families import FAMILIES

#: The core's schemes by name (the families add their papers' agents: :func:`schemes`).
SCHEMES: dict[str, type[Scheme]] = {
    s.name: s for s in (ChainOfThought, SelfReflection, Reflexion, GEPAPrompt)
}


def schemes() -> dict[str, type[Scheme]]:
    """Every scheme by name: the registered families' agents, then the core's."""
    out: dict[str, type[Scheme]] = {}
    for fam in FAMILIES.values():
        out.update(fam.lmm_schemes())
    out.update(SCHEMES)
    return out


def load_scheme(
    name: str,
    config: str | Path | Mapping[str, Any] | None = None,
    prompts: str | Path | Mapping[str, str] | None = None,
) -> Scheme:
    """A scheme by name, with its config and prompt texts (a mapping or a YAML/JSON file);
    :class:`UrbanGymError` naming a bad name, key or file.
    """
    known = schemes()
    cls = known.get(name)
    if cls is None:
        raise InputError(f"unknown scheme {name!r}; use one of {', '.join(known)}")
    if config is not None and not isinstance(config, Mapping):
        config = read_mapping(config, "scheme config")
    if prompts is not None and not isinstance(prompts, Mapping):
        prompts = read_mapping(prompts, "prompts")
        bad = [k for k, v in prompts.items() if not isinstance(v, str)]
        if bad:
            raise InputError(f"prompts: the texts of {bad} must be strings")
    return cls(config, prompts)


__all__ = ["SCHEMES", "Scheme", "SchemeProtocol", "load_scheme", "schemes"]
