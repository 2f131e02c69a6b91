"""StreetGraph's sub-commands of ``urban-gym``: ``streetgraph-routes`` (tasks on a Touchdown
graph), ``streetgraph-info`` (a graph's size and preprocessing report, and how many of its
city's named places are notable), ``streetgraph-suites`` (the committed suites' route
statistics per city beside CityNav's), ``streetgraph-eval`` (the oracle and the random
agent on a suite) and ``data touchdown`` (install Touchdown's routes,
:mod:`~urban_gym.families.streetgraph.touchdown_command`).
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from urban_gym.errors import InputError
from urban_gym.families.streetgraph.touchdown_command import add_data_arguments, run_data
from urban_gym.tasks.families import FamilyCommand


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
        raise InputError("give a route file, or --od N for origin-destination tasks")

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
    out: dict[str, Any] = {
        "raw": raw.summary(),
        "preprocessed": graph.summary(),
        "report": report.to_dict(),
        "load": raw.meta.get("load"),
        "seconds": {"load": round(t1 - t0, 3), "preprocess": round(t2 - t1, 3)},
    }
    census_line = ""
    if city is not None:
        from urban_gym.families.streetgraph.tasks import city_destinations
        from urban_gym.families.streetgraph.tasks.destinations import (
            destination_census,
            pick_destinations,
        )

        dests = city_destinations(graph, city)
        out["destinations"] = destination_census(dests)
        census_line = pick_destinations(dests)[1]
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
        from urban_gym.families.streetgraph.tasks.destinations import format_census

        print(format_census(out["destinations"], census_line))
    return 0


def _add_streetgraph_suites(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "suites",
        nargs="*",
        help="committed suite names or JSONL paths (default: every committed suite)",
    )
    p.add_argument("--json", action="store_true", help="print JSON")


def run_streetgraph_suites(args: argparse.Namespace) -> int:
    """Print the suites' route length, decisions and notable share beside CityNav's."""
    from pathlib import Path

    from urban_gym.families.streetgraph.tasks import DEFAULT_SUITES
    from urban_gym.families.streetgraph.tasks.citynav_stats import (
        city_suite_rows,
        format_citynav_table,
    )

    chosen: dict[str, str | Path] = {}
    for name in args.suites or list(DEFAULT_SUITES):
        if name in DEFAULT_SUITES:
            chosen[name] = DEFAULT_SUITES[name]
        elif Path(name).is_file():
            chosen[Path(name).stem] = name
        else:
            raise InputError(
                f"suite {name!r} is neither a committed StreetGraph suite "
                f"({', '.join(DEFAULT_SUITES)}) nor a file"
            )
    rows = city_suite_rows(chosen)
    if args.json:
        print(json.dumps(rows, indent=1))
    else:
        print(format_citynav_table(rows))
    return 0


def _add_streetgraph_eval(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--suite",
        default="helsinki",
        help="default suite name (helsinki, procedural) or a JSONL path",
    )
    p.add_argument("--agent", default="both", choices=("oracle", "random", "both"))
    p.add_argument("--episodes", type=int, default=None, help="first N tasks (default all)")
    p.add_argument("--seed", type=int, default=0, help="seed of episode 0 (then +1, ...)")
    p.add_argument("--observation", default="symbolic", choices=("symbolic", "auto", "images"))
    p.add_argument("--image-size", type=int, default=84, help="view size in image modes")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.add_argument("--out", default=None, help="keep the run folders in OUT/<agent>")


def run_streetgraph_eval(args: argparse.Namespace) -> int:
    """Score the oracle and random agents on a StreetGraph suite and print the table."""
    import gymnasium as gym

    from urban_gym.families.streetgraph.eval_command import ENV_ID, evaluate
    from urban_gym.families.streetgraph.tasks import suite_statistics

    kwargs = {"suite": args.suite, "observation": args.observation, "image_size": args.image_size}
    env: Any = gym.make(ENV_ID, **kwargs).unwrapped  # the family's UrbanEnv
    agents = ["oracle", "random"] if args.agent == "both" else [args.agent]
    ids = [t.id for t in env.tasks]
    if args.episodes is not None:
        ids = ids[: max(0, args.episodes)]
    results = [
        evaluate(kwargs, a, seed=args.seed, task_ids=ids, progress=True, out=args.out)
        for a in agents
    ]
    stats = suite_statistics(env.tasks)
    if args.json:
        print(
            json.dumps(
                {"suite": args.suite, "statistics": stats, "results": results},
                ensure_ascii=False,
                indent=1,
            )
        )
        return 0
    print(f"suite {args.suite}: {len(env.tasks)} tasks")
    if stats.get("tasks"):
        for key in ("route_length_m", "decision_points"):
            q = stats[key]
            print(
                f"  {key:<16} min {q['min']}  q25 {q['q25']}  median {q['median']}  "
                f"q75 {q['q75']}  max {q['max']}  mean {q['mean']}"
            )
        print(f"  difficulty       {stats['difficulty']}")
        g = stats["goals"]
        print(
            f"  destinations     {g['places']} places, {g['notable']} of {g['tasks']} tasks to "
            f"a notable one; addresses {g['address_sources']}"
        )
    keys = [
        k
        for k in ("success", "spl", "decision_accuracy", "ndtw", "sdtw", "spd")
        if any(k in r["mean"] for r in results)
    ]
    print("| agent | episodes | " + " | ".join(keys) + " | terminations |")
    print("|---|---|" + "---|" * len(keys) + "---|")
    for r in results:
        vals = " | ".join(f"{r['mean'][k]:.3f}" if k in r["mean"] else "" for k in keys)
        print(f"| {r['agent']} | {r['episodes']} | {vals} | {r['terminations']} |")
    return 0


#: The family's sub-commands of ``urban-gym``.
COMMANDS: tuple[FamilyCommand, ...] = (
    FamilyCommand(
        "streetgraph-routes",
        "StreetGraph tasks on a Touchdown graph: instruction tasks from a route file, or --od N origin-destination tasks (CityNav-long routes to OSM POIs or named nodes)",
        _add_streetgraph_routes,
        run_streetgraph_routes,
    ),
    FamilyCommand(
        "streetgraph-info",
        "build a StreetGraph, print its size and preprocessing report",
        _add_streetgraph_info,
        run_streetgraph_info,
    ),
    FamilyCommand(
        "streetgraph-suites",
        "route length, decision points and notable destinations of the committed "
        "suites per city, beside CityNav's figures",
        _add_streetgraph_suites,
        run_streetgraph_suites,
    ),
    FamilyCommand(
        "streetgraph-eval",
        "oracle and random agent scores on a StreetGraph suite (an alias of `eval`)",
        _add_streetgraph_eval,
        run_streetgraph_eval,
    ),
    FamilyCommand(
        "data",
        "install a dataset: `data touchdown` fetches Touchdown's train/dev/test routes "
        "(UrbanGym/StreetGraph-Touchdown-v0) into the user data folder",
        add_data_arguments,
        run_data,
    ),
)
