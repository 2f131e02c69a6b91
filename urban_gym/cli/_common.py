"""What every ``urban-gym`` sub-command module shares: the registry and argument types."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable

from urban_gym.errors import InputError

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


def json_arg(text: str) -> dict:
    """An argparse type: a JSON object."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise argparse.ArgumentTypeError(f"{text!r} is not JSON: {exc}") from exc
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError(f"{text!r} must be a JSON object")
    return value


def csv_list(text: str | None) -> list[str] | None:
    """Comma-separated items (None when there are none)."""
    if text is None:
        return None
    items = [t.strip() for t in text.split(",") if t.strip()]
    return items or None


def task_ids(text: str | None) -> list[str] | None:
    """``--task-ids``: comma-separated ids, or ``@FILE`` with one id per line."""
    if text is None:
        return None
    if text.startswith("@"):
        from pathlib import Path

        path = Path(text[1:])
        try:
            lines = path.read_text(encoding="utf-8").splitlines()
        except OSError as exc:
            raise InputError(f"--task-ids {text!r}: cannot read {path} ({exc})") from None
        return [x.strip() for x in lines if x.strip() and not x.startswith("#")]
    return csv_list(text)


def task_env_kwargs(args: argparse.Namespace) -> dict:
    """The env kwargs of ``--env-kwargs`` with the task options (suite, types, difficulties)."""
    kwargs = dict(args.env_kwargs or {})
    if args.suite is not None:
        kwargs["suite"] = args.suite
    if args.task_types:
        kwargs["task_types"] = csv_list(args.task_types)
    if args.difficulties:
        kwargs["difficulties"] = csv_list(args.difficulties)
    return kwargs
