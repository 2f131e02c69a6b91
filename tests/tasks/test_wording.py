"""tasks/wording.py: how instructions put places into sentences."""

from __future__ import annotations

from urban_gym.tasks.wording import end_sentence, place_kind, place_name, typed_name
from urban_gym.world.features import POI


def poi(name: str, category: str, kind: str, **tags: str) -> POI:
    return POI(0, "n1", name, category, kind, (0.0, 0.0), tags=dict(tags))


def test_typed_name_adds_the_kind_unless_the_name_says_it():
    assert typed_name(poi("Teemaa", "shop", "tea")) == "Teemaa (tea shop)"
    assert place_kind(poi("Teemaa", "shop", "tea")) == "tea shop"
    assert typed_name(poi("Hotel Kämp", "tourism", "hotel")) == "Hotel Kämp"
    assert typed_name(poi("Otto. automaatti 24 h (ATM)", "amenity", "atm")) == (
        "Otto. automaatti 24 h (ATM)"
    )
    # a word that merely starts with the kind does not count
    assert typed_name(poi("Barcelona", "amenity", "bar")) == "Barcelona (bar)"


def test_place_name_says_what_an_address_is():
    post = poi("Helsinki 00130", "amenity", "post_office", **{"addr:city": "Helsinki"})
    assert place_name(post) == "the post office Helsinki 00130"
    assert place_name(poi("crape.", "shop", "yes")) == "crape."


def test_end_sentence_adds_no_second_full_stop():
    assert end_sentence("Go to crape.") == "Go to crape."
    assert end_sentence("Go to Biáng!") == "Go to Biáng!"
    assert end_sentence("Go to Laatukoru") == "Go to Laatukoru."
