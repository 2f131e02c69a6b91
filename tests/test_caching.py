"""The one in-memory cache (:class:`urban_gym.caching.LRUCache`) and ``clear_caches()``.

Sizes are numpy arrays of known length (``np.zeros(40, np.uint8)`` is 40 bytes), so every
bound and count below can be checked by hand.
"""

from __future__ import annotations

import pickle
import threading
import time

import numpy as np
import pytest

import urban_gym
from urban_gym.caching import (
    CacheStats,
    LRUCache,
    array_nbytes,
    cache_stats,
    lru_cached,
    register_cache,
    registered_caches,
)
from urban_gym.errors import UrbanGymError


def b(n: int) -> np.ndarray:
    """An array of ``n`` bytes."""
    return np.zeros(n, np.uint8)


def test_array_nbytes_sums_arrays_in_tuples() -> None:
    assert array_nbytes(b(40)) == 40
    assert array_nbytes((b(40), [b(2), np.zeros(3, np.float64)], "text", None)) == 66
    assert array_nbytes("not an array") == 0


def test_byte_bound_evicts_least_recent_until_within() -> None:
    c: LRUCache[str, np.ndarray] = LRUCache(max_bytes=100)
    c.put("a", b(40))
    c.put("b", b(40))
    assert (len(c), c.nbytes) == (2, 80)
    c.put("c", b(40))  # 120 > 100: "a" goes
    assert c.keys() == ["b", "c"] and c.nbytes == 80 and c.evictions == 1
    c.put("d", b(90))  # 170 -> drop "b" (130), then "c" (90)
    assert c.keys() == ["d"] and c.nbytes == 90 and c.evictions == 3
    c.put("e", b(101))  # larger than the whole cache: not kept, nothing evicted for it
    assert c.keys() == ["d"] and c.nbytes == 90 and "e" not in c
    c.put("d", b(10))  # replacing a value re-measures it
    assert c.nbytes == 10 and len(c) == 1


def test_zero_byte_bound_keeps_nothing_that_has_bytes() -> None:
    c: LRUCache[str, np.ndarray] = LRUCache(max_bytes=0)
    c.put("a", b(1))
    assert len(c) == 0 and c.nbytes == 0


def test_explicit_nbytes_and_custom_size_function() -> None:
    c: LRUCache[str, str] = LRUCache(max_bytes=10, size=len)
    c.put("a", "12345")
    c.put("b", "123456")  # 11 > 10: "a" goes
    assert c.keys() == ["b"] and c.nbytes == 6
    c.put("c", "x", nbytes=4)  # the caller's count wins over the size function
    assert c.keys() == ["b", "c"] and c.nbytes == 10


def test_eviction_order_follows_use_not_insertion() -> None:
    c: LRUCache[str, int] = LRUCache(max_items=3)
    for k in "abc":
        c.put(k, 0)
    assert c.get("a") == 0  # "a" is now the most recent: "b" is the oldest
    c.put("d", 0)
    assert c.keys() == ["c", "a", "d"]
    assert "b" not in c  # ``in`` neither counts nor touches
    c.put("c", 1)  # a put refreshes too
    c.put("e", 0)
    assert c.keys() == ["d", "c", "e"]


def test_items_and_bytes_bounds_together() -> None:
    c: LRUCache[int, np.ndarray] = LRUCache(max_bytes=100, max_items=2)
    c.put(1, b(10))
    c.put(2, b(10))
    c.put(3, b(10))  # 30 bytes, but 3 items > 2
    assert c.keys() == [2, 3]
    c.put(4, b(85))  # 2 items, 95 bytes > 100? no: 10 + 85 = 95 -> only the count bound
    assert c.keys() == [3, 4] and c.nbytes == 95


def test_hit_miss_and_eviction_counts() -> None:
    c: LRUCache[str, int] = LRUCache(max_items=1)
    assert c.get("a") is None and c.get("a", 7) == 7  # two misses
    c.put("a", 1)
    assert c.get("a") == 1 and c.get("a") == 1  # two hits
    c.put("b", 2)  # evicts "a"
    assert c.get("a") is None  # a third miss
    s = c.stats()
    assert (s.items, s.hits, s.misses, s.evictions) == (1, 2, 3, 1)
    c.clear()  # clear empties, the counters stay
    assert len(c) == 0 and c.stats().hits == 2
    assert c.pop("b") is None


def test_none_is_a_value_not_a_miss() -> None:
    c: LRUCache[str, None] = LRUCache()
    c.put("k", None)
    assert c.get("k", "default") is None and c.hits == 1


def test_get_or_create_builds_once() -> None:
    calls = []
    c: LRUCache[str, np.ndarray] = LRUCache(max_bytes=1000)

    def make() -> np.ndarray:
        calls.append(1)
        return b(5)

    first = c.get_or_create("k", make)
    assert c.get_or_create("k", make) is first
    assert len(calls) == 1 and c.nbytes == 5 and (c.hits, c.misses) == (1, 1)


def test_unbounded_cache_is_a_memo() -> None:
    c: LRUCache[int, np.ndarray] = LRUCache()
    for i in range(500):
        c.put(i, b(1000))
    assert len(c) == 500 and c.nbytes == 500_000 and c.evictions == 0


def test_a_locked_cache_takes_its_lock() -> None:
    """While another holder has the lock, a ``put`` waits; an unlocked cache does not."""
    locked: LRUCache[str, int] = LRUCache(lock=True)
    done = threading.Event()
    with locked._lock:
        t = threading.Thread(target=lambda: (locked.put("k", 1), done.set()))
        t.start()
        assert not done.wait(0.2)  # blocked on the lock
        assert len(locked) == 0
    t.join(5)
    assert done.is_set() and locked.get("k") == 1
    free: LRUCache[str, int] = LRUCache()
    assert not free.locked
    with free._lock:  # a no-op stand-in
        free.put("k", 1)
    assert free.get("k") == 1


def test_locked_cache_stays_consistent_under_threads() -> None:
    c: LRUCache[int, np.ndarray] = LRUCache(max_bytes=800, lock=True)
    sizes = [1, 7, 13, 50, 100]
    gets = [0] * 4

    def work(seed: int) -> None:
        rng = np.random.default_rng(seed)
        for _ in range(2000):
            k = int(rng.integers(40))
            if rng.random() < 0.5:
                c.put(k, b(sizes[k % 5]))
            else:
                c.get(k)
                gets[seed] += 1

    threads = [threading.Thread(target=work, args=(s,)) for s in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert c.nbytes == sum(sizes[k % 5] for k in c.keys()) <= 800
    assert c.hits + c.misses == sum(gets)  # no count lost to a race


def test_get_or_create_races_return_the_first_stored() -> None:
    c: LRUCache[str, object] = LRUCache(lock=True)
    gate = threading.Barrier(4)
    got: list[object] = []

    def make() -> object:
        gate.wait()  # all four build at once
        time.sleep(0.01)
        return object()

    def work() -> None:
        got.append(c.get_or_create("k", make))

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len({id(g) for g in got}) == 1 and got[0] is c.get("k")


def test_pickled_cache_comes_back_empty_with_its_bounds() -> None:
    c: LRUCache[str, np.ndarray] = LRUCache(max_bytes=100, max_items=3, lock=True)
    c.put("a", b(10))
    again = pickle.loads(pickle.dumps(c))
    assert len(again) == 0 and (again.max_bytes, again.max_items, again.locked) == (
        100,
        3,
        True,
    )
    again.put("a", b(10))
    assert again.nbytes == 10


@pytest.mark.parametrize(
    ("kwargs", "bad"),
    [({"max_bytes": -1}, "max_bytes=-1"), ({"max_items": 0}, "max_items=0")],
)
def test_bad_bounds_name_the_value(kwargs: dict, bad: str) -> None:
    with pytest.raises(UrbanGymError, match=bad):
        LRUCache(**kwargs)


def test_lru_cached_function() -> None:
    calls: list[tuple] = []

    @lru_cached(max_items=2, name="tests.caching.square")
    def square(x: int, scale: int = 1) -> int:
        calls.append((x, scale))
        return x * x * scale

    assert [square(2), square(2), square(3), square(2, scale=2)] == [4, 4, 9, 8]
    assert calls == [(2, 1), (3, 1), (2, 2)]  # 2 evicted by the third distinct call
    assert square(2) == 4 and len(calls) == 4
    assert square.cache.max_items == 2
    # 1 hit, 4 misses, 2 entries kept: the other 2 were evicted
    assert cache_stats()["tests.caching.square"] == CacheStats(2, 0, 1, 4, 2)
    square.cache_clear()
    assert len(square.cache) == 0


def test_lru_cached_with_a_byte_bound() -> None:
    calls: list[int] = []

    @lru_cached(max_bytes=100, name="tests.caching.zeros")
    def zeros(n: int) -> np.ndarray:
        calls.append(n)
        return b(n)

    zeros(40)
    zeros(40)
    zeros(50)  # 90 bytes
    zeros(30)  # 120 > 100: the 40 goes (least recently used)
    assert calls == [40, 50, 30] and zeros.cache.keys() == [(50,), (30,)]
    assert zeros.cache.nbytes == 80 and cache_stats()["tests.caching.zeros"].evictions == 1
    zeros(40)  # built again
    assert calls == [40, 50, 30, 40]


def test_clear_caches_empties_a_cache_of_each_layer() -> None:
    """One cache of each layer filled, then ``urban_gym.clear_caches()`` empties them all."""
    from urban_gym.families.citywalk.dynamics import _FIELD_CACHE, distance_field
    from urban_gym.families.posegraph360.world import load_posegraph
    from urban_gym.render.fonts import load_font
    from urban_gym.render.text import text_sprite
    from urban_gym.world import load_city
    from urban_gym.world.routing import Router
    from urban_gym.world.walkable import WalkGeometry

    spec = "procedural:seed=11,blocks=2x2"
    city = load_city(spec)  # world: cities
    load_posegraph(spec)  # world: pose graphs
    WalkGeometry.for_city(city)  # world: walking geometry (a weak cache)
    load_font(17)  # render: fonts
    text_sprite("clear me", 12)  # render: text sprites
    node = next(iter(city.network.nodes))
    target = (float(city.network.nodes[node]["x"]), float(city.network.nodes[node]["y"]))
    distance_field(spec, Router(city), target)  # envs: distance fields
    other: dict[str, int] = {"k": 1}
    register_cache("tests.caching.dict", other.clear, other.__len__)

    layers = [
        "world.cities",
        "world.posegraphs",
        "world.walk_geometry",
        "render.fonts",
        "render.text.sprites",
        "envs.citywalk.distance_fields",
        "tests.caching.dict",
    ]
    before = registered_caches()
    assert all(before[name] >= 1 for name in layers), before
    dropped = urban_gym.clear_caches()
    after = registered_caches()
    assert dropped >= sum(before[name] for name in layers)
    assert {name: after[name] for name in layers} == dict.fromkeys(layers, 0)
    assert len(_FIELD_CACHE) == 0 and other == {}
    # everything refills on demand
    assert load_city(spec).summary() == city.summary()


def test_caching_sits_below_every_layer() -> None:
    """``world`` and up may use it: it imports nothing of urban_gym but its errors."""
    from tests.test_import_graph import all_modules, imported_modules

    modules = all_modules()
    assert imported_modules(modules["urban_gym.caching"], modules) == {"urban_gym.errors"}
    assert "urban_gym.caching" in imported_modules(modules["urban_gym.world.loader"], modules)
