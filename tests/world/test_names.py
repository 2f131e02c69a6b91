"""Which name of a place tasks use (issue 37, "every script renders"): the local name, a
Latin one, or both, from the OSM tags the importer keeps.
"""

from __future__ import annotations

import pytest

from urban_gym.world import load_city
from urban_gym.world.names import display_name, is_latin, latin_name

from .osm_fixture import town


def test_is_latin_counts_letters_only():
    assert is_latin("Café 21") and is_latin("Pão de Açúcar") and is_latin("Große Straße")
    assert not is_latin("東京駅") and not is_latin("Кафе") and not is_latin("Café 東京")


def test_display_name_by_mode():
    tags = {"name": "さくらカフェ", "name:ja-Latn": "Sakura Kafe", "name:en": "Sakura Cafe"}
    assert display_name("さくらカフェ", tags, "local") == "さくらカフェ"
    assert display_name("さくらカフェ", tags, "english") == "Sakura Cafe"
    assert display_name("さくらカフェ", tags) == "さくらカフェ (Sakura Cafe)"
    pinyin = {"name:zh-Latn-pinyin": "Běijīng Fàndiàn"}
    assert display_name("北京饭店", pinyin) == "北京饭店 (Běijīng Fàndiàn)"
    assert display_name("北京饭店", pinyin, "english") == "Běijīng Fàndiàn"
    # no Latin name: the local one in every mode
    for mode in ("local", "english", "both"):
        assert display_name("東京駅", {}, mode) == "東京駅"
    # a Latin-script local name is read as it stands, except when English is asked for
    de = {"name:en": "Central Station"}
    assert display_name("Hauptbahnhof", de) == "Hauptbahnhof"
    assert display_name("Hauptbahnhof", de, "english") == "Central Station"
    # a non-Latin "Latin" key is skipped
    assert latin_name({"name:en": "東京", "int_name": "Tokyo"}, "東京") == "Tokyo"


def test_bad_mode_is_named():
    with pytest.raises(ValueError, match="'latin'"):
        display_name("x", {}, "latin")
    with pytest.raises(ValueError, match="'latin'"):
        load_city("procedural:seed=1,blocks=2x2", names="latin")


def _tokyo_town(tmp_path):
    w = town()
    w.node(30, -25, {"amenity": "cafe", "name": "さくらカフェ", "name:en": "Sakura Cafe"})
    w.node(
        35, -25, {"amenity": "restaurant", "name": "北京饭店", "name:zh_pinyin": "Běijīng Fàndiàn"}
    )
    w.node(40, -25, {"amenity": "cafe", "name": "東京駅"})
    return w.write(tmp_path / "tokyo.osm")


def test_load_city_names_the_pois_by_mode(tmp_path):
    path = _tokyo_town(tmp_path)
    names = {
        m: {p.tags["name"]: p.name for p in load_city(path, names=m).pois}
        for m in ("local", "english", "both")
    }
    assert names["local"]["さくらカフェ"] == "さくらカフェ"
    assert names["both"]["さくらカフェ"] == "さくらカフェ (Sakura Cafe)"
    assert names["both"]["北京饭店"] == "北京饭店 (Běijīng Fàndiàn)"
    assert names["both"]["東京駅"] == "東京駅"
    assert names["both"]["Leipomo Ääkkönen"] == "Leipomo Ääkkönen"  # Latin: unchanged
    assert names["english"]["さくらカフェ"] == "Sakura Cafe"
    assert names["english"]["Leipomo Ääkkönen"] == "Aakkonen Bakery"
    both = load_city(path)
    assert load_city(path, names="both") is both  # made once per mode
    cafe = next(p for p in both.pois if p.tags["name"] == "さくらカフェ")
    assert "さくらカフェ" in cafe.aliases  # the sign's own name still matches
    local = load_city(path, names="local")
    assert both.fingerprint and both.fingerprint != local.fingerprint  # own sign caches


def test_latin_cities_are_unchanged_by_the_default(tmp_path, helsinki):
    # nothing to add to a Latin-script name: the very same city, so suites stay as they are
    w = town()  # with a place of its own: a file no other test's cache holds
    w.node(30, -25, {"amenity": "cafe", "name": "Café Säde", "name:en": "Cafe Ray"})
    path = w.write(tmp_path / "latin.osm")
    assert load_city(path) is load_city(path, names="local")
    assert load_city("helsinki") is load_city("helsinki", names="local")
    assert all(is_latin(p.name) for p in helsinki.pois)


def test_place_language_from_the_name_tags_then_the_country():
    from urban_gym.world.names import place_language

    assert place_language({"name": "直島", "name:ja": "直島", "name:en": "Naoshima"}) == "ja"
    # a transliteration equal to the name says nothing; nor does a name:xx that differs
    assert place_language({"name": "Naoshima", "name:ja-Latn": "Naoshima"}) is None
    assert place_language({"name": "直島", "name:zh": "直岛"}) is None
    assert place_language({"name": "銀座", "addr:country": "JP"}) == "ja"
    # a bare zh in Hong Kong is traditional Chinese
    assert place_language({"name": "中環", "name:zh": "中環", "addr:country": "HK"}) == "zh-Hant"
    assert place_language({"name": "Kamppi", "name:fi": "Kamppi"}) == "fi"
    assert place_language({}) is None


def test_city_language_is_its_places_most_common():
    from types import SimpleNamespace

    from urban_gym.world.names import city_language, sign_language

    def poi(tags):
        return SimpleNamespace(tags=tags)

    ja = {"name": "骨董店", "name:ja": "骨董店"}
    city = SimpleNamespace(pois=[poi(ja), poi(ja), poi({"name": "X", "name:en": "X"}), poi({})])
    assert city_language(city) == "ja"
    # a place that does not tell takes its city's; one that tells keeps its own
    assert sign_language({"name": "直"}, city) == "ja"
    assert sign_language({"name": "Café", "name:pt": "Café"}, city) == "pt"
    assert city_language(SimpleNamespace(pois=[poi({})])) is None
    assert city_language(load_city("helsinki")) == "fi"
