"""``gepa``: the family's prompts with instructions evolved by the GEPA-style optimiser
(:mod:`urban_gym.eval.gepa`; CityNav's GEPA baseline, Section 5.2).

The optimiser evolves the first paragraph of the system prompt -- the agent's
instructions -- and keeps the rest (the actions, the reply format, the example) as the
family's protocol writes them, so every evolved prompt still states the action schema.
Its result, ``best.yaml``, is this scheme's config: ``--scheme gepa --scheme-config
OUT/best.yaml``. With empty ``instructions`` the scheme is the family's own prompt.
Defined on every family.
"""

from __future__ import annotations

from typing import Any

from urban_gym.baselines.lmm.schemes.base import Scheme, SchemeProtocol
from urban_gym.wrappers.protocols import protocol_for


class GEPAPrompt(Scheme):
    """The family's protocol with the ``instructions`` of the config as its intro."""

    name = "gepa"
    defaults = {"instructions": ""}
    texts: dict[str, str] = {}

    def protocol(self, family: str | None) -> SchemeProtocol:
        """The family's protocol, its intro replaced by the evolved instructions."""
        from urban_gym.baselines.lmm.schemes.cot import family_system

        base = protocol_for(family)

        def system(action_set: Any, proto: SchemeProtocol) -> str:
            text = family_system(base, action_set, proto)
            mine = str(self.config["instructions"]).strip()
            return text.replace(base.intro, mine, 1) if mine else text

        return SchemeProtocol(base, system, base.reply_fields, base.field_help)


def seed_instructions(family: str | None) -> str:
    """The family protocol's own intro: the optimiser's first candidate."""
    return protocol_for(family).intro
