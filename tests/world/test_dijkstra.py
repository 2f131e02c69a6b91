"""The compiled Dijkstra gives what its pure-Python reference gives: distances and, on ties,
the same predecessors; and routes on a hand-made network are the ones a person finds.
"""

from __future__ import annotations

import math

import networkx as nx
import numpy as np
import pytest

from urban_gym.world import dijkstra
from urban_gym.world.routing import Router


def _fields_agree(city, closed=()):
    router = Router(city, closed)
    net = dijkstra.pack(city, router._adj)
    mask = dijkstra.closed_mask(net, router.closed)
    rng = np.random.default_rng(7)
    (x0, y0, x1, y1) = city.bounds
    for x, y in zip(rng.uniform(x0, x1, 40), rng.uniform(y0, y1, 40)):
        loc = router.locate(float(x), float(y))
        args = (loc.u, loc.offset, loc.v, loc.length - loc.offset)
        d1, p1 = dijkstra.shortest_from(net, mask, *args)
        d2, p2 = dijkstra.shortest_from_python(net, mask, *args)
        assert isinstance(d1, dijkstra.NodeValues)
        assert dict(d1) == d2 and dict(p1) == p2
        assert len(d1) == len(d2) and set(d1) == set(d2)
        some = next(iter(d2))
        assert d1[some] == d2[some] and d1.get(-(10**12), "none") == "none"
        with pytest.raises(KeyError):
            d1[-(10**12)]


def test_compiled_matches_python_on_helsinki(helsinki):
    _fields_agree(helsinki)


def test_compiled_matches_python_with_closures(small_city):
    edges = list(small_city.network.edges())[:12]
    _fields_agree(small_city, edges)


def test_distances_match_networkx(small_city):
    router = Router(small_city)
    loc = router.locate(*small_city.node_xy[next(iter(small_city.network.nodes))])
    fld = router.field(loc)
    g = small_city.network
    ref_u = nx.single_source_dijkstra_path_length(g, loc.u, weight="length")
    ref_v = nx.single_source_dijkstra_path_length(g, loc.v, weight="length")
    for n in g.nodes:
        want = min(
            ref_u.get(n, math.inf) + loc.offset, ref_v.get(n, math.inf) + loc.length - loc.offset
        )
        assert fld.dist.get(n, math.inf) == pytest.approx(want, abs=1e-6)


def test_square_with_a_closed_side():
    """Four nodes on a 100 m square: from a point 10 m along side a-b, node d is 110 m away
    via a; with side a-d closed it is 90 + 100 + 100 = 290 m via b and c.
    """
    adj = {
        0: [(1, 100.0), (3, 100.0)],
        1: [(0, 100.0), (2, 100.0)],
        2: [(1, 100.0), (3, 100.0)],
        3: [(2, 100.0), (0, 100.0)],
    }
    owner = type("Owner", (), {})()
    net = dijkstra.pack(owner, adj)
    open_ = dijkstra.closed_mask(net, frozenset())
    dist, pred = dijkstra.shortest_from(net, open_, 0, 10.0, 1, 90.0)
    assert dist[3] == 110.0 and pred[3] == 0 and pred[0] is None and pred[1] is None
    shut = dijkstra.closed_mask(net, frozenset({(0, 3)}))
    assert int(shut.sum()) == 2  # both directions of the edge
    dist, pred = dijkstra.shortest_from(net, shut, 0, 10.0, 1, 90.0)
    assert dist[3] == 290.0 and pred[3] == 2 and pred[2] == 1
    py = dijkstra.shortest_from_python(net, shut, 0, 10.0, 1, 90.0)
    assert (dict(dist), dict(pred)) == py


def test_without_numba_routes_come_from_python_with_one_warning(monkeypatch, small_city):
    def broken():
        raise ImportError("no numba here")

    monkeypatch.setattr(dijkstra, "_state", {"kernel": None, "failed": False})
    monkeypatch.setattr(dijkstra, "_compile", broken)
    router = Router(small_city)
    loc = router.locate(*small_city.node_xy[next(iter(small_city.network.nodes))])
    with pytest.warns(RuntimeWarning, match="compiled Dijkstra is not available"):
        fld = router.field(loc)
    assert isinstance(fld.dist, dict) and len(fld.dist) == small_city.network.number_of_nodes()
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # warned once, not on every call
        again = router.field(loc)
    assert again.dist == fld.dist


def test_ties_keep_the_first_pushed_predecessor():
    """A 2x2 grid of 100 m blocks (nodes 0..8, row by row): from node 0, node 8 is 400 m away
    by six different routes, node 4 200 m by two. The predecessor on every tie is the one
    the reference's push order gives, and a later push at the same distance never replaces
    an earlier one.
    """
    adj: dict[int, list[tuple[int, float]]] = {i: [] for i in range(9)}
    for i in range(9):
        r, c = divmod(i, 3)
        for j in ((i + 1) if c < 2 else None, (i + 3) if r < 2 else None):
            if j is not None:
                adj[i].append((j, 100.0))
                adj[j].append((i, 100.0))
    owner = type("Owner", (), {})()
    net = dijkstra.pack(owner, adj)
    open_ = dijkstra.closed_mask(net, frozenset())
    dist, pred = dijkstra.shortest_from(net, open_, 0, 0.0, 0, 0.0)  # both ends at node 0
    ref = dijkstra.shortest_from_python(net, open_, 0, 0.0, 0, 0.0)
    assert (dict(dist), dict(pred)) == ref
    assert dist[8] == 400.0 and dist[4] == 200.0
    # node 1 (pushed from 0 before node 3) reaches 4 first; 4's neighbour 5 before 7
    assert pred[4] == 1 and pred[8] == 5 and pred[0] is None
