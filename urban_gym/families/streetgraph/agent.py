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
  images and the memory; the latest estimate is shown in the decision prompts after it.

The memory texts come from :class:`~urban_gym.wrappers.memory.AgentNavMemory`; the
options, their bearings and images from the StreetGraph observation. Defined on
StreetGraph.
"""

from __future__ import annotations

from typing import Any

from urban_gym.baselines.lmm.calls import CALL_HEADINGS
from urban_gym.baselines.lmm.schemes.base import Scheme, SchemeProtocol, lmm_interface
from urban_gym.baselines.lmm.schemes.cot import reply_field
from urban_gym.errors import InputError
from urban_gym.families.streetgraph.prompts import AGENTNAV
from urban_gym.wrappers.protocols import protocol_for

VOP_LEVELS = ("none", "partial", "full")

FIELD_HELP = {
    "destination_location": "the destination's address: street, district, city, as "
    "precisely as you know it",
    "current_location": "where you believe you are now",
    "walking_directions": "the walking directions from here to the destination, street by street",
    "memory": "your memory for the next intersection (it replaces the previous one)",
    "thought": "why the chosen option is the best step towards the destination",
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
    }
    texts = AGENTNAV

    def __init__(self, config: Any = None, prompts: Any = None) -> None:
        super().__init__(config, prompts)
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

    def stack_options(self, family: str | None) -> dict[str, Any]:
        """AgentNav's memory wrapper (the disabled texts are hidden, not removed)."""
        return {"memory": "agentnav", "memory_budget": int(self.config["memory_budget"])}

    def history(self, family: str | None) -> tuple[int, bool]:
        """No past turns: the memory texts carry the past."""
        return 0, False

    def reply_fields(self) -> tuple[str, ...]:
        """The reply's fields for the configured VoP level and memory."""
        vop = self.config["vop"]
        fields: list[str] = []
        if vop in ("partial", "full"):
            fields.append("destination_location")
        if vop == "full":
            fields += ["current_location", "walking_directions"]
        if self.config["markovian_memory"]:
            fields.append("memory")
        fields.append("thought")
        return tuple(fields)

    def protocol(self, family: str | None) -> SchemeProtocol:
        """The verbalized-path layout with the enabled components' texts and fields."""
        hidden = [
            key
            for key, on in (
                ("memory", self.config["markovian_memory"]),
                ("decision_history", self.config["decision_history"]),
                ("previous_visits", self.config["previous_visits"]),
            )
            if not on
        ]
        return SchemeProtocol(
            protocol_for("verbalized_path"),
            self._system,
            self.reply_fields(),
            FIELD_HELP,
            hidden=hidden,
            extra=self._estimate_text,
        )

    def _system(self, action_set: Any, proto: SchemeProtocol) -> str:
        parts = [self.text("system", actions=action_set.describe(), fields=proto.fields_text())]
        vop = self.config["vop"]
        if vop == "partial":
            parts.append(self.text("partial_vop"))
        elif vop == "full":
            parts.append(self.text("vop"))
        for key in ("markovian_memory", "decision_history", "previous_visits"):
            if self.config[key]:
                parts.append(self.text(key))
        return "\n\n".join(parts)

    def _estimate_text(self, obs: Any, env: Any) -> list[str]:
        if not self.estimate:
            return []
        return [f"## Estimated position (from your last self-positioning)\n{self.estimate}"]

    # ------------------------------------------------------------------ the loop
    def reset(self, agent: Any, stack: Any, task: Any, seed: int | None) -> None:
        """A new episode: no decisions, no estimate."""
        self.decisions, self.estimate, self.positionings = 0, "", 0

    def act(self, agent: Any, stack: Any) -> str:
        """Self-position every N-th decision (a separate call), then decide."""
        every = int(self.config["self_positioning_every"])
        if every and self.decisions % every == 0:
            self._self_position(agent, stack)
        self.decisions += 1
        return agent.ask_action(stack)

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
        """The self-positioning calls so far and the latest estimate."""
        return {"self_positionings": self.positionings, "estimate": self.estimate}
