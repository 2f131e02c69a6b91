"""The POI labels of a city's top-down maps, drawn once per machine.

A labelled map (:meth:`urban_gym.render.map.MapRenderer.render` with ``labels=True``)
writes each POI's name as a :func:`~urban_gym.render.text.text_sprite` of
:data:`LABEL_SIZE` pixels in its sign's language (:func:`~urban_gym.world.names.sign_language`).
Drawing one costs about a millisecond (two Pillow passes: the outline, then the glyphs),
so a process that draws them as its maps first show each POI spends its first minutes of
map views on text. :func:`label_table` draws every POI's label of a loaded city once per
machine and keeps them in the world cache (:func:`urban_gym.world.diskcache.cached_for_city`,
named by the city's fingerprint and a hash of the names and languages written), so later
processes read them back in milliseconds. A city without a fingerprint (built in code) has
no table: its labels are drawn as they are needed.
"""

from __future__ import annotations

import hashlib
import sys
import threading
import weakref
from dataclasses import dataclass

import numpy as np

from urban_gym.caching import register_cache
from urban_gym.render import fonts as fonts_module
from urban_gym.render import text as text_module
from urban_gym.render.text import text_sprite
from urban_gym.world import names as names_module
from urban_gym.world.city import City
from urban_gym.world.diskcache import cached_for_city
from urban_gym.world.loader import city_fingerprint
from urban_gym.world.names import sign_language

#: the text size (px) of POI labels on the map
LABEL_SIZE = 11


@dataclass(frozen=True)
class LabelTable:
    """Every POI's map label of one city, indexed like ``city.pois``.

    Attributes:
        sprites: the label of each POI: :func:`~urban_gym.render.text.text_sprite` of its
            name at :data:`LABEL_SIZE` px in its sign's language (read-only arrays).
        widths: ``(n,)`` int64, each sprite's width in pixels.
    """

    sprites: tuple[np.ndarray, ...]
    widths: np.ndarray


#: city -> its table (None: the city has no fingerprint)
_TABLES: weakref.WeakKeyDictionary[City, LabelTable | None] = weakref.WeakKeyDictionary()
_LOCK = threading.Lock()
register_cache("render.map_labels", _TABLES.clear, _TABLES.__len__)


def label_table(city: City) -> LabelTable | None:
    """The :class:`LabelTable` of ``city`` (kept per process, read from the world cache or
    drawn and written there), or None for a city without a fingerprint.
    """
    try:
        return _TABLES[city]
    except KeyError:
        pass
    with _LOCK:  # the renderers of a vector env's threads wait for the one table
        if city not in _TABLES:
            _TABLES[city] = _load(city)
        return _TABLES[city]


def _load(city: City) -> LabelTable | None:
    if city_fingerprint(city) is None:
        return None
    texts = [(p.name, sign_language(p.tags, city)) for p in city.pois]
    # what the labels show: the names (``names=`` picks them) and their languages
    key = hashlib.sha256(repr(texts).encode()).hexdigest()[:16]
    sprites = cached_for_city(
        f"map-labels-{LABEL_SIZE}",
        city,
        lambda: [text_sprite(name, LABEL_SIZE, lang=lang) for name, lang in texts],
        text_module,
        fonts_module,
        names_module,
        sys.modules[__name__],
        key=key,
    )
    for s in sprites:
        s.setflags(write=False)
    widths = np.array([s.shape[1] for s in sprites], np.int64).reshape(-1)
    return LabelTable(tuple(sprites), widths)
