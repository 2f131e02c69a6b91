"""How the ``urban-gym`` command fails: one line on stderr and a non-zero status, never a
traceback.

* a bad argument (argparse): ``urban-gym CMD: error: argument --seeds: ...``, status 2.
  Every ``type=int`` option is a whole number from 0 to :data:`MAX_COUNT` and every
  ``type=float`` option a finite number (``--seeds 10**26``, ``--timeout nan`` are refused
  while parsing), a ``--port`` one from 0 to 65535;
* urban_gym's own errors (:class:`~urban_gym.errors.UrbanGymError`): status 2;
* an env id that is not registered: the close ones are suggested, status 2;
* the system refusing (a disk full, a folder where a file is wanted, no permission): the
  system's words and the path, status 1;
* Ctrl-C: ``interrupted``, status 130; a worker process that died: status 1;
* anything else: its type and message with ``internal error``, status 1 -- the traceback
  is printed only with ``URBAN_GYM_DEBUG=1``.
"""

from __future__ import annotations

import argparse
import difflib
import math
import os
import sys
import traceback
from collections.abc import Callable
from typing import Any, NoReturn

#: The largest count any option takes (a larger one would run until killed).
MAX_COUNT = 2**31 - 1


def count(text: str) -> int:
    """An argparse type: a whole number from 0 to :data:`MAX_COUNT`."""
    try:
        v = int(text, 10)
    except (TypeError, ValueError):
        raise argparse.ArgumentTypeError(f"{_short(text)} is not a whole number") from None
    if not 0 <= v <= MAX_COUNT:
        raise argparse.ArgumentTypeError(f"{_short(text)} is not from 0 to {MAX_COUNT}")
    return v


def port(text: str) -> int:
    """An argparse type: a TCP port (0: any free one)."""
    v = count(text)
    if v > 65535:
        raise argparse.ArgumentTypeError(f"{v} is not a port (0 to 65535)")
    return v


def finite(text: str) -> float:
    """An argparse type: a finite number."""
    try:
        v = float(text)
    except (TypeError, ValueError):
        raise argparse.ArgumentTypeError(f"{_short(text)} is not a number") from None
    if not math.isfinite(v):
        raise argparse.ArgumentTypeError(f"{_short(text)} is not a finite number")
    return v


def _short(text: Any, limit: int = 40) -> str:
    r = repr(text)
    return r if len(r) <= limit else r[: limit - 4] + "...'"


class Parser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose ints are :func:`count` (``--port``: :func:`port`), whose
    floats are :func:`finite`, and whose errors are one line (status 2).
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.register("type", int, count)
        self.register("type", float, finite)

    def add_argument(self, *args: Any, **kwargs: Any) -> Any:
        """As ``ArgumentParser.add_argument``; a ``--port`` int is a :func:`port`."""
        if kwargs.get("type") is int and "--port" in args:
            kwargs["type"] = port
        return super().add_argument(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        """Print ``PROG: error: message`` as one line and exit with status 2."""
        one = " ".join(message.split())
        self.exit(2, f"{self.prog}: error: {one} (see {self.prog} --help)\n")


def env_id_hint(exc: BaseException) -> str | None:
    """The one-line message of a Gymnasium "no such env" error, with the close ids."""
    import gymnasium as gym

    if not isinstance(exc, gym.error.Error):
        return None
    text = " ".join(str(exc).split())
    words = [w.strip("'\".,:") for w in str(exc).split()]
    known = list(gym.registry)
    asked = next((w for w in words if "/" in w or w.endswith("-v0")), "")
    close = difflib.get_close_matches(asked, known, n=3, cutoff=0.6) if asked else []
    hint = f"; did you mean {', '.join(close)}?" if close else ""
    return f"{text}{hint}"


def run_safely(name: str, run: Callable[[], int]) -> int:
    """``run()``'s status, or the status of its failure after one line on stderr (see the
    module docstring).
    """
    from urban_gym.errors import UrbanGymError

    def fail(message: str, status: int) -> int:
        print(f"urban-gym {name}: error: {' '.join(str(message).split())}", file=sys.stderr)
        return status

    try:
        return run()
    except UrbanGymError as exc:
        return fail(str(exc), 2)
    except BrokenPipeError:  # output piped into `head` and the like
        sys.stderr.close()
        return 0
    except KeyboardInterrupt:
        return fail("interrupted (Ctrl-C)", 130)
    except Exception as exc:
        if os.environ.get("URBAN_GYM_DEBUG"):
            traceback.print_exc()
        hint = env_id_hint(exc)
        if hint is not None:
            return fail(hint, 2)
        if type(exc).__name__ == "BrokenProcessPool":
            return fail(f"a worker process died ({exc}); rerun the command to resume", 1)
        if isinstance(exc, (FileExistsError, NotADirectoryError)) and exc.filename:
            return fail(f"{exc.filename} is a file where a folder is needed", 1)
        if isinstance(exc, OSError):
            where = f": {exc.filename}" if exc.filename else ""
            return fail(f"{exc.strerror or exc}{where}", 1)
        return fail(
            f"internal error: {type(exc).__name__}: {exc} (URBAN_GYM_DEBUG=1 shows where)", 1
        )


__all__ = ["MAX_COUNT", "Parser", "count", "env_id_hint", "finite", "port", "run_safely"]
