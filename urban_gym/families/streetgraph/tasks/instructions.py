"""StreetGraph instruction tasks from Touchdown/map2seq route files."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from urban_gym.families.streetgraph.world import (
    StreetGraphError,
    check_route,
    load_streetgraph,
    read_routes,
)
from urban_gym.tasks.spec import TaskSpec


def touchdown_graph_spec(
    path: str | os.PathLike, images: str | os.PathLike | None = None
) -> dict[str, Any]:
    """Graph spec for instruction tasks on a Touchdown graph: reverse links are added, but
    no node is pruned (routes are defined on the full graph).
    """
    return {
        "source": "touchdown",
        "path": str(Path(path).resolve()),
        "images": str(Path(images).resolve()) if images is not None else None,
        "prune": False,
        "largest_component": False,
    }


def instruction_tasks(
    graph_dir: str | os.PathLike,
    routes_file: str | os.PathLike,
    images: str | os.PathLike | None = None,
    skip_bad_lines: bool = False,
    id_prefix: str = "route",
    spec: dict[str, Any] | None = None,
    city: str | None = None,
    meta: dict[str, Any] | None = None,
) -> list[TaskSpec]:
    """Instruction tasks from a Touchdown/map2seq route file on the Touchdown graph in
    ``graph_dir``. A route that is not a path in the graph raises
    :class:`StreetGraphError` naming the route and the broken hop (or is skipped with
    ``skip_bad_lines``; the skipped count is in each task's ``meta["skipped_routes"]``).

    ``spec`` replaces :func:`touchdown_graph_spec`'s graph spec, ``city`` the tasks'
    ``city`` (default ``touchdown:<graph folder>``); ``meta`` is added to every task's.
    """
    if spec is None:
        spec = touchdown_graph_spec(graph_dir, images)
    graph = load_streetgraph(spec)
    routes, skipped = read_routes(routes_file, skip_bad_lines=skip_bad_lines)
    good = []
    for r in routes:
        try:
            idx = check_route(graph, r)
        except StreetGraphError:
            if not skip_bad_lines:
                raise
            skipped += 1
            continue
        good.append((r, idx))
    tasks = []
    for r, idx in good:
        tasks.append(
            TaskSpec(
                id=f"{id_prefix}-{r.route_id}",
                family="streetgraph",
                type="instruction",
                difficulty="n/a",
                city=city or f"touchdown:{spec['path']}",
                instruction=r.text,
                start={"node": r.panoids[0], "heading": r.start_heading, "graph": spec},
                goal={"node": r.panoids[-1], "route": list(r.panoids)},
                meta={
                    "route_id": r.route_id,
                    "route_length_m": round(graph.path_length(idx), 1),
                    "route_hops": len(idx) - 1,
                    "line": r.line,
                    "skipped_routes": skipped,
                    **(meta or {}),
                },
            )
        )
    return tasks
