"""CityWalk suite generation: every type the city supports, with a per-type report, and
the suite's statistics.
"""

from __future__ import annotations

import math
import re
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, Literal

from urban_gym.families.citywalk.tasks.context import TargetPredicate, _Ctx
from urban_gym.families.citywalk.tasks.generators import (
    _NO_INTENT,
    DERIVED_FROM,
    GENERATORS,
    np_pedestrians,
)
from urban_gym.families.citywalk.tasks.types import (
    CITY_SUITE_SIZES,
    DEFAULT_MAX_STEPS,
    DEFAULT_SUITE_PATH,
    DEFAULT_SUITES,
    DISTANCE_BIN_TYPES,
    DISTANCE_BINS,
    GENERATOR_VERSION,
    INTENT_CATEGORIES,
    PAPER_BASE_COUNTS,
    TASK_TYPES,
    VARIANT_CONDITIONS,
    VARIANT_TYPES,
)
from urban_gym.tasks.report import GeneratedSuite, GenerationReport, Misses, TypeReport
from urban_gym.tasks.spec import TaskError, TaskSpec
from urban_gym.tasks.suite import counts, group_tasks, meta_values, quantiles, save_suite
from urban_gym.world.city import City

FATAL_STAGE = 100
#: A callable that takes one line of progress (e.g. ``print``).
Progress = Callable[[str], None]


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
    per_type: int | Mapping[str, int] = 20,
    variants_per_type: int | None = None,
    seed: int = 0,
    types: Iterable[str] | None = None,
    max_tries: int = 400,
    sgn_predicate: TargetPredicate | None = None,
    progress: Progress | None = None,
) -> tuple[list[TaskSpec], GenerationReport]:
    """Generate CityWalk tasks and say, per type, how many were made and why not more.

    ``per_type`` tasks of each type in ``types`` (default all thirteen; a mapping gives
    each type its own count, e.g. :data:`PAPER_BASE_COUNTS`), then the condition variants:
    every base task of each of :data:`VARIANT_TYPES` (or its first ``variants_per_type``;
    0 for none) under every one of :data:`VARIANT_CONDITIONS` (the same start, goal and
    options; the clock moved to the time of day): UrbanGround evaluates every L1 question
    task and SGN under the matched conditions (Section 4.4). NP tasks are not drawn: each
    is an LGN task of the run with moving pedestrians (the same start, goal, route and
    instruction; ``meta["base_task"]`` its LGN task; UrbanGround B.5).
    ShortNav and InstructionNav tasks get ``meta["distance_bin"]``
    (:func:`assign_distance_bins`). ``sgn_predicate`` (optional): an SGN target is kept
    only when ``sgn_predicate(city, start, poi)`` holds (e.g. its name legible from the
    start; see :data:`~urban_gym.families.citywalk.tasks.context.TargetPredicate`).
    ``progress`` gets one line per type made. Deterministic for a seed. A type the city
    cannot supply (see :func:`type_lacks`) is skipped; a type stops after ``max_tries``
    failed attempts in a row or ``n * max_tries`` attempts in all, its report row naming
    why the attempts that got furthest failed (:class:`~urban_gym.tasks.report.Misses`).
    Raises :class:`~urban_gym.tasks.report.SuiteGenerationError` when no task at all
    could be made (the message names what the city lacks per type).
    """
    codes = list(types) if types is not None else list(TASK_TYPES)
    unknown = [t for t in codes if t not in TASK_TYPES]
    if unknown:
        raise TaskError(f"unknown CityWalk task types {unknown}; valid: {', '.join(TASK_TYPES)}")
    if variants_per_type is not None and int(variants_per_type) < 0:
        raise TaskError(f"variants_per_type={variants_per_type!r} must be None or at least 0")
    ctx = _Ctx(city, city_spec, seed)
    ctx.sgn_predicate = sgn_predicate
    report = GenerationReport("citywalk", city.name)
    out: list[TaskSpec] = []
    t0 = time.monotonic()

    def say(what: str, made: int, want: int) -> None:
        if progress is not None:
            progress(f"citywalk {city.name}: {what} {made}/{want} ({time.monotonic() - t0:.0f} s)")

    for code in codes:
        n = int(per_type.get(code, 0)) if isinstance(per_type, Mapping) else int(per_type)
        row = report.add(TypeReport(code, n))
        row.reason = type_lacks(ctx, code)
        if row.reason is None and n > 0:
            if code in DERIVED_FROM:
                made = _derive_type(ctx, code, n, out, max_tries, row)
            else:
                made = _generate_type(ctx, code, n, max_tries, row)
            if code in DISTANCE_BIN_TYPES:
                assign_distance_bins(made)
            out += made
        say(code, row.made, n)
    for code in codes:
        if code not in VARIANT_TYPES or variants_per_type == 0:
            continue
        base = [t for t in out if t.type == code]
        if variants_per_type is not None:
            base = base[: int(variants_per_type)]
        want = len(base) * len(VARIANT_CONDITIONS)
        if variants_per_type is not None:
            want = int(variants_per_type) * len(VARIANT_CONDITIONS)
        row = report.add(TypeReport(f"{code} (conditions)", want))
        out += [condition_variant(ctx, t, cond) for cond in VARIANT_CONDITIONS for t in base]
        row.made = row.attempts = len(base) * len(VARIANT_CONDITIONS)
        if row.made < want:
            row.reason = f"only {len(base)} base {code} tasks to vary"
        say(f"{code} under {len(VARIANT_CONDITIONS)} conditions", row.made, want)
    report.check_any()
    return out, report


def _derive_type(
    ctx: _Ctx, code: str, n: int, out: list[TaskSpec], max_tries: int, row: TypeReport
) -> list[TaskSpec]:
    """Up to ``n`` tasks of the derived type ``code`` (:data:`DERIVED_FROM`): NP from the
    run's LGN tasks (made here, not kept, when the run has none), in order; fills ``row``.
    """
    src = DERIVED_FROM[code]
    bases = [t for t in out if t.type == src]
    if not bases:
        bases = _generate_type(ctx, src, n, max_tries, TypeReport(src, n))
    made = [derive_np(ctx, b, i) for i, b in enumerate(bases[:n])]
    row.made = row.attempts = len(made)
    if len(made) < n:
        row.reason = f"only {len(bases)} {src} tasks to derive {code} tasks from"
    return made


def derive_np(ctx: _Ctx, base: TaskSpec, index: int) -> TaskSpec:
    """The NP task made from the validated LGN task ``base`` (UrbanGround B.5: moving
    pedestrians introduced into long-range navigation instances): ``base``'s start, goal,
    instruction, route and conditions, with pedestrians around its shortest route
    (:func:`~urban_gym.families.citywalk.tasks.generators.np_pedestrians`), level L5,
    ``meta["base_task"]`` naming ``base``.
    """
    tt = TASK_TYPES["NP"]
    return replace(
        base,
        id=f"citywalk-{ctx.city.name}-np-{index:03d}",
        type="NP",
        difficulty=tt.level,
        constraints={**base.constraints, "pedestrians": np_pedestrians(ctx, base)},
        meta={
            **base.meta,
            "level": tt.level.upper(),
            "type_name": tt.description,
            "base_task": base.id,
        },
    )


def condition_variant(ctx: _Ctx, base: TaskSpec, cond: tuple[str, str]) -> TaskSpec:
    """``base`` under the condition ``(time_of_day, weather)``: the same start pose, goal,
    question and options, the start clock drawn in the time of day's range, level L5.
    """
    tod, weather = cond
    start = dict(base.start)
    if tod != "day":
        start["clock"] = ctx.start_clock(tod)
    conditions = {"time_of_day": tod, "weather": weather, "seed": int(ctx.rng.integers(2**31))}
    meta = {**base.meta, "level": "L5", "variant": f"{tod}-{weather}", "base_task": base.id}
    return replace(
        base,
        id=base.id.replace(f"-{base.type.lower()}-", f"-{base.type.lower()}-{tod}-{weather}-", 1),
        difficulty="l5",
        start=start,
        constraints={**base.constraints, "conditions": conditions},
        meta=meta,
    )


def assign_distance_bins(tasks: list[TaskSpec], bins: int = DISTANCE_BINS) -> None:
    """Split ``tasks`` into ``bins`` equal-count bins (the first ones one larger when the
    count does not divide) by the straight-line start-to-goal distance, nearest first:
    ``meta["distance_bin"]`` 1..``bins`` and ``meta["crow_m"]`` (metres).
    """

    def crow(t: TaskSpec) -> float:
        return math.dist((t.start["x"], t.start["y"]), (t.goal["x"], t.goal["y"]))

    order = sorted(range(len(tasks)), key=lambda i: (crow(tasks[i]), tasks[i].id))
    size, extra = divmod(len(tasks), bins)
    pos = 0
    for b in range(bins):
        n = size + (1 if b < extra else 0)
        for i in order[pos : pos + n]:
            tasks[i].meta["distance_bin"] = b + 1
            tasks[i].meta["crow_m"] = round(crow(tasks[i]), 1)
        pos += n


def _generate_type(ctx: _Ctx, code: str, n: int, max_tries: int, row: TypeReport) -> list[TaskSpec]:
    """Up to ``n`` tasks of type ``code`` in daylight and clear weather; fills ``row``
    (made, attempts, reason).
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
        cond = {"time_of_day": "day", "weather": "clear", "seed": int(ctx.rng.integers(2**31))}
        try:
            body = GENERATORS[code](ctx, cond)
        except TaskError as exc:  # e.g. no clear start point anywhere on the network
            ctx.miss(str(exc), FATAL_STAGE)
            break
        if body is None:
            continue
        tt = TASK_TYPES[code]
        constraints = dict(body.get("constraints", {}))
        constraints["conditions"] = cond
        meta = {
            "level": tt.level.upper(),
            "type_name": tt.description,
            "generator": GENERATOR_VERSION,
            **body.get("meta", {}),
        }
        out.append(
            TaskSpec(
                id=f"citywalk-{city.name}-{code.lower()}-{made:03d}",
                family="citywalk",
                type=code,
                difficulty=tt.level,
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
    variants_per_type: int | None = None,
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
    sgn_predicate: TargetPredicate | None | Literal["legible"] = "legible",
    progress: Progress | None = None,
) -> GeneratedSuite:
    """Generate a CityWalk suite for ``city`` and write it as JSONL to ``out`` (default:
    the city's committed suite, :data:`DEFAULT_SUITES`; ``suites/<city>.jsonl`` beside
    them for a city without one, never another city's). By default UrbanGround's 810 base tasks (:data:`PAPER_BASE_COUNTS`, as many as
    the city supports) and every base task of each of :data:`VARIANT_TYPES` under each of
    :data:`VARIANT_CONDITIONS`; for a city of :data:`CITY_SUITE_SIZES` its committed
    suite's size; ``per_type`` instead makes that many of each type (and every variant). ``sgn_predicate``: see
    :func:`generate_with_report`; the default ``"legible"`` keeps an SGN target only when
    its name is legible from the start
    (:func:`urban_gym.families.citywalk.legibility.sgn_target_legible`), None keeps any
    target whose sign shows in the start view. Progress lines go to ``progress`` (default: standard
    error). Returns the path, the tasks and the per-type report.
    """
    from urban_gym.world import load_city

    if per_type is not None and int(per_type) < 1:
        raise TaskError(f"per_type={per_type!r} must be at least 1")
    counts: int | dict[str, int] = PAPER_BASE_COUNTS if per_type is None else int(per_type)
    variants: int | None = None
    if per_type is None and city in CITY_SUITE_SIZES:
        counts, variants = CITY_SUITE_SIZES[city]
    say = progress if progress is not None else _to_stderr
    if sgn_predicate == "legible":
        from urban_gym.families.citywalk.legibility import sgn_target_legible

        sgn_predicate = sgn_target_legible
    elif sgn_predicate is not None and not callable(sgn_predicate):
        raise TaskError(f"sgn_predicate={sgn_predicate!r} must be 'legible', None or a function")
    tasks, report = generate_with_report(
        load_city(city),
        city,
        per_type=counts,
        variants_per_type=variants,
        seed=seed,
        sgn_predicate=sgn_predicate,
        progress=say,
    )
    path = save_suite(
        out if out is not None else DEFAULT_SUITES.get(city, city_suite_path(city)), tasks
    )
    return GeneratedSuite(path, tasks, report, notable_places(tasks, load_city(city)))


def city_suite_path(city: str) -> Path:
    """The suite file of ``city`` beside the committed ones (``suites/<city>.jsonl``, the
    name reduced to letters, digits, ``_``, ``.`` and ``-``).
    """
    safe = re.sub(r"[^A-Za-z0-9_.-]+", "_", str(city)).strip("_.") or "city"
    return DEFAULT_SUITE_PATH.with_name(f"{safe}.jsonl")


def notable_places(tasks: Sequence[TaskSpec], city: City) -> str:
    """How many of ``tasks`` send the agent to (or ask about) a notable place
    (:func:`urban_gym.world.places.notable_line`): the goal's POI, else the question's.
    """
    from urban_gym.world.places import notable_line

    def tags(t: TaskSpec) -> dict[str, str] | None:
        pid = t.goal.get("poi_id", t.meta.get("poi_id"))
        return None if pid is None else dict(city.pois[int(pid)].tags or {})

    return notable_line([tags(t) for t in tasks])


def _to_stderr(line: str) -> None:
    """Print one progress line to standard error (flushed)."""
    print(line, file=sys.stderr, flush=True)


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
    rows: dict[str, dict[str, Any]] = {}
    for code in TASK_TYPES:
        ts = by_type.get(code, [])
        d = meta_values(ts, "shortest_m")
        rows[code] = {
            "count": len(ts),
            "variants": sum("variant" in t.meta for t in ts),
            "median_m": quantiles(d)["median"] if d else None,
            "max_m": quantiles(d)["max"] if d else None,
        }
        if code in DISTANCE_BIN_TYPES:
            base = [t for t in ts if "variant" not in t.meta and "distance_bin" in t.meta]
            rows[code]["distance_bins"] = {
                b: {
                    "count": len(sel := [t for t in base if t.meta["distance_bin"] == b]),
                    "median_crow_m": quantiles(meta_values(sel, "crow_m"))["median"]
                    if sel
                    else None,
                }
                for b in range(1, DISTANCE_BINS + 1)
            }
    out["by_type"] = rows
    out["base_tasks"] = sum(1 for t in tasks if "variant" not in t.meta)
    return out
