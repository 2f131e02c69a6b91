"""``react-reflection``: 360CityArena's agent (Appendices A.4 and B).

Each step the model gets the system prompt (ReAct with memory: the actions and the rules
of the red arrows, the two kinds of image, the flat reply ``{"thought", "action",
"memory", "answer"}`` with the size in ``answer``, and examples), the reflection prompt
(how to keep the reflection memory), the task prompt of the task's type, and as inputs
the camera view, the map of the current location
(:class:`~urban_gym.wrappers.map_observation.AddLocationMap`, the env's own map with the
agent's arrow: one map), the reflection memory (updated every step:
:class:`~urban_gym.wrappers.memory.ReflectionMemory`) and the task's reference image.

Besides the memory, the model sees its last ``history`` steps (default 3) as text: its
replies and the texts of those steps, without their images. The paper's reflection prompt
says the agent sees "its last few observations and actions" without a number, and its
appendix A.4 lists the images of the current step only; 3 and text-only past steps are
our reading of both (``history``, ``history_images`` in the config; ``--history N`` wins).

Config keys: ``map`` (the map of the current location; false: the "without location"
setting as a scheme default), ``reference_image``, ``memory_budget`` (characters),
``max_steps`` (the number the localization prompt names), ``history``,
``history_images``. An explicit switch of the agent (``--no-location-prior``,
``--no-map``, ``--memory none``, ``--history``) wins over these
(:mod:`urban_gym.baselines.lmm.face`). Defined on PoseGraph360.
"""

from __future__ import annotations

from typing import Any

from urban_gym.baselines.lmm.schemes.base import Scheme, SchemeProtocol
from urban_gym.errors import InputError
from urban_gym.families.posegraph360.prompts import REACT_REFLECTION
from urban_gym.wrappers.protocols import protocol_for

FIELD_HELP = {
    "thought": "your reasoning about what to do next",
    "memory": "what you must remember for later steps (your reflection memory; an empty "
    "string keeps it as it is)",
    "answer": "with ANSWER: your answer to the task's question; with W, A, D, Q or E: the "
    "size, SMALL, MEDIUM or LARGE; otherwise an empty string",
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
        "history": 3,
        "history_images": False,
    }
    texts = REACT_REFLECTION

    def __init__(self, config: Any = None, prompts: Any = None) -> None:
        super().__init__(config, prompts)
        if int(self.config["history"]) < 0:
            raise InputError(
                f"scheme 'react-reflection': history={self.config['history']!r} must be >= 0"
            )

    def stack_options(self, family: str | None) -> dict[str, Any]:
        """Reflection memory, and the map of the current location unless ``map: false``
        (the env's own map with the agent's arrow; no second, agent-centred map).
        """
        return {
            "memory": "reflection",
            "location_map": bool(self.config["map"]),
            "memory_budget": int(self.config["memory_budget"]),
        }

    def history(self, family: str | None) -> tuple[int, bool]:
        """The last ``history`` steps (text only unless ``history_images``)."""
        return int(self.config["history"]), bool(self.config["history_images"])

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
            actions=proto.describe_actions(action_set),
            fields=proto.fields_text(action_set),
            examples=proto.example_text(action_set),
        )
        if "memory" not in proto.reply_fields:  # without memory: nothing about one
            return system
        memory = self.text("memory") + "\n\n" + self.text("reflection")
        return system + "\n\n## Reflection memory\n" + memory

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
