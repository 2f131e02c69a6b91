"""Street graphs by spec: build (or fetch from this process's memo) a preprocessed graph.

A spec is a small JSON-able dict naming the source (a city or a Touchdown folder) and the
preprocessing (see :func:`load_streetgraph`); tasks store it, so an environment can
rebuild the same graph in any process.
"""

from __future__ import annotations

import json
from typing import Any

from urban_gym.caching import LRUCache
from urban_gym.families.streetgraph.world.elements import (
    DEFAULT_SPACING_M,
    DEFAULT_STREET_KINDS,
    StreetGraphError,
)
from urban_gym.families.streetgraph.world.graph import StreetGraph
from urban_gym.families.streetgraph.world.preprocess import preprocess
from urban_gym.families.streetgraph.world.touchdown import read_touchdown
from urban_gym.world.diskcache import cached_for_city

#: The graphs built in this process, by :func:`graph_key` (never evicted).
_MEMO: LRUCache[str, StreetGraph] = LRUCache(lock=True, name="world.streetgraphs")


#: The modules whose code makes a graph from a city: their source names the graph kept in
#: the world cache, so a change to them builds it anew (geo: the graph's GeoFrame).
BUILD_SOURCES: tuple[str, ...] = (
    *(
        f"urban_gym.families.streetgraph.world.{n}"
        for n in ("elements", "from_city", "graph", "preprocess", "distances", "loading")
    ),
    "urban_gym.world.geo",
)


def graph_key(spec: dict[str, Any]) -> str:
    """A canonical string key of a graph spec (see :func:`load_streetgraph`)."""
    return json.dumps(spec, sort_keys=True)


def load_streetgraph(spec: dict[str, Any]) -> StreetGraph:
    """Build (or fetch from this process's memo) the preprocessed graph a spec describes.

    ``spec`` keys: ``source`` = ``"city"`` (with ``city``: a :func:`load_city` spec,
    ``spacing``: metres, ``kinds``: edge kinds or None) or ``"touchdown"`` (with ``path``:
    the directory, ``images``: image folder or None); both take ``prune`` (default True),
    ``largest_component`` (default True), ``reverse_links`` (default True),
    ``merge_parallel`` (default True: one street per parallel group) and ``keep``
    (panorama ids never pruned). Unknown keys raise :class:`StreetGraphError` listing the
    valid ones.
    """
    key = graph_key(spec)
    got = _MEMO.get(key)
    if got is not None:
        return got
    common = {"source", "prune", "largest_component", "reverse_links", "merge_parallel", "keep"}
    source = spec.get("source")
    valid = {
        "city": common | {"city", "spacing", "kinds"},
        "touchdown": common | {"path", "images"},
    }
    if source not in valid:
        raise StreetGraphError(f"graph spec source={source!r} must be 'city' or 'touchdown'")
    unknown = sorted(set(spec) - valid[source])
    if unknown:
        raise StreetGraphError(
            f"graph spec: unknown keys {unknown}; valid keys: {', '.join(sorted(valid[source]))}"
        )
    city = None
    if source == "city":
        from urban_gym.world.loader import load_city

        city = load_city(spec["city"])

    def build() -> StreetGraph:
        if city is not None:
            raw = StreetGraph.from_city(
                city,
                spacing=float(spec.get("spacing", DEFAULT_SPACING_M)),
                kinds=spec.get("kinds", list(DEFAULT_STREET_KINDS)),
                city_spec=spec["city"],
            )
        else:
            raw = read_touchdown(spec["path"], images=spec.get("images"))
        g, _ = preprocess(
            raw,
            reverse_links=spec.get("reverse_links", True),
            prune=spec.get("prune", True),
            largest_component=spec.get("largest_component", True),
            merge_parallel=spec.get("merge_parallel", True),
            keep=spec.get("keep", ()),
        )
        g.meta["spec"] = dict(spec)
        return g

    if city is None:
        g = build()
    else:  # a graph of a loaded city: built once per machine, then read from the world cache
        g = cached_for_city("streetgraph", city, build, *BUILD_SOURCES, key=key)
    _MEMO.put(key, g)
    return g


def clear_streetgraph_memo() -> None:
    """Forget the graphs built in this process."""
    _MEMO.clear()
