"""The street graph of a loaded city is built once per machine and read back after."""

from __future__ import annotations

import numpy as np

from urban_gym.families.streetgraph.world import loading
from urban_gym.families.streetgraph.world.graph import StreetGraph


def test_a_loaded_citys_street_graph_comes_from_the_disk_cache(monkeypatch):
    spec = {"source": "city", "city": "procedural:seed=12,blocks=3x3", "spacing": 10.0}
    loading.clear_streetgraph_memo()
    first = loading.load_streetgraph(spec)
    loading.clear_streetgraph_memo()  # a new process

    def no_build(*a, **k):
        raise AssertionError("built again instead of read from the disk cache")

    monkeypatch.setattr(StreetGraph, "from_city", no_build)
    again = loading.load_streetgraph(spec)
    assert again is not first
    assert again.ids == first.ids and again.meta["spec"] == spec
    for name in ("xy", "src", "dst", "heading", "length", "indptr", "decision_points"):
        assert np.array_equal(getattr(again, name), getattr(first, name)), name
    # another spec of the same city is another graph, not the cached one
    other = {**spec, "spacing": 20.0}
    monkeypatch.undo()
    assert len(loading.load_streetgraph(other).ids) < len(first.ids)
    loading.clear_streetgraph_memo()
