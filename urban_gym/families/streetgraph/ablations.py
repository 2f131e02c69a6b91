"""The named variants of AgentNav's prompt (``--scheme agentnav --ablation NAME``): the rows
of CityNav's two ablation tables.

**Table 5, the components of AgentNav** (CityNav, Section 5.5), each row adding one:

=====================  =================================================================
``base``               the base model: no memory texts, no verbalization, no
                       self-positioning (the "GPT-4.1" row of Tables 4 and 5)
``markovian-memory``   + the Markovian memory m_t
``decision-history``   + the decision history
``previous-visit``     + previous visits
``partial-vop``        + Partial VoP (state the destination's address first)
``vop``                + VoP, with self-positioning every third decision: AgentNav
=====================  =================================================================

The paper does not say at which row its self-positioning call enters; we add it with VoP,
whose second phrase asks for the current location (our reading).

**Table 6, prompt-only variants P1-P7** (CityNav, appendix "Component definitions"):
AgentNav's memory and self-positioning without VoP -- the prompts the appendix prints
carry an estimated position, a memory and the previous-visits text -- plus a subset of
seven prompt components:

====  ===================================================================================
C1    visual inference: read signs, shop names, traffic flow in each image
C2    self-confidence: a calibrated confidence per option; take the highest
C3    a four-step observe, infer, plan, question protocol before deciding
C4    cardinal direction: estimate the destination's compass direction from here
C5    elimination: rule out unlikely options, choose among the rest
C6    multi-agent decomposition: an image analyst and a planner report to the decider
      (two extra calls per decision)
C7    self-critique: why the choice is right and each alternative wrong
====  ===================================================================================

Which components each variant has (:data:`PROMPT_VARIANTS`, ``basis`` says how we know):
P3, P4 and P7 are read from the prompts the appendix prints ("Test Prompt P3/P4/P7");
the cells of Table 6 itself are not in the text of the paper we work from, so the rows of
P1, P2, P5 and P6 are our assumption (each adds one or two components to visual
inference, so that every component is in some variant) and say so in their ``basis``,
which the run manifest records. A researcher with the table replaces a row with
``--scheme-config`` ``components: [C1, C3]`` (``ablation`` and ``components`` together:
the explicit ``components`` win).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from urban_gym.errors import InputError

#: CityNav's prompt components (appendix, "Component definitions"): name -> what it is.
COMPONENTS: dict[str, str] = {
    "C1": "visual inference instructions",
    "C2": "self-confidence estimation",
    "C3": "multi-step reasoning protocol (observe, infer, plan, question)",
    "C4": "cardinal direction estimation",
    "C5": "elimination-based decision making",
    "C6": "multi-agent decomposition (image analyst, planner, decision maker)",
    "C7": "self-critique and consistency checking",
}


@dataclass(frozen=True)
class Variant:
    """A named variant: the AgentNav ``config`` it sets, its prompt ``components``, where
    the paper defines it (``source``) and how we know its components (``basis``).
    """

    name: str
    config: Mapping[str, Any]
    source: str
    components: tuple[str, ...] = ()
    basis: str = ""

    def describe(self) -> dict[str, Any]:
        """What the run manifest records of the variant."""
        out: dict[str, Any] = {"ablation": self.name, "source": self.source}
        if self.components or self.name.startswith("P"):
            out["components"] = {c: COMPONENTS[c] for c in self.components}
            out["basis"] = self.basis
        return out


_NO_MEMORY = {"markovian_memory": False, "decision_history": False, "previous_visits": False}
_T5 = "CityNav Table 5 (Section 5.5)"
_T6 = "CityNav Table 6 (appendix, prompt-component ablation)"

#: Table 5's rows, cumulative (see the module docstring).
COMPONENT_LADDER: dict[str, Variant] = {
    v.name: v
    for v in (
        Variant("base", {**_NO_MEMORY, "vop": "none", "self_positioning_every": 0}, _T5),
        Variant(
            "markovian-memory",
            {**_NO_MEMORY, "markovian_memory": True, "vop": "none", "self_positioning_every": 0},
            _T5,
        ),
        Variant(
            "decision-history",
            {"previous_visits": False, "vop": "none", "self_positioning_every": 0},
            _T5,
        ),
        Variant("previous-visit", {"vop": "none", "self_positioning_every": 0}, _T5),
        Variant("partial-vop", {"vop": "partial", "self_positioning_every": 0}, _T5),
        Variant("vop", {"vop": "full", "self_positioning_every": 3}, _T5),
    )
}

_READ = "read from the prompt the appendix prints (Test Prompt {p})"
_ASSUMED = "assumed: the cells of Table 6 are not in the text we work from"

#: Table 6's variants: name -> its components (and how we know them).
MATRIX: dict[str, tuple[tuple[str, ...], str]] = {
    "P1": (("C1",), _ASSUMED),
    "P2": (("C1", "C2"), _ASSUMED),
    "P3": (("C1", "C4", "C5"), _READ.format(p="P3")),
    "P4": (("C1", "C5"), _READ.format(p="P4")),
    "P5": (("C1", "C3", "C4"), _ASSUMED),
    "P6": (("C1", "C5", "C6"), _ASSUMED),
    "P7": (("C1", "C2", "C5", "C7"), _READ.format(p="P7")),
}

#: The prompt-only variants P1-P7: AgentNav's memory and self-positioning, no VoP.
PROMPT_VARIANTS: dict[str, Variant] = {
    name: Variant(
        name,
        {"vop": "none", "self_positioning_every": 3, "components": list(comps)},
        _T6,
        comps,
        basis,
    )
    for name, (comps, basis) in MATRIX.items()
}

#: Every named variant.
VARIANTS: dict[str, Variant] = {**COMPONENT_LADDER, **PROMPT_VARIANTS}


def variant(name: str) -> Variant:
    """The variant called ``name`` (``p3`` is ``P3``); :class:`UrbanGymError` naming it
    and the valid names otherwise.
    """
    key = str(name).strip()
    got = VARIANTS.get(key) or VARIANTS.get(key.upper()) or VARIANTS.get(key.lower())
    if got is None:
        raise InputError(
            f"scheme 'agentnav': ablation {name!r} is not one of {', '.join(VARIANTS)}"
        )
    return got


def check_components(components: Any) -> list[str]:
    """``components`` as a list of names of :data:`COMPONENTS` (in C1..C7 order, no
    repeats); :class:`UrbanGymError` naming a bad one.
    """
    if not isinstance(components, (list, tuple)):
        raise InputError(f"scheme 'agentnav': components={components!r} must be a list")
    bad = [c for c in components if not isinstance(c, str) or c.upper() not in COMPONENTS]
    if bad:
        raise InputError(
            f"scheme 'agentnav': components {bad} are not among {', '.join(COMPONENTS)}"
        )
    names = {c.upper() for c in components}
    return [c for c in COMPONENTS if c in names]


__all__ = [
    "COMPONENTS",
    "COMPONENT_LADDER",
    "MATRIX",
    "PROMPT_VARIANTS",
    "VARIANTS",
    "Variant",
    "check_components",
    "variant",
]
