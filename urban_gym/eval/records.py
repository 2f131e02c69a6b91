"""A run on disk: the folder the harness writes and ``urban-gym report`` reads.

::

    RUN_DIR/
      manifest.json            what was run: package version, git commit, env id and kwargs,
                               suite file and its SHA-256, the selected tasks' SHA-256, agent
                               spec and config, seeds; one entry per invocation in "runs"
      episodes.jsonl           one strict-JSON line per finished episode (see below)
      traces/<key>.jsonl       one line per step of that episode (t = 0 is the reset)

**Episode records** (one line each, written whole with
:func:`urban_gym.strict_json.append_line`): ``task_id``, ``seed``, ``repeat`` (the key),
``key`` (the key as a file name), ``agent_seed``, ``family``, ``task_type``,
``difficulty``, ``category``, ``kind``, ``termination``, ``is_success``, ``metrics`` (the
family's ``evaluate``), ``steps``, ``invalid_actions``, ``answer``, ``tokens``,
``goal_seen``, ``start``/``end`` (pose and distance to the goal), ``task_info`` (goal
radius, shortest route length, decision points), ``trace`` (its path relative to the run
folder), ``error`` (when the agent or env failed) and ``timing`` -- the only wall-clock
fields (``wall_s``, ``model_latency_s``, ``finished_at``): records of the same run on
different machines or backends are equal once ``timing`` is dropped (:func:`comparable`).

**Resume.** A killed run leaves at most one torn last line (a line is one ``write`` call);
:meth:`RunDir.read_episodes` drops it -- and cuts it off the file -- so a rerun appends
after the last whole record and skips every key already recorded: nothing is lost or
doubled. A trace is written completely before its record is appended, so every
record's trace is complete (a trace without a record is rewritten by the rerun).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import tempfile
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from urban_gym.errors import UrbanGymError
from urban_gym.strict_json import LineAppender, dumps, json_safe

MANIFEST = "manifest.json"
EPISODES = "episodes.jsonl"
TRACES = "traces"
MANIFEST_FORMAT = 1

#: Manifest entries that say *what* is run: a rerun into the same folder must match them.
IDENTITY_KEYS: tuple[str, ...] = (
    "env_id",
    "env_kwargs",
    "suite",
    "tasks",
    "agent",
    "judge",
    "seeds",
    "seed",
    "seeding",
)
#: Record fields that hold wall-clock values (left out by :func:`comparable`).
TIMING_FIELD = "timing"


class ManifestMismatch(UrbanGymError):
    """A rerun into a run folder whose manifest describes a different run."""


class RecordsError(UrbanGymError):
    """A run folder's records cannot be read (the message names the file and line)."""


def episode_name(task_id: str, seed: int, repeat: int) -> str:
    """The key as a file name: ``<task id>__s<seed>__r<repeat>`` with characters other than
    letters, digits, ``-``, ``_`` and ``.`` replaced by ``_`` (plus a short hash of the id
    when any were replaced, so that two ids never share a name).
    """
    safe = re.sub(r"[^A-Za-z0-9._-]", "_", str(task_id))
    if safe != str(task_id) or safe.startswith("."):
        safe = f"{safe.lstrip('.')}-{hashlib.sha256(str(task_id).encode()).hexdigest()[:8]}"
    return f"{safe}__s{int(seed)}__r{int(repeat)}"


def record_key(record: Mapping[str, Any]) -> tuple[str, int, int]:
    """``(task_id, seed, repeat)`` of an episode record."""
    return (str(record["task_id"]), int(record["seed"]), int(record["repeat"]))


def comparable(record: Mapping[str, Any]) -> dict[str, Any]:
    """``record`` without its wall-clock fields (``timing``), as JSON would read it back."""
    out = {k: v for k, v in record.items() if k != TIMING_FIELD}
    return json.loads(dumps(out))


def sha256_file(path: str | Path) -> str:
    """SHA-256 of a file's bytes (hex)."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def sha256_json(value: Any) -> str:
    """SHA-256 of ``value``'s canonical JSON (sorted keys, strict)."""
    text = json.dumps(json_safe(value), sort_keys=True, ensure_ascii=False, allow_nan=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class RunDir:
    """A run folder (see the module docstring)."""

    def __init__(self, path: str | os.PathLike) -> None:
        self.path = Path(path)
        self._appender: LineAppender | None = None

    @property
    def manifest_path(self) -> Path:
        """``RUN_DIR/manifest.json``."""
        return self.path / MANIFEST

    @property
    def episodes_path(self) -> Path:
        """``RUN_DIR/episodes.jsonl``."""
        return self.path / EPISODES

    @property
    def traces_dir(self) -> Path:
        """``RUN_DIR/traces``."""
        return self.path / TRACES

    def exists(self) -> bool:
        """Whether the folder holds a run (a manifest)."""
        return self.manifest_path.is_file()

    # ------------------------------------------------------------------ manifest
    def read_manifest(self) -> dict[str, Any]:
        """The manifest; :class:`RecordsError` when there is none or it is not JSON."""
        try:
            data = json.loads(self.manifest_path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise RecordsError(f"{self.path}: no {MANIFEST}; is this a run folder?") from None
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise RecordsError(f"{self.manifest_path}: not JSON ({exc})") from None
        if not isinstance(data, dict):
            raise RecordsError(f"{self.manifest_path}: not a JSON object")
        return data

    def write_manifest(self, manifest: Mapping[str, Any]) -> None:
        """Write the manifest atomically (temporary file, then rename)."""
        self.path.mkdir(parents=True, exist_ok=True)
        text = json.dumps(json_safe(manifest), indent=1, ensure_ascii=False, allow_nan=False)
        _atomic_write(self.manifest_path, text + "\n")

    def start(
        self, manifest: dict[str, Any], invocation: dict[str, Any], force: bool = False
    ) -> bool:
        """Begin (or resume) the run described by ``manifest``; returns True when it
        resumes an existing one.

        An existing manifest must agree on :data:`IDENTITY_KEYS`, else
        :class:`ManifestMismatch` lists the differences -- unless ``force``, which moves
        the old run's files into ``superseded-<n>/`` inside the folder (nothing is deleted)
        and starts afresh. ``invocation`` (time, command, backend, versions) is appended to
        the manifest's ``runs``.
        """
        resumed = False
        if self.exists():
            old = self.read_manifest()
            diffs = manifest_differences(old, manifest)
            if diffs and not force:
                raise ManifestMismatch(
                    f"{self.path} holds a different run ({'; '.join(diffs)}); use a new --out "
                    "folder, or --force to move the old run aside and start again"
                )
            if diffs:
                self._supersede()
            else:
                manifest = {**old, "runs": list(old.get("runs", []))}
                resumed = True
        elif self.episodes_path.exists() and not force:
            raise ManifestMismatch(
                f"{self.path} has {EPISODES} but no {MANIFEST}; use a new --out folder or --force"
            )
        elif self.episodes_path.exists():
            self._supersede()
        manifest = dict(manifest)
        manifest["runs"] = [*manifest.get("runs", []), dict(invocation)]
        self.write_manifest(manifest)
        self.traces_dir.mkdir(parents=True, exist_ok=True)
        return resumed

    def _supersede(self) -> Path:
        n = 1
        while (self.path / f"superseded-{n}").exists():
            n += 1
        dest = self.path / f"superseded-{n}"
        dest.mkdir()
        for name in (MANIFEST, EPISODES, TRACES):
            p = self.path / name
            if p.exists():
                p.rename(dest / name)
        return dest

    # ------------------------------------------------------------------ episodes
    def read_episodes(self, repair: bool = False) -> list[dict[str, Any]]:
        """The episode records in file order. A torn last line (bytes after the last
        newline: a writer killed mid-line) is dropped, and with ``repair`` cut off the
        file; a whole line that is not a JSON object is a :class:`RecordsError` naming the
        file and line. When a key occurs twice (never written by the harness) the first
        record is kept.
        """
        p = self.episodes_path
        if not p.exists():
            return []
        data = p.read_bytes()
        whole = data.rfind(b"\n") + 1  # bytes up to the end of the last whole line
        out: list[dict[str, Any]] = []
        seen: set[tuple[str, int, int]] = set()
        for lineno, chunk in enumerate(data[:whole].split(b"\n")[:-1], 1):
            if not chunk.strip():
                continue
            rec = _parse_line(chunk)
            if rec is None:
                raise RecordsError(f"{p}, line {lineno}: not a JSON object: {chunk[:120]!r}")
            try:
                key = record_key(rec)
            except (KeyError, TypeError, ValueError):
                raise RecordsError(
                    f"{p}, line {lineno}: a record without task_id/seed/repeat"
                ) from None
            if key not in seen:
                seen.add(key)
                out.append(rec)
        if repair and whole < len(data):  # a torn last line: cut it off
            with open(p, "r+b") as f:
                f.truncate(whole)
        return out

    def append(self, record: Mapping[str, Any]) -> None:
        """Append one record as one whole line (:class:`urban_gym.strict_json.
        LineAppender`, kept open until :meth:`close`).
        """
        if self._appender is None:
            self._appender = LineAppender(self.episodes_path)
        self._appender.write(strict_line(record))

    def close(self) -> None:
        """Close the episodes file (reopened by the next :meth:`append`)."""
        if self._appender is not None:
            self._appender.close()
            self._appender = None

    # ------------------------------------------------------------------ traces
    def trace_path(self, name: str) -> Path:
        """The trace file of the episode named ``name``."""
        return self.traces_dir / f"{name}.jsonl"

    def write_trace(
        self, name: str, steps: Iterable[Mapping[str, Any]], small_ints: bool = False
    ) -> str:
        """Write an episode's steps (one strict-JSON line each); returns the path relative
        to the run folder. ``small_ints``: the steps hold no integer beyond 64 bits (the
        harness's own traces: :func:`urban_gym.eval.trace.core_action` converts them).
        """
        data = jsonl_bytes(steps, small_ints)
        # written in place: the record that points at a trace is appended only after the
        # trace is complete, and a rerun rewrites the trace of a key without a record
        path = os.path.join(self.traces_dir, f"{name}.jsonl")
        flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_BINARY", 0)
        try:
            fd = os.open(path, flags, 0o644)
        except FileNotFoundError:
            self.traces_dir.mkdir(parents=True, exist_ok=True)
            fd = os.open(path, flags, 0o644)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
        finally:
            os.close(fd)
        return f"{TRACES}/{name}.jsonl"

    def read_trace(self, record_or_path: Mapping[str, Any] | str) -> list[dict[str, Any]]:
        """The steps of an episode (from its record or the relative trace path)."""
        rel = record_or_path if isinstance(record_or_path, str) else record_or_path["trace"]
        p = self.path / rel
        try:
            text = p.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise RecordsError(f"trace {p} is missing") from None
        lines = [line for line in text.splitlines() if line.strip()]
        # fast path: the lines parsed as one JSON array (one call of the C parser), kept
        # when it gives one object per line; else line by line, naming the first bad line
        try:
            steps = json.loads("[" + ",".join(lines) + "]")
        except json.JSONDecodeError:
            steps = None
        if type(steps) is list and len(steps) == len(lines) and all(type(s) is dict for s in steps):
            return steps
        out = []
        for i, line in enumerate(text.splitlines(), 1):
            if line.strip():
                try:
                    out.append(json.loads(line))
                except json.JSONDecodeError as exc:
                    raise RecordsError(f"{p}, line {i}: not JSON ({exc})") from None
        return out


_LINE_BREAKS = ("\u2028", "\u2029", "\x85")
_LONG_DIGITS = re.compile(r"\d{19}")  # an integer that may exceed 64 bits (strict: a string)


def _no_default(value: Any) -> Any:
    raise TypeError(f"{type(value).__name__} is not a JSON type")


def _make_encoder() -> Callable[[Any], str]:
    """``item -> JSON text`` as ``json.JSONEncoder(ensure_ascii=False, allow_nan=False)``
    writes it, with the C encoder built once (``JSONEncoder.encode`` builds one per call,
    which is a third of the cost of a trace line). Values that are not JSON types raise
    ``TypeError``, NaN and the infinities ``ValueError``, cycles ``RecursionError``.
    """
    try:
        from json import encoder as _json_encoder

        make = _json_encoder.c_make_encoder
        if make is None:
            raise ImportError
        c_encode = make(
            None,
            _no_default,
            _json_encoder.encode_basestring,
            None,
            ": ",
            ", ",
            False,
            False,
            False,
        )
    except (ImportError, AttributeError, TypeError):  # pragma: no cover - no C accelerator
        return json.JSONEncoder(ensure_ascii=False, allow_nan=False, default=_no_default).encode

    join = "".join

    def encode(item: Any) -> str:
        return join(c_encode(item, 0))

    return encode


_encode = _make_encoder()


def _strict_text(text: str, small_ints: bool) -> bool:
    """Whether ``text`` (output of the C encoder) is what :func:`urban_gym.strict_json.
    dumps` would write for the same value: no run of 19 digits (unless ``small_ints``),
    and, when not ASCII, UTF-8 encodable (no lone surrogate) and without line separators.
    """
    if not small_ints and _LONG_DIGITS.search(text):
        return False
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            return False
        if any(c in text for c in _LINE_BREAKS):
            return False
    return True


def strict_line(item: Any, small_ints: bool = False) -> str:
    """``item`` as one line of strict JSON, as :func:`urban_gym.strict_json.dumps` writes
    it, for the records this package builds (plain dicts of JSON values, shallow). Fast
    path: the C encoder, kept when its text is strict JSON (no NaN or infinity, only JSON
    types, no lone surrogates, no line-separator characters); anything else (and any line
    with a run of 19 digits, unless ``small_ints`` says the item holds no integer beyond 64
    bits) goes through ``strict_json.dumps``.
    """
    try:
        text = _encode(item)
    except (TypeError, ValueError, RecursionError):
        return dumps(item)
    return text if _strict_text(text, small_ints) else dumps(item)


def jsonl_bytes(items: Iterable[Mapping[str, Any]], small_ints: bool = False) -> bytes:
    """``items`` as UTF-8 JSON lines (:func:`strict_line` each). The checks of the fast
    path run once over the whole text; only when they fail is every line checked alone.
    """
    items = items if isinstance(items, list) else list(items)
    try:
        lines = [_encode(item) for item in items]
    except (TypeError, ValueError, RecursionError):
        lines = None
    if lines is None or not _strict_text(text := "\n".join(lines), small_ints):
        lines = [strict_line(item, small_ints) for item in items]
        text = "\n".join(lines)
    return (text + "\n").encode("utf-8") if lines else b""


def _parse_line(chunk: bytes) -> dict[str, Any] | None:
    try:
        rec = json.loads(chunk.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        return None
    return rec if isinstance(rec, dict) else None


def manifest_differences(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[str]:
    """What differs between two manifests in :data:`IDENTITY_KEYS` (``"key: old -> new"``
    lines, values shortened).
    """
    out = []
    for k in IDENTITY_KEYS:
        a, b = json_safe(old.get(k)), json_safe(new.get(k))
        if a != b:
            out.append(f"{k}: {_short(a)} -> {_short(b)}")
    return out


def _short(v: Any, n: int = 120) -> str:
    s = json.dumps(v, sort_keys=True, ensure_ascii=False)
    return s if len(s) <= n else s[: n - 3] + "..."


def _atomic_write(path: Path, text: str) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


__all__ = [
    "EPISODES",
    "IDENTITY_KEYS",
    "MANIFEST",
    "TRACES",
    "ManifestMismatch",
    "RecordsError",
    "RunDir",
    "comparable",
    "episode_name",
    "manifest_differences",
    "record_key",
    "sha256_file",
    "sha256_json",
]
