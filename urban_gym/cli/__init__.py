"""The ``urban-gym`` command.

Sub-commands register themselves in :data:`COMMANDS` (name -> (add_arguments, run)); each
``run(args)`` returns the process exit status. Errors of urban_gym's own
(:class:`~urban_gym.errors.UrbanGymError`) are printed as one line and exit with status 2.
"""

from __future__ import annotations

import argparse
import sys

# the sub-command modules register their commands in COMMANDS when imported
from urban_gym.cli import evaluate, serve, train, world  # noqa: F401
from urban_gym.cli._common import COMMANDS, command
from urban_gym.errors import UrbanGymError

__all__ = ["COMMANDS", "build_parser", "command", "main"]


def build_parser() -> argparse.ArgumentParser:
    """The ``urban-gym`` argument parser with every registered sub-command."""
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
    """Run the command line ``argv`` (default ``sys.argv[1:]``); returns the exit status."""
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
