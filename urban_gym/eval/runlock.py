"""One writer per run folder: the lock ``urban-gym eval`` holds on its ``--out``.

Two processes writing one run folder record every episode twice (each skips only the keys
recorded when it started). :class:`RunLock` keeps the second one out: a file
``RUN_DIR/run.lock`` holding the holder's process id, host and start time (JSON), locked
with ``flock`` while the holder lives. The kernel lets go of an ``flock`` when its process
dies (``kill -9`` included), so the lock of a dead holder is simply taken over; a live
holder's lock is refused with a message naming its process. Where ``flock`` does not exist
(Windows) the file itself is the lock: it is taken over when the process it names is gone.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import platform
from pathlib import Path
from typing import Any

from urban_gym.errors import RecordsError

try:  # POSIX
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

#: The lock file's name inside a run folder.
LOCK = "run.lock"


def process_alive(pid: int) -> bool:
    """Whether a process with id ``pid`` exists on this machine."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # it exists, under another user
        return True
    except OSError:
        return False
    return True


class RunLock:
    """The lock of the run folder ``folder`` (see the module docstring); use it as a
    context manager, or :meth:`acquire` and :meth:`release`. ``taken_over`` says, after
    :meth:`acquire`, whose stale lock was taken over (the dead holder's entries) or None.
    """

    def __init__(self, folder: str | os.PathLike) -> None:
        self.folder = Path(folder)
        self.path = self.folder / LOCK
        self.taken_over: dict[str, Any] | None = None
        self._fd: int | None = None

    def holder(self) -> dict[str, Any] | None:
        """The entries the lock file holds (``pid``, ``host``, ``started``), or None."""
        try:
            data = json.loads(self.path.read_text(encoding="utf-8") or "null")
        except (OSError, ValueError):
            return None
        return data if isinstance(data, dict) else None

    def _refuse(self, holder: dict[str, Any] | None) -> RecordsError:
        h = holder or {}
        who = f"process {h.get('pid', '?')}"
        if h.get("host"):
            who += f" on {h['host']}"
        if h.get("started"):
            who += f" (since {h['started']})"
        return RecordsError(
            f"{self.folder} is in use by {who}: another urban-gym eval or play writes this "
            "run folder; wait for it to end or stop it, or use another --out"
        )

    def acquire(self) -> RunLock:
        """Take the lock; :class:`RecordsError` naming the holder while it lives."""
        if self._fd is not None:
            return self
        self.folder.mkdir(parents=True, exist_ok=True)
        if fcntl is None:  # pragma: no cover - Windows
            self._acquire_by_pid()
        else:
            self._acquire_flock()
        assert self._fd is not None
        mine = {
            "pid": os.getpid(),
            "host": platform.node(),
            "started": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        }
        os.ftruncate(self._fd, 0)
        os.lseek(self._fd, 0, os.SEEK_SET)
        os.write(self._fd, (json.dumps(mine) + "\n").encode("utf-8"))
        return self

    def _acquire_flock(self) -> None:
        assert fcntl is not None
        while True:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                raise self._refuse(self.holder()) from None
            except OSError:
                os.close(fd)
                raise
            try:  # the file may have been released (unlinked) between open and flock
                same = os.path.samestat(os.fstat(fd), os.stat(self.path))
            except FileNotFoundError:
                same = False
            if same:
                break
            os.close(fd)
        old = self.holder()
        if old and old.get("pid") not in (None, os.getpid()):
            self.taken_over = old
        self._fd = fd

    def _acquire_by_pid(self) -> None:  # pragma: no cover - Windows
        for _ in range(3):
            try:
                self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o644)
                return
            except FileExistsError:
                old = self.holder() or {}
                pid = old.get("pid")
                if isinstance(pid, int) and pid != os.getpid() and process_alive(pid):
                    raise self._refuse(old) from None
                self.taken_over = old
                try:
                    os.unlink(self.path)
                except FileNotFoundError:
                    pass
        raise self._refuse(self.holder())

    def release(self) -> None:
        """Let go of the lock (the file is removed)."""
        if self._fd is None:
            return
        try:
            os.unlink(self.path)
        except OSError:
            pass
        os.close(self._fd)  # closing drops the flock
        self._fd = None

    def __enter__(self) -> RunLock:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()


__all__ = ["LOCK", "RunLock", "process_alive"]
