"""How task instructions put places into sentences, the same way in every family.

A place's name is written exactly as OpenStreetMap spells it (never capitalised, never
trimmed); its kind comes from the one tag-to-English table,
:func:`urban_gym.world.osm_tags.kind_phrase` ("housewares shop", not "houseware").
"""

from __future__ import annotations

import re
from typing import Any

from urban_gym.world.osm_tags import is_address_name, kind_phrase

__all__ = ["end_sentence", "place_kind", "place_name", "typed_name"]

_SENTENCE_END = (".", "!", "?")


def place_kind(poi: Any) -> str:
    """The English phrase for a POI's kind (its ``category``/``kind`` tag), singular."""
    return kind_phrase(poi.category, poi.kind)


def typed_name(poi: Any) -> str:
    """``"<name> (<kind>)"``, e.g. ``"Teemaa (tea shop)"``; just the name when it already
    says its kind in so many words (``"Original Sokos Hotel Helsinki"``, ``"Otto.
    automaatti 24 h (ATM)"``).
    """
    kind = place_kind(poi)
    if re.search(rf"(?<!\w){re.escape(kind)}(?!\w)", poi.name, re.IGNORECASE):
        return poi.name
    return f"{poi.name} ({kind})"


def place_name(poi: Any) -> str:
    """The name, with ``"the <kind>"`` in front when the name only says where the place is
    (a postal code or its street address: ``"the post office Helsinki 00130"``).
    """
    if is_address_name(poi.name, getattr(poi, "tags", {}) or {}):
        return f"the {place_kind(poi)} {poi.name}"
    return poi.name


def end_sentence(text: str) -> str:
    """``text`` ending in a full stop: one is added unless it ends in ``.``, ``!`` or ``?``
    already (a name such as ``"crape."`` keeps its own, and gets no second).
    """
    return text if text.endswith(_SENTENCE_END) else text + "."
