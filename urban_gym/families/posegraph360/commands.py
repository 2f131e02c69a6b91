"""PoseGraph360's sub-commands of ``urban-gym``: ``posegraph360-info`` (a city's pose-graph
statistics), ``validate-posegraph`` (a pose graph against the walkable network),
``posegraph360-eval`` (the oracle and the random agent on a suite, scored per type) and
``judge-agreement`` (the language-model answer judge against the deterministic one).
"""

from __future__ import annotations

import argparse
import json
import sys

from urban_gym.baselines.lmm.options import add_lmm_options
from urban_gym.tasks.families import FamilyCommand


def _add_info(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "city",
        nargs="?",
        default="helsinki",
        help="built-in name, OSM file, bundle directory or procedural:... spec",
    )
    p.add_argument("--spacing", type=float, default=3.0, help="frame spacing in metres")
    p.add_argument("--json", action="store_true", help="print the statistics as JSON")


def run_info(args: argparse.Namespace) -> int:
    """Print the statistics of a city's pose graph."""
    from urban_gym.families.posegraph360.world import PoseGraph, format_statistics
    from urban_gym.world import load_city

    city = load_city(args.city)
    st = PoseGraph.from_city(city, spacing=args.spacing).statistics()
    print(json.dumps(st, ensure_ascii=False, indent=1) if args.json else format_statistics(st))
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


def run_posegraph_eval(args: argparse.Namespace) -> int:
    """Score the oracle and random agents on a PoseGraph360 suite and print the table."""
    from urban_gym.families.posegraph360.eval_command import evaluate, format_results

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


def _add_judge_agreement(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--suite", default="default", help="PoseGraph360 suite (name or JSONL; default: Helsinki)"
    )
    p.add_argument("--city", default=None, help="city of the suite (default: its tasks')")
    p.add_argument("--runs", nargs="*", default=(), help="run folders whose answers are judged too")
    p.add_argument("--prompt", default=None, help="judge prompt file")
    p.add_argument("--cache", default=None, help="JSONL cache of verdicts")
    p.add_argument("--out", default=None, help="write the agreement report (JSON) here")
    add_lmm_options(p, None, "judge-")


def run_judge_agreement(args: argparse.Namespace) -> int:
    """Print how often the model judge agrees with the deterministic one."""
    from urban_gym.baselines.lmm.client import ClientConfig
    from urban_gym.baselines.lmm.judge import LLMJudge
    from urban_gym.families.posegraph360.judge_agreement import agreement, format_agreement, probes

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


#: The family's sub-commands of ``urban-gym``.
COMMANDS: tuple[FamilyCommand, ...] = (
    FamilyCommand(
        "posegraph360-info",
        "print the statistics of a city's pose graph (nodes, edges, branching, streets, extent)",
        _add_info,
        run_info,
    ),
    FamilyCommand(
        "validate-posegraph",
        "how well a pose graph agrees with the walkable network: node-to-street distances, path-length and turn-sequence agreement",
        _add_validate_posegraph,
        run_validate_posegraph,
    ),
    FamilyCommand(
        "posegraph360-eval",
        "run the oracle and the random agent on a PoseGraph360 suite; scores per task type (an alias of `eval`)",
        _add_posegraph_eval,
        run_posegraph_eval,
    ),
    FamilyCommand(
        "judge-agreement",
        "how often the language-model fuzzy_match judge agrees with the deterministic one on a suite's answers (and runs' answers); Cohen's kappa",
        _add_judge_agreement,
        run_judge_agreement,
    ),
)
