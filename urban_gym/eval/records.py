"""A run on disk: the folder the harness writes and ``urban-gym report`` reads.

::

    RUN_DIR/
      manifest.json            what was run: package version, git commit, env id and kwargs,
                               suite file and its SHA-256, the selected tasks' SHA-256, agent
                               spec and config, the fuzzy-match judge (rules, or a language
                               model with its prompt's SHA-256: urban_gym.eval.judging),
                               seeds; one entry per invocation in "runs"
      episodes.jsonl           one strict-JSON line per finished episode (see below)
      traces/part-0001.jsonl   the per-step traces: one strict-JSON line per episode (see
                               below), appended by one writer (a process) per part file

**Episode records** (one line each, written whole with
:func:`urban_gym.strict_json.append_line`): ``task_id``, ``seed``, ``repeat`` (the key),
``key`` (the key as a file name), ``agent_seed``, ``family``, ``task_type``,
``difficulty``, ``category``, ``kind``, ``termination``, ``is_success``, ``metrics`` (the
family's ``evaluate``), ``steps``, ``invalid_actions``, ``answer``, ``tokens``,
``goal_seen``, ``start``/``end`` (pose and distance to the goal), ``task_info`` (goal
radius, shortest route length, decision points), ``trace`` (where its trace is: ``file``
relative to the run folder, the ``offset`` of its line in bytes and the line's
``length``), ``error`` (when the agent or env failed) and ``timing`` -- the wall-clock
fields (``wall_s``, ``model_latency_s``, ``finished_at``). Records of the same run on
different machines or backends are equal once ``timing`` and the trace's place (which
part file, at which byte) are dropped (:func:`comparable`).

**Traces** (format 2, :mod:`urban_gym.eval.tracefile`): an episode's trace is one line of
a part file -- its rows (action, validity, goal visibility, the step's other entries) and
its numbers (reward, pose, distance to the goal) -- written by :meth:`RunDir.write_trace`;
:meth:`RunDir.read_trace` gives it back as the step objects :mod:`urban_gym.eval.trace`
describes. It also reads per-episode trace files of format 1 (``traces/<key>.jsonl``,
one step object per line), which a record names by a plain path; it never writes them.
Why one line per episode in a few shared files: a file per episode cost about as much as
the rest of the harness together (creating a file takes up to a millisecond on a disk),
and one call of the C encoder per episode costs a fraction of one object per step.

**Resume.** A killed run leaves at most one torn last line per file (a line is one
``write`` call); :meth:`RunDir.read_episodes` drops it -- and cuts it off the file -- so a
rerun appends after the last whole record and skips every key already recorded: nothing
is lost or doubled. An episode's trace line is written completely before its record is
appended, so every record's trace is complete. A trace without a record (the process was
killed between the two) or a torn last trace line stays where it is, unread: a rerun runs
that episode again and writes its trace into a part file of its own (a writer never
appends to a part file it did not create).

**Damage.** A whole line that is not a strict-JSON object, or whose fields have the wrong
type (:mod:`urban_gym.eval.recordcheck`), makes a reader refuse the folder, naming the
line; a resume moves such lines -- and the records whose trace is gone -- to
``episodes.quarantine.jsonl`` and runs their episodes again. A damaged manifest is named;
``--force`` moves that run aside. One process writes a folder at a time
(:mod:`urban_gym.eval.runlock`). A record's trace is read only from inside the folder
(:meth:`RunDir.inside`).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from urban_gym.errors import ManifestMismatch, RecordsError
from urban_gym.eval.jsonlines import strict_line
from urban_gym.eval.recordcheck import parse_strict, record_problem
from urban_gym.eval.tracefile import (
    TRACE_FORMAT,
    EpisodeTrace,
    TraceAppender,
    TraceFormatError,
    trace_line,
    trace_steps,
)
from urban_gym.strict_json import LineAppender, dumps, json_safe

MANIFEST = "manifest.json"
EPISODES = "episodes.jsonl"
TRACES = "traces"
MANIFEST_FORMAT = 1
#: Where a resume moves the lines of ``episodes.jsonl`` it cannot use.
QUARANTINE = "episodes.quarantine.jsonl"
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
#: The record field that says where the episode's trace is (left out by :func:`comparable`:
#: which part file and byte depend on the process that wrote it and on the order).
TRACE_FIELD = "trace"


def episode_name(task_id: str, seed: int, repeat: int) -> str:
    """The key as a file name: ``<task id>__s<seed>__r<repeat>`` with characters other than
    letters, digits, ``-``, ``_`` and ``.`` replaced by ``_`` (plus a short hash of the id
    when any were replaced, so that two ids never share a name).
    """
    safe = re.sub(r"[^A-Za-z0-9._-]", "_", str(task_id))
    if safe != str(task_id) or safe.startswith("."):
        safe = f"{safe.lstrip('.')}-{hashlib.sha256(str(task_id).encode()).hexdigest()[:8]}"
    return f"{safe}__s{int(seed)}__r{int(repeat)}"


@dataclass(frozen=True)
class EpisodeKey:
    """One episode of a run: ``task_id``, ``seed`` (the env's reset seed), ``repeat``;
    ``index`` is the task's position in the env's task list, ``agent_seed`` the agent's.
    """

    task_id: str
    seed: int
    repeat: int
    index: int
    agent_seed: int

    @property
    def name(self) -> str:
        """The key as a file name (:func:`~urban_gym.eval.records.episode_name`)."""
        return episode_name(self.task_id, self.seed, self.repeat)

    @property
    def key(self) -> tuple[str, int, int]:
        """``(task_id, seed, repeat)``: its record's key (:func:`~urban_gym.eval.records.record_key`)."""
        return (self.task_id, self.seed, self.repeat)


def record_key(record: Mapping[str, Any]) -> tuple[str, int, int]:
    """``(task_id, seed, repeat)`` of an episode record."""
    return (str(record["task_id"]), int(record["seed"]), int(record["repeat"]))


def comparable(record: Mapping[str, Any]) -> dict[str, Any]:
    """``record`` without its wall-clock fields (``timing``) and its trace's place
    (``trace``), as JSON would read it back; compare the traces themselves with
    :meth:`RunDir.read_trace`.
    """
    out = {k: v for k, v in record.items() if k != TIMING_FIELD and k != TRACE_FIELD}
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
        self._traces: TraceAppender | None = None
        #: what the last :meth:`read_episodes` with ``repair`` moved to the quarantine
        self.quarantined: list[str] = []

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
        if not self.manifest_path.exists():
            raise RecordsError(f"{self.path}: no {MANIFEST}; is this a run folder?")
        try:
            data = json.loads(self.inside(MANIFEST, "manifest").read_text(encoding="utf-8"))
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
        and starts afresh; a damaged manifest is a :class:`RecordsError` saying so, and
        ``force`` moves that run aside too. ``invocation`` (time, command, backend, versions) is appended to
        the manifest's ``runs``.
        """
        resumed = False
        if self.exists():
            try:
                old: dict[str, Any] | None = self.read_manifest()
            except RecordsError as exc:
                if not force:
                    raise RecordsError(
                        f"{exc}; --force moves the old run aside (into superseded-<n>/ in "
                        "the folder) and starts afresh"
                    ) from None
                old = None
            diffs = manifest_differences(old, manifest) if old else ["the manifest is damaged"]
            if diffs and not force:
                raise ManifestMismatch(
                    f"{self.path} holds a different run ({'; '.join(diffs)}); use a new --out "
                    "folder, or --force to move the old run aside and start again"
                )
            if diffs or old is None:
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
        file. A whole line that is not a strict-JSON object or whose fields are of the
        wrong type (:func:`urban_gym.eval.recordcheck.record_problem`: ``is_success``
        not a boolean, a NaN score, ...) is a :class:`RecordsError` naming the file and
        its lines -- or, with ``repair`` (a resume), moved to :data:`QUARANTINE` with the
        records whose trace is gone (deleted, cut off): their episodes run again;
        :attr:`quarantined` then says which lines went and why. When a key occurs twice
        (never written by the harness) the first record is kept.
        """
        self.quarantined = []
        p = self.episodes_path
        if not p.exists() and not p.is_symlink():
            return []
        data = self.inside(EPISODES, "records").read_bytes()
        whole = data.rfind(b"\n") + 1  # bytes up to the end of the last whole line
        out: list[dict[str, Any]] = []
        kept: list[bytes] = []
        bad: list[tuple[int, bytes, str]] = []
        seen: set[tuple[str, int, int]] = set()
        traces = _TraceFiles(self)
        for lineno, chunk in enumerate(data[:whole].split(b"\n")[:-1], 1):
            if not chunk.strip():
                continue
            rec, why = parse_strict(chunk)
            if rec is not None:
                why = record_problem(rec) or (traces.problem(rec) if repair else None) or ""
            if why:
                bad.append((lineno, chunk, why))
                continue
            assert rec is not None
            kept.append(chunk)
            key = record_key(rec)
            if key not in seen:
                seen.add(key)
                out.append(rec)
        if bad and not repair:
            raise RecordsError(
                f"{p}, {_lines_text(bad)}; rerunning the run's urban-gym eval command moves "
                f"such lines to {QUARANTINE} (its episodes run again)"
            )
        if repair and bad:
            with open(self.path / QUARANTINE, "ab") as f:
                f.write(b"".join(chunk + b"\n" for _, chunk, _ in bad))
            _atomic_write_bytes(p, b"".join(c + b"\n" for c in kept))
            self.quarantined = [f"line {n}: {why}" for n, _, why in bad]
        elif repair and whole < len(data):  # a torn last line: cut it off
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
        """Close the episodes file and the trace part (reopened by the next
        :meth:`append` / :meth:`write_trace`; a trace goes to a new part then).
        """
        if self._appender is not None:
            self._appender.close()
            self._appender = None
        if self._traces is not None:
            self._traces.close()
            self._traces = None

    # ------------------------------------------------------------------ traces
    def trace_path(self, name: str) -> Path:
        """The format-1 trace file of the episode named ``name`` (read, never written)."""
        return self.traces_dir / f"{name}.jsonl"

    def write_trace(
        self,
        name: str,
        steps: EpisodeTrace | Iterable[Mapping[str, Any]],
        small_ints: bool = False,
    ) -> dict[str, Any]:
        """Append the trace of the episode named ``name`` -- an :class:`EpisodeTrace` (the
        harness's rows) or its step objects -- as one line of this writer's part file;
        returns where it is (the record's ``trace``: ``file``, ``offset``, ``length``).
        ``small_ints``: the trace holds no integer beyond 64 bits (the harness's own:
        :func:`urban_gym.eval.trace.core_action` converts them).
        """
        data = trace_line(name, steps, small_ints)
        if self._traces is None:
            self._traces = TraceAppender(self.traces_dir)
        return self._traces.write(data)

    def read_trace(self, record_or_path: Mapping[str, Any] | str) -> list[dict[str, Any]]:
        """The steps of an episode (see :mod:`urban_gym.eval.trace`): from its record, or
        from its record's ``trace`` (a place in a part file, or the relative path of a
        format-1 trace file). :class:`RecordsError` when the trace is missing, cut off,
        not JSON, or the trace of another episode.
        """
        where = record_or_path
        key = None
        if isinstance(where, Mapping) and TRACE_FIELD in where:
            key = where.get("key")
            where = where[TRACE_FIELD]
        if isinstance(where, str):
            return self._read_trace_file(where)
        if not isinstance(where, Mapping) or "file" not in where:
            raise RecordsError(f"{self.path}: {where!r} does not say where a trace is")
        obj = self._read_trace_line(where, key)
        try:
            return trace_steps(obj)
        except TraceFormatError as exc:
            raise RecordsError(
                f"{self.path / str(where['file'])}: trace of {key!r}: {exc}"
            ) from None

    def inside(self, rel: Any, what: str = "trace") -> Path:
        """The file ``rel`` (a path relative to the run folder, as a record names its
        trace) resolved inside the folder; :class:`RecordsError` for a path that leads
        out of it (absolute, ``..``, a link pointing outside) or that is not a regular
        file (a device such as ``/dev/zero``, a folder). ``what`` names it in the message.
        """
        text = str(rel)
        root = self.path.resolve()
        p = (root / text).resolve()
        if Path(text).is_absolute() or (p != root and root not in p.parents):
            raise RecordsError(f"{self.path}: {what} path {text!r} leads outside the run folder")
        if not p.exists():
            raise RecordsError(f"{what} {self.path / text} is missing")
        if not p.is_file():
            raise RecordsError(f"{self.path}: {what} path {text!r} is not a file")
        return p

    def _read_trace_line(self, where: Mapping[str, Any], key: Any) -> dict[str, Any]:
        p = self.inside(where["file"])
        try:
            offset, length = int(where["offset"]), int(where["length"])
            if offset < 0 or length < 1:
                raise ValueError("a negative offset or a length below 1")
            with open(p, "rb") as f:
                size = os.fstat(f.fileno()).st_size
                f.seek(offset)
                data = f.read(max(0, min(length, size - offset)))  # never past the end
        except FileNotFoundError:
            raise RecordsError(f"trace {p} is missing") from None
        except (KeyError, TypeError, ValueError, OverflowError, OSError) as exc:
            raise RecordsError(f"trace {p}, place {dict(where)!r}: {exc}") from None
        at = f"{p}, byte {offset}"
        if len(data) < length or not data.endswith(b"\n"):
            raise RecordsError(f"{at}: the trace is cut off ({len(data)} of {length} bytes)")
        obj = _parse_line(data)
        if obj is None:
            raise RecordsError(f"{at}: not a JSON object: {data[:120]!r}")
        if key is not None and obj.get("key") != key:
            raise RecordsError(f"{at}: the trace of {obj.get('key')!r}, not of {key!r}")
        return obj

    def _read_trace_file(self, rel: str) -> list[dict[str, Any]]:
        """A format-1 trace: one step object per line."""
        p = self.inside(rel)
        try:
            text = p.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise RecordsError(f"trace {p} is missing") from None
        except (OSError, UnicodeDecodeError) as exc:
            raise RecordsError(f"trace {p}: {exc}") from None
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


class _TraceFiles:
    """Whether a record's trace is still there (its file, long enough), each file
    looked at once.
    """

    def __init__(self, run_dir: RunDir) -> None:
        self.run_dir = run_dir
        self.sizes: dict[str, int | None] = {}

    def size(self, rel: str) -> int | None:
        if rel not in self.sizes:
            try:
                self.sizes[rel] = self.run_dir.inside(rel).stat().st_size
            except (RecordsError, OSError):
                self.sizes[rel] = None
        return self.sizes[rel]

    def problem(self, record: Mapping[str, Any]) -> str | None:
        """None when the record's trace is in place, else what is wrong."""
        where = record.get(TRACE_FIELD)
        if where is None:
            return None
        if isinstance(where, str):
            return None if self.size(where) is not None else f"its trace {where} is gone"
        if not isinstance(where, Mapping) or "file" not in where:
            return f"trace is {json.dumps(where)[:60]}, not a place in a file"
        size = self.size(str(where["file"]))
        if size is None:
            return f"its trace file {where['file']} is gone"
        offset, length = where.get("offset"), where.get("length")
        if not (type(offset) is int and type(length) is int and offset >= 0 and length > 0):
            return f"its trace's place {json.dumps(dict(where))[:80]} is not a place in a file"
        if offset + length > size:
            return f"its trace in {where['file']} is cut off"
        return None


def _lines_text(bad: list[tuple[int, bytes, str]], most: int = 5) -> str:
    """``line 3: why; line 7: why`` for the first ``most`` bad lines (and how many more)."""
    text = "; ".join(f"line {n}: {why}" for n, _, why in bad[:most])
    return text + (f"; and {len(bad) - most} more bad lines" if len(bad) > most else "")


def _parse_line(chunk: bytes) -> dict[str, Any] | None:
    try:
        rec = json.loads(chunk.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        return None
    return rec if isinstance(rec, dict) else None


def manifest_differences(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[str]:
    """What differs between two manifests in :data:`IDENTITY_KEYS` (``"key: old -> new"``
    lines, values shortened). Judges compare by :func:`urban_gym.eval.judging.same_judge`
    (an older run's ``null`` judge is the rules judge).
    """
    from urban_gym.eval.judging import same_judge

    out = []
    for k in IDENTITY_KEYS:
        a, b = json_safe(old.get(k)), json_safe(new.get(k))
        if k == "judge" and same_judge(a, b):  # null (an older run) is the rules judge
            continue
        if a != b:
            out.append(f"{k}: {_short(a)} -> {_short(b)}")
    return out


def _short(v: Any, n: int = 120) -> str:
    s = json.dumps(v, sort_keys=True, ensure_ascii=False)
    return s if len(s) <= n else s[: n - 3] + "..."


def _atomic_write(path: Path, text: str) -> None:
    _atomic_write_bytes(path, text.encode("utf-8"))


def _atomic_write_bytes(path: Path, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
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
    "QUARANTINE",
    "TRACES",
    "TRACE_FORMAT",
    "EpisodeTrace",
    "ManifestMismatch",
    "RecordsError",
    "RunDir",
    "comparable",
    "episode_name",
    "manifest_differences",
    "record_key",
    "sha256_file",
    "sha256_json",
    "strict_line",
]
