"""Caches kept in memory: one least-recently-used cache, one switch that empties them all.

:class:`LRUCache` is the one in-memory cache of urban_gym: bounded by bytes
(``max_bytes``, measured by a size function), by entries (``max_items``) or both, or
unbounded (a memo), optionally guarded by a lock, counting hits, misses and evictions.
:func:`lru_cached` memoises a function: in an :class:`LRUCache` when bytes bound it, else
in :func:`functools.lru_cache` (C code, five times faster a hit, for the lookups a frame
makes hundreds of). Caches that hold something else (a :class:`weakref.WeakKeyDictionary`
keyed on a city, say) join with :func:`register_cache`.

:func:`clear_caches` (also ``urban_gym.clear_caches``) empties every registered cache in
this process: the worlds and graphs loaded, distance fields, fonts and text sprites,
rendered frames and views. Nothing breaks: each cache refills on demand. The on-disk world
cache stays (see :func:`urban_gym.world.loader.cache_dir`).

This module sits below every layer: it imports nothing of urban_gym but its errors, so
``world`` and everything above it may use it.
"""

from __future__ import annotations

import functools
import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterator
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from urban_gym.errors import InputError

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")
F = TypeVar("F", bound=Callable[..., Any])

_MISSING: Any = object()


def array_nbytes(value: Any) -> int:
    """The bytes held by the numpy arrays in ``value``.

    An object with an ``nbytes`` attribute (a numpy array) counts that many bytes; a
    tuple or list counts the sum over its items (nested); anything else counts 0.
    """
    n = getattr(value, "nbytes", None)
    if isinstance(n, int):
        return n
    if isinstance(value, (tuple, list)):
        return sum(array_nbytes(v) for v in value)
    return 0


@dataclass(frozen=True)
class CacheStats:
    """A snapshot of a cache's counters.

    Attributes:
        items: entries held now.
        nbytes: bytes held now, as measured by the cache's size function.
        hits: lookups that found their key.
        misses: lookups that did not.
        evictions: entries dropped to keep within the bounds (not those of ``clear``).
    """

    items: int
    nbytes: int
    hits: int
    misses: int
    evictions: int


class _NoLock:
    """A stand-in for :class:`threading.Lock` that does nothing (cheaper than a lock)."""

    __slots__ = ()

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


_NO_LOCK = _NoLock()


class LRUCache(Generic[K, V]):
    """A least-recently-used cache bounded by bytes, by entries, or both.

    After each :meth:`put` the least recently used entries are dropped until the cache
    holds at most ``max_bytes`` bytes and ``max_items`` entries. An entry larger than
    ``max_bytes`` on its own is not kept at all, so the byte bound always holds. With
    neither bound the cache is a memo that only :meth:`clear` empties.

    Every cache registers itself (weakly) with :func:`clear_caches`. A pickled cache
    comes back empty, with the same bounds.

    Args:
        max_bytes: the most bytes to hold (as measured by ``size``), or None for no limit.
        max_items: the most entries to hold (at least 1), or None for no limit.
        size: the bytes of a value (default :func:`array_nbytes`: a numpy array's
            ``nbytes``, summed over tuples and lists). Must be picklable (a module-level
            function) if the cache is pickled.
        lock: guard every operation with a lock, for a cache shared between threads.
        name: a dotted name (``"world.cities"``) under which :func:`cache_stats` reports
            the cache; a named cache is process-wide and held strongly by the registry.

    Raises:
        UrbanGymError: a negative ``max_bytes`` or a ``max_items`` below 1.
    """

    def __init__(
        self,
        max_bytes: int | None = None,
        max_items: int | None = None,
        *,
        size: Callable[[Any], int] = array_nbytes,
        lock: bool = False,
        name: str | None = None,
    ) -> None:
        if max_bytes is not None and (int(max_bytes) != max_bytes or max_bytes < 0):
            raise InputError(f"max_bytes={max_bytes!r} must be a whole number >= 0 or None")
        if max_items is not None and (int(max_items) != max_items or max_items < 1):
            raise InputError(f"max_items={max_items!r} must be a whole number >= 1 or None")
        self.max_bytes = None if max_bytes is None else int(max_bytes)
        self.max_items = None if max_items is None else int(max_items)
        self.size = size
        self.locked = bool(lock)
        self.name = name
        self._lock: Any = threading.Lock() if lock else _NO_LOCK
        self._data: OrderedDict[K, tuple[V, int]] = OrderedDict()
        self.nbytes = 0
        self.hits = 0
        self.misses = 0
        self.evictions = 0
        _register_lru(self)

    # ------------------------------------------------------------------ lookups
    def get(self, key: K, default: Any = None) -> V | Any:
        """The value stored under ``key`` (now the most recently used), else ``default``."""
        with self._lock:
            got = self._data.get(key, _MISSING)
            if got is _MISSING:
                self.misses += 1
                return default
            self._data.move_to_end(key)
            self.hits += 1
            return got[0]

    def put(self, key: K, value: V, nbytes: int | None = None) -> None:
        """Store ``value`` under ``key`` (replacing any value there), then evict.

        Args:
            key: a hashable key.
            value: the value to keep.
            nbytes: its size in bytes; by default the cache's size function measures it.
        """
        n = int(self.size(value) if nbytes is None else nbytes)
        with self._lock:
            self._store(key, value, n)

    def get_or_create(self, key: K, make: Callable[[], V]) -> V:
        """The value under ``key``; on a miss, ``make()`` builds it and it is stored.

        ``make`` runs outside the lock, so a slow build does not block other threads'
        lookups; when two threads build the same key at once, both get the value stored
        first.
        """
        got = self.get(key, _MISSING)
        if got is not _MISSING:
            return got
        value = make()
        n = int(self.size(value))
        with self._lock:
            first: Any = self._data.get(key, _MISSING)  # (value, size) or _MISSING
            if first is not _MISSING:
                return first[0]
            self._store(key, value, n)
        return value

    def _store(self, key: K, value: V, n: int) -> None:
        """Store ``value`` of ``n`` bytes under ``key`` and evict (the lock is held)."""
        old = self._data.pop(key, _MISSING)
        if old is not _MISSING:
            self.nbytes -= old[1]
        if self.max_bytes is not None and n > self.max_bytes:
            return  # larger than the whole cache: not kept
        self._data[key] = (value, n)
        self.nbytes += n
        data = self._data
        while data and (
            (self.max_items is not None and len(data) > self.max_items)
            or (self.max_bytes is not None and self.nbytes > self.max_bytes)
        ):
            _, (_, dropped) = data.popitem(last=False)
            self.nbytes -= dropped
            self.evictions += 1

    # ------------------------------------------------------------------ container
    def pop(self, key: K, default: Any = None) -> V | Any:
        """Remove ``key`` and return its value, else ``default`` (counts no hit or miss)."""
        with self._lock:
            got = self._data.pop(key, _MISSING)
            if got is _MISSING:
                return default
            self.nbytes -= got[1]
            return got[0]

    def clear(self) -> None:
        """Drop every entry (the hit, miss and eviction counts stay)."""
        with self._lock:
            self._data.clear()
            self.nbytes = 0

    def keys(self) -> list[K]:
        """The keys, least recently used first."""
        with self._lock:
            return list(self._data)

    def stats(self) -> CacheStats:
        """The cache's counters now."""
        with self._lock:
            return CacheStats(len(self._data), self.nbytes, self.hits, self.misses, self.evictions)

    def __contains__(self, key: object) -> bool:
        """Whether ``key`` is stored (without counting a hit or a miss, or touching it)."""
        return key in self._data

    def __len__(self) -> int:
        """The number of entries held."""
        return len(self._data)

    def __iter__(self) -> Iterator[K]:
        """The keys, least recently used first (a copy: the cache may change meanwhile)."""
        return iter(self.keys())

    def __repr__(self) -> str:
        """``LRUCache(name, items, nbytes / max_bytes, max_items)``."""
        return (
            f"LRUCache({self.name or 'unnamed'}: {len(self._data)} items, "
            f"{self.nbytes} / {self.max_bytes} bytes, max_items={self.max_items})"
        )

    # ------------------------------------------------------------------ pickling
    def __getstate__(self) -> dict[str, Any]:
        """The bounds and settings only: a cache pickles empty."""
        return {
            "max_bytes": self.max_bytes,
            "max_items": self.max_items,
            "size": self.size,
            "lock": self.locked,
        }

    def __setstate__(self, state: dict[str, Any]) -> None:
        """Rebuild an empty cache (unnamed: only the original is process-wide)."""
        type(self).__init__(
            self, state["max_bytes"], state["max_items"], size=state["size"], lock=state["lock"]
        )


class FunctionCache:
    """The cache of a function wrapped by :func:`lru_cached` without a byte bound: a view
    of its :func:`functools.lru_cache` (C code, thread-safe, about 80 ns a hit where a
    Python LRU takes 400 ns: font and text-sprite lookups run hundreds of times a frame).

    It answers the same questions as an :class:`LRUCache`: :meth:`stats`, :meth:`clear`,
    ``len()``, ``max_items``.
    """

    def __init__(self, fn: Any, max_items: int | None, name: str) -> None:
        self._fn = fn
        self.max_items = max_items
        self.max_bytes = None
        self.name = name

    def stats(self) -> CacheStats:
        """The counters now; evictions are the misses whose entry is gone (each miss
        stores one entry, and ``clear`` resets the counters with the entries).
        """
        info = self._fn.cache_info()
        return CacheStats(info.currsize, 0, info.hits, info.misses, info.misses - info.currsize)

    def clear(self) -> None:
        """Drop every entry (and, as :func:`functools.lru_cache` does, the counters)."""
        self._fn.cache_clear()

    def __len__(self) -> int:
        return int(self._fn.cache_info().currsize)


def lru_cached(
    max_items: int | None = None,
    max_bytes: int | None = None,
    *,
    size: Callable[[Any], int] = array_nbytes,
    name: str | None = None,
) -> Callable[[F], F]:
    """Memoise a function of hashable arguments; the cache registers with :func:`clear_caches`.

    With ``max_bytes`` the results are kept in a locked :class:`LRUCache` bounded by
    bytes (and ``max_items``); without, in :func:`functools.lru_cache` of ``max_items``
    (see :class:`FunctionCache`). Either way the wrapped function has ``cache`` (with
    ``stats()``, ``clear()``, ``len()``) and ``cache_clear()``, and :func:`cache_stats`
    reports it by ``name``. Keyword arguments are part of the key (``f(1)`` and ``f(x=1)``
    are cached apart). Values are shared between callers: return immutable ones.

    Args:
        max_items: the most results to keep, or None for no limit.
        max_bytes: the most bytes of results to keep (measured by ``size``), or None.
        size: the bytes of a result (default :func:`array_nbytes`).
        name: the registry name (default: the function's module and qualified name).
    """

    def decorate(fn: F) -> F:
        label = name or f"{fn.__module__}.{fn.__qualname__}"
        if max_bytes is None:
            if max_items is not None and (int(max_items) != max_items or max_items < 1):
                raise InputError(f"max_items={max_items!r} must be a whole number >= 1 or None")
            fast = functools.lru_cache(maxsize=max_items)(fn)
            view = FunctionCache(fast, max_items, label)
            fast.cache = view  # type: ignore[attr-defined]
            _register_named(label, view.clear, view.__len__, view)
            return fast  # type: ignore[return-value]
        cache: LRUCache[Hashable, Any] = LRUCache(
            max_bytes, max_items, size=size, lock=True, name=label
        )
        get = cache.get

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            key = (args, tuple(sorted(kwargs.items()))) if kwargs else args
            got = get(key, _MISSING)
            if got is _MISSING:
                got = fn(*args, **kwargs)
                cache.put(key, got)
            return got

        wrapper.cache = cache  # type: ignore[attr-defined]
        wrapper.cache_clear = cache.clear  # type: ignore[attr-defined]
        return wrapper  # type: ignore[return-value]

    return decorate


# ---------------------------------------------------------------------- the registry
_REGISTRY_LOCK = threading.Lock()
#: Named caches: name -> (a function that empties it, one that counts its entries, the
#: cache object when it has ``stats()``: an LRUCache or a FunctionCache).
_NAMED: dict[str, tuple[Callable[[], None], Callable[[], int], Any]] = {}
#: Every LRUCache alive, named or not (held weakly: an env's caches go with the env).
_ALL_LRU: weakref.WeakSet[LRUCache] = weakref.WeakSet()


def _register_lru(cache: LRUCache) -> None:
    with _REGISTRY_LOCK:
        _ALL_LRU.add(cache)
    if cache.name is not None:
        _register_named(cache.name, cache.clear, cache.__len__, cache)


def _register_named(
    name: str, clear: Callable[[], None], count: Callable[[], int], cache: Any = None
) -> None:
    with _REGISTRY_LOCK:
        _NAMED[name] = (clear, count, cache)


def register_cache(name: str, clear: Callable[[], None], count: Callable[[], int]) -> None:
    """Join a cache that is not an :class:`LRUCache` to :func:`clear_caches`.

    Args:
        name: a dotted name, unique in the process (registering it again replaces it).
        clear: empties the cache.
        count: the number of entries it holds.
    """
    _register_named(name, clear, count)


def registered_caches() -> dict[str, int]:
    """The process-wide (named) caches registered so far and their entry counts."""
    with _REGISTRY_LOCK:
        named = dict(_NAMED)
    return {name: count() for name, (_, count, _) in sorted(named.items())}


def cache_stats() -> dict[str, CacheStats]:
    """The counters of every named cache that keeps them (:class:`LRUCache`, and the
    caches of :func:`lru_cached`).
    """
    with _REGISTRY_LOCK:
        named = dict(_NAMED)
    return {name: c.stats() for name, (_, _, c) in sorted(named.items()) if c is not None}


def clear_caches() -> int:
    """Empty every registered in-memory cache of this process; return the entries dropped.

    That is every :class:`LRUCache` (process-wide ones: worlds, street and pose graphs,
    distance fields; and those of live objects: rendered frames, views, map canvases),
    every :func:`lru_cached` function (fonts, text sprites, wrapped text) and every cache
    joined with :func:`register_cache` (walking geometry). Each refills on demand; the
    on-disk world cache is kept.
    """
    with _REGISTRY_LOCK:
        lrus = list(_ALL_LRU)
        others = [
            (clear, count) for clear, count, c in _NAMED.values() if not isinstance(c, LRUCache)
        ]
    dropped = 0
    for c in lrus:
        dropped += len(c)
        c.clear()
    for clear, count in others:
        dropped += count()
        clear()
    return dropped


__all__ = [
    "CacheStats",
    "FunctionCache",
    "LRUCache",
    "array_nbytes",
    "cache_stats",
    "clear_caches",
    "lru_cached",
    "register_cache",
    "registered_caches",
]
