"""``urban-gym`` commands about cities and task suites: info, generate-suite,
validate-posegraph, streetgraph-routes, streetgraph-info.
"""

from __future__ import annotations

import argparse
import json
import sys

from urban_gym.cli._common import command
from urban_gym.errors import UrbanGymError


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
    p.add_argument(
        "--posegraph",
        action="store_true",
        help="print the city's PoseGraph360 statistics (nodes, edges, branching, "
        "streets, extent) instead",
    )
    p.add_argument(
        "--spacing",
        type=float,
        default=3.0,
        help="frame spacing of the pose graph in metres (with --posegraph)",
    )


@command("info", "print a summary of a city")(_add_info)
def run_info(args: argparse.Namespace) -> int:
    """Print the summary (or the PoseGraph360 statistics) of a city."""
    from urban_gym.world import load_city

    city = load_city(args.city, bbox=args.bbox)
    if args.posegraph:
        from urban_gym.families.posegraph360.world import PoseGraph, format_statistics

        st = PoseGraph.from_city(city, spacing=args.spacing).statistics()
        print(json.dumps(st, ensure_ascii=False, indent=1) if args.json else format_statistics(st))
        return 0
    s = city.summary()
    if args.json:
        print(json.dumps(s, ensure_ascii=False, indent=1))
        return 0
    from urban_gym.world.city import format_summary

    print(format_summary(s, city.meta))
    return 0


def _add_generate_suite(p: argparse.ArgumentParser) -> None:
    from urban_gym.tasks.families import family_names

    p.add_argument("--family", required=True, help="task family: " + ", ".join(family_names()))
    p.add_argument("--city", default="helsinki", help="city spec (default helsinki)")
    p.add_argument("--out", default=None, help="JSONL path (default: the committed suite)")
    p.add_argument("--seed", type=int, default=0, help="generator seed")
    p.add_argument("--per-type", type=int, default=None, help="tasks per type")


@command(
    "generate-suite",
    "generate a family's task suite (JSONL) from a city; prints per task type how many "
    "tasks were made and, where fewer, what the city lacks",
)(_add_generate_suite)
def run_generate_suite(args: argparse.Namespace) -> int:
    """Generate a family's task suite and print how many tasks each type got."""
    from urban_gym.tasks.families import get_family, load_entry

    # each family's ``generate(city, out, seed, per_type)`` (``out`` None = its committed
    # default suite) returns a GeneratedSuite: path, tasks, per-type report
    generate = load_entry(get_family(args.family).generator)
    made = generate(args.city, args.out, args.seed, args.per_type)
    if made.notes:
        print(made.notes)
    print(f"wrote {len(made.tasks)} {args.family} tasks to {made.path}")
    print("tasks per type (made of requested):")
    print(made.report.format())
    return 0


def _add_validate_posegraph(p: argparse.ArgumentParser) -> None:
    p.add_argument("city", nargs="?", default="helsinki", help="load_city spec")
    p.add_argument(
        "--capture",
        default=None,
        help="validate an imported capture (folder of equirect images or a 360° "
        "video) instead of the city's own pose graph",
    )
    p.add_argument("--poses", default=None, help="pose CSV of --capture")
    p.add_argument("--pairs", type=int, default=200, help="random start/goal junction pairs")
    p.add_argument("--seed", type=int, default=0, help="seed of the pair sampling")
    p.add_argument("--spacing", type=float, default=3.0, help="frame spacing in metres")
    p.add_argument("--network", default="auto", choices=("auto", "streets", "walkable"))
    p.add_argument("--json", action="store_true", help="print the figures as JSON")


@command(
    "validate-posegraph",
    "how well a pose graph agrees with the walkable network: node-to-street distances, "
    "path-length and turn-sequence agreement",
)(_add_validate_posegraph)
def run_validate_posegraph(args: argparse.Namespace) -> int:
    """Print how well a pose graph (the city's or a capture's) fits the streets."""
    from urban_gym.families.posegraph360.world import (
        PoseGraph,
        format_validation,
        validate_posegraph,
    )
    from urban_gym.world import load_city

    city = load_city(args.city)
    if args.capture:
        graph = PoseGraph.from_capture(args.capture, args.poses, geo=city.frame)
    else:
        graph = PoseGraph.from_city(city, spacing=args.spacing)
    from urban_gym.families.posegraph360.world.validation import validation_failures

    v = validate_posegraph(graph, city, pairs=args.pairs, seed=args.seed, network=args.network)
    print(json.dumps(v, indent=1) if args.json else format_validation(v))
    failed = validation_failures(v)
    for f in failed:
        print(f"FAIL: {f}", file=sys.stderr)
    return 1 if failed else 0


def _add_streetgraph_routes(p: argparse.ArgumentParser) -> None:
    p.add_argument("graph", help="Touchdown graph directory (nodes.txt, links.txt)")
    p.add_argument("routes", nargs="?", help="Touchdown/map2seq route file (JSON lines)")
    p.add_argument("--out", required=True, help="JSONL suite to write")
    p.add_argument("--images", default=None, help="folder of <panoid>.jpg|png panoramas")
    p.add_argument("--skip-bad-lines", action="store_true", help="skip malformed routes")
    p.add_argument("--od", type=int, default=None, help="N origin-destination tasks instead")
    p.add_argument("--osm", default=None, help="--od: destinations from this OSM extract's POIs")
    p.add_argument("--named-nodes", default=None, help="--od: destinations, 'panoid,name' lines")
    p.add_argument("--min-route-m", type=float, default=2000.0, help="--od: shortest route (m)")
    p.add_argument("--min-decisions", type=int, default=50, help="--od: fewest decision points")
    p.add_argument("--seed", type=int, default=0, help="--od: generator seed")


@command(
    "streetgraph-routes",
    "StreetGraph tasks on a Touchdown graph: instruction tasks from a route file, or --od N "
    "origin-destination tasks (CityNav-long routes to OSM POIs or named nodes)",
)(_add_streetgraph_routes)
def run_streetgraph_routes(args: argparse.Namespace) -> int:
    """Convert a Touchdown/map2seq route file (or ``--od N``) into a StreetGraph suite."""
    from urban_gym.families.streetgraph.tasks import instruction_tasks, touchdown_od_suite
    from urban_gym.tasks.suite import save_suite

    if args.od is not None:
        kw = {"images": args.images, "osm": args.osm, "named_nodes": args.named_nodes}
        made = touchdown_od_suite(
            args.graph,
            args.out,
            n=args.od,
            seed=args.seed,
            min_route_m=args.min_route_m,
            min_decisions=args.min_decisions,
            **kw,
        )
        print(f"wrote {len(made.tasks)} origin-destination tasks to {made.path}")
        print(made.report.format())
        return 0
    if args.routes is None:
        raise UrbanGymError("give a route file, or --od N for origin-destination tasks")

    tasks = instruction_tasks(
        args.graph, args.routes, images=args.images, skip_bad_lines=args.skip_bad_lines
    )
    path = save_suite(args.out, tasks)
    skipped = tasks[0].meta["skipped_routes"] if tasks else 0
    print(f"wrote {len(tasks)} streetgraph instruction tasks to {path} ({skipped} routes skipped)")
    return 0


def _add_streetgraph_info(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "source",
        nargs="?",
        default="helsinki",
        help="a city spec (helsinki, an OSM file, procedural:...) or a Touchdown "
        "directory with nodes.txt and links.txt",
    )
    p.add_argument("--spacing", type=float, default=10.0, help="panorama spacing (m), cities")
    p.add_argument(
        "--kinds",
        default="road,pedestrian",
        help="comma-separated network edge kinds, cities ('' = all)",
    )
    p.add_argument("--images", default=None, help="image folder of a Touchdown graph")
    p.add_argument("--no-prune", action="store_true", help="keep dead ends")
    p.add_argument("--skip-bad-lines", action="store_true", help="skip malformed lines")
    p.add_argument("--json", action="store_true", help="print JSON")


@command("streetgraph-info", "build a StreetGraph, print its size and preprocessing report")(
    _add_streetgraph_info
)
def run_streetgraph_info(args: argparse.Namespace) -> int:
    """Build a StreetGraph and print its size and preprocessing report."""
    import os
    import time

    from urban_gym.families.streetgraph.world import StreetGraph, preprocess, read_touchdown

    t0 = time.perf_counter()
    city = None
    if os.path.isdir(args.source) and os.path.isfile(os.path.join(args.source, "nodes.txt")):
        raw = read_touchdown(args.source, images=args.images, skip_bad_lines=args.skip_bad_lines)
    else:
        from urban_gym.world import load_city

        city = load_city(args.source)
        kinds = [k.strip() for k in args.kinds.split(",") if k.strip()] or None
        raw = StreetGraph.from_city(city, spacing=args.spacing, kinds=kinds, city_spec=args.source)
    t1 = time.perf_counter()
    graph, report = preprocess(raw, prune=not args.no_prune)
    t2 = time.perf_counter()
    out = {
        "raw": raw.summary(),
        "preprocessed": graph.summary(),
        "report": report.to_dict(),
        "load": raw.meta.get("load"),
        "seconds": {"load": round(t1 - t0, 3), "preprocess": round(t2 - t1, 3)},
    }
    if city is not None:
        from urban_gym.families.streetgraph.tasks import city_destinations

        out["destinations"] = len(city_destinations(graph, city))
    if args.json:
        print(json.dumps(out, ensure_ascii=False, indent=1))
        return 0
    s = graph.summary()
    print(f"graph              {s['name']} ({s['source']})")
    print(
        f"raw                {raw.num_nodes} nodes, {raw.num_links} links "
        f"(loaded in {t1 - t0:.2f} s)"
    )
    if raw.meta.get("load"):
        ld = raw.meta["load"]
        print(
            f"skipped lines      {ld['nodes_skipped']} nodes, {ld['links_skipped']} links; "
            f"{ld['duplicate_links']} duplicate links merged"
        )
    print(f"preprocessing      ({t2 - t1:.2f} s)")
    for line in str(report).splitlines():
        print(f"  {line}")
    print(
        f"extent             {s['extent_m'][0]:.0f} m x {s['extent_m'][1]:.0f} m, "
        f"{s['street_km']:.2f} km of street"
    )
    print(f"degrees            {s['degree_histogram']}")
    if "destinations" in out:
        print(f"destinations       {out['destinations']} uniquely named places with nodes")
    return 0
