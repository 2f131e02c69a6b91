"""Route files (Touchdown / map2seq JSON lines) and checking a route against a graph.

:func:`read_routes` reads the reference routes (panorama ids, navigation text, start
heading in degrees); :func:`check_route` turns one into node indices of a graph, naming the
broken hop when it does not fit.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from urban_gym.families.streetgraph.world.elements import StreetGraphError
from urban_gym.families.streetgraph.world.graph import StreetGraph
from urban_gym.families.streetgraph.world.touchdown import read_text_lines
from urban_gym.world.jsondata import loads_strict, show


@dataclass(frozen=True)
class Route:
    """One line of a Touchdown/map2seq route file: ``route_id``, the panorama ids of the
    reference path, the navigation text and the start heading (degrees).
    """

    route_id: str
    panoids: tuple[str, ...]
    text: str
    start_heading: float
    line: int = 0


def read_routes(path: str | os.PathLike, skip_bad_lines: bool = False) -> tuple[list[Route], int]:
    """Read a route file (Touchdown / map2seq JSON lines, or one JSON array of the same
    objects, item N counting as line N): each an object with
    ``route_panoids`` (list of ids), ``navigation_text`` and ``start_heading``; the id is
    ``route_id``, ``id`` or the line number. Returns the routes and the number of skipped
    lines (only with ``skip_bad_lines``; otherwise a bad line raises naming file and line).

    Lines are strict JSON data (:func:`urban_gym.world.jsondata.loads_strict`): ``NaN``,
    integers beyond 64 bits and nesting deeper than 32 levels are bad lines, reported
    like any other. A UTF-8 byte-order mark is accepted.
    """
    p = Path(path)
    routes: list[Route] = []
    skipped = 0
    for no, obj in _route_items(p):
        try:
            routes.append(_route(obj, no))
        except (ValueError, json.JSONDecodeError) as exc:
            if not skip_bad_lines:
                raise StreetGraphError(f"{p}, line {no}: {exc}") from None
            skipped += 1
    return routes, skipped


def _route_items(p: Path) -> list[tuple[int, Any]]:
    """``(number, JSON text or value)`` of each route: the lines of a JSON-lines file, or
    the items (numbered from 1) of a file that is one JSON array.
    """
    lines = [(no, line) for no, line in enumerate(read_text_lines(p), start=1) if line.strip()]
    if lines and lines[0][1].lstrip().startswith("["):
        text = "\n".join(line for _, line in lines)
        try:
            items = loads_strict(text)
        except ValueError as exc:
            raise StreetGraphError(
                f"{p}: a JSON array of routes that does not parse ({exc})"
            ) from None
        if isinstance(items, list):
            return list(enumerate(items, start=1))
    return lines


def _route(obj: Any, no: int) -> Route:
    """The :class:`Route` of one route object (or its JSON text); ValueError says what
    is wrong.
    """
    if isinstance(obj, str):
        obj = loads_strict(obj)
    if not isinstance(obj, dict):
        raise ValueError("not a JSON object")
    pan = obj.get("route_panoids")
    if not isinstance(pan, list) or len(pan) < 2 or not all(isinstance(s, str) for s in pan):
        raise ValueError(f"route_panoids={_short(pan)} must be a list of at least 2 panorama ids")
    text = obj.get("navigation_text")
    if not isinstance(text, str) or not text.strip():
        raise ValueError(f"navigation_text={_short(text)} must be non-empty text")
    sh = obj.get("start_heading", 0.0)
    if isinstance(sh, bool) or not isinstance(sh, (int, float)) or not math.isfinite(sh):
        raise ValueError(f"start_heading={_short(sh)} must be a number of degrees")
    rid = obj.get("route_id", obj.get("id", no))
    if isinstance(rid, bool) or not isinstance(rid, (str, int)) or rid == "":
        raise ValueError(f"route_id={_short(rid)} must be a non-empty string or an integer")
    return Route(str(rid), tuple(pan), text.strip(), float(sh) % 360.0, no)


def check_route(graph: StreetGraph, route: Route) -> list[int]:
    """Node indices of ``route``; :class:`StreetGraphError` naming the route and the broken
    hop when a panorama is unknown or two consecutive ones are not linked.
    """
    idx: list[int] = []
    for k, pid in enumerate(route.panoids):
        i = graph.index.get(pid)
        if i is None:
            raise StreetGraphError(
                f"route {route.route_id!r} (line {route.line}): panorama {pid!r} at position {k} "
                f"is not in graph {graph.name!r}"
            )
        idx.append(i)
    for k in range(len(idx) - 1):
        if idx[k] != idx[k + 1] and not graph.has_link(idx[k], idx[k + 1]):
            raise StreetGraphError(
                f"route {route.route_id!r} (line {route.line}): no link from "
                f"{route.panoids[k]!r} to {route.panoids[k + 1]!r} (hop {k} -> {k + 1})"
            )
    return idx


def _short(value: Any, limit: int = 60) -> str:
    return show(value, limit)
