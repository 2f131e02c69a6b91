"""world/osm_tags.py: the tag-to-English table and address-only names."""

from __future__ import annotations

import pytest

from urban_gym.world.osm_tags import KIND_PHRASES, is_address_name, kind_phrase


@pytest.mark.parametrize(
    ("key", "value", "singular", "plural"),
    [
        ("shop", "houseware", "housewares shop", "housewares shops"),
        ("shop", "beauty", "beauty salon", "beauty salons"),
        ("shop", "clothes", "clothes shop", "clothes shops"),
        ("office", "ngo", "NGO office", "NGO offices"),
        ("amenity", "place_of_worship", "place of worship", "places of worship"),
        ("amenity", "bench", "bench", "benches"),
        ("amenity", "library", "library", "libraries"),
        ("highway", "crossing", "crosswalk", "crosswalks"),
        # case and lists of values: the first value, matched case-insensitively
        ("shop", "Store", "shop", "shops"),
        ("amenity", "nightclub;restaurant", "nightclub", "nightclubs"),
        # not in the table: the value in words, a shop or office said so
        ("shop", "fishing_tackle", "fishing tackle shop", "fishing tackle shops"),
        ("office", "research", "research office", "research offices"),
        ("tourism", "zoo", "zoo", "zoos"),
    ],
)
def test_kind_phrase(key, value, singular, plural):
    assert kind_phrase(key, value) == singular
    assert kind_phrase(key, value, plural=True) == plural


def test_the_table_is_english_words():
    for (key, value), entry in KIND_PHRASES.items():
        for phrase in entry if isinstance(entry, tuple) else (entry,):
            assert phrase and "_" not in phrase and phrase == phrase.strip(), (key, value)
        assert value == value.lower(), (key, value)  # looked up in lower case


def test_address_names():
    assert is_address_name("Helsinki 00130", {})
    assert is_address_name("00130", {})
    assert is_address_name("Keskuskatu 5", {"addr:street": "Keskuskatu", "addr:housenumber": "5"})
    # names that only contain a number, or an address that is not the place's own
    assert not is_address_name("Westerback 1897", {})
    assert not is_address_name("Latitude 25", {})
    assert not is_address_name("Cafe 00130 Espresso Bar Deluxe", {})
    assert not is_address_name(
        "Aleksi 13", {"addr:street": "Aleksanterinkatu", "addr:housenumber": "13"}
    )
    assert not is_address_name("Keskuskatu 5", {})
    assert not is_address_name("", {})
