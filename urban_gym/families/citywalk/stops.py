"""Where a walker stands on a multi-stop task: the schedule of a time-window task (TWS)
and the progress of a multi-stop plan (MSP), computed once for every face.

The env's ``status`` text (:meth:`~urban_gym.families.citywalk.env.CityWalkEnv._status`)
and the ``urbanground-react`` scheme's reminders (UrbanGround, Appendix F.5) both read
:func:`stops_progress`, so they cannot disagree.

**Minutes to a deadline** (:func:`deadline_minutes`): with ``r`` the seconds from the
clock's whole second (the ``HH:MM:SS`` the status shows) to the deadline, ``r >= 0`` gives ``floor(r / 60)`` minutes left (at 14:54:30 with a 14:57
deadline: 2 minutes left; at the deadline itself: 0 left, still on time, as the
evaluator counts an arrival at the deadline on time); ``r < 0`` gives ``ceil(-r / 60)``
minutes overdue (one second late: overdue by 1 minute).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["StopsProgress", "activity_for", "deadline_minutes", "stops_progress"]

#: What one does at a place of a kind (a TWS appointment's activity when the task gives
#: none); other kinds read "an errand at the <kind>".
ACTIVITIES: dict[str, str] = {
    "restaurant": "a meal",
    "fast_food": "a quick meal",
    "cafe": "a coffee break",
    "bakery": "buying bread",
    "bar": "meeting a friend for a drink",
    "pub": "meeting a friend for a drink",
    "bank": "a bank errand",
    "atm": "withdrawing cash",
    "pharmacy": "picking up medicine",
    "doctors": "a doctor's appointment",
    "clinic": "a doctor's appointment",
    "dentist": "a dental appointment",
    "optician": "an eye test",
    "hairdresser": "a haircut",
    "beauty": "a beauty appointment",
    "post_office": "posting a parcel",
    "library": "returning a library book",
    "supermarket": "grocery shopping",
    "convenience": "buying a few groceries",
    "books": "picking up a book",
    "florist": "buying flowers",
    "clothes": "trying on clothes",
    "shoes": "buying shoes",
    "museum": "a museum visit",
    "gallery": "seeing an exhibition",
    "hotel": "checking in",
    "hostel": "checking in",
    "embassy": "a visa appointment",
    "company": "a business meeting",
    "office": "a meeting",
    "cinema": "buying film tickets",
    "theatre": "collecting theatre tickets",
    "place_of_worship": "a visit",
}


def activity_for(stop: Mapping[str, Any], kind_text: str | None = None) -> str:
    """The activity of an appointment: the stop's own ``activity`` when the task gives one,
    else :data:`ACTIVITIES` of its ``kind``, else ``"an errand at the <kind_text>"``
    (``kind_text``: the kind in words, e.g. "gift shop").
    """
    own = stop.get("activity")
    if own:
        return str(own)
    kind = str(stop.get("kind") or "")
    if kind in ACTIVITIES:
        return ACTIVITIES[kind]
    words = kind_text or kind.replace("_", " ") or "place"
    return f"an errand at the {words}"


def deadline_minutes(now_s: float, deadline_s: float) -> tuple[int | None, int | None]:
    """``(minutes left, minutes overdue)`` at ``now_s`` for ``deadline_s`` (both seconds
    of day); exactly one of the two is None (see the module docstring).
    """
    r = float(deadline_s) - math.floor(float(now_s))
    if r >= 0:
        return int(math.floor(r / 60.0)), None
    return None, int(math.ceil(-r / 60.0))


@dataclass(frozen=True)
class StopsProgress:
    """The stops of a multi-stop task at one moment.

    Attributes:
        total: how many stops.
        reached: the indices of the stops reached, in task order.
        remaining: the indices not reached, in task order.
        now: the clock, seconds of day.
        ordered: whether the stops must be visited in order (a schedule).
        next: the next stop's index (ordered tasks with a stop left), else None.
        minutes_left: minutes to the next stop's deadline (None when none or overdue).
        minutes_overdue: minutes past the next stop's deadline (None unless overdue).
    """

    total: int
    reached: tuple[int, ...]
    remaining: tuple[int, ...]
    now: float
    ordered: bool
    next: int | None = None
    minutes_left: int | None = None
    minutes_overdue: int | None = None

    @property
    def completed(self) -> int:
        """How many stops are reached."""
        return len(self.reached)


def stops_progress(
    stops: Sequence[Mapping[str, Any]],
    arrivals: Sequence[float | None],
    now_s: float,
    ordered: bool,
) -> StopsProgress:
    """The :class:`StopsProgress` of ``stops`` (each with an optional ``deadline``, seconds
    of day) given their ``arrivals`` (None: not reached) at clock ``now_s``.
    """
    reached = tuple(i for i, a in enumerate(arrivals) if a is not None)
    remaining = tuple(i for i, a in enumerate(arrivals) if a is None)
    nxt = remaining[0] if ordered and remaining else None
    left = overdue = None
    if nxt is not None and stops[nxt].get("deadline") is not None:
        left, overdue = deadline_minutes(now_s, float(stops[nxt]["deadline"]))
    return StopsProgress(len(stops), reached, remaining, float(now_s), ordered, nxt, left, overdue)
