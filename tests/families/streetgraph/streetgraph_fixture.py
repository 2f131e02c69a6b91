"""A small hand-written Touchdown-format graph for the StreetGraph tests.

Layout (x east, y north, metres; capital letters are intersections)::

    c1(0,10) c2(0,20) c3(10,20) c4(20,20) c5(30,20) c6(40,20) c7(40,10)   street s2 (bend)
    X(0,0) a1(10,0) a2(20,0) a3(30,0) Y(40,0)                             street s1 (straight)
    g1(0,-10) g2(20,-10) g3(40,-10)                                       street s3 (dip)

* s1 X-a1-a2-a3-Y is written in one direction only (4 reverse links missing);
* a dead-end spur a2-p1-p2-p3 north of a2 and a branching one Y-q1-q2-{q3,q4} east of Y
  (7 nodes, pruned over 3 rounds);
* a separate triangle t1-t2-t3 (3 nodes of degree 2, removed as a small component).

25 nodes and 48 links as written; after preprocessing 15 nodes, 32 links, decision points
X and Y joined by three streets: s1 (40 m, 4 hops), s2 (80 m, 8 hops), s3 (60 m, 4 hops).
"""

from __future__ import annotations

import math
from pathlib import Path

from urban_gym.world.geo import GeoFrame

FRAME = GeoFrame(60.17, 24.94)

XY: dict[str, tuple[float, float]] = {
    "X": (0, 0),
    "a1": (10, 0),
    "a2": (20, 0),
    "a3": (30, 0),
    "Y": (40, 0),
    "c1": (0, 10),
    "c2": (0, 20),
    "c3": (10, 20),
    "c4": (20, 20),
    "c5": (30, 20),
    "c6": (40, 20),
    "c7": (40, 10),
    "g1": (0, -10),
    "g2": (20, -10),
    "g3": (40, -10),
    "p1": (20, 5),
    "p2": (20, 10),
    "p3": (20, 15),
    "q1": (50, 0),
    "q2": (60, 0),
    "q3": (70, 5),
    "q4": (70, -5),
    "t1": (100, 100),
    "t2": (110, 100),
    "t3": (105, 110),
}

ONE_WAY = [("X", "a1"), ("a1", "a2"), ("a2", "a3"), ("a3", "Y")]
TWO_WAY = [
    ("X", "c1"),
    ("c1", "c2"),
    ("c2", "c3"),
    ("c3", "c4"),
    ("c4", "c5"),
    ("c5", "c6"),
    ("c6", "c7"),
    ("c7", "Y"),
    ("X", "g1"),
    ("g1", "g2"),
    ("g2", "g3"),
    ("g3", "Y"),
    ("a2", "p1"),
    ("p1", "p2"),
    ("p2", "p3"),
    ("Y", "q1"),
    ("q1", "q2"),
    ("q2", "q3"),
    ("q2", "q4"),
    ("t1", "t2"),
    ("t2", "t3"),
    ("t3", "t1"),
]


def heading(a: str, b: str) -> float:
    (x0, y0), (x1, y1) = XY[a], XY[b]
    return math.degrees(math.atan2(x1 - x0, y1 - y0)) % 360.0


def node_lines() -> list[str]:
    out = []
    for pid, (x, y) in XY.items():
        lat, lon = FRAME.to_latlon(x, y)
        out.append(f"{pid},0,{lat:.10f},{lon:.10f}")
    return out


def link_lines() -> list[str]:
    out = [f"{a},{heading(a, b):.4f},{b}" for a, b in ONE_WAY]
    for a, b in TWO_WAY:
        out.append(f"{a},{heading(a, b):.4f},{b}")
        out.append(f"{b},{heading(b, a):.4f},{a}")
    return out


def write_fixture(
    directory: Path, nodes: list[str] | None = None, links: list[str] | None = None
) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "nodes.txt").write_text("\n".join(nodes or node_lines()) + "\n", encoding="utf-8")
    (directory / "links.txt").write_text("\n".join(links or link_lines()) + "\n", encoding="utf-8")
    return directory
