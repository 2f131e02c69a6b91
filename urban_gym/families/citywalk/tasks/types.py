"""The CityWalk type table (the five-level ladder) and the constants and small helpers
its generators, evaluator and environment share (metres, seconds, degrees).
"""

from __future__ import annotations

import math
from pathlib import Path

from urban_gym.tasks.spec import TaskType

FAMILY = "citywalk"
GENERATOR_VERSION = "citywalk/1"
#: The committed default suite; regenerate with ``urban-gym generate-suite --family citywalk``.
DEFAULT_SUITE_PATH = Path(__file__).resolve().parent.parent / "suites" / "helsinki.jsonl"
#: The committed suites of the other embedded cities: city -> ``(tasks per type, condition
#: variants per type)``. Smaller than Helsinki's (UrbanGround's 810 base tasks and every
#: L1/SGN base task under each condition) to keep the package small: 20 of each type the
#: city supports and the first 5 of each of :data:`VARIANT_TYPES` under each condition.
CITY_SUITE_SIZES: dict[str, tuple[int, int]] = {
    "london": (20, 5),
    "munich": (20, 5),
    "sao_paulo": (20, 5),
}
#: The committed suites: name -> path.
DEFAULT_SUITES: dict[str, Path] = {
    "helsinki": DEFAULT_SUITE_PATH,
    **{c: DEFAULT_SUITE_PATH.with_name(f"{c}.jsonl") for c in CITY_SUITE_SIZES},
}
SUCCESS_RADIUS = 15.0  # m
DEFAULT_MAX_STEPS = 150
OPTION_LETTERS = ("A", "B", "C", "D")


#: The ladder (see the package docstring): code -> type, with its level and kind.
TASK_TYPES: dict[str, TaskType] = {
    t.name: t
    for t in (
        TaskType("VR", "question", "visual recognition", "l1"),
        TaskType("OU", "question", "orientation understanding", "l1"),
        TaskType("AEQ", "question", "active exploration question", "l1"),
        TaskType("SGN", "navigation", "short-range goal navigation", "l2"),
        TaskType("LGN", "navigation", "long-range goal navigation", "l2"),
        TaskType("IN", "navigation", "instruction navigation", "l2"),
        TaskType("CN", "navigation", "constrained navigation", "l2"),
        TaskType("PTS", "navigation", "place-type search", "l3"),
        TaskType("III", "navigation", "implicit intent interpretation", "l3"),
        TaskType("TWS", "multi_stop", "time-window schedule", "l4"),
        TaskType("MSP", "multi_stop", "multi-stop planning", "l4"),
        TaskType("DCR", "navigation", "dynamic closure replanning", "l5"),
        TaskType("NP", "navigation", "navigation among pedestrians", "l5"),
    )
}

#: Types that get time-of-day / weather variants on level L5.
VARIANT_TYPES: tuple[str, ...] = ("VR", "OU", "AEQ", "SGN")

#: ``(time_of_day, weather)`` of the condition variants: UrbanGround's dusk, night, fog
#: and rain (Section 4.4), each applied to the same base tasks.
VARIANT_CONDITIONS: tuple[tuple[str, str], ...] = (
    ("dusk", "clear"),
    ("night", "clear"),
    ("day", "fog"),
    ("day", "rain"),
)

#: UrbanGround's base instances (Section 4.1): 810 over the 13 types. The paper's
#: text gives only the total (its per-type counts are in Figure 5, an image), so the split
#: is as even as 810 allows: 63 for the L1 types and SGN (the types its condition study
#: reuses), 62 for the other nine.
PAPER_BASE_TOTAL = 810
PAPER_BASE_COUNTS: dict[str, int] = {
    "VR": 63,
    "OU": 63,
    "AEQ": 63,
    "SGN": 63,
    "LGN": 62,
    "IN": 62,
    "CN": 62,
    "PTS": 62,
    "III": 62,
    "TWS": 62,
    "MSP": 62,
    "DCR": 62,
    "NP": 62,
}

#: Types whose episodes are split into equal-count bins of the straight-line start-to-goal
#: distance (UrbanGround's navigation-horizon analysis, Section 4.3), and how many bins.
DISTANCE_BIN_TYPES: tuple[str, ...] = ("SGN", "IN")
DISTANCE_BINS = 4
#: Farthest (m) a walker gets in one episode: 150 moves of 2 s at the sprint's 3 m/s; any
#: suitable place of a place-search or implicit-intent task within it is listed.
REACH_M = 900.0

#: Implicit intents (III): what a person says -> the POI kinds (OSM values) that serve it.
INTENT_CATEGORIES: dict[str, tuple[str, ...]] = {
    "My eyes need checking and I think I need new glasses.": ("optician",),
    "I have a terrible toothache.": ("dentist",),
    "I need to withdraw some cash.": ("atm", "bank"),
    "I have a headache and need to buy painkillers.": ("pharmacy",),
    "My hair is far too long.": ("hairdresser",),
    "I want a coffee and a cinnamon bun.": ("cafe", "bakery"),
    "I need to buy groceries for dinner.": ("supermarket", "convenience"),
    "I want to buy a novel to read on the train.": ("books",),
    "I need a place to sleep tonight.": ("hotel", "hostel"),
    "I would like a beer with friends.": ("pub", "bar"),
    "I want to send a parcel to my family.": ("post_office",),
    "I want to buy a bouquet for a friend's birthday.": ("florist",),
    "My shoes fell apart; I need a new pair.": ("shoes",),
    "I need to exchange euros for another currency.": ("bureau_de_change",),
    "I want to see a film tonight.": ("cinema",),
    "I want to borrow a book for free.": ("library",),
    "I want to look at some paintings.": ("gallery", "museum", "arts_centre"),
    "I need a screwdriver and some nails.": ("hardware", "doityourself"),
    "My phone screen is cracked; I need a new phone.": ("mobile_phone", "electronics"),
    "I am hungry and want a quick burger.": ("fast_food",),
    "I want to buy a bottle of wine.": ("alcohol", "wine"),
    "I feel unwell and need to see a doctor.": ("doctors", "clinic"),
}

#: POI kinds never used as goals or options (no useful sign, or not a place to go to).
EXCLUDED_KINDS = frozenset(
    {
        "yes",
        "artwork",
        "information",
        "parking",
        "bicycle_parking",
        "bench",
        "vending_machine",
        "toilets",
        "waste_basket",
        "memorial",
        "bicycle_rental",
        "charging_station",
        "parking_entrance",
    }
)

#: Start clock (seconds of day) ranges by time of day.
CLOCK_RANGES: dict[str, tuple[int, int]] = {
    "day": (9 * 3600, 15 * 3600),
    "dusk": (18 * 3600 + 1800, 19 * 3600 + 1800),
    "night": (22 * 3600, 23 * 3600 + 1800),
}

OU_OPTIONS = ("Ahead of you", "To your right", "Behind you", "To your left")
#: The four compass options of an OU question about a place's compass direction from the
#: start, or about the compass direction its sign faces (UrbanGround's B.1 and its OU prompt).
COMPASS_OPTIONS = ("North", "East", "South", "West")
#: The OU question forms: ``relative`` (ahead / right / behind / left of the start heading),
#: ``compass`` (the compass direction of the place's sign from the start) and ``facing``
#: (the compass direction the place's sign faces).
OU_FORMS = ("relative", "compass", "facing")
#: Most degrees between a bearing and the direction its OU answer names (an OU question is
#: made only where the answer is this clear).
OU_MARGIN_DEG = 20.0


def cardinal_index(b: float) -> int:
    """Index into :data:`COMPASS_OPTIONS` of the cardinal direction nearest the bearing
    ``b`` (degrees clockwise from north): 0 north (315-45), 1 east, 2 south, 3 west.
    """
    return int(math.floor((b % 360.0) / 90.0 + 0.5)) % 4


def compass_name(b: float) -> str:
    """Eight-point compass name of a bearing (degrees)."""
    names = (
        "north",
        "north-east",
        "east",
        "south-east",
        "south",
        "south-west",
        "west",
        "north-west",
    )
    return names[int(math.floor((b % 360.0) / 45.0 + 0.5)) % 8]


def format_hhmm(seconds_of_day: float) -> str:
    """``HH:MM`` of a time of day given in seconds since midnight (wraps at 24 h)."""
    s = int(math.floor(seconds_of_day)) % 86400
    return f"{s // 3600:02d}:{s // 60 % 60:02d}"
