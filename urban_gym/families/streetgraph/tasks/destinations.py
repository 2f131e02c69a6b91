"""Which of a city's named places the origin-destination tasks go to, and how many of them
are notable.

CityNav's destinations are places a model can know from the web -- a main station, a famous
tower, a museum -- and its Verbalization of Path asks the model for the destination's
address (CityNav, Sections 3.1 and 4.1). With ``destinations="notable"`` (the default) a
suite goes to the places OpenStreetMap marks as notable
(:func:`~urban_gym.world.places.notability`: an encyclopaedia tag, a tourist attraction, a
station, ...) when the city has at least ``min_notable`` of them in reach of the street
graph, else to every uniquely named place (a procedural city has no notable place). Every
destination carries its address and where the address came from
(:class:`~urban_gym.world.places.Address`).

:func:`destination_census` counts the places and the tasks' destinations by notability,
kind and address source; :func:`format_census` prints it (``urban-gym generate-suite
--family streetgraph`` and ``urban-gym streetgraph-info``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

from urban_gym.tasks.spec import TaskError, TaskSpec

#: The destination policies of a suite config.
DESTINATION_POLICIES: tuple[str, ...] = ("notable", "any")


def pick_destinations(
    dests: Sequence[Any], policy: str = "notable", min_notable: int = 10
) -> tuple[list[Any], str]:
    """The destinations tasks go to and a line saying which: the notable ones under
    ``policy="notable"`` when there are at least ``min_notable``, else all of them.
    """
    if policy not in DESTINATION_POLICIES:
        raise TaskError(f"destinations={policy!r} is not one of {', '.join(DESTINATION_POLICIES)}")
    notable = [d for d in dests if d.notable]
    if policy == "notable" and len(notable) >= max(1, int(min_notable)):
        return notable, f"tasks go to the {len(notable)} notable places"
    if policy == "notable":
        return list(dests), (
            f"only {len(notable)} notable places (fewer than {min_notable}): tasks go to "
            f"every named place"
        )
    return list(dests), "tasks go to every named place"


def destination_census(dests: Sequence[Any], tasks: Sequence[TaskSpec] = ()) -> dict[str, Any]:
    """Counts of the named places in reach (``places``), the notable ones by reason
    (``notable``, ``notable_by``) and kind (``notable_kinds``), and of the tasks'
    destinations (:func:`task_destinations`).
    """
    notable = [d for d in dests if d.notable]
    out: dict[str, Any] = {
        "places": len(dests),
        "notable": len(notable),
        "notable_by": _counts(d.notable for d in notable),
        "notable_kinds": _counts(d.category for d in notable),
        "address_sources": _counts((d.address or {}).get("source", "none") for d in dests),
    }
    if tasks:
        out["tasks"] = task_destinations(tasks)
    return out


def task_destinations(tasks: Sequence[TaskSpec]) -> dict[str, Any]:
    """The origin-destination tasks' destinations: how many tasks, distinct places,
    notable ones (by reason), kinds and address sources.
    """
    od = [t for t in tasks if t.type == "origin_destination"]
    goals = [t.goal or {} for t in od]
    return {
        "tasks": len(od),
        "places": len({g.get("name") for g in goals}),
        "notable": sum(1 for g in goals if g.get("notable")),
        "notable_by": _counts(g["notable"] for g in goals if g.get("notable")),
        "kinds": _counts(g.get("category", "?") for g in goals),
        "address_sources": _counts((g.get("address") or {}).get("source", "none") for g in goals),
    }


def format_census(census: dict[str, Any], policy_line: str = "") -> str:
    """The census as a few lines for a person."""
    lines = [
        f"destinations       {census['places']} uniquely named places in reach of the graph, "
        f"{census['notable']} notable ({_join(census['notable_by'])})",
    ]
    if census["notable_kinds"]:
        lines.append(f"  notable kinds    {_join(census['notable_kinds'])}")
    lines.append(f"  addresses        {_join(census['address_sources'])}")
    if policy_line:
        lines.append(f"  {policy_line}")
    t = census.get("tasks")
    if t:
        lines.append(
            f"tasks              {t['tasks']} to {t['places']} places, {t['notable']} notable "
            f"({_join(t['notable_by'])})"
        )
        lines.append(f"  kinds            {_join(t['kinds'])}")
        lines.append(f"  addresses        {_join(t['address_sources'])}")
    return "\n".join(lines)


def _counts(values: Any) -> dict[str, int]:
    return dict(sorted(Counter(values).items(), key=lambda kv: (-kv[1], kv[0])))


def _join(counts: dict[str, int]) -> str:
    return ", ".join(f"{k} {v}" for k, v in counts.items()) or "none"


__all__ = [
    "DESTINATION_POLICIES",
    "destination_census",
    "format_census",
    "pick_destinations",
    "task_destinations",
]
