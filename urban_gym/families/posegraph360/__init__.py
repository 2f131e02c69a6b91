"""PoseGraph360: a city captured as 360-degree video trajectories joined at junctions,
after 360CityArena.

The agent walks forward along a trajectory, turns and tilts its camera, picks a branch at
junctions and answers; seven task types (localization on a 5x5 grid map, landmark search by
name and by image, map navigation, vision-language navigation, object count, relational
spatial reasoning) plus two grounded ones.

==================  ================================================================
module              what it holds
==================  ================================================================
``paper``           the numbers 360CityArena reports, in one place
``world``           the pose graph: trajectories of panorama frames, junctions, capture
                    import, validation against OpenStreetMap
``tasks``           the task types, generators, calibration to the paper, evaluator and
                    committed suites
``env``             :class:`~urban_gym.families.posegraph360.env.PoseGraph360Env`
``actions``         its action table and action set
``worlds``          the rendered worlds an env runs (one per city, shared per process)
``oracle``          the privileged oracle
``eval_command``    ``urban-gym posegraph360-eval``
==================  ================================================================
"""

from __future__ import annotations

from typing import Any

from urban_gym.tasks.families import DemoEpisode, Family, LMMDefaults

#: Task type -> report category (360CityArena, Fig. 2).
CATEGORIES: dict[str, str] = {
    "localization": "Environment Understanding",
    "landmark_name": "Environment Understanding",
    "landmark_image": "Environment Understanding",
    "map_navigation": "Path Reasoning",
    "vln": "Path Reasoning",
    "object_count": "Spatial Reasoning",
    "relational": "Spatial Reasoning",
}


class PoseGraph360(Family):
    """The PoseGraph360 family (see the package docstring)."""

    name = "posegraph360"
    title = "PoseGraph360"
    paper = "360CityArena"
    tasks_module = "urban_gym.families.posegraph360.tasks"
    env_entry = "urban_gym.families.posegraph360.env:PoseGraph360Env"
    vector_entry = "urban_gym.families.posegraph360.vector:PoseGraph360VectorEnv"
    oracle_entry = "urban_gym.families.posegraph360.oracle:PoseGraphOracle"
    env_ids = {
        # no city pinned: the default suite is Helsinki's, and a suite of other cities (a
        # procedural one, say) runs each task in its own city
        "UrbanGym/PoseGraph360-v0": {},
        "UrbanGym/PoseGraph360-Procedural-v0": {
            "city": "procedural:seed=3,blocks=2x2",
            "view_size": 128,
            "pano_width": 512,
        },
    }
    report_module = "urban_gym.families.posegraph360.report"
    report_layout_entries = {"grounded": "urban_gym.families.posegraph360.grounded_report:LAYOUT"}
    controls_entry = "urban_gym.families.posegraph360.controls:CONTROLS"
    commands_entry = "urban_gym.families.posegraph360.commands:COMMANDS"
    lmm_protocol_entries = {"react": "urban_gym.families.posegraph360.prompts:ReActProtocol"}
    lmm_preset_entries = {
        "360cityarena": "urban_gym.families.posegraph360.presets:CITYARENA",
        "grounded": "urban_gym.families.posegraph360.presets:GROUNDED",
    }
    suite_track_entries = {
        "grounded": "urban_gym.families.posegraph360.tasks.suites:generate_grounded_track"
    }
    lmm_scheme_entries = {
        "react-reflection": "urban_gym.families.posegraph360.agent:ReactReflection"
    }

    def task_category(self, task: Any) -> str:
        """360CityArena's three categories: Environment Understanding (localization,
        landmark search by name and by image), Path Reasoning (map navigation,
        vision-language navigation), Spatial Reasoning (object count, relational); a
        grounded type is its own category.
        """
        return CATEGORIES.get(task.type, task.type)

    def category_order(self) -> tuple[str, ...]:
        """The paper's order of the categories."""
        return tuple(dict.fromkeys(CATEGORIES.values()))

    def lmm_defaults(self) -> LMMDefaults:
        """360CityArena's agent: ReAct JSON replies, reflection memory, the current turn
        only, a map of the current location each step (its main setting), and a 768x768
        view cut from a 3072-px panorama (a 90-degree crop is never upsampled).
        """
        return LMMDefaults(
            protocol="react",
            memory="reflection",
            location_map=True,
            env_kwargs={"view_size": [768, 768], "pano_width": 3072},
        )

    def demo(self) -> DemoEpisode:
        """An easy map-navigation task."""
        return DemoEpisode(
            "UrbanGym/PoseGraph360-v0",
            {"task_types": ["map_navigation"], "difficulties": ["easy"]},
        )


FAMILY = PoseGraph360()
