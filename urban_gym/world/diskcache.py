"""Values built once per machine: what every process would otherwise compute again.

:func:`cached_array` keeps an array (a texture atlas, a city's ground raster) as a ``.npy``
file under the world cache (:func:`urban_gym.world.loader.cache_dir` ``/render``), named
by what it is and a hash of the source files that build it (so a change to that code
builds it anew), and opens it memory-mapped and read-only: processes on one machine (the
workers of a vector env) share its pages. :func:`cached_object` does the same for any
picklable value (a city's walking geometry, sign boards). Where the folder cannot be
written or a file cannot be read, the value is built in memory, as without a cache.

An array opened once stays open in this process (:data:`_OPENED`): asking for it again
costs one ``stat`` of its file, not a read of its header and a new mapping -- the file's
identity (inode, size, modification time) decides whether the open mapping is still it,
and a file removed since (by a process of another code version dropping the files it
considers stale, or a cleared cache) leaves the mapping in use rather than building the
array again.
"""

from __future__ import annotations

import hashlib
import importlib
import os
import pickle
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

from urban_gym.caching import register_cache

_digests: dict[tuple[str, ...], str] = {}
#: path -> (the file's (inode, size, mtime in ns) when it was opened, its mapped array)
_OPENED: dict[Path, tuple[tuple[int, int, int], np.ndarray]] = {}
_OPENED_LOCK = threading.Lock()
register_cache("world.diskcache.opened_arrays", _OPENED.clear, _OPENED.__len__)


def source_digest(*modules: ModuleType | str) -> str:
    """A short hash of the source files of ``modules`` (modules, or their dotted names:
    imported here), cached per process.
    """
    key = tuple(m if isinstance(m, str) else m.__name__ for m in modules)
    hit = _digests.get(key)
    if hit is None:
        h = hashlib.sha1()
        for name in key:
            h.update(Path(str(importlib.import_module(name).__file__)).read_bytes())
        hit = _digests[key] = h.hexdigest()[:12]
    return hit


def _drop_stale(path: Path, name: str) -> None:
    """Remove the files of ``name`` made by other versions of the drawing code (another
    source digest) beside the fresh ``path``: each change of the code would otherwise leave
    its arrays (some hundreds of MB) behind. Files in use stay readable where they are
    mapped (POSIX keeps an unlinked file until it is closed).
    """
    digest_chars = "?" * 12
    for old in path.parent.glob(f"{name}-{digest_chars}{path.suffix}"):
        if old != path:
            try:
                old.unlink()
            except OSError:
                pass


def cached_for_city(
    kind: str, city: Any, build: Callable[[], Any], *modules: ModuleType | str, key: str = ""
) -> Any:
    """``build()`` for ``city``, kept on disk by :func:`cached_object` when the city has a
    fingerprint (:func:`urban_gym.world.loader.city_fingerprint`: one ``load_city``
    loaded), named ``kind``, the fingerprint and ``key`` (what else the value depends on);
    built in memory for a city without one.
    """
    from urban_gym.world.loader import city_fingerprint

    fp = city_fingerprint(city)
    if fp is None:
        return build()
    digest = hashlib.sha256((fp + key).encode()).hexdigest()[:20]
    return cached_object(f"{kind}-{digest}", build, *modules)


def cached_object(name: str, build: Callable[[], Any], *modules: ModuleType | str) -> Any:
    """``build()`` (any picklable value), kept on disk as ``name`` for the sources of
    ``modules``: the file holds a SHA-256 of its payload and a corrupt or unreadable one is
    built again; an unwritable cache only costs the build.
    """
    from urban_gym.world.loader import cache_dir

    path = cache_dir() / "render" / f"{name}-{source_digest(*modules)}.pkl"
    try:
        data = path.read_bytes()
        if len(data) > 32 and hashlib.sha256(data[32:]).digest() == data[:32]:
            return pickle.loads(data[32:])
    except (OSError, pickle.UnpicklingError, EOFError, ValueError, AttributeError):
        pass  # missing, unreadable or from other code: build it
    value = build()
    try:
        payload = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".pkl.tmp")
        with os.fdopen(fd, "wb") as f:
            f.write(hashlib.sha256(payload).digest() + payload)
        os.replace(tmp, path)
        _drop_stale(path, name)
    except OSError:
        pass
    return value


def cached_array(
    name: str, build: Callable[[], np.ndarray], *modules: ModuleType | str
) -> np.ndarray:
    """``build()``, kept on disk as ``name`` for the sources of ``modules`` (read-only).

    Args:
        name: a file-name-safe name of the array (``"atlas-day-clear"``).
        build: makes the array when no valid file exists.
        modules: the modules whose source decides the array's content.
    """
    path = _array_path(name, modules)
    arr = _open_array(path)
    if arr is not None:
        return arr
    arr = build()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".npy.tmp")
        with os.fdopen(fd, "wb") as f:
            np.save(f, np.ascontiguousarray(arr), allow_pickle=False)
        os.replace(tmp, path)
        _drop_stale(path, name)
        # from the file from now on: its pages are shared and can be dropped, the built
        # array's are neither
        opened = _open_array(path)
        if opened is not None:
            return opened
        raise OSError(f"{path} unreadable after writing it")
    except (OSError, ValueError, EOFError):
        arr.setflags(write=False)
        return arr  # an unwritable cache: the array from memory


def stored_array(name: str, *modules: ModuleType | str) -> np.ndarray | None:
    """The array :func:`cached_array` keeps as ``name`` for the sources of ``modules`` when
    its file exists (memory-mapped, read-only), else None: nothing is built.
    """
    return _open_array(_array_path(name, modules))


def _array_path(name: str, modules: tuple[ModuleType | str, ...]) -> Path:
    from urban_gym.world.loader import cache_dir

    return cache_dir() / "render" / f"{name}-{source_digest(*modules)}.npy"


def _file_id(path: Path) -> tuple[int, int, int] | None:
    """``(inode, size, mtime in ns)`` of ``path``, None when it cannot be read."""
    try:
        st = path.stat()
    except OSError:
        return None
    return st.st_ino, st.st_size, st.st_mtime_ns


def _open_array(path: Path) -> np.ndarray | None:
    """The array of the ``.npy`` file ``path``, memory-mapped read-only: the mapping this
    process opened before while the file is the same one (:data:`_OPENED`), else a new one;
    None when the file is missing, unreadable or empty.
    """
    ident = _file_id(path)
    hit = _OPENED.get(path)
    if hit is not None and (ident is None or hit[0] == ident):
        # the same file, or its file was removed (another version of the code dropping
        # stale files, a cleared cache): the mapping stays readable, and the name says
        # it is this code's array
        return hit[1]
    if ident is None:
        return None
    try:
        arr = np.load(path, mmap_mode="r", allow_pickle=False)
    except (OSError, ValueError, EOFError):
        return None  # unreadable: built again
    if not (isinstance(arr, np.ndarray) and arr.size):
        return None
    with _OPENED_LOCK:
        _OPENED[path] = (ident, arr)
    return arr
