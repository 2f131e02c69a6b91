"""CityWalk: a continuous real-scale city, after UrbanGround.

Move, sprint, look, an interactive map, collisions with buildings, a walkable network,
road closures, moving pedestrians, time of day and weather; a five-level ladder of thirteen
task types, from local questions to multi-stop schedules.

==================  ================================================================
module              what it holds
==================  ================================================================
``tasks``           the ladder's task types, generators, evaluator and suite
``env``             :class:`~urban_gym.families.citywalk.env.CityWalkEnv`
``actions``         its action table and action set
``handlers``        what each action does, per mode, and the answer turn
``dynamics``        walking, collisions, jumps, pedestrians, closures, the clock
``network``         the walkable network's adherence and closure checks
``urbanground``     ``urban-gym report --layout urbanground``: UrbanGround's Tables 1-4
``longnav``         the LongNav failure taxonomy's rules
``oracle``          the privileged oracle
``eval_command``    ``urban-gym citywalk-eval``
==================  ================================================================
"""

from __future__ import annotations

from typing import Any

from urban_gym.families.citywalk.views import LMM_VIEW_SIZE
from urban_gym.tasks.families import DemoEpisode, Family, LMMDefaults


class CityWalk(Family):
    """The CityWalk family (see the package docstring)."""

    name = "citywalk"
    title = "CityWalk"
    paper = "UrbanGround"
    tasks_module = "urban_gym.families.citywalk.tasks"
    env_entry = "urban_gym.families.citywalk.env:CityWalkEnv"
    vector_entry = "urban_gym.families.citywalk.vector:CityWalkVectorEnv"
    oracle_entry = "urban_gym.families.citywalk.oracle:CityWalkOracle"
    env_ids = {
        "UrbanGym/CityWalk-v0": {},
        "UrbanGym/CityWalk-NoView-v0": {"view_size": None},
    }
    report_module = "urban_gym.families.citywalk.report"
    report_layout_entries = {"urbanground": "urban_gym.families.citywalk.urbanground:LAYOUT"}
    controls_entry = "urban_gym.families.citywalk.controls:CONTROLS"
    commands_entry = "urban_gym.families.citywalk.commands:COMMANDS"
    lmm_protocol_entries = {
        "observe_reason_act": "urban_gym.families.citywalk.prompts:ObserveReasonActProtocol"
    }
    lmm_scheme_entries = {"urbanground-react": "urban_gym.families.citywalk.agent:UrbanGroundReAct"}

    def task_category(self, task: Any) -> str:
        """The level of the ladder, L1-L5; a condition variant of an L1/L2 type (dusk,
        night, fog, rain) belongs to L5, as in UrbanGround.
        """
        if "variant" in (task.meta or {}):
            return "L5"
        return super().task_category(task)

    def lmm_defaults(self) -> LMMDefaults:
        """UrbanGround's loop: observation/reason/action replies, the last two turns (the
        ``urbanground-react`` scheme keeps the whole conversation instead, as the paper's
        agent), a 16:9 first-person view cast at its own resolution (960x540).
        """
        tool = (
            "the map the agent opens itself (open_map: UrbanGround's map mode, an action "
            "of the task) is part of the action space and still marks the walker"
        )
        return LMMDefaults(
            protocol="observe_reason_act",
            history=2,
            env_kwargs={"view_size": list(LMM_VIEW_SIZE)},
            notes={"location": f"without location: {tool}", "map": f"without map: {tool}"},
        )

    def demo(self) -> DemoEpisode:
        """The first short-range navigation task."""
        return DemoEpisode("UrbanGym/CityWalk-v0", {"task_types": ["SGN"]}, {"task_index": 0})


FAMILY = CityWalk()
