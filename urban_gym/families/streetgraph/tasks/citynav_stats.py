"""The committed origin-destination suites' statistics per city, beside CityNav's.

CityNav (seed paper 003) builds 100 origin-destination pairs per city with routes "of length
greater than 2 Km" and "over 50+ decision points", an average path length of about 2 km
(section 1 and 2; its Table 2 gives the per-city values), to destinations a model can know
from the web. :func:`city_suite_rows` measures the same quantities on each committed suite
(route lengths in metres, decision points: nodes of degree other than 2 along the shortest
route), and :func:`format_citynav_table` sets them under CityNav's row as a Markdown table
(``urban-gym streetgraph-suites``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from urban_gym.tasks.spec import TaskSpec
from urban_gym.tasks.suite import load_suite, mean, meta_values

#: CityNav's figures (its text): tasks per city, the shortest route and the fewest decision
#: points of every route, and the mean route length (metres).
CITYNAV_FIGURES: dict[str, float] = {
    "tasks": 100,
    "min_route_m": 2000.0,
    "mean_route_m": 2000.0,
    "min_decisions": 50,
}


def suite_row(city: str, tasks: Sequence[TaskSpec]) -> dict[str, Any]:
    """One city's row: tasks, distinct destinations, route length (m: mean, min, max) and
    decision points (mean, min, max) of the origin-destination tasks, the share of routes of
    2 km or more and of 50 or more decisions, and the share of tasks to a notable place.
    """
    od = [t for t in tasks if t.type == "origin_destination"]
    lengths = meta_values(od, "route_length_m")
    dps = meta_values(od, "decision_points")
    n = len(od)

    def share(flags: Sequence[bool]) -> float | None:
        return sum(flags) / n if n else None

    return {
        "city": city,
        "tasks": n,
        "destinations": len({str((t.goal or {}).get("name")) for t in od}),
        "route_m": {
            "mean": mean(lengths),
            "min": min(lengths) if lengths else None,
            "max": max(lengths) if lengths else None,
        },
        "decisions": {
            "mean": mean(dps),
            "min": min(dps) if dps else None,
            "max": max(dps) if dps else None,
        },
        "over_2km": share([v >= CITYNAV_FIGURES["min_route_m"] for v in lengths]),
        "over_50_decisions": share([v >= CITYNAV_FIGURES["min_decisions"] for v in dps]),
        "notable": share([bool((t.goal or {}).get("notable")) for t in od]),
    }


def city_suite_rows(suites: Mapping[str, str | Path]) -> list[dict[str, Any]]:
    """:func:`suite_row` of each suite of ``suites`` (name -> JSONL path), in their order."""
    return [suite_row(name, load_suite(path)) for name, path in suites.items()]


def _pct(v: float | None) -> str:
    return "-" if v is None else f"{100 * v:.0f} %"


def _km(v: float | None) -> str:
    return "-" if v is None else f"{v / 1000:.2f}"


def _num(v: float | None) -> str:
    return "-" if v is None else f"{v:.1f}" if v != int(v) else f"{v:.0f}"


def format_citynav_table(rows: Sequence[dict[str, Any]]) -> str:
    """``rows`` as a Markdown table under CityNav's own row (:data:`CITYNAV_FIGURES`)."""
    f = CITYNAV_FIGURES
    out = [
        "| suite | tasks | places | route km: mean (min-max) | decisions: mean (min-max) "
        "| routes >= 2 km | >= 50 decisions | to a notable place |",
        "|---|---|---|---|---|---|---|---|",
        f"| CityNav (paper, each city) | {f['tasks']:.0f} | - | ~{f['mean_route_m'] / 1000:.0f} "
        f"(> {f['min_route_m'] / 1000:.0f}) | 50+ | 100 % | 100 % | places a model can know |",
    ]
    for r in rows:
        rm, d = r["route_m"], r["decisions"]
        out.append(
            f"| {r['city']} | {r['tasks']} | {r['destinations']} | {_km(rm['mean'])} "
            f"({_km(rm['min'])}-{_km(rm['max'])}) | {_num(d['mean'])} "
            f"({_num(d['min'])}-{_num(d['max'])}) | {_pct(r['over_2km'])} | "
            f"{_pct(r['over_50_decisions'])} | {_pct(r['notable'])} |"
        )
    return "\n".join(out)


__all__ = ["CITYNAV_FIGURES", "city_suite_rows", "format_citynav_table", "suite_row"]
