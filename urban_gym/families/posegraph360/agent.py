"""``react-reflection``: 360CityArena's agent (Appendices A.4 and B).

Each step the model gets the system prompt (ReAct with memory: the actions and the rules
of the red arrows, the two kinds of image, the reply fields ``thought``, ``action``,
``memory``, ``answer`` and examples), the reflection prompt (how to keep the reflection
memory), the task prompt of the task's type, and as inputs the camera view, the map of the
current location (:class:`~urban_gym.wrappers.map_observation.MapObservation`), the
reflection memory (updated every step: :class:`~urban_gym.wrappers.memory.ReflectionMemory`)
and the task's reference image. Defined on PoseGraph360.
"""

from __future__ import annotations

from typing import Any

from urban_gym.baselines.lmm.schemes.base import Scheme, SchemeProtocol
from urban_gym.families.posegraph360.prompts import REACT_REFLECTION
from urban_gym.wrappers.protocols import protocol_for

FIELD_HELP = {
    "thought": "your reasoning about what to do next",
    "memory": "what you must remember for later steps (your reflection memory; an empty "
    "string keeps it as it is)",
    "answer": "your answer to the task's question when the action is ANSWER, else empty",
}


class ReactReflection(Scheme):
    """360CityArena's ReAct agent with reflection memory (see the module docstring)."""

    name = "react-reflection"
    families = ("posegraph360",)
    defaults = {
        "map": True,
        "reference_image": True,
        "memory_budget": 4000,
        "max_steps": 50,
    }
    texts = REACT_REFLECTION

    def stack_options(self, family: str | None) -> dict[str, Any]:
        """Reflection memory, and the map of the current location unless ``map: false``."""
        return {
            "memory": "reflection",
            "map_observation": bool(self.config["map"]),
            "memory_budget": int(self.config["memory_budget"]),
        }

    def history(self, family: str | None) -> tuple[int, bool]:
        """The current step only: the memory carries the past."""
        return 0, False

    def protocol(self, family: str | None) -> SchemeProtocol:
        """The family's ReAct protocol with the appendix-B texts."""
        hidden = () if self.config["reference_image"] else ("reference",)
        return SchemeProtocol(
            protocol_for("react"),
            self._system,
            ("thought", "memory", "answer"),
            FIELD_HELP,
            hidden=("instruction", *hidden),
            extra=self._task_text,
            example_fields={"thought": "...", "memory": "...", "answer": ""},
        )

    def _system(self, action_set: Any, proto: SchemeProtocol) -> str:
        system = self.text(
            "system",
            actions=action_set.describe(),
            fields=proto.fields_text(),
            examples=proto.example_text(action_set),
        )
        return system + "\n\n## Reflection memory\n" + self.text("reflection")

    def _task_text(self, obs: Any, env: Any) -> list[str]:
        task = getattr(getattr(env, "unwrapped", env), "task", None)
        if task is None:
            return []
        name = f"task.{task.type}"
        instruction = str(getattr(task, "instruction", "") or "")
        if name not in self.prompts:
            return [f"## Task\n{instruction}"]
        body = self.text(name, instruction=instruction, max_steps=self.config["max_steps"])
        return [f"## Task\n{body}"]
