"""StreetGraph: a Street-View-style panorama graph for long-range navigation.

A :class:`StreetGraph` holds panorama *nodes* (a string id, latitude/longitude, metric
``x``/``y`` in a :class:`~urban_gym.world.geo.GeoFrame`, and the panorama's heading: the
compass bearing of its centre column) and directed *links* ``u -> v`` with a heading
(degrees clockwise from north) and a length (metres, the straight distance ``u``-``v``).
Arrays are numpy; links are stored sorted by ``(source, target)`` in CSR form.

Sources:

* :meth:`StreetGraph.from_city` -- nodes every ~10 m along the walkable street centrelines
  of a :class:`~urban_gym.world.city.City` (as a capture car would take them);
* :func:`read_touchdown` -- Touchdown-format ``nodes.txt`` (``panoid,pano_yaw_angle,lat,lng``)
  and ``links.txt`` (``start_panoid,heading,end_panoid``), with an optional folder of
  equirectangular images ``<panoid>.jpg|jpeg|png``.

Preprocessing (CityNav's recipe), each step returning a new graph and a report dict:

1. :func:`add_reverse_links` -- add ``v -> u`` wherever only ``u -> v`` exists (heading + 180).
2. :func:`prune_dead_ends` -- remove nodes with at most one neighbour, iteratively (a dead-end
   street disappears node by node); nodes in ``keep`` are never removed.
3. :func:`keep_largest_component` -- drop everything outside the largest connected component.
4. Contraction (:meth:`StreetGraph.contract`) -- chains of degree-2 nodes become *streets*
   between *decision points* (nodes whose neighbour count is not 2); a :class:`Street` keeps
   its node list and its length. The heading of an outgoing street is the bearing from its
   first node to the node three hops along it (or its last node when it is shorter):
   :data:`LOOKAHEAD_HOPS`.

:func:`preprocess` runs them in order and returns a :class:`PreprocessReport`.

Distances to a goal (:meth:`StreetGraph.distances_to`) are one multi-source Dijkstra over
the reversed links, metres; :meth:`StreetGraph.hops_to` the same in link counts.

The package's modules, along its seams:

==================  =====================================================================
``elements``        streets, defaults, the error type
``graph``           :class:`StreetGraph`: nodes, links, streets and contraction
``distances``       distances, hop counts and shortest paths to a goal (a mixin)
``from_city``       panoramas along a City's streets
``preprocess``      reverse links, dead ends, largest component, contraction report
``touchdown``       reading and writing Touchdown ``nodes.txt`` / ``links.txt``
``routes``          Touchdown / map2seq route files and checking a route
``loading``         graphs by spec, memoised per process
==================  =====================================================================
"""

from urban_gym.families.streetgraph.world.elements import (
    DEFAULT_SPACING_M,
    DEFAULT_STREET_KINDS,
    IMAGE_SUFFIXES,
    LOOKAHEAD_HOPS,
    Street,
    StreetGraphError,
)
from urban_gym.families.streetgraph.world.graph import StreetGraph
from urban_gym.families.streetgraph.world.loading import (
    clear_streetgraph_memo,
    graph_key,
    load_streetgraph,
)
from urban_gym.families.streetgraph.world.preprocess import (
    PreprocessReport,
    add_reverse_links,
    connected_components,
    keep_largest_component,
    preprocess,
    prune_dead_ends,
)
from urban_gym.families.streetgraph.world.routes import Route, check_route, read_routes
from urban_gym.families.streetgraph.world.touchdown import (
    LoadReport,
    read_touchdown,
    write_touchdown,
)

__all__ = [
    "DEFAULT_SPACING_M",
    "DEFAULT_STREET_KINDS",
    "IMAGE_SUFFIXES",
    "LOOKAHEAD_HOPS",
    "LoadReport",
    "PreprocessReport",
    "Route",
    "Street",
    "StreetGraph",
    "StreetGraphError",
    "add_reverse_links",
    "check_route",
    "clear_streetgraph_memo",
    "connected_components",
    "graph_key",
    "keep_largest_component",
    "load_streetgraph",
    "preprocess",
    "prune_dead_ends",
    "read_routes",
    "read_touchdown",
    "write_touchdown",
]
