"""Behaviour preserved: replaying the recorded golden rollouts (every registered id, 3 seeds
x 50 seeded random masked steps) gives the same observations, rewards, episode ends and
``info`` values as when they were recorded.

Where a later change renames an ``info`` key on purpose, :data:`RENAMED` maps the recorded
name to the new one; a key replaced by another form of the same value is in :data:`DERIVED`
with a function of today's ``info`` that must reproduce the recorded value; keys dropped on
purpose are listed in :data:`DROPPED`. Every other recorded key must be present with its
recorded value.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from tests.golden.golden import SEEDS, load, rollout

#: recorded info key -> its name today (renamed on purpose by a later change).
RENAMED: dict[str, str] = {
    # the shared info schema: PoseGraph360's direction of travel; "pose.heading" is where
    # the agent faces (the camera), as on every id
    "heading": "travel_heading",
}
#: recorded info key -> a function of today's (plain) info giving the recorded value: keys
#: that the shared info schema holds in another form (pose, distance_to_goal_m) are checked
#: through it.
DERIVED: dict[str, Callable[[dict], Any]] = {
    # PoseGraph360 and StreetGraph: (x, y) metres
    "position": lambda info: [info["pose"]["x"], info["pose"]["y"]],
    # PoseGraph360: the camera's bearing
    "yaw": lambda info: info["pose"]["heading"],
    # PoseGraph360 and CityWalk: metres to the goal (absent in question tasks)
    "distance_to_goal": lambda info: info["distance_to_goal_m"],
    # StreetGraph: metres to the goal
    "remaining_m": lambda info: info["distance_to_goal_m"],
    # CityWalk: the pose had the view's pitch, now a key of its own (ids without a pitch,
    # such as StreetGraph, keep the schema's pose)
    "pose": lambda info: {**info["pose"], **({"pitch": info["pitch"]} if "pitch" in info else {})},
}
#: recorded info keys removed on purpose.
DROPPED: frozenset[str] = frozenset()

GOLDEN = load()


def _info_matches(recorded: dict, now: dict, where: str) -> None:
    for key, value in recorded.items():
        if key in DROPPED:
            continue
        if key in DERIVED:
            got = DERIVED[key](now)
            assert got == value, (
                f"{where}: info {key!r} from today's info = {got!r}, recorded {value!r}"
            )
            continue
        name = RENAMED.get(key, key)
        assert name in now, f"{where}: info key {key!r} (now {name!r}) is missing"
        assert now[name] == value, f"{where}: info[{name!r}] = {now[name]!r}, recorded {value!r}"


@pytest.mark.parametrize("env_id", sorted(GOLDEN))
def test_golden_rollouts_replay(env_id):
    for seed in SEEDS:
        recorded = GOLDEN[env_id][str(seed)]
        now = rollout(env_id, seed)
        assert len(now) == len(recorded), f"{env_id} seed {seed}: episode ends moved"
        for i, (r, n) in enumerate(zip(recorded, now)):
            where = f"{env_id} seed {seed} entry {i}"
            assert n.get("action") == r.get("action"), f"{where}: the masked actions differ"
            assert n["obs"] == r["obs"], f"{where}: observation differs"
            for k in ("reward", "terminated", "truncated"):
                assert n.get(k) == r.get(k), f"{where}: {k} {n.get(k)!r} != {r.get(k)!r}"
            _info_matches(r["info"], n["info"], where)
