"""The numbers 360CityArena reports (Watanabe et al., "360CityArena: A Realistic Virtual
Urban Navigation Benchmark for Embodied Agents", arXiv:2608.08814), in one place.

The family's defaults, its task calibration and the conformance tests read them from
here; each constant names the section it comes from. Units: metres, degrees, steps.
"""

from __future__ import annotations

#: Section 3.1: the Akihabara pose graph -- one connected component of 193 nodes and 305
#: edges, mean branching degree 3.16, about 750 m north-south by 650 m east-west.
GRAPH_NODES = 193
GRAPH_EDGES = 305
GRAPH_MEAN_BRANCHING = 3.16
GRAPH_EXTENT_M = (650.0, 750.0)

#: Section 3.2: seven task types of 25 tasks each (175), easy / medium / hard.
TASKS_PER_TYPE = 25
DIFFICULTIES: tuple[str, ...] = ("easy", "medium", "hard")

#: Section 3.3: per-difficulty averages of the task statistics the annotators' labels
#: follow -- map navigation route length (m) and decision points, object-count ground
#: truth, VLN instruction steps (easy / medium / hard).
STATISTICS: dict[str, dict[str, dict[str, float]]] = {
    "map_navigation": {
        "easy": {"route_length_m": 124.0, "decision_points": 3.3},
        "medium": {"route_length_m": 247.0, "decision_points": 6.4},
        "hard": {"route_length_m": 347.0, "decision_points": 9.0},
    },
    "object_count": {
        "easy": {"count": 3.5},
        "medium": {"count": 4.6},
        "hard": {"count": 9.0},
    },
    "vln": {
        "easy": {"instruction_steps": 4.4},
        "medium": {"instruction_steps": 5.9},
        "hard": {"instruction_steps": 7.4},
    },
}

#: Appendix B.3: the Object Count prompt's example objects ("vending machine", "planted
#: tree") and example ranges ("the full perimeter of the block to your left", "the road
#: up to the next crosswalk"); Fig. 2 asks for vending machines up to the next crosswalk.
COUNT_EXAMPLE_OBJECTS: tuple[str, ...] = ("vending machine", "planted tree")
COUNT_EXAMPLE_RANGES: tuple[str, ...] = (
    "the full perimeter of the block to your left",
    "the road up to the next crosswalk",
)

#: Section 3.4: coordinate_match thresholds -- 10 m, 20 m for map navigation.
GOAL_RADIUS_M = 10.0
MAP_GOAL_RADIUS_M = 20.0

#: Appendix A.3: stopping conditions -- more than 50 steps, the same action 20 times
#: without moving, 5 consecutive moves away from the goal.
STEP_LIMIT = 50
STAGNATION_LIMIT = 20
AWAY_LIMIT = 5

#: Appendix B.1: A/D/Q/E rotate by SMALL ~30, MEDIUM ~60, LARGE ~90 degrees, about 24
#: degrees when no size is given. Q/E tilt the camera by the same sizes (the paper states
#: no other limit, so a LARGE tilt from level looks straight up or down).
ROTATION_DEG: dict[str | None, float] = {
    None: 24.0,
    "SMALL": 30.0,
    "MEDIUM": 60.0,
    "LARGE": 90.0,
}

#: The mean route length per decision point the section 3.3 averages imply (m): 124 / 3.3,
#: 247 / 6.4 and 347 / 9.0 are 37.6, 38.6 and 38.6 -- about one junction every 38 m.
METRES_PER_DECISION = round(
    sum(v["route_length_m"] / v["decision_points"] for v in STATISTICS["map_navigation"].values())
    / 3,
    1,
)
