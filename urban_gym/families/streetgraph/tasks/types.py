"""The StreetGraph type table."""

from __future__ import annotations

from urban_gym.tasks.spec import TaskType

FAMILY = "streetgraph"

#: Type name -> type (see the package docstring).
TASK_TYPES: dict[str, TaskType] = {
    t.name: t
    for t in (
        TaskType(
            "origin_destination",
            "navigation",
            "walk from an intersection to a named place of the city",
        ),
        TaskType("instruction", "navigation", "follow a Touchdown/map2seq route description"),
    )
}
