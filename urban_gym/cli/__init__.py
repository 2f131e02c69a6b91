"""The ``urban-gym`` command.

The core's sub-commands register themselves in :data:`COMMANDS` (name -> (help,
(add_arguments, run))); each family adds its own
(:meth:`~urban_gym.tasks.families.Family.cli_commands`). Each ``run(args)`` returns the
process exit status. Errors of urban_gym's own (:class:`~urban_gym.errors.UrbanGymError`)
are printed as one line and exit with status 2; every other failure is one line too
(:mod:`urban_gym.cli._errors`).
"""

from __future__ import annotations

import argparse

# the sub-command modules register their commands in COMMANDS when imported
from urban_gym.cli import evaluate, serve, train, world  # noqa: F401
from urban_gym.cli._common import COMMANDS, Command, command
from urban_gym.cli._errors import Parser, run_safely
from urban_gym.errors import InputError

__all__ = ["COMMANDS", "all_commands", "build_parser", "command", "main"]


def all_commands() -> dict[str, tuple[str, Command]]:
    """Every sub-command: the core's, then each registered family's (a family command
    that reuses a name already taken is an error naming both).
    """
    from urban_gym.tasks.families import FAMILIES, FamilyCommand

    out = dict(COMMANDS)
    for fam in FAMILIES.values():
        for cmd in fam.cli_commands():
            if not isinstance(cmd, FamilyCommand):
                raise InputError(f"family {fam.name!r}: {cmd!r} is not a FamilyCommand")
            if cmd.name in out:
                raise InputError(f"family {fam.name!r}: the command {cmd.name!r} is taken already")
            out[cmd.name] = (cmd.help, (cmd.add_arguments, cmd.run))
    return out


def build_parser(commands: dict[str, tuple[str, Command]] | None = None) -> argparse.ArgumentParser:
    """The ``urban-gym`` argument parser with every sub-command (:func:`all_commands`)."""
    from urban_gym import __version__

    parser = Parser(prog="urban-gym", description="urban_gym: city navigation environments")
    parser.add_argument("-V", "--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=Parser)
    for name, (help_text, (add, _)) in (commands or all_commands()).items():
        add(sub.add_parser(name, help=help_text, description=help_text))
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the command line ``argv`` (default ``sys.argv[1:]``); returns the exit status."""
    commands = all_commands()
    parser = build_parser(commands)
    args = parser.parse_args(argv)
    _, (_, run) = commands[args.command]
    return run_safely(args.command, lambda: run(args))
