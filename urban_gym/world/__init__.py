"""The city as data: geo frame, City, OpenStreetMap import, procedural cities, bundles,
walkable geometry (:mod:`~urban_gym.world.walkable`), routing on the walkable network
(:mod:`~urban_gym.world.routing`). A family builds its own graphs of a city in its folder
(``urban_gym/families/<name>/world``).

Start with :func:`load_city`::

    from urban_gym.world import load_city
    city = load_city("helsinki")                      # embedded OSM extract (ODbL)
    city = load_city("path/to/extract.osm.pbf")       # any OSM file
    city = load_city("procedural:seed=3,blocks=4x4")  # a generated city
"""

from urban_gym.errors import BundleError, CityLoadError
from urban_gym.world.city import POI, Area, Building, City, StreetObject, WalkablePoint
from urban_gym.world.geo import GeoFrame, angle_diff, bearing, bearing_vector
from urban_gym.world.loader import BUILTIN_CITIES, cache_dir, clear_memory_cache, load_city
from urban_gym.world.osm import import_osm
from urban_gym.world.procedural import generate_city

__all__ = [
    "BUILTIN_CITIES",
    "POI",
    "Area",
    "Building",
    "BundleError",
    "City",
    "CityLoadError",
    "GeoFrame",
    "StreetObject",
    "WalkablePoint",
    "angle_diff",
    "bearing",
    "bearing_vector",
    "cache_dir",
    "clear_memory_cache",
    "generate_city",
    "import_osm",
    "load_city",
]
