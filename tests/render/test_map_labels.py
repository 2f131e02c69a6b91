"""A city's map labels drawn once per machine: the table holds exactly the sprites the map
would draw, is read back from the world cache by a later process, and a city without a
fingerprint has none (its labels are drawn as needed)."""

from __future__ import annotations

import numpy as np

from urban_gym.render import map_labels
from urban_gym.render.map import MapRenderer
from urban_gym.render.text import text_sprite, text_width
from urban_gym.world.loader import cache_dir
from urban_gym.world.names import sign_language


def test_the_table_holds_each_pois_label_and_width(tiny_city):
    table = map_labels.label_table(tiny_city)
    assert table is not None and len(table.sprites) == len(tiny_city.pois) > 0
    for p, sprite, width in zip(tiny_city.pois, table.sprites, table.widths):
        lang = sign_language(p.tags, tiny_city)
        np.testing.assert_array_equal(sprite, text_sprite(p.name, 11, lang=lang))
        assert width == sprite.shape[1] == text_width(p.name, 11, lang=lang)
        assert not sprite.flags.writeable


def test_a_later_process_reads_the_table_from_the_world_cache(tiny_city, monkeypatch):
    first = map_labels.label_table(tiny_city)
    assert first is not None

    def files() -> dict:
        return {p: p.stat().st_mtime_ns for p in (cache_dir() / "render").glob("map-labels-*")}

    written = files()
    assert written  # the tables of the cities drawn so far, this one's among them
    # a new process: nothing in memory, the files on disk
    monkeypatch.setattr(map_labels, "_TABLES", type(map_labels._TABLES)())
    again = map_labels.label_table(tiny_city)
    assert again is not first and files() == written  # read, nothing written
    for a, b in zip(first.sprites, again.sprites):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(first.widths, again.widths)


def test_a_city_without_fingerprint_draws_its_labels_as_needed(tiny_city, monkeypatch):
    import copy

    built = copy.copy(tiny_city)  # as if built in code: no fingerprint
    built.__dict__.pop("fingerprint", None)
    monkeypatch.setattr(map_labels, "_TABLES", type(map_labels._TABLES)())
    assert map_labels.label_table(built) is None
    p = tiny_city.pois[0]
    a = MapRenderer(built).render(p.anchor, 0.5, 128, labels=True)
    b = MapRenderer(tiny_city).render(p.anchor, 0.5, 128, labels=True)
    np.testing.assert_array_equal(a, b)  # the same labels, drawn one by one


def test_clear_caches_drops_the_tables_in_memory(tiny_city):
    from urban_gym.caching import clear_caches

    first = map_labels.label_table(tiny_city)
    clear_caches()
    again = map_labels.label_table(tiny_city)
    assert again is not first and first is not None and again is not None
    np.testing.assert_array_equal(first.widths, again.widths)
