"""StreetGraph: long-range navigation on a Street-View intersection graph, after CityNav
and Touchdown.

At each intersection the agent sees one image per outgoing street and picks one; routes of
kilometres with dozens of decisions. Success, SPL and decision accuracy.

==================  ================================================================
module              what it holds
==================  ================================================================
``world``           the street graph: panoramas along a city's streets or a
                    Touchdown graph, CityNav's preprocessing, distances, routes
``tasks``           origin-destination and instruction tasks, evaluator, suites
``env``             :class:`~urban_gym.families.streetgraph.env.StreetGraphEnv`
``oracle``          the privileged oracle
``eval_command``    ``urban-gym streetgraph-eval``
==================  ================================================================
"""

from __future__ import annotations

from typing import Any

from urban_gym.tasks.families import DemoEpisode, Family, LMMDefaults


class StreetGraph(Family):
    """The StreetGraph family (see the package docstring)."""

    name = "streetgraph"
    title = "StreetGraph"
    paper = "CityNav"
    tasks_module = "urban_gym.families.streetgraph.tasks"
    env_entry = "urban_gym.families.streetgraph.env:StreetGraphEnv"
    vector_entry = "urban_gym.families.streetgraph.vector:StreetGraphVectorEnv"
    oracle_entry = "urban_gym.families.streetgraph.oracle:StreetGraphOracle"
    env_ids = {
        "UrbanGym/StreetGraph-v0": {},
        "UrbanGym/StreetGraph-Procedural-v0": {"suite": "procedural"},
        # Touchdown's own routes (installed by `urban-gym data touchdown`), scored as
        # Touchdown/VELMA report them: nDTW over graph distances in links, d_th 1 link
        "UrbanGym/StreetGraph-Touchdown-v0": {
            "suite": "touchdown",
            "split": "dev",
            "dtw_distance": "hops",
            "dtw_threshold": 1.0,
        },
    }
    report_module = "urban_gym.families.streetgraph.report"
    controls_entry = "urban_gym.families.streetgraph.controls:CONTROLS"
    commands_entry = "urban_gym.families.streetgraph.commands:COMMANDS"
    lmm_protocol_entries = {
        "verbalized_path": "urban_gym.families.streetgraph.prompts:VerbalizedPathProtocol"
    }
    lmm_memory_entries = {"agentnav": "urban_gym.families.streetgraph.memory:AgentNavMemory"}
    lmm_scheme_entries = {
        "agentnav": "urban_gym.families.streetgraph.agent:AgentNav",
        "prep": "urban_gym.families.streetgraph.prep:PReP",
    }
    lmm_preset_entries = {"citynav": "urban_gym.families.streetgraph.presets:CITYNAV"}
    # the preprocessed street graphs loaded in this process
    world_memo_entries = (("urban_gym.families.streetgraph.world.loading", "_MEMO"),)

    def task_points(self, task: Any) -> tuple[tuple[float, float], list[tuple[float, float]]]:
        """The start node's panorama; the destination's position, or the last panorama
        of an instruction route.
        """
        from urban_gym.families.streetgraph.tasks.evaluate import graph_of

        g = task.goal or {}
        graph = graph_of(task)

        def xy(node: str) -> tuple[float, float]:
            x, y = graph.xy[graph.index[node]]
            return float(x), float(y)

        start = xy(task.start["node"])
        if "position" in g:
            return start, [(float(g["position"][0]), float(g["position"][1]))]
        if "route" in g:
            return start, [xy(g["route"][-1])]
        return start, []

    def task_frame(self, task: Any) -> Any:
        """The frame of the task's street graph (a Touchdown graph has no city)."""
        from urban_gym.families.streetgraph.tasks.evaluate import graph_of

        return graph_of(task).frame

    def lmm_defaults(self) -> LMMDefaults:
        """CityNav's AgentNav: options with compass bearings and a verbalized path, its
        Markovian memory texts, the current turn only, 512x512 per street.
        """
        return LMMDefaults(
            protocol="verbalized_path", memory="agentnav", env_kwargs={"image_size": [512, 512]}
        )

    def demo(self) -> DemoEpisode:
        """The first task of the Helsinki suite."""
        return DemoEpisode("UrbanGym/StreetGraph-v0", options={"task_index": 0})


FAMILY = StreetGraph()
