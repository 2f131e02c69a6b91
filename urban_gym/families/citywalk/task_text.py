"""The values of UrbanGround's task templates and reminders (Appendix F.2-F.6), from a
CityWalk task's structured fields and the env's state -- never by reading the
instruction text apart (the one fallback is named below).

=================  ===========================================================================
placeholder        where it comes from
=================  ===========================================================================
``start``          ``task.start`` (x, y): street and nearest named place
                   (:func:`~urban_gym.families.citywalk.closures.describe_point`)
``goal``           ``task.goal``: the place (``poi_id`` in the city, else ``name`` and
                   ``kind``) and the street it is on
``question``       ``task.meta["question"]``; a suite without it: the instruction up to its
                   " Options:" (the generator's layout)
``option_a..d``    ``task.options``
``instructions``   ``task.meta["directions"]`` (a list or text); else the instruction, which
                   for IN is the generator's turn-by-turn directions in full
``closures``       ``task.constraints["closures"][*]["points"]`` as waypoint chains
``description``    the goal (CN, DCR: "Walk to ...; it is marked on the map") or the
                   destinations (MSP), from ``task.goal``
``request``        ``task.meta["request"]``; else "the nearest <kind>" of the goal's place
``everyday_goal``  ``task.meta["intent"]``
``time``           ``task.start["clock"]``, ``HH:MM``
``appointments``   ``task.goal["stops"]``: place, activity
                   (:func:`~urban_gym.families.citywalk.stops.activity_for`), deadline
``count``          the number of stops
=================  ===========================================================================
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from urban_gym.families.citywalk.closures import describe_closures, describe_point, street_at
from urban_gym.families.citywalk.stops import activity_for
from urban_gym.families.citywalk.tasks.types import OPTION_LETTERS, format_hhmm
from urban_gym.tasks.wording import end_sentence, place_kind, typed_name
from urban_gym.world.city import POI, City
from urban_gym.world.osm_tags import kind_phrase

__all__ = ["place_of", "question_of", "stop_name", "template_values"]


def place_of(city: City, spot: Mapping[str, Any]) -> POI | None:
    """The city's place a goal or stop names by ``poi_id`` (None when it names none, or
    the id does not match its name).
    """
    i = spot.get("poi_id")
    if i is None or not (0 <= int(i) < len(city.pois)):
        return None
    p = city.pois[int(i)]
    return p if not spot.get("name") or p.name == spot.get("name") else None


def _kind_text(city: City, spot: Mapping[str, Any]) -> str:
    p = place_of(city, spot)
    if p is not None:
        return place_kind(p)
    kind = str(spot.get("kind") or "place")
    return kind_phrase("amenity", kind)


def stop_name(city: City, spot: Mapping[str, Any]) -> str:
    """``"<name> (<kind>)"`` of a goal or stop."""
    p = place_of(city, spot)
    if p is not None:
        return typed_name(p)
    name = str(spot.get("name") or "the destination")
    return f"{name} ({_kind_text(city, spot)})" if spot.get("kind") else name


def _goal_text(city: City, goal: Mapping[str, Any]) -> str:
    text = stop_name(city, goal)
    if "x" in goal and "y" in goal:
        street = street_at(city, (float(goal["x"]), float(goal["y"])))
        if street:
            text += f", on {street}"
    return text


def question_of(task: Any) -> str:
    """The question of a multiple-choice task: ``meta["question"]``; for a suite written
    before the generator stored it, the instruction up to its `` Options:``.
    """
    q = (task.meta or {}).get("question")
    if q:
        return str(q)
    text = str(task.instruction or "")
    cut = text.find(" Options:")
    return text[:cut].strip() if cut >= 0 else text.strip()


def _question(task: Any, city: City) -> dict[str, str]:
    opts = list(task.options or [])
    out = {"question": question_of(task)}
    lines = []
    for letter, opt in zip(OPTION_LETTERS, opts):
        out[f"option_{letter.lower()}"] = str(opt)
        lines.append(f"{letter}. {opt}")
    out["options"] = "\n".join(lines)
    return out


def _start(task: Any, city: City) -> str:
    st = task.start or {}
    return describe_point(city, (float(st["x"]), float(st["y"])))


def _nav(task: Any, city: City) -> dict[str, str]:
    goal = task.goal or {}
    marked = " It is marked on the map." if goal.get("show_on_map") else ""
    return {
        "start": _start(task, city),
        "goal": _goal_text(city, goal),
        "description": f"Walk to {stop_name(city, goal)}.{marked}",
    }


def _closures(task: Any, city: City) -> dict[str, str]:
    out = _nav(task, city)
    out["closures"] = describe_closures(city, (task.constraints or {}).get("closures") or [])
    return out


def _instructions(task: Any, city: City) -> dict[str, str]:
    d = (task.meta or {}).get("directions")
    if isinstance(d, (list, tuple)):
        text = "\n".join(f"{i}. {end_sentence(str(s))}" for i, s in enumerate(d, 1))
    else:
        text = str(d or task.instruction or "")
    return {"instructions": text}


def _place_search(task: Any, city: City) -> dict[str, str]:
    meta = task.meta or {}
    request = meta.get("request") or f"the nearest {_kind_text(city, task.goal or {})}"
    return {"start": _start(task, city), "request": str(request)}


def _intent(task: Any, city: City) -> dict[str, str]:
    return {"start": _start(task, city), "everyday_goal": str((task.meta or {}).get("intent"))}


def _appointment_values(city: City, stop: Mapping[str, Any], number: int) -> dict[str, str]:
    d = stop.get("deadline")
    return {
        "number": str(number),
        "place": stop_name(city, stop),
        "activity": activity_for(stop, _kind_text(city, stop)),
        "deadline": format_hhmm(float(d)) if d is not None else "",
    }


def _schedule(task: Any, city: City) -> dict[str, Any]:
    stops = list((task.goal or {}).get("stops") or [])
    deadlines = [float(s["deadline"]) for s in stops if s.get("deadline") is not None]
    return {
        "start": _start(task, city),
        "time": format_hhmm(float((task.start or {}).get("clock", 36000.0))),
        "overall_deadline": format_hhmm(max(deadlines)) if deadlines else "",
        # the lines of {appointments}: filled with task.TWS.appointment by the scheme
        "appointment_values": [_appointment_values(city, s, i) for i, s in enumerate(stops, 1)],
    }


def _stops(task: Any, city: City) -> dict[str, str]:
    stops = list((task.goal or {}).get("stops") or [])
    marked = " (each marked on the map)" if (task.goal or {}).get("show_on_map") else ""
    listing = "\n".join(f"{i}. {stop_name(city, s)}" for i, s in enumerate(stops, 1))
    return {
        "start": _start(task, city),
        "description": f"The places to visit{marked}:\n{listing}",
        "count": str(len(stops)),
    }


_FILLERS: dict[str, Callable[[Any, City], dict[str, Any]]] = {
    "VR": _question,
    "OU": _question,
    "AEQ": _question,
    "SGN": _nav,
    "LGN": _nav,
    "NP": _nav,
    "IN": _instructions,
    "CN": _closures,
    "DCR": _nav,
    "PTS": _place_search,
    "III": _intent,
    "TWS": _schedule,
    "MSP": _stops,
}


def template_values(task: Any, city: City) -> dict[str, Any]:
    """The placeholders of ``task``'s template (see the module docstring); TWS adds
    ``appointment_values`` (one mapping per stop for ``task.TWS.appointment``). A type
    without a template gets ``{}``.
    """
    fill = _FILLERS.get(str(task.type))
    return fill(task, city) if fill is not None else {}
