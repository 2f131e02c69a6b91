"""The committed PoseGraph360 suites: where they live, how they are generated and their
per-type and per-difficulty statistics.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from urban_gym.families.posegraph360.tasks.calibration import deviation, within_tolerance
from urban_gym.families.posegraph360.tasks.generate import PoseGraphTaskGenerator
from urban_gym.families.posegraph360.tasks.types import (
    CALIBRATION_TOLERANCE,
    COUNT_KINDS,
    DEFAULT_STEP_LIMIT,
    DIFFICULTY_LEVELS,
    GROUNDED_TASK_TYPES,
    ORACLE_BUDGET_SHARE,
    PAPER_STATISTICS,
    TASK_TYPES,
)
from urban_gym.tasks.report import GeneratedSuite
from urban_gym.tasks.spec import TaskError, TaskSpec
from urban_gym.tasks.suite import group_tasks, mean, meta_values, save_suite


def suite_statistics(tasks: Sequence[TaskSpec]) -> list[dict[str, Any]]:
    """Per type and difficulty: task count and the means of route length (m), decision
    points, instruction steps, counts and oracle steps (where they apply), the most
    oracle steps (``oracle_steps_max``), the object kinds counted (``kinds``: kind ->
    tasks), with 360CityArena's own numbers for the same type and difficulty under
    ``paper`` (:data:`PAPER_STATISTICS`; empty where the paper reports none).
    """
    order = {k: i for i, k in enumerate(TASK_TYPES)}
    groups = group_tasks(tasks, lambda t: (t.type, t.difficulty))
    rows = []
    for (tt, d), ts in sorted(
        groups.items(),
        key=lambda kv: (
            order.get(kv[0][0], 99),
            DIFFICULTY_LEVELS.index(kv[0][1]) if kv[0][1] in DIFFICULTY_LEVELS else 9,
        ),
    ):
        oracle = meta_values(ts, "oracle_steps")
        kinds = Counter(str(t.goal["kind"]) for t in ts if t.type == "object_count")
        rows.append(
            {
                "type": tt,
                "difficulty": d,
                "n": len(ts),
                "route_length_m": mean(meta_values(ts, "route_length")),
                "decision_points": mean(meta_values(ts, "decision_points")),
                "instruction_steps": mean(meta_values(ts, "instruction_steps")),
                "count": mean(meta_values(ts, "count")),
                "oracle_steps": mean(oracle),
                "oracle_steps_max": max(oracle) if oracle else None,
                "kinds": dict(sorted(kinds.items(), key=lambda kv: (-kv[1], kv[0]))),
                "paper": dict(PAPER_STATISTICS.get(tt, {}).get(d, {})),
            }
        )
    return rows


def format_statistics(rows: Sequence[dict[str, Any]], step_limit: int = DEFAULT_STEP_LIMIT) -> str:
    """:func:`suite_statistics` as a Markdown table: a value 360CityArena reports for the
    same type and difficulty follows ours in brackets with our deviation from it, marked
    ``ok`` within :data:`CALIBRATION_TOLERANCE` and ``OFF`` outside (``6.1 [6.4 -5% ok]``);
    oracle steps are the mean and the most, of ``step_limit``. Below the table, the
    object kinds the counting tasks ask for.
    """

    def f(r: dict[str, Any], key: str, nd: int = 1) -> str:
        v = r.get(key)
        out = "-" if v is None else f"{v:.{nd}f}"
        p = r.get("paper", {}).get(key)
        if p is None:
            return out
        dev = deviation(v, p)
        mark = "ok" if within_tolerance(v, p) else "OFF"
        return f"{out} [{p:.{nd}f} {'' if dev is None else f'{dev:+.0%} '}{mark}]"

    def oracle(r: dict[str, Any]) -> str:
        if r.get("oracle_steps") is None:
            return "-"
        return f"{r['oracle_steps']:.1f} / {r['oracle_steps_max']:.0f}"

    out = [
        "| type | difficulty | tasks | route m | decision points | instruction steps | count "
        f"| oracle steps (mean / most, of {step_limit}) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        out.append(
            f"| {r['type']} | {r['difficulty']} | {r['n']} | {f(r, 'route_length_m', 0)} | "
            f"{f(r, 'decision_points')} | {f(r, 'instruction_steps')} | {f(r, 'count')} | "
            f"{oracle(r)} |"
        )
    out.append(
        "[brackets]: 360CityArena's averages for the same type and difficulty (section 3.3), "
        f"our deviation, ok within +-{CALIBRATION_TOLERANCE:.0%}; every task's oracle needs at "
        f"most {int(ORACLE_BUDGET_SHARE * step_limit)} of the {step_limit} steps."
    )
    kinds = [r for r in rows if r.get("kinds")]
    if kinds:
        total: Counter[str] = Counter()
        for r in kinds:
            total.update(r["kinds"])
        out.append(
            "object count kinds (tasks; easy/medium/hard): "
            + ", ".join(
                f"{COUNT_KINDS.get(k, k)} {n} ("
                + "/".join(str(r["kinds"].get(k, 0)) for r in kinds)
                + ")"
                for k, n in sorted(total.items(), key=lambda kv: (-kv[1], kv[0]))
            )
        )
    return "\n".join(out)


SUITE_DIR = Path(__file__).resolve().parent.parent / "suites"


def suite_path(city: str) -> Path:
    """Where the committed default suite of ``city`` lives
    (``urban_gym/families/posegraph360/suites/<city>.jsonl``).
    """
    safe = re.sub(r"[^A-Za-z0-9_.-]+", "_", str(city)).strip("_")
    return SUITE_DIR / f"{safe}.jsonl"


def grounded_suite_path(city: str) -> Path:
    """Where the committed suite of the grounded types of ``city`` lives
    (``urban_gym/families/posegraph360/suites/<city>_grounded.jsonl``).
    """
    p = suite_path(city)
    return p.with_name(p.stem + "_grounded.jsonl")


#: The embedded cities with a committed suite of 360CityArena's seven types besides
#: Helsinki (25 tasks per type where the city has them; see ``urban-gym cities``).
CITY_SUITES: tuple[str, ...] = ("london", "munich", "sao_paulo")

#: The committed suites: name -> path. ``helsinki`` is 360CityArena's seven types (175
#: tasks); ``helsinki-grounded`` the grounded types outside them; one suite of the seven
#: types for each city of :data:`CITY_SUITES`.
DEFAULT_SUITES: dict[str, Path] = {
    "helsinki": suite_path("helsinki"),
    "helsinki-grounded": grounded_suite_path("helsinki"),
    **{c: suite_path(c) for c in CITY_SUITES},
}


def generate(
    city: str = "helsinki",
    out: str | Path | None = None,
    seed: int = 0,
    per_type: int | None = None,
) -> GeneratedSuite:
    """Generate ``per_type`` (default 25) tasks of each type for ``city`` and write them as
    JSONL to ``out`` (default :func:`suite_path`). Returns the path, the tasks, the
    per-type report and, as notes, the per-difficulty statistics table. A type the city
    cannot supply is reported, not fatal; a city that supports no type raises
    :class:`~urban_gym.tasks.report.SuiteGenerationError`.
    ``urban-gym generate-suite --family posegraph360 --city helsinki`` regenerates the
    committed default suite.
    """
    gen = PoseGraphTaskGenerator(city, seed=seed)
    tasks = gen.suite(per_type=25 if per_type is None else int(per_type))
    gen.report.check_any()
    path = save_suite(out or suite_path(city), tasks)
    notes = format_statistics(suite_statistics(tasks)) + "\n" + notable_places(tasks, city)
    return GeneratedSuite(path, tasks, gen.report, notes)


def notable_places(tasks: Sequence[TaskSpec], city: str) -> str:
    """How many of ``tasks`` name a notable place (the landmark a task goes to or asks
    about, the reference of a relational question; :func:`urban_gym.world.places.notable_line`).
    """
    from urban_gym.world.loader import load_city
    from urban_gym.world.places import notable_line

    by_name = {p.name: p for p in load_city(city).pois if p.name}

    def tags(t: TaskSpec) -> dict[str, str] | None:
        name = t.goal.get("poi") or t.goal.get("reference")
        poi = by_name.get(str(name)) if name else None
        return None if poi is None else dict(poi.tags or {})

    return notable_line([tags(t) for t in tasks])


def generate_grounded(
    city: str = "helsinki",
    out: str | Path | None = None,
    seed: int = 0,
    per_type: int = 25,
    on_type: Callable[[Any], None] | None = None,
) -> GeneratedSuite:
    """The grounded task types (:data:`~.types.GROUNDED_TASK_TYPES`) of ``city``, written to
    ``out`` (default :func:`grounded_suite_path`); ``on_type`` gets each type's report row
    as it is made.
    """
    gen = PoseGraphTaskGenerator(city, seed=seed)
    tasks = gen.suite(per_type=per_type, types=GROUNDED_TASK_TYPES, on_type=on_type)
    gen.report.check_any()
    path = save_suite(out or grounded_suite_path(city), tasks)
    return GeneratedSuite(path, tasks, gen.report, format_statistics(suite_statistics(tasks)))


def generate_grounded_track(
    city: str,
    out: str | Path | None,
    seed: int,
    per_type: int | None,
    progress: Callable[[str], None] | None = None,
) -> GeneratedSuite:
    """``urban-gym generate-suite --family posegraph360 --track grounded``:
    :func:`generate_grounded` (``per_type`` None: 25), one ``progress`` line per type made
    (``posegraph360 <city> grounded: <type> <made>/<asked> (<seconds> s)``).
    """
    import time

    n = 25 if per_type is None else int(per_type)
    if n < 0:
        raise TaskError(f"--per-type {n} must be >= 0")
    t0 = time.monotonic()

    def each(row: Any) -> None:
        if progress is not None:
            progress(
                f"posegraph360 {city} grounded: {row.type} {row.made}/{row.requested} "
                f"({time.monotonic() - t0:.0f} s)"
            )

    return generate_grounded(city, out, seed, n, on_type=each)


def write_suite(
    city: str = "helsinki",
    out: str | Path | None = None,
    seed: int = 0,
    per_type: int | None = None,
) -> Path:
    """:func:`generate`, printing the per-difficulty statistics; returns the path."""
    made = generate(city, out, seed, per_type)
    print(made.notes)
    return made.path


def default_view_size(suite: object) -> int | tuple[int, int]:
    """The env's ``view_size`` when none is given: 640x480 on a grounded suite (the frame
    its truth boxes are measured in, :data:`~.video.FRAME_SIZE`), else 512.
    """
    from urban_gym.families.posegraph360.tasks.video import FRAME_SIZE

    return FRAME_SIZE if isinstance(suite, str) and suite.endswith("grounded") else 512
