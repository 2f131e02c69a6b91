"""``urban-gym`` commands about cities and task suites.

info, cities, generate-suite, split-suite.
"""

from __future__ import annotations

import argparse
import json

from urban_gym.cli._common import command


def _add_info(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "city",
        nargs="?",
        default="helsinki",
        help="built-in name, OSM file, bundle directory or procedural:... spec",
    )
    p.add_argument(
        "--bbox",
        type=float,
        nargs=4,
        metavar=("W", "S", "E", "N"),
        help="bounding box in degrees (OSM files only)",
    )
    p.add_argument("--json", action="store_true", help="print the summary as JSON")


@command("info", "print a summary of a city")(_add_info)
def run_info(args: argparse.Namespace) -> int:
    """Print the summary of a city."""
    from urban_gym.world import load_city

    city = load_city(args.city, bbox=args.bbox)
    s = city.summary()
    if args.json:
        print(json.dumps(s, ensure_ascii=False, indent=1))
        return 0
    print(format_summary(s, city.meta))
    return 0


def _add_cities(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true", help="print the rows as JSON")


@command(
    "cities",
    "list the cities shipped in the package: place, area, buildings, POIs, walkable km, "
    "data size, source, date and licence",
)(_add_cities)
def run_cities(args: argparse.Namespace) -> int:
    """Load every embedded city and print one row each (and the total data size)."""
    rows = city_rows()
    if args.json:
        print(json.dumps(rows, ensure_ascii=False, indent=1))
        return 0
    print(format_city_rows(rows))
    return 0


def city_rows() -> list[dict]:
    """One dict per embedded city: provenance from :mod:`urban_gym.world.builtin` and the
    counts of the loaded world (``area_km2`` is the extent's east-west x north-south).
    """
    from urban_gym.world.builtin import BUILTIN, builtin_names
    from urban_gym.world.loader import builtin_path, load_city

    rows = []
    for name in builtin_names():
        c = BUILTIN[name]
        s = load_city(name).summary()
        w, h = s["extent_m"]
        rows.append(
            {
                "name": name,
                "place": c.place,
                "extent_m": [w, h],
                "area_km2": round(w * h / 1e6, 2),
                "buildings": s["buildings"],
                "pois": s["pois"],
                "network_km": s["network_km"],
                "file": c.file,
                "file_bytes": builtin_path(name).stat().st_size,
                "source": c.source,
                "data_date": c.data_date,
                "licence": c.licence,
                "note": c.note,
                "suites": suite_counts(name),
            }
        )
    return rows


def suite_counts(city: str) -> dict[str, int]:
    """How many tasks each registered family's committed suite of ``city`` holds (families
    without one are left out).
    """
    from pathlib import Path

    from urban_gym.tasks.families import family_names, get_family

    out: dict[str, int] = {}
    for fam in family_names():
        path = get_family(fam).tasks().DEFAULT_SUITES.get(city)
        if path is not None and Path(path).is_file():
            with open(path, encoding="utf-8") as fh:
                out[fam] = sum(1 for line in fh if line.strip())
    return out


def format_city_rows(rows: list[dict]) -> str:
    """The ``urban-gym cities`` table: a row per city, its provenance below it, a total."""
    head = f"{'city':<11}{'area km2':>9}{'extent m':>13}{'buildings':>10}{'POIs':>7}"
    head += f"{'walk km':>9}{'data kB':>9}"
    lines = [head]
    for r in rows:
        w, h = r["extent_m"]
        lines.append(
            f"{r['name']:<11}{r['area_km2']:>9.2f}{f'{w:.0f}x{h:.0f}':>13}{r['buildings']:>10}"
            f"{r['pois']:>7}{r['network_km']:>9.1f}{r['file_bytes'] / 1000:>9.0f}"
        )
        lines.append(f"  {r['place']}")
        lines.append(f"  source: {r['source']}; data {r['data_date']}; {r['licence']}")
        if r["note"]:
            lines.append(f"  note: {r['note']}")
        if r.get("suites"):
            tasks = ", ".join(f"{f} {n}" for f, n in r["suites"].items())
            lines.append(f"  committed suites (tasks): {tasks}")
    total = sum(r["file_bytes"] for r in rows)
    lines.append(f"{len(rows)} cities, {total / 1e6:.2f} MB of embedded map data")
    return "\n".join(lines)


def _add_generate_suite(p: argparse.ArgumentParser) -> None:
    from urban_gym.tasks.families import FAMILIES, family_names

    p.add_argument("--family", required=True, help="task family: " + ", ".join(family_names()))
    p.add_argument("--city", default="helsinki", help="city spec (default helsinki)")
    p.add_argument("--out", default=None, help="JSONL path (default: the committed suite)")
    p.add_argument("--seed", type=int, default=0, help="generator seed")
    p.add_argument("--per-type", type=int, default=None, help="tasks per type")
    p.add_argument(
        "--track",
        default=None,
        help="a suite beside the family's default one: "
        + (
            "; ".join(
                f"{f.name}: {', '.join(f.suite_track_entries)}"
                for f in FAMILIES.values()
                if f.suite_track_entries
            )
            or "none"
        ),
    )


@command(
    "generate-suite",
    "generate a family's task suite (JSONL) from a city; prints per task type how many "
    "tasks were made and, where fewer, what the city lacks",
)(_add_generate_suite)
def run_generate_suite(args: argparse.Namespace) -> int:
    """Generate a family's task suite and print how many tasks each type got."""
    from urban_gym.tasks.families import get_family

    fam = get_family(args.family)
    # a family's generate (``out`` None = its committed default suite) returns a
    # GeneratedSuite: path, tasks, per-type report
    if args.track:
        made = fam.generate_track(
            args.track, args.city, args.out, args.seed, args.per_type, _progress
        )
    else:
        made = fam.generate(args.city, args.out, args.seed, args.per_type)
    if made.notes:
        print(made.notes)
    track = f" {args.track}" if args.track else ""
    print(f"wrote {len(made.tasks)} {args.family}{track} tasks to {made.path}")
    print("tasks per type (made of requested):")
    print(made.report.format())
    return 0


def _progress(line: str) -> None:
    """One progress line of a suite's generation, to standard error (flushed)."""
    import sys

    print(line, file=sys.stderr, flush=True)


def format_summary(s: dict, meta: dict) -> str:
    """Human-readable form of :meth:`~urban_gym.world.city.City.summary` (``urban-gym info``)."""
    w, h = s["extent_m"]
    lines = [
        f"city               {s['name']}",
        f"origin (lat, lon)  {s['origin_latlon'][0]:.6f}, {s['origin_latlon'][1]:.6f}",
        f"extent             {w:.0f} m east-west x {h:.0f} m north-south",
        f"buildings          {s['buildings']}",
        f"POIs               {s['pois']}",
    ]
    for k, v in s["pois_by_category"].items():
        lines.append(f"  {k:<17}{v}")
    lines.append(
        f"walkable network   {s['network_nodes']} nodes, {s['network_edges']} edges, "
        f"{s['network_km']:.2f} km"
    )
    for k, v in s["network_by_kind_km"].items():
        lines.append(f"  {k:<17}{v:.2f} km")
    lines.append(f"street objects     {s['objects']}")
    for k, v in s["objects_by_kind"].items():
        lines.append(f"  {k:<17}{v}")
    lines.append(
        "map areas          " + ", ".join(f"{k} {v}" for k, v in s["areas_by_kind"].items())
    )
    if meta.get("attribution"):
        lines.append(f"data               {meta['attribution']}")
    if meta.get("loaded_from"):
        lines.append(f"loaded from        {meta['loaded_from']}")
    return "\n".join(lines)
