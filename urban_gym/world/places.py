"""Which of a city's places OpenStreetMap marks as notable, what kind of place each is, and
its postal address.

Pure functions of a feature's tags plus :class:`AddressBook`, which finds an address for a
place that has none of its own from the city around it (the building it stands in, the
nearest addressed building, the nearest named street). Family-neutral: any family that
sends an agent to a named place may ask how well known the place is and where it is.

* :func:`notability` -- why a place counts as notable: a ``wikidata`` or ``wikipedia``
  tag (the place has an encyclopaedia entry), or a tag of :data:`NOTABLE_TAGS` (a tourist
  attraction, a museum, a station, a cathedral, a monument, ...); ``""`` when none. On an
  office or a shop (:func:`is_organisation`) the encyclopaedia tag describes the company,
  ministry or brand rather than a place people know the way to, and does not count.
* :func:`place_kind_of` -- the place's kind from its most telling tag, never the
  uninformative ``yes`` of ``building=yes`` or ``shop=yes``.
* :func:`address_from_tags` and :meth:`AddressBook.address_of` -- an :class:`Address`
  with its ``source``: ``tags`` (the place's own ``addr:*`` tags), ``building`` (the
  ``addr:*`` tags of the building it is in), ``nearest_building`` (the nearest addressed
  building within the search radius) or ``street`` (the name of the nearest named street).

Distances in metres, in the city's local frame.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import shapely
from shapely.geometry import Point

#: Tags that mark a place as notable without an encyclopaedia link: ``(key, value) ->``
#: the reason's label. Kept to places a visitor or a map reader knows by name.
NOTABLE_TAGS: dict[tuple[str, str], str] = {
    ("tourism", "attraction"): "attraction",
    ("tourism", "museum"): "museum",
    ("tourism", "zoo"): "zoo",
    ("tourism", "theme_park"): "theme park",
    ("railway", "station"): "station",
    ("public_transport", "station"): "station",
    ("building", "train_station"): "station",
    ("amenity", "bus_station"): "station",
    ("building", "cathedral"): "cathedral",
    ("amenity", "townhall"): "town hall",
    ("historic", "monument"): "monument",
    ("historic", "castle"): "castle",
    ("man_made", "lighthouse"): "lighthouse",
    ("leisure", "stadium"): "stadium",
}

#: Tags that link a place to an encyclopaedia entry, in the order they are reported.
ENCYCLOPAEDIA_KEYS: tuple[str, ...] = ("wikidata", "wikipedia")

#: The keys a place's kind is read from, most telling first.
KIND_KEYS: tuple[str, ...] = (
    "tourism",
    "amenity",
    "railway",
    "public_transport",
    "historic",
    "shop",
    "office",
    "leisure",
    "man_made",
    "building",
)
_VAGUE = frozenset({"", "yes", "no", "true", "1"})


#: Shops that are places in their own right (their encyclopaedia tag is the building's).
PLACE_SHOPS = frozenset({"mall", "department_store"})


def is_organisation(tags: Mapping[str, str]) -> bool:
    """Whether a feature is an organisation's premises rather than a place: an
    ``office=*`` (a company, a ministry, an association) or a ``shop=*`` other than
    :data:`PLACE_SHOPS`.
    """
    if str(tags.get("office", "")).strip():
        return True
    shop = str(tags.get("shop", "")).strip()
    return bool(shop) and shop not in PLACE_SHOPS


def notability(tags: Mapping[str, str]) -> str:
    """Why a place with these tags is notable: ``"wikidata"``, ``"wikipedia"`` or
    ``"<key>=<value>"`` of :data:`NOTABLE_TAGS` (e.g. ``"tourism=attraction"``); ``""``
    when it is not. An encyclopaedia tag of an organisation (:func:`is_organisation`) and
    a ``brand:wikidata`` tag (a chain's brand) do not count.
    """
    if not is_organisation(tags):
        for key in ENCYCLOPAEDIA_KEYS:
            if str(tags.get(key, "")).strip():
                return key
    for (key, value), _ in NOTABLE_TAGS.items():
        if tags.get(key) == value:
            return f"{key}={value}"
    return ""


def place_kind_of(tags: Mapping[str, str], default: str = "place") -> str:
    """The kind of a place: the value of the first of :data:`KIND_KEYS` that says more
    than ``yes`` (``station`` for ``railway``/``public_transport`` stations), else
    ``default``. Never ``"yes"``.
    """
    for key in KIND_KEYS:
        value = str(tags.get(key, "")).strip()
        if value.casefold() in _VAGUE:
            continue
        return value
    return default if default.casefold() not in _VAGUE else "place"


@dataclass(frozen=True)
class Address:
    """A postal address: ``text`` as a person writes it (``"Kaivokatu 1, 00101
    Helsinki"``), its ``street`` and ``housenumber`` (``""`` when unknown), where it came
    from (``source``: ``tags``, ``building``, ``nearest_building`` or ``street``) and, for
    the last two, how far the place is from what gave the address (``distance_m``).
    """

    text: str
    street: str
    housenumber: str = ""
    source: str = "tags"
    distance_m: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serialisable dict (``distance_m`` rounded to 0.1 m)."""
        return {
            "text": self.text,
            "street": self.street,
            "housenumber": self.housenumber,
            "source": self.source,
            "distance_m": round(float(self.distance_m), 1),
        }


#: Where an address may come from, most exact first.
ADDRESS_SOURCES: tuple[str, ...] = ("tags", "building", "nearest_building", "street")


def address_from_tags(tags: Mapping[str, str], source: str = "tags") -> Address | None:
    """The address in ``addr:*`` tags (``addr:street`` or ``addr:place``, then
    ``addr:housenumber``, ``addr:postcode``, ``addr:city``), or None without a street.
    """
    street = str(tags.get("addr:street") or tags.get("addr:place") or "").strip()
    if not street:
        return None
    number = str(tags.get("addr:housenumber", "")).strip()
    line = f"{street} {number}".strip()
    tail = " ".join(
        str(tags.get(k, "")).strip() for k in ("addr:postcode", "addr:city") if tags.get(k)
    )
    return Address(f"{line}, {tail}" if tail else line, street, number, source)


class AddressBook:
    """Addresses of a city's places (see the module docstring).

    Args:
        city: a :class:`~urban_gym.world.city.City`.
        radius: how far (metres) to look for an addressed building or a named street.
    """

    def __init__(self, city: Any, radius: float = 100.0) -> None:
        self.city = city
        self.radius = float(radius)
        self._addressed = [
            (b.polygon, a)
            for b in city.buildings
            if (a := address_from_tags(b.tags or {}, "nearest_building")) is not None
        ]
        self._building_tree = shapely.STRtree([p for p, _ in self._addressed])
        edges = [
            (d["geometry"], str(d["name"]).strip())
            for _, _, d in city.network.edges(data=True)
            if d.get("name") and str(d["name"]).strip()
        ]
        self._streets = edges
        self._street_tree = shapely.STRtree([g for g, _ in edges])

    def address_of(
        self,
        tags: Mapping[str, str],
        position: tuple[float, float],
        building_id: int | None = None,
    ) -> Address | None:
        """The address of a place with ``tags`` at ``position`` (metres; ``building_id``:
        the building it is in, if any), from the first source of
        :data:`ADDRESS_SOURCES` that has one; None when none has.
        """
        own = address_from_tags(tags)
        if own is not None:
            return own
        if building_id is not None:
            b = self.city.buildings[building_id]
            got = address_from_tags(b.tags or {}, "building")
            if got is not None:
                return got
        p = Point(float(position[0]), float(position[1]))
        near = _nearest(self._building_tree, p, self.radius)
        if near is not None:
            a = self._addressed[near[0]][1]
            return Address(a.text, a.street, a.housenumber, "nearest_building", near[1])
        near = _nearest(self._street_tree, p, self.radius)
        if near is not None:
            name = self._streets[near[0]][1]
            return Address(name, name, "", "street", near[1])
        return None


def notable_line(tags_of_goals: Sequence[Mapping[str, str] | None]) -> str:
    """One line saying how many of a suite's tasks go to (or name) a notable place:
    ``tags_of_goals`` holds the OSM tags of each task's place (None for a task without a
    named place), e.g. ``"notable places: 12 of 40 tasks with a named place (wikidata 9,
    tourism=museum 3)"``.
    """
    named = [t for t in tags_of_goals if t is not None]
    why = Counter(r for t in named if (r := notability(t)))
    reasons = ", ".join(f"{k} {n}" for k, n in sorted(why.items(), key=lambda kv: (-kv[1], kv[0])))
    return f"notable places: {sum(why.values())} of {len(named)} tasks with a named place" + (
        f" ({reasons})" if reasons else ""
    )


def _nearest(tree: shapely.STRtree, p: Point, radius: float) -> tuple[int, float] | None:
    if len(tree.geometries) == 0:
        return None
    idx, dist = tree.query_nearest(p, max_distance=radius, return_distance=True)
    if len(idx) == 0:
        return None
    k = int(np.argmin(dist))
    return int(idx[k]), float(dist[k])


__all__ = [
    "ADDRESS_SOURCES",
    "ENCYCLOPAEDIA_KEYS",
    "KIND_KEYS",
    "NOTABLE_TAGS",
    "PLACE_SHOPS",
    "Address",
    "AddressBook",
    "address_from_tags",
    "is_organisation",
    "notability",
    "notable_line",
    "place_kind_of",
]
