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

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from urban_gym.tasks.families import DemoEpisode, Family, LMMDefaults


class StreetGraph(Family):
    """The StreetGraph family (see the package docstring)."""

    name = "streetgraph"
    title = "StreetGraph"
    paper = "CityNav"
    tasks_module = "urban_gym.families.streetgraph.tasks"
    env_entry = "urban_gym.families.streetgraph.env:StreetGraphEnv"
    oracle_entry = "urban_gym.families.streetgraph.oracle:StreetGraphOracle"
    env_ids = {
        "UrbanGym/StreetGraph-v0": {"suite": "helsinki"},
        "UrbanGym/StreetGraph-Procedural-v0": {"suite": "procedural"},
    }

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

    def report_sections(self, run: Any, table: Any, resamples: int, seed: int) -> dict:
        """:func:`urban_gym.families.streetgraph.report.sections`."""
        from urban_gym.families.streetgraph import report

        return report.sections(run, table, resamples, seed)

    def report_markdown(self, results: Mapping[str, Any]) -> list[str]:
        """:func:`urban_gym.families.streetgraph.report.markdown`."""
        from urban_gym.families.streetgraph import report

        return report.markdown(results)

    def report_plots(self, plt: Any, out: Path, stem: str, name: str, results: Any) -> list:
        """:func:`urban_gym.families.streetgraph.report.plots`."""
        from urban_gym.families.streetgraph import report

        return report.plots(plt, out, stem, name, results)

    def play_controls(self) -> Any:
        """Its play page (:data:`urban_gym.families.streetgraph.controls.CONTROLS`)."""
        from urban_gym.families.streetgraph.controls import CONTROLS

        return CONTROLS

    def lmm_defaults(self) -> LMMDefaults:
        """CityNav's AgentNav: options with compass bearings and a verbalized path, its
        Markovian memory texts, the current turn only, 512x512 per street.
        """
        return LMMDefaults(
            protocol="verbalized_path", memory="agentnav", env_kwargs={"image_size": [512, 512]}
        )

    def lmm_protocols(self) -> Mapping[str, type]:
        """Its prompt protocol (:mod:`urban_gym.families.streetgraph.prompts`)."""
        from urban_gym.families.streetgraph.prompts import VerbalizedPathProtocol

        return {VerbalizedPathProtocol.name: VerbalizedPathProtocol}

    def lmm_memories(self) -> Mapping[str, Callable[..., Any]]:
        """``agentnav``: CityNav's three memory texts."""
        from urban_gym.families.streetgraph.memory import AgentNavMemory

        return {"agentnav": AgentNavMemory}

    def lmm_schemes(self) -> Mapping[str, type]:
        """The agent of its paper (:mod:`urban_gym.families.streetgraph.agent`)."""
        from urban_gym.families.streetgraph.agent import AgentNav

        return {AgentNav.name: AgentNav}

    def cli_commands(self) -> tuple:
        """Its sub-commands (:data:`urban_gym.families.streetgraph.commands.COMMANDS`)."""
        from urban_gym.families.streetgraph.commands import COMMANDS

        return COMMANDS

    def world_memos(self) -> tuple[tuple[str, str], ...]:
        """The preprocessed street graphs loaded in this process."""
        return (("urban_gym.families.streetgraph.world.loading", "_MEMO"),)

    def demo(self) -> DemoEpisode:
        """The first task of the Helsinki suite."""
        return DemoEpisode("UrbanGym/StreetGraph-v0", options={"task_index": 0})


FAMILY = StreetGraph()
