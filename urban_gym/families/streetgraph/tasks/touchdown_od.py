"""Origin-destination suites on any Touchdown-format graph (CityNav-style long routes).

CityNav's routes run over 2 km with 50 or more decision points on a Street-View graph.
:func:`touchdown_od_suite` generates such tasks on a graph in Touchdown's format
(``nodes.txt``/``links.txt``, e.g. the Touchdown Manhattan graph) with the same crawler
as the default suites. Destinations come from either or both of:

* **OSM POIs**: a city loaded from an OSM extract of the same area (``osm``): its uniquely
  named POIs and parks, mapped to the graph nodes within ``reach`` metres (the graph's
  node positions are re-projected into the city's frame through their latitude and
  longitude);
* **named nodes**: a file of ``panoid,name`` lines (``#`` comments; a name may contain
  commas), each node a destination of its own.

Tasks whose shortest route is shorter than ``min_route_m`` or has fewer than
``min_decisions`` decision points are redrawn.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import Any, cast

import numpy as np

from urban_gym.families.streetgraph.tasks.crawler import Destination, city_destinations
from urban_gym.families.streetgraph.tasks.generate import SUITE_CONFIGS, generate_od_with_report
from urban_gym.families.streetgraph.world import StreetGraph, load_streetgraph
from urban_gym.tasks.report import GeneratedSuite
from urban_gym.tasks.spec import TaskError
from urban_gym.tasks.suite import save_suite


def touchdown_od_spec(
    path: str | os.PathLike, images: str | os.PathLike | None = None
) -> dict[str, Any]:
    """The graph spec of an origin-destination suite on a Touchdown graph: CityNav's full
    preprocessing (reverse links, dead-end pruning, largest component, parallel links).
    """
    return {
        "source": "touchdown",
        "path": str(Path(path).resolve()),
        "images": str(Path(images).resolve()) if images is not None else None,
    }


def read_named_nodes(path: str | os.PathLike, graph: StreetGraph) -> list[Destination]:
    """Destinations from a ``panoid,name`` file; a panorama missing from the (preprocessed)
    graph is a clear error naming it and the line.
    """
    out = []
    for no, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), start=1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        panoid, sep, name = (part.strip() for part in line.partition(","))
        if not sep or not panoid or not name:
            raise TaskError(f"{path}:{no}: {line!r} is not 'panoid,name'")
        if panoid not in graph.index:
            raise TaskError(f"{path}:{no}: panorama {panoid!r} is not in the graph")
        i = graph.index[panoid]
        xy = (float(graph.xy[i][0]), float(graph.xy[i][1]))
        out.append(Destination(name, "node", "named_node", "", xy, (i,), name))
    return out


def osm_destinations(graph: StreetGraph, city: Any, reach: float = 25.0) -> list[Destination]:
    """The city's named places mapped to ``graph``'s nodes (positions re-projected from
    latitude/longitude into the city's frame).
    """
    lat, lon = graph.latlon[:, 0], graph.latlon[:, 1]
    x, y = city.frame.to_xy(lat, lon)
    xy = np.column_stack([np.atleast_1d(x), np.atleast_1d(y)])
    local = StreetGraph(
        graph.ids,
        xy,
        graph.pano_heading,
        graph.src,
        graph.dst,
        graph.heading,
        city.frame,
        latlon=graph.latlon,
        name=graph.name,
    )
    dests = city_destinations(local, city, reach=reach)
    # the position a task records is in the graph's own frame
    return [
        dataclasses.replace(
            d,
            position=cast(
                tuple[float, float], tuple(float(v) for v in graph.xy[list(d.nodes)].mean(axis=0))
            ),
        )
        for d in dests
    ]


def touchdown_od_suite(
    graph_dir: str | os.PathLike,
    out: str | os.PathLike,
    images: str | os.PathLike | None = None,
    osm: str | None = None,
    named_nodes: str | os.PathLike | None = None,
    n: int = 100,
    seed: int = 0,
    min_route_m: float = 2000.0,
    min_decisions: int = 50,
    name: str | None = None,
) -> GeneratedSuite:
    """Generate ``n`` origin-destination tasks on the Touchdown graph in ``graph_dir`` and
    write them to ``out`` (see the module docstring). ``name`` names the world in the
    tasks' ``city`` (default ``touchdown:<folder name>``).
    """
    if osm is None and named_nodes is None:
        raise TaskError("give destinations: an OSM extract (osm=) and/or named nodes")
    spec = touchdown_od_spec(graph_dir, images)
    graph = load_streetgraph(spec)
    dests: list[Destination] = []
    if osm is not None:
        from urban_gym.world.loader import load_city

        dests += osm_destinations(graph, load_city(osm))
    if named_nodes is not None:
        dests += read_named_nodes(named_nodes, graph)
    seen: dict[str, Destination] = {}
    for d in dests:
        seen.setdefault(d.name.casefold(), d)
    dests = sorted(seen.values(), key=lambda d: d.name)
    cfg = dataclasses.replace(
        SUITE_CONFIGS["procedural"],
        name=name or f"touchdown-{Path(graph_dir).resolve().name}",
        city=name or f"touchdown:{Path(graph_dir).resolve().name}",
        n=int(n),
        seed=int(seed),
        radius=(0.85 * min_route_m, 1.2 * min_route_m),
        min_route_m=float(min_route_m),
        min_decisions=int(min_decisions),
        graph=spec,
    )
    tasks, report = generate_od_with_report(cfg, graph, destinations=dests)
    return GeneratedSuite(save_suite(out, tasks), tasks, report)
