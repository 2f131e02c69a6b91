"""CityWalk suite generation: every type the city supports, with a per-type report, and
the suite's statistics.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from urban_gym.tasks.citywalk.context import _Ctx
from urban_gym.tasks.citywalk.generators import _NO_INTENT, GENERATORS
from urban_gym.tasks.citywalk.types import (
    DEFAULT_MAX_STEPS,
    DEFAULT_SUITE_PATH,
    GENERATOR_VERSION,
    INTENT_CATEGORIES,
    TASK_TYPES,
    VARIANT_CONDITIONS,
    VARIANT_TYPES,
)
from urban_gym.tasks.report import GeneratedSuite, GenerationReport, Misses, TypeReport
from urban_gym.tasks.spec import TaskError, TaskSpec
from urban_gym.tasks.suite import counts, group_tasks, meta_values, quantiles, save_suite
from urban_gym.world.city import City

FATAL_STAGE = 100


def type_lacks(c: _Ctx, code: str) -> str | None:
    """What the city lacks for task type ``code`` before any attempt (None: nothing
    obvious; the attempts may still fail, see :meth:`_Ctx.miss`). Draws no random numbers.
    """
    if not c.pois:
        return (
            f"no usable named POI (of the city's {len(c.city.pois)} named POIs none has a "
            "unique name of 2-40 characters, a kind worth walking to and its sign within "
            "25 m of the walkable network)"
        )
    kinds = Counter(p.kind for p in c.pois)
    usable = f"only {len(c.pois)} usable named POI" + ("s" if len(c.pois) > 1 else "")
    if code == "VR":
        if not any(p.facade is not None for p in c.pois):
            return "no named POI on a building facade"
        if len(c.pois) < 4:
            return f"{usable}; a question needs 4 (the answer and 3 other options)"
    if code == "AEQ" and max(kinds.values()) < 4:
        return "no POI kind with 4 or more places (the answer and 3 options of its kind)"
    if code == "PTS" and not any(v >= 2 for k, v in kinds.items() if k != "company"):
        return "no POI kind with 2 or more places to choose the nearest among"
    if code == "III" and not any(kinds[k] for ks in INTENT_CATEGORIES.values() for k in ks):
        return _NO_INTENT
    need = {"TWS": 2, "MSP": 3}.get(code, 1)
    if len(c.pois) < need:
        return f"{usable}; {code} visits {need} places"
    return None


def generate_with_report(
    city: City,
    city_spec: str,
    per_type: int = 20,
    variants_per_type: int = 8,
    seed: int = 0,
    types: Iterable[str] | None = None,
    max_tries: int = 400,
) -> tuple[list[TaskSpec], GenerationReport]:
    """Generate CityWalk tasks and say, per type, how many were made and why not more.

    ``per_type`` tasks of each type in ``types`` (default all thirteen) plus
    ``variants_per_type`` condition variants of each of :data:`VARIANT_TYPES`.
    Deterministic for a seed. A type the city cannot supply (see :func:`type_lacks`) is
    skipped; a type stops after ``max_tries`` failed attempts in a row or
    ``n * max_tries`` attempts in all, its report row naming why the attempts that got
    furthest failed (:class:`~urban_gym.tasks.report.Misses`).
    Raises :class:`~urban_gym.tasks.report.SuiteGenerationError` when no task at all
    could be made (the message names what the city lacks per type).
    """
    codes = list(types) if types is not None else list(TASK_TYPES)
    unknown = [t for t in codes if t not in TASK_TYPES]
    if unknown:
        raise TaskError(f"unknown CityWalk task types {unknown}; valid: {', '.join(TASK_TYPES)}")
    ctx = _Ctx(city, city_spec, seed)
    report = GenerationReport("citywalk", city.name)
    out: list[TaskSpec] = []
    plan: list[tuple[str, int, tuple[str, str] | None]] = [(t, per_type, None) for t in codes]
    for t in codes:
        if t in VARIANT_TYPES and variants_per_type > 0:
            plan.append((t, variants_per_type, ("variant", "")))
    for code, n, variant in plan:
        row = report.add(TypeReport(code if variant is None else f"{code} (conditions)", n))
        row.reason = type_lacks(ctx, code)
        if row.reason is None:
            out += _generate_type(ctx, code, n, variant is not None, max_tries, row)
    report.check_any()
    return out, report


def _generate_type(
    ctx: _Ctx, code: str, n: int, variant: bool, max_tries: int, row: TypeReport
) -> list[TaskSpec]:
    """Up to ``n`` tasks of type ``code`` (condition variants when ``variant``); fills
    ``row`` (made, attempts, reason).
    """
    city = ctx.city
    ctx.misses = Misses()
    out: list[TaskSpec] = []
    made = tries = last = 0
    while made < n:
        tries += 1
        if tries > n * max_tries or tries - last > max_tries:
            tries -= 1
            break
        if not variant:
            tod, weather = "day", "clear"
        else:
            tod, weather = VARIANT_CONDITIONS[made % len(VARIANT_CONDITIONS)]
        cond = {"time_of_day": tod, "weather": weather, "seed": int(ctx.rng.integers(2**31))}
        try:
            body = GENERATORS[code](ctx, cond)
        except TaskError as exc:  # e.g. no clear start point anywhere on the network
            ctx.miss(str(exc), FATAL_STAGE)
            break
        if body is None:
            continue
        tt = TASK_TYPES[code]
        suffix = f"{tod}-{weather}-" if variant else ""
        constraints = dict(body.get("constraints", {}))
        constraints["conditions"] = cond
        meta = {
            "level": ("l5" if variant else tt.level).upper(),
            "type_name": tt.description,
            "generator": GENERATOR_VERSION,
            **body.get("meta", {}),
        }
        if variant:
            meta["variant"] = f"{tod}-{weather}"
        out.append(
            TaskSpec(
                id=f"citywalk-{city.name}-{code.lower()}-{suffix}{made:03d}",
                family="citywalk",
                type=code,
                difficulty="l5" if variant else tt.level,
                city=ctx.spec,
                instruction=body["instruction"],
                start=body["start"],
                goal=body.get("goal", {}),
                answer=body.get("answer"),
                options=tuple(body.get("options", ())),
                constraints=constraints,
                limits={"max_steps": DEFAULT_MAX_STEPS},
                meta=meta,
            )
        )
        made += 1
        last = tries
    row.made, row.attempts = made, tries
    if made < n:
        row.reason = ctx.misses.reason()
    return out


def generate_tasks(
    city: City,
    city_spec: str,
    per_type: int = 20,
    variants_per_type: int = 8,
    seed: int = 0,
    types: Iterable[str] | None = None,
    max_tries: int = 400,
) -> list[TaskSpec]:
    """The tasks of :func:`generate_with_report` (fewer than asked where the city lacks
    what a type needs; :class:`~urban_gym.tasks.report.SuiteGenerationError` when none).
    """
    return generate_with_report(
        city, city_spec, per_type, variants_per_type, seed, types, max_tries
    )[0]


def generate(
    city: str = "helsinki",
    out: str | Path | None = None,
    seed: int = 0,
    per_type: int | None = None,
) -> GeneratedSuite:
    """Generate a CityWalk suite for ``city`` and write it as JSONL to ``out`` (default:
    the committed Helsinki suite). ``per_type`` tasks of each type (default 20) plus
    ``max(2, per_type // 2)`` condition variants of each of :data:`VARIANT_TYPES`.
    Returns the path, the tasks and the per-type report.
    """
    from urban_gym.world import load_city

    n = 20 if per_type is None else int(per_type)
    if n < 1:
        raise TaskError(f"per_type={per_type!r} must be at least 1")
    tasks, report = generate_with_report(
        load_city(city), city, per_type=n, variants_per_type=max(2, n // 2), seed=seed
    )
    path = save_suite(out if out is not None else DEFAULT_SUITE_PATH, tasks)
    return GeneratedSuite(path, tasks, report)


def write_suite(
    city: str = "helsinki",
    out: str | Path | None = None,
    seed: int = 0,
    per_type: int | None = None,
) -> Path:
    """:func:`generate`, returning only the path written."""
    return generate(city, out, seed, per_type).path


def suite_statistics(tasks: Sequence[TaskSpec]) -> dict[str, Any]:
    """Counts by type and level, and walking-distance quantiles (m) per type."""
    by_type = group_tasks(tasks, lambda t: t.type)
    out: dict[str, Any] = {"tasks": len(tasks), "by_level": counts(tasks, "difficulty")}
    rows = {}
    for code in TASK_TYPES:
        ts = by_type.get(code, [])
        d = meta_values(ts, "shortest_m")
        rows[code] = {
            "count": len(ts),
            "variants": sum("variant" in t.meta for t in ts),
            "median_m": quantiles(d)["median"] if d else None,
            "max_m": quantiles(d)["max"] if d else None,
        }
    out["by_type"] = rows
    return out
