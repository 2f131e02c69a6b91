"""The features of a city: buildings, POIs, street objects and map areas.

Plain records in the local metric frame of :class:`~urban_gym.world.geo.GeoFrame` (x east,
y north, metres; bearings in degrees clockwise from north). A
:class:`~urban_gym.world.city.City` holds lists of them; importers, the procedural
generator and bundles (:mod:`urban_gym.world.bundle`) build them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from shapely.geometry import Polygon


@dataclass
class Building:
    """A building footprint extruded to ``height`` metres.

    ``id`` is the index in :attr:`City.buildings`; ``osm_id`` is ``"w<id>"``/``"r<id>"``
    for OSM features or ``"p<n>"`` for procedural ones. ``kind`` is the ``building=*`` value.
    ``height_source`` says where the height came from: ``"height"``, ``"levels"`` or
    ``"default"``.
    """

    id: int
    osm_id: str
    polygon: Polygon
    height: float
    kind: str = "yes"
    levels: int | None = None
    height_source: str = "default"
    name: str | None = None
    tags: dict[str, str] = field(default_factory=dict)


@dataclass
class POI:
    """A named place (shop, amenity, tourism, leisure or office feature).

    ``position`` is where OSM puts it. If it belongs to a building, ``building_id`` is set
    and the POI is anchored to one *facade*: the footprint edge ``facade`` (two points,
    metres, in footprint-ring order) whose outward normal points along bearing ``facing``
    (degrees). ``anchor`` is the point on that facade where its sign hangs, and ``front``
    is the nearest walkable point in front of it (where "go to <name>" ends). POIs without
    a building have ``facade`` None, ``anchor`` equal to ``position`` and ``facing``
    pointing from the anchor towards ``front``. A viewer at ``front`` sees the sign by
    looking along ``facing + 180``.
    """

    id: int
    osm_id: str
    name: str
    category: str
    kind: str
    position: tuple[float, float]
    aliases: tuple[str, ...] = ()
    tags: dict[str, str] = field(default_factory=dict)
    building_id: int | None = None
    facade: tuple[tuple[float, float], tuple[float, float]] | None = None
    anchor: tuple[float, float] = (0.0, 0.0)
    facing: float = 0.0
    front: tuple[float, float] = (0.0, 0.0)

    @property
    def names(self) -> tuple[str, ...]:
        """The name followed by every alias."""
        return (self.name, *self.aliases)


@dataclass
class StreetObject:
    """A mapped street object (tree, street lamp, bench, ...) at ``position`` (metres)."""

    id: int
    osm_id: str
    kind: str
    position: tuple[float, float]
    tags: dict[str, str] = field(default_factory=dict)


@dataclass
class Area:
    """A map area: ``kind`` is ``"water"`` or ``"green"``."""

    id: int
    osm_id: str
    kind: str
    polygon: Polygon
    name: str | None = None
    tags: dict[str, str] = field(default_factory=dict)
