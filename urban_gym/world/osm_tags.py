"""What OpenStreetMap tags mean for a walker: walkable ways, corridor widths, building
heights, POI categories, street objects and map areas.

Pure functions of a feature's tags (a ``dict[str, str]``), used by the importer
(:mod:`urban_gym.world.osm`). Units: metres.
"""

from __future__ import annotations

import re

from urban_gym.world.city import (
    DEFAULT_BUILDING_HEIGHT_M,
    DEFAULT_HEIGHT_BY_TYPE_M,
    OBJECT_KINDS,
    POI_KEYS,
    STOREY_HEIGHT_M,
)

#: ``highway=*`` values whose ways are walked on.
WALKABLE_HIGHWAYS = frozenset(
    {
        "footway",
        "pedestrian",
        "steps",
        "path",
        "trail",
        "track",
        "bridleway",
        "corridor",
        "platform",
        "living_street",
        "residential",
        "service",
        "unclassified",
        "tertiary",
        "secondary",
        "primary",
        "tertiary_link",
        "secondary_link",
        "primary_link",
        "road",
        "cycleway",
    }
)
_CAR_ROADS = frozenset(
    {
        "living_street",
        "residential",
        "service",
        "unclassified",
        "tertiary",
        "secondary",
        "primary",
        "tertiary_link",
        "secondary_link",
        "primary_link",
        "road",
    }
)

#: Walkable corridor width in metres by kind when no ``width`` tag is mapped. Car roads
#: use ``lanes * 3.25 + 4`` (two 2 m sidewalks) when ``lanes`` is mapped, else the
#: per-``highway`` value in :data:`ROAD_WIDTH_M`.
DEFAULT_WIDTH_M = {
    "footway": 2.5,
    "sidewalk": 2.5,
    "crossing": 3.0,
    "pedestrian": 8.0,
    "steps": 2.5,
    "footbridge": 3.0,
    "path": 1.5,
    "cycleway": 3.0,
    "corridor": 3.0,
    "platform": 3.0,
}
ROAD_WIDTH_M = {
    "primary": 20.0,
    "secondary": 16.0,
    "tertiary": 13.0,
    "unclassified": 10.0,
    "residential": 11.0,
    "living_street": 7.0,
    "service": 6.0,
    "road": 10.0,
    "primary_link": 10.0,
    "secondary_link": 10.0,
    "tertiary_link": 9.0,
}

#: Map areas: ``(key, value) -> "water" | "green"``.
AREA_KINDS: dict[tuple[str, str], str] = {
    ("natural", "water"): "water",
    ("waterway", "riverbank"): "water",
    ("landuse", "reservoir"): "water",
    ("landuse", "basin"): "water",
    ("leisure", "park"): "green",
    ("leisure", "garden"): "green",
    ("leisure", "playground"): "green",
    ("leisure", "common"): "green",
    ("landuse", "grass"): "green",
    ("landuse", "forest"): "green",
    ("landuse", "meadow"): "green",
    ("landuse", "village_green"): "green",
    ("landuse", "recreation_ground"): "green",
    ("landuse", "cemetery"): "green",
    ("landuse", "allotments"): "green",
    ("natural", "wood"): "green",
    ("natural", "scrub"): "green",
    ("natural", "grassland"): "green",
    ("natural", "heath"): "green",
}

#: ``key -> values`` of the tags that make a node a street object.
OBJECT_TAG_KEYS: dict[str, set[str]] = {}
for _k, _v in OBJECT_KINDS:
    OBJECT_TAG_KEYS.setdefault(_k, set()).add(_v)
#: Keys whose areas osmium assembles (buildings, map areas, POI areas).
AREA_FILTER_KEYS = ("building", "natural", "landuse", "leisure", "waterway", *POI_KEYS)
_ALIAS_KEYS = ("alt_name", "short_name", "official_name", "brand", "operator", "old_name")
_NUM = re.compile(r"^\s*([0-9]+(?:[.,][0-9]+)?)\s*(m|meters|metres|ft|')?\s*$", re.I)


def parse_length(value: str | None) -> float | None:
    """Parse an OSM length such as ``"12"``, ``"12.5 m"``, ``"40'"`` into metres."""
    if not value:
        return None
    m = _NUM.match(value)
    if not m:
        return None
    v = float(m.group(1).replace(",", "."))
    unit = (m.group(2) or "m").lower()
    if unit in ("ft", "'"):
        v *= 0.3048
    return v


def building_height(tags: dict[str, str]) -> tuple[float, int | None, str]:
    """Height in metres, number of levels (or None) and where the height came from."""
    levels = None
    lv = parse_length(tags.get("building:levels"))
    if lv is not None and lv > 0:
        levels = max(1, int(round(lv)))
    h = parse_length(tags.get("height"))
    if h is not None and 1.0 <= h <= 500.0:
        return h, levels, "height"
    if levels is not None:
        roof = parse_length(tags.get("roof:levels")) or 0.0
        return (levels + 0.5 * roof) * STOREY_HEIGHT_M, levels, "levels"
    kind = tags.get("building", "yes")
    return DEFAULT_HEIGHT_BY_TYPE_M.get(kind, DEFAULT_BUILDING_HEIGHT_M), None, "default"


def walk_kind(tags: dict[str, str]) -> str | None:
    """The walkable-network kind of a way, or None if people do not walk on it."""
    hw = tags.get("highway")
    if hw not in WALKABLE_HIGHWAYS:
        return None
    foot = tags.get("foot", "")
    access = tags.get("access", "")
    if foot == "no" or (access in ("no", "private") and foot not in ("yes", "designated")):
        return None
    if hw == "cycleway" and foot not in ("yes", "designated", "permissive"):
        return None
    if hw in _CAR_ROADS:
        if tags.get("tunnel") in ("yes",) and foot not in ("yes", "designated"):
            return None
        return "road"
    if hw == "footway":
        fw = tags.get("footway")
        if fw == "crossing":
            return "crossing"
        if fw == "sidewalk":
            return "sidewalk"
        if tags.get("bridge") not in (None, "no"):
            return "footbridge"
        return "footway"
    if hw in ("path", "trail", "track", "bridleway"):
        return "footbridge" if tags.get("bridge") not in (None, "no") else "path"
    return hw  # pedestrian, steps, corridor, platform, cycleway


def sidewalk_sides(tags: dict[str, str]) -> str:
    """Which sides of a road carry a sidewalk mapped as a tag of the road: ``"both"``,
    ``"left"``, ``"right"`` (of the way's direction) or ``""`` (none, or mapped as separate
    ``footway=sidewalk`` ways, which are network edges of their own). Reads ``sidewalk=*``
    and ``sidewalk:both/left/right=*``.
    """
    yes = ("yes", "both")
    main = tags.get("sidewalk", "")
    left = main in ("both", "left", "yes") or tags.get("sidewalk:left") in yes
    right = main in ("both", "right", "yes") or tags.get("sidewalk:right") in yes
    if tags.get("sidewalk:both") in yes:
        left = right = True
    return "both" if left and right else "left" if left else "right" if right else ""


def way_elevation(tags: dict[str, str]) -> dict[str, object]:
    """The vertical tags of a walkable way as edge attributes: ``layer`` (int, 0 when
    unmapped or unreadable), ``level`` (the raw ``level=*`` text or None), ``bridge`` and
    ``tunnel`` (bools; ``tunnel=building_passage`` is not a tunnel), and ``sidewalk``
    (:func:`sidewalk_sides`).
    """
    try:
        layer = int(float(tags.get("layer", "0").split(";")[0]))
    except ValueError:
        layer = 0
    return {
        "layer": layer,
        "level": tags.get("level"),
        "bridge": tags.get("bridge") not in (None, "no"),
        "tunnel": tags.get("tunnel") not in (None, "no", "building_passage"),
        "sidewalk": sidewalk_sides(tags),
    }


def is_covered(tags: dict[str, str]) -> bool:
    """Whether a walkable way is sheltered from rain (covered, arcade, indoor corridor)."""
    return (
        tags.get("covered") in ("yes", "arcade", "colonnade", "roof")
        or tags.get("tunnel") in ("building_passage", "yes")
        or tags.get("highway") == "corridor"
        or tags.get("indoor") in ("yes", "corridor")
    )


def walk_width(kind: str, tags: dict[str, str]) -> float:
    """Walkable corridor width in metres (see :data:`DEFAULT_WIDTH_M`)."""
    w = parse_length(tags.get("width"))
    if w is not None and 0.5 <= w <= 60.0:
        return w
    if kind == "road":
        lanes = parse_length(tags.get("lanes"))
        if lanes:
            return lanes * 3.25 + 4.0
        return ROAD_WIDTH_M.get(tags.get("highway", "road"), 10.0)
    return DEFAULT_WIDTH_M.get(kind, 2.5)


def aliases_of(tags: dict[str, str], name: str) -> tuple[str, ...]:
    """Other names of a feature: ``name:*`` values, then alt/short/official names, brand
    and operator; without duplicates and without ``name`` itself.
    """
    seen = {name.casefold()}
    out: list[str] = []
    keys = sorted(k for k in tags if k.startswith("name:")) + list(_ALIAS_KEYS)
    for k in keys:
        v = tags.get(k)
        if v and v.casefold() not in seen:
            seen.add(v.casefold())
            out.append(v)
    return tuple(out)


def poi_category(tags: dict[str, str]) -> tuple[str, str] | None:
    """``(category, kind)`` for a named POI, e.g. ``("shop", "optician")``, else None."""
    if not tags.get("name"):
        return None
    for k in POI_KEYS:
        v = tags.get(k)
        if v and v != "no":
            return k, v
    return None


def object_kind(tags: dict[str, str]) -> str | None:
    """The street-object kind of a node's tags, else None."""
    for (k, v), kind in OBJECT_KINDS.items():
        if tags.get(k) == v:
            return kind
    return None


def area_kind(tags: dict[str, str]) -> str | None:
    """``"water"`` or ``"green"`` for a map area, else None."""
    for (k, v), kind in AREA_KINDS.items():
        if tags.get(k) == v:
            return kind
    return None


# ------------------------------------------------------------------ words for the tags
#: How instructions name a kind of place: OSM tag ``(key, value)`` -> English phrase,
#: singular, or ``(singular, plural)`` where the plural is not the singular + ``s``/``es``
#: (see :func:`kind_phrase`). British spelling, lower case except for acronyms. POI tags
#: (``shop``, ``amenity``, ``tourism``, ``leisure``, ``office``) and the street objects
#: that tasks count (:data:`~urban_gym.world.city.OBJECT_KINDS`).
KIND_PHRASES: dict[tuple[str, str], str | tuple[str, str]] = {
    # amenity
    ("amenity", "animal_boarding"): "pet boarding kennel",
    ("amenity", "arts_centre"): "arts centre",
    ("amenity", "artwork"): "artwork",
    ("amenity", "atm"): "ATM",
    ("amenity", "bandstand"): "bandstand",
    ("amenity", "bank"): "bank",
    ("amenity", "bar"): "bar",
    ("amenity", "bench"): ("bench", "benches"),
    ("amenity", "bicycle_parking"): "bicycle stand",
    ("amenity", "bicycle_rental"): "bike rental station",
    ("amenity", "bureau_de_change"): "currency exchange",
    ("amenity", "bus_station"): "bus station",
    ("amenity", "cafe"): "cafe",
    ("amenity", "car_rental"): "car rental office",
    ("amenity", "casino"): "casino",
    ("amenity", "charging_station"): "charging station",
    ("amenity", "cinema"): "cinema",
    ("amenity", "clinic"): "clinic",
    ("amenity", "college"): ("college", "colleges"),
    ("amenity", "community_centre"): "community centre",
    ("amenity", "conference_centre"): "conference centre",
    ("amenity", "courthouse"): "courthouse",
    ("amenity", "coworking_space"): "coworking space",
    ("amenity", "dentist"): "dentist",
    ("amenity", "doctors"): ("doctor's surgery", "doctors' surgeries"),
    ("amenity", "driving_school"): "driving school",
    ("amenity", "embassy"): ("embassy", "embassies"),
    ("amenity", "events_venue"): "events venue",
    ("amenity", "fast_food"): "fast-food restaurant",
    ("amenity", "ferry_terminal"): "ferry terminal",
    ("amenity", "fire_station"): "fire station",
    ("amenity", "food_court"): "food court",
    ("amenity", "fuel"): "petrol station",
    ("amenity", "hospital"): "hospital",
    ("amenity", "ice_cream"): "ice-cream parlour",
    ("amenity", "information"): "information point",
    ("amenity", "kindergarten"): "kindergarten",
    ("amenity", "library"): ("library", "libraries"),
    ("amenity", "marketplace"): "marketplace",
    ("amenity", "memorial"): "memorial",
    ("amenity", "nightclub"): "nightclub",
    ("amenity", "parking"): "car park",
    ("amenity", "parking_entrance"): "car park entrance",
    ("amenity", "pharmacy"): ("pharmacy", "pharmacies"),
    ("amenity", "place_of_worship"): ("place of worship", "places of worship"),
    ("amenity", "police"): "police station",
    ("amenity", "post_office"): "post office",
    ("amenity", "pub"): "pub",
    ("amenity", "public_building"): "public building",
    ("amenity", "recycling"): "recycling point",
    ("amenity", "restaurant"): "restaurant",
    ("amenity", "school"): "school",
    ("amenity", "social_facility"): "social services centre",
    ("amenity", "studio"): "studio",
    ("amenity", "taxi"): "taxi rank",
    ("amenity", "theatre"): "theatre",
    ("amenity", "toilets"): ("public toilet", "public toilets"),
    ("amenity", "townhall"): "town hall",
    ("amenity", "university"): ("university", "universities"),
    ("amenity", "vending_machine"): "vending machine",
    ("amenity", "waste_basket"): "waste basket",
    ("amenity", "childcare"): "childcare centre",
    ("amenity", "drinking_water"): "drinking fountain",
    ("amenity", "fountain"): "fountain",
    ("amenity", "livery_hall"): "livery hall",
    ("amenity", "music_school"): "music school",
    ("amenity", "office"): "office",
    ("amenity", "post_box"): ("post box", "post boxes"),
    ("amenity", "stripclub"): "strip club",
    ("amenity", "tailor"): "tailor",
    ("amenity", "translation_services"): "translation agency",
    ("amenity", "veterinary"): "veterinary surgery",
    # street objects that are not amenities
    ("highway", "bus_stop"): "bus stop",
    ("highway", "crossing"): ("crosswalk", "crosswalks"),
    ("highway", "street_lamp"): "street lamp",
    ("highway", "traffic_signals"): ("traffic light", "traffic lights"),
    ("natural", "tree"): "tree",
    # leisure
    ("leisure", "dance"): "dance hall",
    ("leisure", "fitness_centre"): "gym",
    ("leisure", "garden"): "garden",
    ("leisure", "miniature_golf"): "minigolf course",
    ("leisure", "outdoor_seating"): "outdoor seating area",
    ("leisure", "park"): "park",
    ("leisure", "picnic_table"): "picnic table",
    ("leisure", "pitch"): ("sports pitch", "sports pitches"),
    ("leisure", "playground"): "playground",
    ("leisure", "sports_centre"): "sports centre",
    ("leisure", "adult_gaming_centre"): "adult gaming centre",
    ("leisure", "club"): "club",
    ("leisure", "tanning_salon"): "tanning salon",
    ("leisure", "yes"): "public space",
    # office
    ("office", "accountant"): "accountancy firm",
    ("office", "administrative"): "administrative office",
    ("office", "architect"): "architecture firm",
    ("office", "association"): "association",
    ("office", "business_park"): "business park",
    ("office", "central_bank"): "central bank",
    ("office", "company"): ("company office", "company offices"),
    ("office", "coworking"): "coworking space",
    ("office", "digital_growth_consultancy"): "consultancy",  # a Helsinki office's tag
    ("office", "employment_agency"): ("employment agency", "employment agencies"),
    ("office", "estate_agent"): "estate agent",
    ("office", "financial"): "financial services office",
    ("office", "foundation"): "foundation",
    ("office", "government"): "government office",
    ("office", "insurance"): "insurance office",
    ("office", "it"): ("IT company", "IT companies"),
    ("office", "lawyer"): "law firm",
    ("office", "ngo"): "NGO office",
    ("office", "political_party"): ("political party office", "political party offices"),
    ("office", "quango"): ("public agency", "public agencies"),
    ("office", "travel_agent"): ("travel agency", "travel agencies"),
    ("office", "web_design"): "web design studio",
    ("office", "yes"): "office",
    ("office", "broker"): "broker's office",
    ("office", "design"): "design studio",
    ("office", "diplomatic"): "diplomatic mission",
    ("office", "educational_institution"): "education office",
    ("office", "energy_supplier"): "energy supplier's office",
    ("office", "publisher"): "publisher",
    ("office", "recruitment"): ("recruitment agency", "recruitment agencies"),
    ("office", "religion"): "religious office",
    # shop
    ("shop", "alcohol"): "liquor store",
    ("shop", "anime"): "anime shop",
    ("shop", "antiques"): "antiques shop",
    ("shop", "art"): "art shop",
    ("shop", "baby_goods"): "baby goods shop",
    ("shop", "bag"): "bag shop",
    ("shop", "bakery"): ("bakery", "bakeries"),
    ("shop", "beauty"): "beauty salon",
    ("shop", "beauty_salon"): "beauty salon",
    ("shop", "bed"): "bed shop",
    ("shop", "beverages"): "drinks shop",
    ("shop", "bicycle"): "bicycle shop",
    ("shop", "books"): "bookshop",
    ("shop", "boutique"): "boutique",
    ("shop", "butcher"): ("butcher's shop", "butcher's shops"),
    ("shop", "candles"): "candle shop",
    ("shop", "car_repair"): "car repair shop",
    ("shop", "carpet"): "carpet shop",
    ("shop", "chemist"): "chemist's shop",
    ("shop", "clothes"): "clothes shop",
    ("shop", "computer"): "computer shop",
    ("shop", "confectionery"): "sweet shop",
    ("shop", "convenience"): "convenience store",
    ("shop", "cookware"): "cookware shop",
    ("shop", "copyshop"): "copy shop",
    ("shop", "cosmetics"): "cosmetics shop",
    ("shop", "craft"): "craft shop",
    ("shop", "deli"): "delicatessen",
    ("shop", "department_store"): "department store",
    ("shop", "doityourself"): "DIY store",
    ("shop", "dry_cleaning"): "dry cleaner",
    ("shop", "electronics"): "electronics shop",
    ("shop", "fabric"): "fabric shop",
    ("shop", "florist"): "florist",
    ("shop", "frame"): "picture framer",
    ("shop", "funeral_directors"): "funeral home",
    ("shop", "furniture"): "furniture shop",
    ("shop", "games"): "games shop",
    ("shop", "gift"): "gift shop",
    ("shop", "gold"): "gold dealer",
    ("shop", "greengrocer"): "greengrocer",
    ("shop", "grocery"): ("grocery shop", "grocery shops"),
    ("shop", "hairdresser"): "hairdresser",
    ("shop", "handbags"): "handbag shop",
    ("shop", "handicraft"): "handicraft shop",
    ("shop", "handicrafts"): "handicraft shop",
    ("shop", "hardware"): "hardware store",
    ("shop", "hat"): "hat shop",
    ("shop", "hats"): "hat shop",
    ("shop", "health_food"): "health food shop",
    ("shop", "hearing_aids"): "hearing aid shop",
    ("shop", "hifi"): "hi-fi shop",
    ("shop", "houseware"): "housewares shop",
    ("shop", "interior_decoration"): "interior decoration shop",
    ("shop", "jewelry"): "jewellery shop",
    ("shop", "junk"): "junk shop",
    ("shop", "kiosk"): "kiosk",
    ("shop", "kitchen"): "kitchen shop",
    ("shop", "laundry"): ("laundry", "laundries"),
    ("shop", "leather"): "leather goods shop",
    ("shop", "locks"): "locksmith",
    ("shop", "locksmith"): "locksmith",
    ("shop", "mall"): "shopping centre",
    ("shop", "massage"): "massage parlour",
    ("shop", "medical_supply"): "medical supply shop",
    ("shop", "mobile_phone"): "mobile phone shop",
    ("shop", "music"): "record shop",
    ("shop", "musical_instrument"): "musical instrument shop",
    ("shop", "nails"): "nail salon",
    ("shop", "nailstudio"): "nail salon",
    ("shop", "newsagent"): "newsagent",
    ("shop", "optician"): "optician",
    ("shop", "outdoor"): "outdoor shop",
    ("shop", "party"): "party shop",
    ("shop", "pawnbroker"): "pawnbroker",
    ("shop", "perfumery"): "perfume shop",
    ("shop", "pet"): "pet shop",
    ("shop", "photo"): "photo shop",
    ("shop", "records"): "record shop",
    ("shop", "second_hand"): "second-hand shop",
    ("shop", "shoes"): "shoe shop",
    ("shop", "sports"): "sports shop",
    ("shop", "stationery"): "stationery shop",
    ("shop", "store"): "shop",
    ("shop", "supermarket"): "supermarket",
    ("shop", "tailor"): "tailor",
    ("shop", "tattoo"): "tattoo parlour",
    ("shop", "tea"): "tea shop",
    ("shop", "ticket"): "ticket office",
    ("shop", "toys"): "toy shop",
    ("shop", "travel_agency"): ("travel agency", "travel agencies"),
    ("shop", "variety_store"): "variety store",
    ("shop", "watches"): ("watch shop", "watch shops"),
    ("shop", "wine"): "wine shop",
    ("shop", "yes"): "shop",
    ("shop", "accessories"): ("accessories shop", "accessories shops"),
    ("shop", "car"): "car dealer",
    ("shop", "chocolate"): "chocolate shop",
    ("shop", "coffee"): "coffee merchant",
    ("shop", "e-cigarette"): "e-cigarette shop",
    ("shop", "electrical"): "electrical shop",
    ("shop", "erotic"): "adult shop",
    ("shop", "fashion_accessories"): ("fashion accessories shop", "fashion accessories shops"),
    ("shop", "herbalist"): "herbalist",
    ("shop", "lighting"): "lighting shop",
    ("shop", "lottery"): "lottery shop",
    ("shop", "paintings"): "art dealer",
    ("shop", "paper"): "paper shop",
    ("shop", "printers"): "print shop",
    ("shop", "printing"): "print shop",
    ("shop", "seafood"): "fishmonger",
    ("shop", "tobacco"): "tobacconist",
    # tourism
    ("tourism", "artwork"): "artwork",
    ("tourism", "attraction"): "attraction",
    ("tourism", "gallery"): ("art gallery", "art galleries"),
    ("tourism", "guest_house"): "guest house",
    ("tourism", "hostel"): "hostel",
    ("tourism", "hotel"): "hotel",
    ("tourism", "information"): "tourist information point",
    ("tourism", "museum"): "museum",
    ("tourism", "viewpoint"): "viewpoint",
}
#: What a place of a key whose value has no phrase is called: ``shop=fishing`` is a
#: "fishing shop", ``office=research`` a "research office".
_KEY_NOUNS = {"shop": "shop", "office": "office"}


def _plural(phrase: str) -> str:
    """The regular English plural of a phrase's last word (``bench`` -> ``benches``)."""
    if re.search(r"(s|x|z|ch|sh)$", phrase):
        return phrase + "es"
    if re.search(r"[^aeiou]y$", phrase):
        return phrase[:-1] + "ies"
    return phrase + "s"


def kind_phrase(key: str, value: str, plural: bool = False) -> str:
    """The English phrase instructions use for a place tagged ``key=value``, e.g.
    ``("shop", "houseware")`` -> ``"housewares shop"``, ``("shop", "beauty")`` -> ``"beauty
    salon"``, ``("office", "ngo")`` -> ``"NGO office"`` (``plural``: ``"NGO offices"``).

    From :data:`KIND_PHRASES`; values are matched case-insensitively and only the first of
    several (``nightclub;restaurant``) counts. A value the table lacks reads as itself with
    spaces for underscores, followed by "shop" or "office" for those keys
    (``shop=fishing`` -> ``"fishing shop"``).
    """
    v = str(value).split(";")[0].strip().lower()
    entry = KIND_PHRASES.get((key, v))
    if entry is None:
        words = " ".join(v.replace("_", " ").split()) or key
        noun = _KEY_NOUNS.get(key)
        entry = f"{words} {noun}" if noun and not words.endswith(noun) else words
    if isinstance(entry, tuple):
        return entry[1] if plural else entry[0]
    return _plural(entry) if plural else entry


_POSTCODE = re.compile(r"\d{5}")


def is_address_name(name: str, tags: dict[str, str]) -> bool:
    """Whether a place's ``name`` only says where it is, not what it is: a postal code
    with or without a town (``"Helsinki 00130"``, ``"00130"``) or the place's own street
    address from its ``addr:*`` tags (``"Keskuskatu 5"``). Instructions name such a place
    by its kind as well ("the post office Helsinki 00130").
    """
    words = str(name).replace(",", " ").split()
    postcode = tags.get("addr:postcode", "")
    codes = [w for w in words if _POSTCODE.fullmatch(w) or (postcode and w == postcode)]
    rest = [w for w in words if w not in codes]
    if len(codes) == 1 and len(rest) <= 2 and all(w.isalpha() for w in rest):
        return True  # "00130", "Helsinki 00130", "Berlin Mitte 10115"
    street, number = tags.get("addr:street"), tags.get("addr:housenumber")
    return bool(words and street and number) and (
        " ".join(words).casefold() == f"{street} {number}".casefold()
    )
