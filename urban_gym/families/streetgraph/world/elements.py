"""The elements of a street graph: streets, the error type and the defaults.

Units: metres, degrees clockwise from north (x east, y north).
"""

from __future__ import annotations

from dataclasses import dataclass

from urban_gym.errors import GraphError

#: Hops along a street used for its outgoing heading (CityNav: the 3-hop lookahead).
LOOKAHEAD_HOPS = 3
#: Default panorama spacing along street centrelines (metres) for graphs built from a City.
DEFAULT_SPACING_M = 10.0
#: Network edge kinds a capture car / Street View walker would take, by preference.
DEFAULT_STREET_KINDS: tuple[str, ...] = ("road", "pedestrian")
#: Image file suffixes tried for ``<panoid>.<suffix>`` in an image folder.
IMAGE_SUFFIXES: tuple[str, ...] = (".jpg", ".jpeg", ".png")


class StreetGraphError(GraphError):
    """A street graph file, route or query is malformed (the message names file, line and
    value where there is one).
    """


@dataclass(frozen=True)
class Street:
    """A contracted street: the chain of panorama nodes from decision point ``nodes[0]`` to
    ``nodes[-1]`` (node indices), its ``length`` (metres, along the chain) and its outgoing
    ``heading`` (degrees, bearing from ``nodes[0]`` to the node :data:`LOOKAHEAD_HOPS`
    hops along, or the last node when the street is shorter).
    """

    nodes: tuple[int, ...]
    length: float
    heading: float

    @property
    def start(self) -> int:
        """The node the street leaves from."""
        return self.nodes[0]

    @property
    def end(self) -> int:
        """The node the street arrives at."""
        return self.nodes[-1]

    @property
    def hops(self) -> int:
        """The number of links along the street."""
        return len(self.nodes) - 1
