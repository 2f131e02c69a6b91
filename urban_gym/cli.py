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
    p.add_argument("city", nargs="?", default="helsinki",
                   help="built-in name, OSM file, bundle directory or procedural:... spec")  # fmt: skip
    p.add_argument("--bbox", type=float, nargs=4, metavar=("W", "S", "E", "N"),
                   help="bounding box in degrees (OSM files only)")  # fmt: skip
    p.add_argument("--json", action="store_true", help="print the summary as JSON")


@command("info", "print a summary of a city")(_add_info)
def run_info(args: argparse.Namespace) -> int:
    from urban_gym.world import load_city

    city = load_city(args.city, bbox=args.bbox)
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
    p.add_argument("--seed", type=int, default=0,
                   help="seed of the first episode (then seed+1, ...); the client's env must "
                        "be reset with the same seeds")  # fmt: skip
    p.add_argument("--options", type=_json_arg, default=None, help="reset options (JSON)")
    p.add_argument("--env-kwargs", type=_json_arg, default={}, help="gym.make kwargs (JSON)")
    p.add_argument("--port", type=int, default=8000, help="loopback port (0: any free port)")
    p.add_argument("--wrap", default="mixed", choices=("json", "fence", "prose", "mixed"),
                   help="how replies are wrapped, to exercise the client's parser")  # fmt: skip
    p.add_argument("--fail", default="",
                   help="HTTP statuses for the first requests, e.g. 429,500")  # fmt: skip
    p.add_argument("--oracle", default=None,
                   help="module:Class of the oracle (default: the family's)")  # fmt: skip


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
        env_id=args.env_id, env_kwargs=args.env_kwargs, seed=args.seed, options=args.options,
        wrap=args.wrap, faults=faults, port=args.port,
        oracle_factory=oracle_from_path(args.oracle) if args.oracle else None,
    )  # fmt: skip
    server.start()
    print(f"serving {args.env_id} (seed {args.seed}, replies {args.wrap}) at {server.url}",
          flush=True)  # fmt: skip
    print(f"  export URBAN_GYM_LMM_BASE_URL={server.url}", flush=True)
    server.serve_forever()
    return 0


def _add_demo(p: argparse.ArgumentParser) -> None:
    p.add_argument("--out", default="demo_out", help="folder for the GIFs and episode records")
    p.add_argument("--city", default="helsinki", help="city of the three environments")
    p.add_argument("--seed", type=int, default=0, help="seed of each episode")
    p.add_argument("--wrap", default="mixed", choices=("json", "fence", "prose", "mixed"),
                   help="how the scripted model wraps its replies")  # fmt: skip
    p.add_argument("--families", default="posegraph360,streetgraph,citywalk",
                   help="comma-separated families to run")  # fmt: skip
    p.add_argument("--no-gif", action="store_true", help="do not write GIFs")


@command(
    "demo",
    "one episode per family through the language-model face, against the scripted server",
)(_add_demo)
def run_demo(args: argparse.Namespace) -> int:
    from urban_gym.baselines.lmm.demo import run_demo as demo

    families = [f.strip() for f in args.families.split(",") if f.strip()]
    results = demo(out=args.out, city=args.city, seed=args.seed, wrap=args.wrap,
                   families=families, gif=not args.no_gif)  # fmt: skip
    return 0 if all(r["is_success"] for r in results) else 1


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="urban-gym", description="urban_gym: city navigation environments"
    )
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
