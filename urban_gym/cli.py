"""The ``urban-gym`` command.

Sub-commands register themselves in :data:`COMMANDS` (name -> (add_arguments, run)); each
``run(args)`` returns the process exit status. Errors of urban_gym's own
(:class:`~urban_gym.errors.UrbanGymError`) are printed as one line and exit with status 2.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable

from urban_gym.baselines import train_cli
from urban_gym.errors import UrbanGymError

Command = tuple[Callable[[argparse.ArgumentParser], None], Callable[[argparse.Namespace], int]]
COMMANDS: dict[str, tuple[str, Command]] = {}


def command(name: str, help_text: str):
    """Register ``run`` under ``name``; ``add`` fills the sub-parser's arguments."""

    def wrap(add: Callable[[argparse.ArgumentParser], None]):
        def inner(run: Callable[[argparse.Namespace], int]):
            COMMANDS[name] = (help_text, (add, run))
            return run

        return inner

    return wrap


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
    from urban_gym.world import load_city

    city = load_city(args.city, bbox=args.bbox)
    if args.posegraph:
        from urban_gym.world.posegraph import PoseGraph, format_statistics

        st = PoseGraph.from_city(city, spacing=args.spacing).statistics()
        print(json.dumps(st, ensure_ascii=False, indent=1) if args.json else format_statistics(st))
        return 0
    s = city.summary()
    if args.json:
        print(json.dumps(s, ensure_ascii=False, indent=1))
        return 0
    print(format_summary(s, city.meta))
    return 0


def format_summary(s: dict, meta: dict) -> str:
    """Human-readable form of :meth:`City.summary`."""
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


def _json_arg(text: str) -> dict:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise argparse.ArgumentTypeError(f"{text!r} is not JSON: {exc}") from exc
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError(f"{text!r} must be a JSON object")
    return value


def _add_serve_scripted(p: argparse.ArgumentParser) -> None:
    p.add_argument("env_id", help="registered id, e.g. UrbanGym/StreetGraph-v0")
    p.add_argument(
        "--seed",
        type=int,
        default=0,
        help="seed of the first episode (then seed+1, ...); the client's env must "
        "be reset with the same seeds",
    )
    p.add_argument("--options", type=_json_arg, default=None, help="reset options (JSON)")
    p.add_argument("--env-kwargs", type=_json_arg, default={}, help="gym.make kwargs (JSON)")
    p.add_argument("--port", type=int, default=8000, help="loopback port (0: any free port)")
    p.add_argument(
        "--wrap",
        default="mixed",
        choices=("json", "fence", "prose", "mixed"),
        help="how replies are wrapped, to exercise the client's parser",
    )
    p.add_argument("--fail", default="", help="HTTP statuses for the first requests, e.g. 429,500")
    p.add_argument(
        "--oracle", default=None, help="module:Class of the oracle (default: the family's)"
    )


@command(
    "serve-scripted",
    "serve the chat-completions API on loopback, answering with an oracle's actions",
)(_add_serve_scripted)
def run_serve_scripted(args: argparse.Namespace) -> int:
    from urban_gym.baselines.lmm.server import ScriptedServer, oracle_from_path

    try:
        faults = [int(s) for s in args.fail.split(",") if s.strip()]
    except ValueError as exc:
        raise UrbanGymError(f"--fail={args.fail!r} must be comma-separated HTTP statuses") from exc
    server = ScriptedServer(
        env_id=args.env_id,
        env_kwargs=args.env_kwargs,
        seed=args.seed,
        options=args.options,
        wrap=args.wrap,
        faults=faults,
        port=args.port,
        oracle_factory=oracle_from_path(args.oracle) if args.oracle else None,
    )
    server.start()
    print(
        f"serving {args.env_id} (seed {args.seed}, replies {args.wrap}) at {server.url}", flush=True
    )
    print(f"  export URBAN_GYM_LMM_BASE_URL={server.url}", flush=True)
    server.serve_forever()
    return 0


def _add_demo(p: argparse.ArgumentParser) -> None:
    p.add_argument("--out", default="demo_out", help="folder for the GIFs and episode records")
    p.add_argument("--seed", type=int, default=0, help="seed of each episode")
    p.add_argument(
        "--wrap",
        default="mixed",
        choices=("json", "fence", "prose", "mixed"),
        help="how the scripted model wraps its replies",
    )
    p.add_argument(
        "--families",
        default="posegraph360,streetgraph,citywalk",
        help="comma-separated families to run",
    )
    p.add_argument("--no-gif", action="store_true", help="do not write GIFs")


@command(
    "demo",
    "on Helsinki: one episode per family through the language-model face, answered by the "
    "scripted server; prints metrics, writes GIFs",
)(_add_demo)
def run_demo(args: argparse.Namespace) -> int:
    from urban_gym.baselines.lmm.demo import run_demo as demo

    families = [f.strip() for f in args.families.split(",") if f.strip()]
    results = demo(
        out=args.out, seed=args.seed, wrap=args.wrap, families=families, gif=not args.no_gif
    )
    return 0 if all(r["is_success"] for r in results) else 1


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


def _add_citywalk_eval(p: argparse.ArgumentParser) -> None:
    p.add_argument("--suite", default=None, help="JSONL suite (default: the Helsinki suite)")
    p.add_argument("--agents", default="oracle,random", help="comma-separated: oracle, random")
    p.add_argument("--types", default=None, help="comma-separated task types (default all)")
    p.add_argument("--seed", type=int, default=0, help="episode seed")
    p.add_argument("--json", action="store_true", help="print the full results as JSON")
    p.add_argument("--out", default=None, help="keep the run folders in OUT/<agent>")


@command(
    "citywalk-eval",
    "run the CityWalk suite with the oracle and random agents (an alias of `eval`)",
)(_add_citywalk_eval)
def run_citywalk_eval(args: argparse.Namespace) -> int:
    from urban_gym.eval.citywalk import evaluate, format_report

    agents = [a.strip() for a in args.agents.split(",") if a.strip()]
    types = [t.strip() for t in args.types.split(",")] if args.types else None
    res = evaluate(suite=args.suite, agents=agents, seed=args.seed, types=types, out=args.out)
    print(json.dumps(res, indent=1) if args.json else format_report(res))
    return 0


# --------------------------------------------------------------------------- PoseGraph360
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
    p.add_argument("--json", action="store_true", help="print the figures as JSON")


@command(
    "validate-posegraph",
    "how well a pose graph agrees with the walkable network: node-to-street distances, "
    "path-length and turn-sequence agreement",
)(_add_validate_posegraph)
def run_validate_posegraph(args: argparse.Namespace) -> int:
    from urban_gym.world import load_city
    from urban_gym.world.posegraph import PoseGraph, format_validation, validate_posegraph

    city = load_city(args.city)
    if args.capture:
        graph = PoseGraph.from_capture(args.capture, args.poses, geo=city.frame)
    else:
        graph = PoseGraph.from_city(city, spacing=args.spacing)
    v = validate_posegraph(graph, city, pairs=args.pairs, seed=args.seed)
    print(json.dumps(v, indent=1) if args.json else format_validation(v))
    return 0


def _add_posegraph_eval(p: argparse.ArgumentParser) -> None:
    p.add_argument("--city", default="helsinki", help="load_city spec")
    p.add_argument("--suite", default="default", help="JSONL suite (default: the city's)")
    p.add_argument("--agents", default="oracle,random", help="comma-separated: oracle, random")
    p.add_argument("--episodes", type=int, default=None, help="first N tasks (default: all)")
    p.add_argument("--seed", type=int, default=0, help="seed of episode 0 (then +1, ...)")
    p.add_argument("--view-size", type=int, default=84, help="view size in pixels")
    p.add_argument("--pano-width", type=int, default=512, help="rendered panorama width")
    p.add_argument("--json", action="store_true", help="print the results as JSON")
    p.add_argument("--out", default=None, help="keep the run folders in OUT/<agent>")


@command(
    "posegraph360-eval",
    "run the oracle and the random agent on a PoseGraph360 suite; scores per task type "
    "(an alias of `eval`)",
)(_add_posegraph_eval)
def run_posegraph_eval(args: argparse.Namespace) -> int:
    from urban_gym.eval.posegraph360 import evaluate, format_results

    kwargs = {
        "city": args.city,
        "suite": args.suite,
        "view_size": args.view_size,
        "pano_width": args.pano_width,
    }
    results = []
    for agent in [a.strip() for a in args.agents.split(",") if a.strip()]:
        results.append(
            evaluate(
                kwargs, agent, seed=args.seed, episodes=args.episodes, progress=True, out=args.out
            )
        )
    if args.json:
        print(json.dumps(results, indent=1, default=str))
    else:
        print(format_results(results))
    return 0


# ---------------------------------------------------------------- StreetGraph (issue 5)
def _add_streetgraph_routes(p: argparse.ArgumentParser) -> None:
    p.add_argument("graph", help="Touchdown graph directory (nodes.txt, links.txt)")
    p.add_argument("routes", help="Touchdown/map2seq route file (JSON lines)")
    p.add_argument("--out", required=True, help="JSONL suite to write")
    p.add_argument("--images", default=None, help="folder of <panoid>.jpg|png panoramas")
    p.add_argument("--skip-bad-lines", action="store_true", help="skip malformed routes")


@command("streetgraph-routes", "StreetGraph instruction tasks from a Touchdown/map2seq route file")(
    _add_streetgraph_routes
)
def run_streetgraph_routes(args: argparse.Namespace) -> int:
    from urban_gym.tasks.streetgraph import instruction_tasks
    from urban_gym.tasks.suite import save_suite

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
    import os
    import time

    from urban_gym.world.streetgraph import StreetGraph, preprocess, read_touchdown

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
        from urban_gym.tasks.streetgraph import city_destinations

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


@command(
    "streetgraph-eval",
    "oracle and random agent scores on a StreetGraph suite (an alias of `eval`)",
)(_add_streetgraph_eval)
def run_streetgraph_eval(args: argparse.Namespace) -> int:
    import gymnasium as gym

    from urban_gym.eval.streetgraph import ENV_ID, evaluate
    from urban_gym.tasks.streetgraph import suite_statistics

    kwargs = {"suite": args.suite, "observation": args.observation, "image_size": args.image_size}
    env = gym.make(ENV_ID, **kwargs).unwrapped
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


# ------------------------------------------------------------------ the harness (issue 13)
def _csv(text: str | None) -> list[str] | None:
    if text is None:
        return None
    items = [t.strip() for t in text.split(",") if t.strip()]
    return items or None


def _task_ids(text: str | None) -> list[str] | None:
    """``--task-ids``: comma-separated ids, or ``@FILE`` with one id per line."""
    if text is None:
        return None
    if text.startswith("@"):
        from pathlib import Path

        path = Path(text[1:])
        try:
            lines = path.read_text(encoding="utf-8").splitlines()
        except OSError as exc:
            raise UrbanGymError(f"--task-ids {text!r}: cannot read {path} ({exc})") from None
        return [x.strip() for x in lines if x.strip() and not x.startswith("#")]
    return _csv(text)


def _add_lmm_options(p: argparse.ArgumentParser, prefix: str = "") -> None:
    """Client settings of a language model (``prefix``: e.g. ``judge-``)."""
    g = p.add_argument_group(f"{prefix or 'language-model '}client (API key from the environment)")
    g.add_argument(f"--{prefix}base-url", default=None, help="OpenAI-compatible endpoint")
    g.add_argument(f"--{prefix}model", default=None, help="model name")
    if prefix:
        return
    g.add_argument("--temperature", type=float, default=None, help="sampling temperature")
    g.add_argument("--max-tokens", type=int, default=None, help="max output tokens per reply")
    g.add_argument(
        "--extra-body",
        type=_json_arg,
        default=None,
        help='JSON merged into every request, e.g. \'{"reasoning_effort": "low"}\'',
    )
    g.add_argument("--timeout", type=float, default=None, help="seconds per request")
    g.add_argument("--max-retries", type=int, default=None, help="retries per request")
    g.add_argument(
        "--image-budget", type=int, default=4_000_000, help="bytes of images per request"
    )
    g.add_argument("--max-image-side", type=int, default=None, help="pixels, before encoding")
    g.add_argument("--text-only", action="store_true", help="send no images")
    g.add_argument(
        "--map",
        action=argparse.BooleanOptionalAction,
        default=False,
        help="add an agent-centred map image (MapObservation)",
    )
    g.add_argument(
        "--location-prior",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="PoseGraph360: show the agent's position on a map (env kwarg location_prior)",
    )
    g.add_argument(
        "--memory",
        default="auto",
        choices=("auto", "reflection", "agentnav", "none"),
        help="memory scheme (auto: the family's)",
    )
    g.add_argument("--memory-budget", type=int, default=2000, help="characters per memory")
    g.add_argument("--history", type=int, default=None, help="past turns shown (default: family)")


def _add_eval(p: argparse.ArgumentParser) -> None:
    p.add_argument("env_id", help="registered id, e.g. UrbanGym/StreetGraph-v0")
    p.add_argument("--out", required=True, help="run folder (rerun the command to resume)")
    p.add_argument(
        "--agent",
        default="oracle",
        help="oracle | random | lmm | sb3:PATH | module:Class (default oracle)",
    )
    p.add_argument(
        "--agent-kwargs", type=_json_arg, default=None, help="JSON options of the agent class"
    )
    p.add_argument("--suite", default=None, help="suite name of the family or a JSONL path")
    p.add_argument("--env-kwargs", type=_json_arg, default=None, help="gym.make kwargs (JSON)")
    p.add_argument("--task-types", default=None, help="comma-separated task types")
    p.add_argument("--difficulties", default=None, help="comma-separated difficulties")
    p.add_argument("--task-ids", default=None, help="comma-separated task ids or @FILE")
    p.add_argument("--seeds", type=int, default=1, help="repeats per task (default 1)")
    p.add_argument("--seed", type=int, default=0, help="base seed (default 0)")
    p.add_argument(
        "--seeding",
        default="repeat",
        choices=("repeat", "task"),
        help="repeat: repeat r resets with seed+r; task: task i with seed+i (+r*n)",
    )
    p.add_argument("--workers", type=int, default=1, help="episodes in parallel")
    p.add_argument("--backend", default="local", choices=("local", "ray"))
    p.add_argument("--address", default=None, help="Ray cluster address (default: local Ray)")
    p.add_argument(
        "--force", action="store_true", help="move a different run in --out aside and start"
    )
    p.add_argument("--max-episodes", type=int, default=None, help="stop after N new episodes")
    p.add_argument("--no-visibility", action="store_true", help="do not record goal_visible")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument(
        "--judge",
        default="rules",
        choices=("rules", "lmm"),
        help="fuzzy_match judge of answers: rules (names + aliases) or lmm",
    )
    p.add_argument("--judge-prompt", default=None, help="judge prompt file (see judge.py)")
    _add_lmm_options(p)
    _add_lmm_options(p, "judge-")


def lmm_options(args: argparse.Namespace) -> dict:
    """The ``lmm`` agent's options from the parsed arguments."""
    opts = {
        "base_url": args.base_url,
        "model": args.model,
        "temperature": args.temperature,
        "max_tokens": args.max_tokens,
        "extra_body": args.extra_body,
        "timeout_s": args.timeout,
        "max_retries": args.max_retries,
        "image_budget_bytes": args.image_budget,
        "max_image_side": args.max_image_side,
        "include_images": not args.text_only,
        "map": args.map,
        "memory": args.memory,
        "memory_budget": args.memory_budget,
        "history": args.history,
    }
    return {k: v for k, v in opts.items() if v is not None}


@command(
    "eval",
    "evaluate any agent on any registered id and suite into a run folder (resumable, "
    "parallel): manifest.json, episodes.jsonl, per-step traces",
)(_add_eval)
def run_eval(args: argparse.Namespace) -> int:
    from urban_gym.eval.runner import run

    kwargs = dict(args.env_kwargs or {})
    if args.suite is not None:
        kwargs["suite"] = args.suite
    if args.task_types:
        kwargs["task_types"] = _csv(args.task_types)
    if args.difficulties:
        kwargs["difficulties"] = _csv(args.difficulties)
    if args.location_prior is not None:
        kwargs["location_prior"] = args.location_prior
    options = dict(args.agent_kwargs or {})
    if args.agent == "lmm":
        options = {**lmm_options(args), **options}
    judge = None
    if args.judge == "lmm":
        judge = {
            "kind": "lmm",
            "base_url": args.judge_base_url or args.base_url,
            "model": args.judge_model or args.model,
            "prompt_file": args.judge_prompt,
        }
        judge = {k: v for k, v in judge.items() if v is not None}
    res = run(
        args.env_id,
        args.out,
        agent=args.agent,
        agent_options=options,
        env_kwargs=kwargs,
        task_ids=_task_ids(args.task_ids),
        seeds=args.seeds,
        seed=args.seed,
        seeding=args.seeding,
        workers=args.workers,
        backend=args.backend,
        address=args.address,
        force=args.force,
        track_visibility=not args.no_visibility,
        judge=judge,
        progress=not args.no_progress,
        command=["urban-gym", *sys.argv[1:]] if sys.argv and sys.argv[0] else None,
        max_episodes=args.max_episodes,
    )
    done = res.done_before + res.ran
    print(
        f"{res.run_dir}: {done}/{res.total} episodes recorded ({res.ran} now, "
        f"{res.done_before} before); {res.successes}/{res.ran} successful now; "
        f"{res.tokens:,} tokens; {res.errors} errors; {res.wall_s:.1f} s"
    )
    print(f"  report: urban-gym report {res.run_dir}")
    return 0


def _add_play(p: argparse.ArgumentParser) -> None:
    p.add_argument("env_id", help="registered id, e.g. UrbanGym/CityWalk-v0")
    p.add_argument(
        "--out",
        default=None,
        help="run folder (default play_out/<env id>); start again on it to resume",
    )
    p.add_argument("--port", type=int, default=0, help="loopback port (default 0: any free)")
    p.add_argument("--suite", default=None, help="suite name of the family or a JSONL path")
    p.add_argument("--env-kwargs", type=_json_arg, default=None, help="gym.make kwargs (JSON)")
    p.add_argument("--tasks", default=None, help="comma-separated task ids or @FILE")
    p.add_argument("--task-types", default=None, help="comma-separated task types")
    p.add_argument("--difficulties", default=None, help="comma-separated difficulties")
    p.add_argument("--seeds", type=int, default=1, help="repeats per task (default 1)")
    p.add_argument("--seed", type=int, default=0, help="base seed (default 0)")
    p.add_argument("--seeding", default="repeat", choices=("repeat", "task"))
    p.add_argument("--no-visibility", action="store_true", help="do not record goal_visible")
    p.add_argument(
        "--idle-timeout", type=float, default=1800.0, help="s without an action: abandoned"
    )
    p.add_argument(
        "--heartbeat-timeout",
        type=float,
        default=120.0,
        help="s without a request from the page (browser gone): abandoned",
    )
    p.add_argument(
        "--leave-grace", type=float, default=15.0, help="s after the page closed: abandoned"
    )
    p.add_argument(
        "--force", action="store_true", help="move a different run in --out aside and start"
    )
    p.add_argument("--open", action="store_true", help="open the page in the default browser")


@command(
    "play",
    "play the tasks yourself in the browser (a local web server); the episodes are recorded "
    "as a human run that `urban-gym report` reads like any other",
)(_add_play)
def run_play(args: argparse.Namespace) -> int:
    from urban_gym.play.app import serve_args

    kwargs = dict(args.env_kwargs or {})
    for key, value in (("suite", args.suite), ("task_types", _csv(args.task_types))):
        if value is not None:
            kwargs[key] = value
    if args.difficulties:
        kwargs["difficulties"] = _csv(args.difficulties)
    command = ["urban-gym", *sys.argv[1:]] if sys.argv and sys.argv[0] else None
    return serve_args(args, kwargs, _task_ids(args.tasks), command)


def _add_report(p: argparse.ArgumentParser) -> None:
    p.add_argument("run_dirs", nargs="+", help="run folders (the first is the baseline)")
    p.add_argument(
        "--out", default=None, help="output folder (default RUN_DIR/report; several runs: report)"
    )
    p.add_argument("--names", default=None, help="comma-separated display names of the runs")
    p.add_argument("--resamples", type=int, default=10_000, help="bootstrap resamples")
    p.add_argument("--seed", type=int, default=0, help="bootstrap seed")
    p.add_argument("--no-plots", action="store_true", help="no PNG plots")
    p.add_argument("--no-gifs", action="store_true", help="no GIFs of best/worst episodes")
    p.add_argument("--no-failures", action="store_true", help="no failure-cause breakdown")
    p.add_argument("--labeler", default="rules", choices=("rules", "lmm"))
    p.add_argument("--labeler-max", type=int, default=200, help="failed episodes labeled per run")
    _add_lmm_options(p, "labeler-")


@command(
    "report",
    "report of run folders: tables with bootstrap CIs per type/difficulty/category, paired "
    "comparisons, failure causes, leaderboard, plots, GIFs",
)(_add_report)
def run_report(args: argparse.Namespace) -> int:
    from pathlib import Path

    from urban_gym.eval.report import build_report, write_report

    labeler = None
    if args.labeler == "lmm" and not args.no_failures:
        from urban_gym.baselines.lmm.client import ChatClient, ClientConfig
        from urban_gym.eval.labeler import ModelLabeler

        cfg = ClientConfig.from_env(base_url=args.labeler_base_url, model=args.labeler_model)
        labeler = ModelLabeler(ChatClient(cfg), max_episodes=args.labeler_max)
    report = build_report(
        args.run_dirs,
        names=_csv(args.names),
        resamples=args.resamples,
        seed=args.seed,
        failures=not args.no_failures,
        labeler=labeler,
    )
    out = (
        Path(args.out)
        if args.out
        else (Path(args.run_dirs[0]) / "report" if len(args.run_dirs) == 1 else Path("report"))
    )
    if not args.no_gifs:
        from urban_gym.eval.replay import episode_gifs
        from urban_gym.eval.report import load_run, name_runs

        runs = [load_run(p) for p in args.run_dirs]
        name_runs(runs, _csv(args.names))
        report["gifs"] = episode_gifs(runs, out)
    paths = write_report(report, out, plots=not args.no_plots)
    print(f"wrote {paths['md']} and {paths['json']} ({report['build_s']:.1f} s to build)")
    for row in report["leaderboard"]:
        s = row["success"] or {}
        print(
            f"  {row['run']:<24} {row['env_id']:<36} success {100 * (s.get('mean') or 0):5.1f}% "
            f"[{100 * (s.get('low') or 0):.1f}, {100 * (s.get('high') or 0):.1f}]"
        )
    return 0


def _add_judge_agreement(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--suite", default="default", help="PoseGraph360 suite (name or JSONL; default: Helsinki)"
    )
    p.add_argument("--city", default=None, help="city of the suite (default: its tasks')")
    p.add_argument("--runs", nargs="*", default=(), help="run folders whose answers are judged too")
    p.add_argument("--prompt", default=None, help="judge prompt file")
    p.add_argument("--cache", default=None, help="JSONL cache of verdicts")
    p.add_argument("--out", default=None, help="write the agreement report (JSON) here")
    _add_lmm_options(p, "judge-")


@command(
    "judge-agreement",
    "how often the language-model fuzzy_match judge agrees with the deterministic one on a "
    "suite's answers (and runs' answers); Cohen's kappa",
)(_add_judge_agreement)
def run_judge_agreement(args: argparse.Namespace) -> int:
    from urban_gym.baselines.lmm.client import ClientConfig
    from urban_gym.baselines.lmm.judge import LLMJudge
    from urban_gym.eval.judge_agreement import agreement, format_agreement, probes

    judge = LLMJudge(
        config=ClientConfig.from_env(base_url=args.judge_base_url, model=args.judge_model),
        prompt_file=args.prompt,
        cache_path=args.cache,
    )
    try:
        res = agreement(probes(args.suite, args.city, args.runs), judge)
    finally:
        judge.close()
    if args.out:
        from pathlib import Path

        Path(args.out).write_text(json.dumps(res, indent=1, ensure_ascii=False) + "\n")
    print(format_agreement(res))
    return 0


command("train", "train a policy (MaskablePPO / RecurrentPPO) from a config file")(
    train_cli.add_train
)(train_cli.run_train)
command("split-suite", "split a suite into train/val/test by held-out areas")(
    train_cli.add_split_suite
)(train_cli.run_split_suite)


def build_parser() -> argparse.ArgumentParser:
    from urban_gym import __version__

    parser = argparse.ArgumentParser(
        prog="urban-gym", description="urban_gym: city navigation environments"
    )
    parser.add_argument("-V", "--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    for name, (help_text, (add, _)) in COMMANDS.items():
        add(sub.add_parser(name, help=help_text, description=help_text))
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    _, (_, run) = COMMANDS[args.command]
    try:
        return run(args)
    except UrbanGymError as exc:
        print(f"urban-gym {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # output piped into `head` and the like
        sys.stderr.close()
        return 0


if __name__ == "__main__":
    sys.exit(main())
