"""``urban-gym`` commands that serve something on loopback: serve-scripted (a scripted
OpenAI-compatible model), demo, play (human play in a browser).
"""

from __future__ import annotations

import argparse
import sys

from urban_gym.cli._common import command, csv_list, json_arg, task_env_kwargs, task_ids
from urban_gym.errors import InputError


def _add_serve_scripted(p: argparse.ArgumentParser) -> None:
    p.add_argument("env_id", help="a registered id (UrbanGym/...)")
    p.add_argument(
        "--seed",
        type=int,
        default=0,
        help="seed of the first episode (then seed+1, ...); the client's env must "
        "be reset with the same seeds",
    )
    p.add_argument("--options", type=json_arg, default=None, help="reset options (JSON)")
    p.add_argument("--env-kwargs", type=json_arg, default={}, help="gym.make kwargs (JSON)")
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
    p.add_argument(
        "--policy",
        default="oracle",
        help="what the replies are: oracle | noisy-oracle:P | random | replay:FILE",
    )
    p.add_argument("--policy-seed", type=int, default=0, help="seed of the policy's choices")


@command(
    "serve-scripted",
    "serve the chat-completions API on loopback, answering with an oracle's actions",
)(_add_serve_scripted)
def run_serve_scripted(args: argparse.Namespace) -> int:
    """Serve the scripted chat-completions API until interrupted."""
    from urban_gym.baselines.lmm.judge import server_judge_responder
    from urban_gym.baselines.lmm.server import ScriptedServer, oracle_from_path

    try:
        faults = [int(s) for s in args.fail.split(",") if s.strip()]
    except ValueError as exc:
        raise InputError(f"--fail={args.fail!r} must be comma-separated HTTP statuses") from exc
    import importlib

    import gymnasium as gym

    # a mistyped id fails here, not at the first request ("module:ID" as gym.make reads it)
    module, colon, name = args.env_id.rpartition(":")
    if colon:
        importlib.import_module(module)
    gym.spec(name if colon else args.env_id)
    server = ScriptedServer(
        env_id=args.env_id,
        env_kwargs=args.env_kwargs,
        seed=args.seed,
        options=args.options,
        wrap=args.wrap,
        faults=faults,
        port=args.port,
        oracle_factory=oracle_from_path(args.oracle) if args.oracle else None,
        policy=args.policy,
        policy_seed=args.policy_seed,
    )
    server.responders.append(server_judge_responder(server))
    server.start()
    print(
        f"serving {args.env_id} (seed {args.seed}, policy {args.policy}, replies {args.wrap}) "
        f"at {server.url}",
        flush=True,
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
        default=None,
        help="comma-separated families to run (default: every family with a demo episode)",
    )
    p.add_argument("--no-gif", action="store_true", help="do not write GIFs")


@command(
    "demo",
    "on Helsinki: one episode per family through the language-model face, answered by the "
    "scripted server; prints metrics, writes GIFs",
)(_add_demo)
def run_demo(args: argparse.Namespace) -> int:
    """Run one language-model episode per family; status 1 unless all succeed."""
    from urban_gym.eval.demo import run_demo as demo

    families = csv_list(args.families)
    results = demo(
        out=args.out, seed=args.seed, wrap=args.wrap, families=families, gif=not args.no_gif
    )
    return 0 if all(r["is_success"] for r in results) else 1


def _add_play(p: argparse.ArgumentParser) -> None:
    p.add_argument("env_id", help="a registered id (UrbanGym/...)")
    p.add_argument(
        "--out",
        default=None,
        help="run folder (default play_out/<env id>); start again on it to resume",
    )
    p.add_argument("--port", type=int, default=0, help="loopback port (default 0: any free)")
    p.add_argument("--suite", default=None, help="suite name of the family or a JSONL path")
    p.add_argument("--env-kwargs", type=json_arg, default=None, help="gym.make kwargs (JSON)")
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
        "--max-sessions",
        type=int,
        default=8,
        help="pages that may play at once (default 8; a page beyond is refused)",
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
    """Serve the browser game that records a person's episodes as a run."""
    from urban_gym.play.app import serve_args

    kwargs = task_env_kwargs(args)
    command = ["urban-gym", *sys.argv[1:]] if sys.argv and sys.argv[0] else None
    return serve_args(args, kwargs, task_ids(args.tasks), command)
