"""``agentnav``: CityNav's AgentNav (Sections 4 and 5), every component a switch.

Config keys (one per row of the paper's component table):

* ``markovian_memory`` -- the model writes its memory m_t each step and sees m_{t-1};
* ``decision_history`` -- the compass direction taken at each intersection so far;
* ``previous_visits`` -- on returning to an intersection, the visit count and the choices
  made there before;
* ``vop`` -- ``none``, ``partial`` (state the destination's address first) or ``full``
  (also where you are now and the walking directions from there);
* ``self_positioning_every`` -- every N-th decision (3 in the paper; 0: never), a
  separate call to the same model estimates the current position from the intersection's
  images and the memory; the latest estimate is shown in the decision prompts after it;
* ``components`` -- prompt components C1-C7 of CityNav's prompt-only variants (appendix,
  "Component definitions"), each its text and reply fields; C6 adds an image analyst's
  and a planner's call before each decision, whose reports the decision prompt shows;
* ``ablation`` -- a named variant: a row of CityNav's Table 5 (``base`` ...
  ``vop``) or Table 6 (``P1`` ... ``P7``), :mod:`~urban_gym.families.streetgraph.ablations`;
  it sets the keys above, and keys given with it win (``--ablation P3`` is the
  command line's way to set it).

With Partial VoP or VoP the model states the destination's address each step; the step
notes of the trace (``scheme.address``) put it beside the task's address
(``goal.address``) with whether it names the task's street and house number.

The memory texts come from :class:`~urban_gym.wrappers.memory.AgentNavMemory`; the
options, their bearings and images from the StreetGraph observation. Defined on
StreetGraph.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Any

from urban_gym.baselines.lmm.calls import CALL_HEADINGS
from urban_gym.baselines.lmm.schemes.base import Scheme, SchemeProtocol, lmm_interface
from urban_gym.baselines.lmm.schemes.cot import first_object, reply_field
from urban_gym.errors import InputError
from urban_gym.families.streetgraph.ablations import (
    COMPONENTS,
    Variant,
    check_components,
    variant,
)
from urban_gym.families.streetgraph.prompts import AGENTNAV, COMPONENT_FIELDS, COMPONENT_TEXTS
from urban_gym.wrappers.protocols import protocol_for

VOP_LEVELS = ("none", "partial", "full")
#: The memory parts of AgentNav (its Table 5 rows), which *without memory* switches off.
MEMORY_PARTS = ("markovian_memory", "decision_history", "previous_visits")

FIELD_HELP = {
    "destination_location": "the destination's address: street, district, city, as "
    "precisely as you know it",
    "current_location": "where you believe you are now",
    "walking_directions": "the walking directions from here to the destination, street by street",
    "memory": "your memory for the next intersection (it replaces the previous one)",
    "thought": "why the chosen option is the best step towards the destination",
    "visual_cues": "the clues in each image and what they tell you",
    "observe": "step 1: what each image shows",
    "infer": "step 2: where you are and where each street leads",
    "plan": "step 3: which way the destination lies and your route",
    "question": "step 4: what could make the plan wrong",
    "destination_direction": "the destination's compass direction from here (N, NE, ... NW)",
    "eliminated": "each option you rule out and why",
    "confidence": "option number -> confidence (0 to 1) that it leads towards the destination",
    "critique": "why the chosen option is right and each other option wrong",
}
#: :data:`FIELD_HELP` on a route described in words (an instruction task names no destination)
INSTRUCTION_FIELD_HELP = {
    **FIELD_HELP,
    "thought": "why the chosen option is the next step of the described route",
    "plan": "step 3: where the described route goes next and how you will follow it",
    "confidence": "option number -> confidence (0 to 1) that it continues the described route",
}


class AgentNav(Scheme):
    """AgentNav with switchable components (see the module docstring)."""

    name = "agentnav"
    families = ("streetgraph",)
    defaults = {
        "markovian_memory": True,
        "decision_history": True,
        "previous_visits": True,
        "vop": "full",
        "self_positioning_every": 3,
        "memory_budget": 4000,
        "components": [],
        "ablation": "",
    }
    texts = AGENTNAV

    def __init__(self, config: Any = None, prompts: Any = None) -> None:
        super().__init__(config, prompts)
        given = dict(config or {})
        self.variant: Variant | None = None
        if self.config["ablation"]:
            self.variant = variant(self.config["ablation"])
            self.config = {
                **self.defaults,
                **self.variant.config,
                **given,
                "ablation": self.variant.name,
            }
        self.config["components"] = check_components(self.config["components"])
        if self.config["vop"] not in VOP_LEVELS:
            raise InputError(
                f"scheme 'agentnav': vop={self.config['vop']!r} is not one of "
                + ", ".join(VOP_LEVELS)
            )
        if int(self.config["self_positioning_every"]) < 0:
            raise InputError("scheme 'agentnav': self_positioning_every must be >= 0")
        self.decisions = 0
        self.estimate = ""
        self.positionings = 0
        self.reports: dict[str, str] = {}
        self.address: dict[str, Any] | None = None
        self.address_check: dict[str, Any] = {}
        #: the episode's task is a route described in words (set by :meth:`reset`)
        self.instruction_task = False
        self._proto: SchemeProtocol | None = None

    def describe(self) -> dict[str, Any]:
        """The manifest's record: name, config, prompts -- and the variant (its table, its
        components with what each is, and how we know them).
        """
        out = super().describe()
        comps = list(self.config["components"])
        if self.variant is not None:
            out["variant"] = self.variant.describe()
            if comps != list(self.variant.components):
                out["variant"]["components_given"] = {c: COMPONENTS[c] for c in comps}
            return out
        switches = [k for k in self.defaults if k not in ("memory_budget", "ablation")]
        out["variant"] = {
            "ablation": None,
            "source": "CityNav Sections 4-5 (AgentNav)",
            "all_components_as_in_paper": all(self.config[k] == self.defaults[k] for k in switches),
        }
        if comps:
            out["variant"]["components"] = {c: COMPONENTS[c] for c in comps}
        return out

    def _on(self, part: str) -> bool:
        """Whether memory part ``part`` is in use: switched on, and memory not switched
        off for the whole face (*without memory*).
        """
        return bool(self.config[part]) and self.memory_on

    def stack_options(self, family: str | None) -> dict[str, Any]:
        """AgentNav's memory wrapper (the disabled texts are hidden, not removed)."""
        return {"memory": "agentnav", "memory_budget": int(self.config["memory_budget"])}

    def history(self, family: str | None) -> tuple[int, bool]:
        """No past turns: the memory texts carry the past."""
        return 0, False

    def reply_fields(self) -> tuple[str, ...]:
        """The reply's fields for the configured VoP level and memory."""
        vop = "none" if self.instruction_task else self.config["vop"]
        comps = self.config["components"]
        fields: list[str] = []
        if vop in ("partial", "full"):
            fields.append("destination_location")
        if vop == "full":
            fields += ["current_location", "walking_directions"]
        for c in ("C1", "C3", "C4", "C5", "C2"):
            if c in comps:
                fields += COMPONENT_FIELDS[c]
        if self._on("markovian_memory"):
            fields.append("memory")
        fields.append("thought")
        if "C7" in comps:
            fields += COMPONENT_FIELDS["C7"]
        return tuple(fields)

    def protocol(self, family: str | None) -> SchemeProtocol:
        """The verbalized-path layout with the enabled components' texts and fields."""
        hidden = [
            key
            for key, on in (
                ("memory", self._on("markovian_memory")),
                ("decision_history", self._on("decision_history")),
                ("previous_visits", self._on("previous_visits")),
            )
            if not on
        ]
        self._proto = SchemeProtocol(
            protocol_for("verbalized_path"),
            self._system,
            self.reply_fields(),
            FIELD_HELP,
            hidden=hidden,
            extra=self._estimate_text,
        )
        return self._proto

    def _system(self, action_set: Any, proto: SchemeProtocol) -> str:
        # a route in words names no destination: its own opening, and no VoP text
        head = "system_instruction" if self.instruction_task else "system"
        parts = [self.text(head, actions=action_set.describe(), fields=proto.fields_text())]
        vop = "none" if self.instruction_task else self.config["vop"]
        if vop == "partial":
            parts.append(self.text("partial_vop"))
        elif vop == "full":
            parts.append(self.text("vop"))
        for key in MEMORY_PARTS:
            if self._on(key):
                parts.append(self.text(key))
        for c in self.config["components"]:
            parts.append(self.text(COMPONENT_TEXTS[c]))
        return "\n\n".join(parts)

    def _estimate_text(self, obs: Any, env: Any) -> list[str]:
        out = []
        if self.estimate:
            out.append(f"## Estimated position (from your last self-positioning)\n{self.estimate}")
        if self.reports:
            out.append(
                "## Your team's reports\n"
                f"Image analyst: {self.reports.get('analysis', '')}\n"
                f"Planner: {self.reports.get('plan', '')}"
            )
        return out

    # ------------------------------------------------------------------ the loop
    def reset(self, agent: Any, stack: Any, task: Any, seed: int | None) -> None:
        """A new episode: no decisions, no estimate, no reports; the task's address."""
        self.decisions, self.estimate, self.positionings = 0, "", 0
        self.reports, self.address_check = {}, {}
        self.instruction_task = getattr(task, "type", None) == "instruction"
        if self._proto is not None:  # the reply's fields follow the task's kind
            self._proto.reply_fields = self.reply_fields()
            self._proto.field_help = dict(
                INSTRUCTION_FIELD_HELP if self.instruction_task else FIELD_HELP
            )
        goal = getattr(task, "goal", None) or {}
        address = goal.get("address") if isinstance(goal, dict) else None
        self.address = dict(address) if isinstance(address, dict) else None

    def act(self, agent: Any, stack: Any) -> str:
        """Self-position every N-th decision (a separate call); with C6 the analyst's and
        the planner's calls; then decide (and compare the stated address with the task's).
        """
        every = int(self.config["self_positioning_every"])
        if every and self.decisions % every == 0:
            self._self_position(agent, stack)
        if "C6" in self.config["components"]:
            self._team(agent, stack)
        self.decisions += 1
        text = agent.ask_action(stack)
        if self.config["vop"] in ("partial", "full") and not self.instruction_task:
            self.address_check = check_address(text, self.address)
        return text

    def _team(self, agent: Any, stack: Any) -> None:
        """C6: the image analyst sees the intersection; the planner, its report and the
        texts of the input; both reports go into the decision prompt.
        """
        lm = lmm_interface(stack)
        self.reports = {}
        content = lm.user_content()
        system = CALL_HEADINGS["perception"] + "\n" + self.text("c6_analyst")
        text = agent.ask(
            [{"role": "system", "content": system}, {"role": "user", "content": content}],
            "perception",
        )
        analysis = reply_field(text, "analysis")
        system = CALL_HEADINGS["planning"] + "\n" + self.text("c6_planner")
        user = text_of(content) + f"\n\n## The image analyst's report\n{analysis}"
        text = agent.ask(
            [{"role": "system", "content": system}, {"role": "user", "content": user}],
            "planning",
        )
        self.reports = {"analysis": analysis, "plan": reply_field(text, "plan")}

    def _self_position(self, agent: Any, stack: Any) -> None:
        lm = lmm_interface(stack)
        system = CALL_HEADINGS["self_positioning"] + "\n" + self.text("self_positioning")
        messages = [
            {"role": "system", "content": system},
            {"role": "user", "content": lm.user_content()},
        ]
        text = agent.ask(messages, "self_positioning")
        self.estimate = reply_field(text, "estimated_position")
        self.positionings += 1

    def episode_notes(self) -> dict[str, Any]:
        """The self-positioning calls so far, the latest estimate, the team's reports
        (C6) and the stated address beside the task's (Partial VoP, VoP).
        """
        notes: dict[str, Any] = {"self_positionings": self.positionings, "estimate": self.estimate}
        if self.reports:
            notes["reports"] = dict(self.reports)
        if self.address_check:
            notes["address"], self.address_check = self.address_check, {}
        return notes


def text_of(content: Any) -> str:
    """The text parts of a user message's content (images left out)."""
    if isinstance(content, str):
        return content
    return "\n\n".join(
        str(p.get("text", ""))
        for p in content
        if isinstance(p, dict)
        and p.get("type") == "text"
        and not str(p.get("text", "")).startswith("Image: ")
    )


def check_address(reply: str, address: dict[str, Any] | None) -> dict[str, Any]:
    """The destination's address a reply states (``destination_location``) beside the
    task's (``goal.address``): ``stated``, ``task``, its ``source``, and whether the
    stated one names the task's street (``street_named``) and house number
    (``number_named``: the number as a word of its own, with the street named), compared
    without case or accents; ``{"stated": ...}`` alone when the task has no address.
    """
    obj = first_object(reply)
    stated = obj.get("destination_location") if isinstance(obj, dict) else None
    out: dict[str, Any] = {"stated": stated if isinstance(stated, str) else None}
    if not address:
        return out
    said = _plain(out["stated"] or "")
    street = _plain(str(address.get("street", "")))
    number = _plain(str(address.get("housenumber", "")))
    out.update(
        task=address.get("text"),
        source=address.get("source"),
        street_named=bool(street) and street in said,
    )
    out["number_named"] = (
        out["street_named"]
        and bool(number)
        and re.search(rf"(?<!\w){re.escape(number)}(?!\w)", said) is not None
    )
    return out


def _plain(text: str) -> str:
    decomposed = unicodedata.normalize("NFKD", text.casefold())
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch))
