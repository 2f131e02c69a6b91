"""Which name of a place task text uses: the one on the street, a Latin one, or both.

OSM's ``name`` is what the place is called where it stands (what its sign says: 東京駅 in
Tokyo). Many places also carry a Latin-script name: an English one (``name:en``), an
international one (``int_name``) or a transliteration (``name:ja-Latn``, ``name:zh-Latn-
pinyin``, ...). :func:`display_name` picks by a mode of :data:`NAME_MODES`:

- ``"local"``: the local name only;
- ``"english"``: the English (else another Latin) name where the place has one, else the
  local name;
- ``"both"`` (the default): the local name, followed by the Latin one in brackets when the
  local name is not in Latin script (``東京駅 (Tokyo Station)``); a Latin-script name
  (Helsinki's, Lisbon's, Berlin's) is read as it stands and is not changed.

:func:`with_names` applies a mode to a whole city (what
:func:`urban_gym.world.loader.load_city` does with its ``names`` argument), so that task
text, answers and signs agree.
"""

from __future__ import annotations

import dataclasses
import unicodedata
from typing import Any

from urban_gym.errors import InputError

#: the modes of :func:`display_name`
NAME_MODES = ("local", "english", "both")
#: the default mode
DEFAULT_NAMES = "both"
#: OSM keys of a Latin-script name, the first one present wins
LATIN_KEYS = (
    "name:en",
    "int_name",
    "name:Latn",
    "name:latn",
    "name:ja-Latn",
    "name:ja_rm",
    "name:zh-Latn-pinyin",
    "name:zh-Latn",
    "name:zh_pinyin",
    "name:ko-Latn",
    "name:ko_rm",
)


def check_names_mode(mode: str) -> str:
    """``mode`` when it is one of :data:`NAME_MODES`, else an
    :class:`~urban_gym.errors.InputError` (a ValueError) naming it.
    """
    if not isinstance(mode, str) or mode not in NAME_MODES:
        raise InputError(f"names={mode!r} is not one of {', '.join(NAME_MODES)}")
    return mode


def is_latin(text: str) -> bool:
    """Whether every letter of ``text`` is a Latin letter (digits, spaces and punctuation
    do not count; ``"Café 21"`` is, ``"東京駅"`` and ``"Кафе"`` are not).
    """
    return all(
        unicodedata.name(c, "").startswith("LATIN")
        for c in text
        if unicodedata.category(c)[0] == "L"
    )


def latin_name(tags: dict[str, str], local: str) -> str | None:
    """The first Latin-script name of :data:`LATIN_KEYS` in ``tags`` that differs from
    ``local`` (ignoring case), else None.
    """
    for k in LATIN_KEYS:
        v = (tags.get(k) or "").strip()
        if v and is_latin(v) and v.casefold() != local.casefold():
            return v
    return None


def display_name(local: str, tags: dict[str, str], mode: str = DEFAULT_NAMES) -> str:
    """The name of a place with local name ``local`` and OSM ``tags`` in ``mode`` (see the
    module's docstring).
    """
    check_names_mode(mode)
    if mode == "local":
        return local
    if mode == "english":
        en = (tags.get("name:en") or "").strip()
        if en:
            return en
        return local if is_latin(local) else latin_name(tags, local) or local
    if is_latin(local):
        return local
    alt = latin_name(tags, local)
    return local if alt is None else f"{local} ({alt})"


def with_names(city: Any, mode: str = DEFAULT_NAMES) -> Any:
    """``city`` with each POI's ``name`` as :func:`display_name` gives it in ``mode`` (the
    other forms kept as aliases, the OSM tags unchanged): ``city`` itself when no name
    changes, else a copy sharing everything but its POIs (made once per mode and city), with
    a fingerprint of its own (the render caches of its signs are its own).
    """
    check_names_mode(mode)
    memo: dict[str, Any] = city.__dict__.setdefault("_idx_names", {})
    if mode in memo:
        return memo[mode]
    pois = []
    changed = False
    for p in city.pois:
        shown = display_name(p.name, p.tags, mode)
        if shown == p.name:
            pois.append(p)
            continue
        changed = True
        seen = {shown.casefold()}
        aliases = []
        for a in (p.name, *p.aliases):
            if a.casefold() not in seen:
                seen.add(a.casefold())
                aliases.append(a)
        pois.append(dataclasses.replace(p, name=shown, aliases=tuple(aliases)))
    out = city
    if changed:
        out = type(city)(
            city.name,
            city.frame,
            city.buildings,
            pois,
            city.objects,
            city.areas,
            city.network,
            {**city.meta, "names": mode},
        )
        fp = getattr(city, "fingerprint", None)
        out.fingerprint = f"{fp}|names={mode}" if fp else None
    memo[mode] = out
    return out


#: the language of a place in a country (OSM ``addr:country``, ISO 3166-1) whose script
#: shares characters with its neighbours' (Han characters): the face they are drawn in
COUNTRY_LANGUAGES = {
    "JP": "ja",
    "KR": "ko",
    "CN": "zh-Hans",
    "SG": "zh-Hans",
    "TW": "zh-Hant",
    "HK": "zh-Hant",
    "MO": "zh-Hant",
}


def _language_key(key: str) -> str | None:
    """The language code of an OSM ``name:<code>`` key (``name:ja`` -> ``ja``,
    ``name:zh-Hant`` -> ``zh-Hant``), None for a Latin transliteration (``name:ja-Latn``,
    ``name:ja_rm``) or another key.
    """
    if not key.startswith("name:"):
        return None
    code = key[5:]
    parts = code.replace("_", "-").split("-")
    if not parts[0].isalpha() or not 2 <= len(parts[0]) <= 3 or not parts[0].islower():
        return None
    if any(p.casefold() in ("latn", "rm", "pinyin", "kana") for p in parts[1:]):
        return None
    return code


def place_language(tags: dict[str, str]) -> str | None:
    """The language of a place's local name as its OSM ``tags`` tell it: the code of a
    ``name:<code>`` tag equal to its ``name`` (``name=直島``, ``name:ja=直島`` -> ``"ja"``;
    a bare ``zh`` made ``zh-Hant`` or ``zh-Hans`` by ``addr:country``), else the language of
    its ``addr:country`` (:data:`COUNTRY_LANGUAGES`), else None.
    """
    local = (tags.get("name") or "").strip()
    country = COUNTRY_LANGUAGES.get((tags.get("addr:country") or "").strip().upper())
    if local:
        for key, value in tags.items():
            code = _language_key(key)
            if code is not None and value.strip() == local:
                if code == "zh" and country and country.startswith("zh"):
                    return country
                return code
    return country


def city_language(city: Any) -> str | None:
    """The language of ``city``'s place names: the one :func:`place_language` gives most of
    its places (ties: the first place's), None when none tells; computed once per city.
    """
    memo: dict[str, Any] = city.__dict__.setdefault("_idx_language", {})
    if "lang" not in memo:
        counts: dict[str, int] = {}
        for p in city.pois:
            lang = place_language(p.tags)
            if lang is not None:
                counts[lang] = counts.get(lang, 0) + 1
        memo["lang"] = max(counts, key=lambda k: counts[k]) if counts else None
    return memo["lang"]


def sign_language(tags: dict[str, str], city: Any) -> str | None:
    """The language a place's sign is written in: its own (:func:`place_language`), else
    its city's (:func:`city_language`), else None.
    """
    return place_language(tags) or city_language(city)
