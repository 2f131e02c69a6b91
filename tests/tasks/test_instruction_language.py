"""A lint of the task language: every instruction of every committed default suite.

Rules (each message below names the rule it breaks):

* **capital** -- every sentence starts with a capital letter (a sentence may start with a
  place name, which keeps OpenStreetMap's spelling);
* **underscore** -- no raw tag value with underscores (``houseware``, ``post_office``;
  a JSON key of an answer format the text shows, ``"visible_count": 2``, is not one);
* **spacing** -- no doubled spaces, no space before punctuation, no blank line, nothing
  before or after the text;
* **punctuation** -- no doubled punctuation (``"Go to crape.."``: a name that ends in a full
  stop gets no second one; after such a name a comma or question mark may follow);
* **name** -- each place the task names is written exactly as OSM spells it: the names in
  the task's goal and options are the city's names of those places and appear verbatim in
  the instruction (a place the agent must find from a picture, or the answer to a
  question, does *not* appear);
* **kind** -- a kind of place is said in English from the one table
  (:data:`urban_gym.world.osm_tags.KIND_PHRASES`, which has an entry for every kind the
  suites use): ``"Teemaa (tea shop)"``, ``"the nearest housewares shop"``, ``"Which
  beauty salon"``; a name that is only a postal code or an address comes with its kind
  (``"the post office Helsinki 00130"``).

Places are found in the city by the ids the tasks carry (``poi_id``, ``osm_id``) or, for
PoseGraph360, by their unique name.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from functools import cache
from typing import Any

import pytest

from urban_gym.tasks.families import get_family
from urban_gym.tasks.spec import TaskSpec
from urban_gym.tasks.suite import load_suite
from urban_gym.world import load_city
from urban_gym.world.osm_tags import KIND_PHRASES, is_address_name, kind_phrase

FAMILIES = ("posegraph360", "streetgraph", "citywalk")
NAME_DOT = "\u2024"  # stands in for a name's own final full stop
SUITES = [
    (family, name, path)
    for family in FAMILIES
    for name, path in sorted(get_family(family).default_suites().items())
]


@cache
def city_places(spec: str) -> tuple[dict[int, Any], dict[str, Any], dict[str, Any]]:
    """The POIs of a city by id and by OSM id, and its places (POIs, areas, named
    buildings) by name."""
    city = load_city(spec)
    by_name: dict[str, Any] = {}
    for p in [*city.pois, *city.areas]:
        if p.name:
            by_name.setdefault(p.name, p)
    named = [b for b in city.buildings if b.name]
    osm = {p.osm_id: p for p in [*named, *city.pois, *city.areas]}
    return {p.id: p for p in city.pois}, osm, by_name


# --------------------------------------------------------------------- the places
def places_of(task: TaskSpec) -> Iterator[tuple[str, Any, bool]]:
    """``(name as the task stores it, the city's place, whether the instruction must
    say it)`` for each place a task refers to."""
    by_id, by_osm, by_name = city_places(task.city)
    g, m = task.goal, task.meta
    if task.family == "citywalk":
        search = task.type in ("PTS", "III")  # found by its kind: the text must not say it
        for stop in [g, *g.get("stops", [])]:
            if "poi_id" in stop:
                yield stop["name"], by_id[stop["poi_id"]], not search
        if task.type in ("VR", "AEQ"):  # the options are places, the answer among them
            pois = {by_id[m["poi_id"]].name: by_id[m["poi_id"]]}
            for name in task.options:
                yield name, pois.get(name) or by_name[name], True
        if task.type == "OU":
            yield by_id[m["poi_id"]].name, by_id[m["poi_id"]], True
        if task.type == "AEQ":
            yield by_id[m["landmark_poi_id"]].name, by_id[m["landmark_poi_id"]], True
    elif task.family == "streetgraph":
        yield g["name"], by_osm[g["osm_id"]], True
    elif task.type in ("landmark_name", "vln", "landmark_bbox", "landmark_visibility"):
        yield g["poi"], by_name[g["poi"]], True
    elif task.type == "landmark_image":  # found from its photo: the text must not say it
        yield g["poi"], by_name[g["poi"]], False
    elif task.type == "relational":
        yield g["reference"], by_name[g["reference"]], True
        yield task.answer, by_name[task.answer], False


def junction_names(task: TaskSpec) -> list[str]:
    """Names of the city's places a route instruction's steps turn by ("At the junction by
    Workshop Coffee Co., turn right"): said as OSM spells them, full stops included."""
    by_name = city_places(task.city)[2]
    found = re.findall(r"junction by (.+?), turn", task.instruction)
    return [n for n in found if n in by_name]


def street_names(task: TaskSpec) -> list[str]:
    """Names of ways the task's data carries (a closure's street)."""
    return [c["label"] for c in task.constraints.get("closures", []) if c.get("label") != "the way"]


def masked(text: str, names: list[str]) -> str:
    """``text`` with each name replaced by ``Name`` (``Name`` + :data:`NAME_DOT` when the
    name ends in a full stop), longest names first, and "e.g." spelled without dots."""
    for n in sorted(set(names), key=len, reverse=True):
        text = text.replace(n, "Name" + (NAME_DOT if n.endswith(".") else ""))
    return text.replace("e.g.", "eg")


# --------------------------------------------------------------------- the rules
#: A JSON key in an answer format the text shows (``"visible_count": 2``): a field name
#: of the reply, not a tag value.
JSON_KEY = r'"\w+": '


def lint(task: TaskSpec) -> list[str]:
    """What is wrong with ``task.instruction``: one line per broken rule."""
    text = task.instruction
    places = list(places_of(task))
    said = [n for n, _, say in places if say] + street_names(task) + junction_names(task)
    errors = []
    for name, place, say in places:
        if name != place.name:
            errors.append(f"name: {name!r} is spelled {place.name!r} in OSM")
        if say and name not in text:
            errors.append(f"name: {name!r} does not appear as OSM spells it")
        if not say and name not in said and re.search(rf"(?<!\w){re.escape(name)}(?!\w)", text):
            errors.append(f"name: {name!r} must not be said (it is what the agent finds)")
        if hasattr(place, "category"):
            errors += kind_errors(task, text, name, place, say)
    plain = masked(text, said)
    if text != text.strip():
        errors.append("spacing: whitespace before or after the text")
    for m in re.finditer(r"[ \t]{2,}|[ \t]\n|\n[ \t]|\n\n| [.,;:!?)]|\( |\(\)", plain):
        errors.append(f"spacing: {m.group()!r} in {context(plain, m)!r}")
    for m in re.finditer(rf"[.,;:!?{NAME_DOT}]\s*[.,;:!?]", plain):
        if not (m.group()[0] == NAME_DOT and m.group()[-1] != "."):
            errors.append(f"punctuation: {m.group()!r} in {context(plain, m)!r}")
    for m in re.finditer(r"(?:^|[.!?][\"')]?\s+|\n\d+\.\s+)([a-z])", plain):
        errors.append(f"capital: a sentence starts in lower case: {context(plain, m)!r}")
    for m in re.finditer(r"\w*_\w*", re.sub(JSON_KEY, '"key":', plain)):
        errors.append(f"underscore: raw tag value {m.group()!r}")
    return errors


def kind_errors(task: TaskSpec, text: str, name: str, place: Any, say: bool) -> list[str]:
    key, value = place.category, place.kind
    phrase = kind_phrase(key, value)
    errors = []
    if (key, value.split(";")[0].strip().lower()) not in KIND_PHRASES:
        errors.append(f"kind: {key}={value} (of {name!r}) has no phrase in KIND_PHRASES")
    if task.type == "PTS":  # asks for the kind of the place it does not name
        if f"the nearest {phrase} " not in text:
            errors.append(f"kind: the search does not ask for 'the nearest {phrase}'")
        return errors
    if not say:
        return errors
    for m in re.finditer(re.escape(name) + r" \(([^)]*)\)", text):
        if m.group(1) != phrase:
            errors.append(f"kind: {name!r} is called a {m.group(1)!r}, not a {phrase!r}")
    if is_address_name(name, place.tags) and not (
        f"the {phrase} {name}" in text or f"{name} ({phrase})" in text
    ):
        errors.append(f"kind: {name!r} only says where it is; say it is a {phrase}")
    if task.type == "AEQ" and place.id == task.meta["poi_id"] and f"Which {phrase} is" not in text:
        errors.append(f"kind: the question does not ask 'Which {phrase} is'")
    return errors


def context(text: str, m: re.Match) -> str:
    return text[max(0, m.start() - 25) : m.end() + 25]


# --------------------------------------------------------------------- the tests
@pytest.mark.parametrize(("family", "name", "path"), SUITES, ids=[f"{f}-{n}" for f, n, _ in SUITES])
def test_every_instruction_of_the_default_suites_passes_the_lint(family, name, path, helsinki):
    tasks = load_suite(path)
    assert tasks
    report = [f"{t.id}: {e}\n    {t.instruction!r}" for t in tasks for e in lint(t)]
    assert not report, f"{len(report)} problems in {path.name}:\n" + "\n".join(report[:40])


def spec(instruction: str, **kw: Any) -> TaskSpec:
    base = dict(
        id="t",
        family="streetgraph",
        type="origin_destination",
        difficulty="easy",
        city="helsinki",
        instruction=instruction,
        start={},
    )
    return TaskSpec(**{**base, **kw})


def test_the_lint_catches_each_rule(helsinki):
    # real Helsinki places: "crape." (shop=yes), "Helsinki 00130" (amenity=post_office)
    by_name = {p.name: p for p in helsinki.pois}
    crape, post = by_name["crape."], by_name["Helsinki 00130"]

    def od(text: str, poi: Any = crape) -> list[str]:
        goal = {"name": poi.name, "osm_id": poi.osm_id, "kind": "poi", "category": poi.kind}
        return lint(spec(text, goal=goal))

    assert od("Go to crape.") == []
    assert [e.split(":")[0] for e in od("Go to crape..")] == ["punctuation"]
    assert [e.split(":")[0] for e in od("Go to Crape.")] == ["name"]
    assert [e.split(":")[0] for e in od("Go  to crape.")] == ["spacing"]
    assert [e.split(":")[0] for e in od("Find the shop. it is crape.")] == ["capital"]
    assert [e.split(":")[0] for e in od("Go to crape. It is a shop_yes.")] == ["underscore"]
    assert [e.split(":")[0] for e in od("Go to crape. (yes)")] == ["kind"]
    assert od("Go to crape. (shop)") == []  # a full stop inside the name is no sentence end
    assert [e.split(":")[0] for e in od("Go to Helsinki 00130.", post)] == ["kind"]
    assert od("Go to the post office Helsinki 00130.", post) == []
    # a kind without a table entry
    tea = next(p for p in helsinki.pois if (p.category, p.kind) == ("shop", "tea"))
    sgn = {"name": tea.name, "poi_id": tea.id}
    walk = f"Walk to {tea.name} ({{}}). Stop in front of it."
    cw = dict(family="citywalk", type="SGN", difficulty="l2", goal=sgn)
    assert lint(spec(walk.format("tea shop"), **cw)) == []
    assert [e.split(":")[0] for e in lint(spec(walk.format("tea"), **cw))] == ["kind"]
