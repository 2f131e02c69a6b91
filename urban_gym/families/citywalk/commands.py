"""CityWalk's sub-command of ``urban-gym``: ``citywalk-eval`` (the oracle and the random
agent on a suite, scored per type).
"""

from __future__ import annotations

import argparse
import json

from urban_gym.tasks.families import FamilyCommand


def _add_citywalk_eval(p: argparse.ArgumentParser) -> None:
    p.add_argument("--suite", default=None, help="JSONL suite (default: the Helsinki suite)")
    p.add_argument("--agents", default="oracle,random", help="comma-separated: oracle, random")
    p.add_argument("--types", default=None, help="comma-separated task types (default all)")
    p.add_argument("--seed", type=int, default=0, help="episode seed")
    p.add_argument("--json", action="store_true", help="print the full results as JSON")
    p.add_argument("--out", default=None, help="keep the run folders in OUT/<agent>")


def run_citywalk_eval(args: argparse.Namespace) -> int:
    """Score the oracle and random agents on a CityWalk suite and print the table."""
    from urban_gym.families.citywalk.eval_command import evaluate, format_report

    agents = [a.strip() for a in args.agents.split(",") if a.strip()]
    types = [t.strip() for t in args.types.split(",")] if args.types else None
    res = evaluate(suite=args.suite, agents=agents, seed=args.seed, types=types, out=args.out)
    print(json.dumps(res, indent=1) if args.json else format_report(res))
    return 0


#: The family's sub-commands of ``urban-gym``.
COMMANDS: tuple[FamilyCommand, ...] = (
    FamilyCommand(
        "citywalk-eval",
        "run the CityWalk suite with the oracle and random agents (an alias of `eval`)",
        _add_citywalk_eval,
        run_citywalk_eval,
    ),
)
