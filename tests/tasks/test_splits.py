"""Held-out splits: by area (no shared destination, no train start in a held-out area)
and by seed (procedural train and test cities differ), and the on-the-fly procedural
suites of every family."""

from types import SimpleNamespace

import gymnasium as gym
import numpy as np
import pytest
from shapely.geometry import Point, box

import urban_gym  # noqa: F401
from urban_gym.families.streetgraph.tasks import ProceduralTasks
from urban_gym.families.streetgraph.tasks.generate import SuiteConfig, generate_od_tasks
from urban_gym.tasks.spec import TaskError
from urban_gym.tasks.splits import (
    HeldOutAreas,
    polygon,
    seeds_of,
    spatial_split,
    split_of_seed,
    task_points,
    write_splits,
)
from urban_gym.tasks.suite import load_suite
from urban_gym.world.geo import GeoFrame


def _task(name, start, goal, dest):
    return SimpleNamespace(id=name, goal={"name": dest}, start=start, goals=[goal])


def _points(t):
    return t.start, t.goals


def test_split_by_area_by_hand():
    areas = HeldOutAreas(test=box(80, 0, 100, 100), val=box(60, 0, 80, 100))
    tasks = [
        _task("a", (10, 10), (20, 20), "Cafe A"),  # train
        _task("b", (90, 10), (95, 20), "Shop B"),  # test
        _task("c", (10, 10), (90, 10), "Shop C"),  # goal held out, start not: dropped
        _task("d", (70, 50), (65, 40), "Bank D"),  # val
        _task("e", (30, 30), (40, 40), "Shop B"),  # train, but B is a test destination
        _task("f", (85, 5), (50, 5), "Park F"),  # starts in the test area: dropped
    ]
    got = spatial_split(tasks, areas, points=_points)
    assert {k: [t.id for t in v] for k, v in got.items()} == {
        "train": ["a"],
        "val": ["d"],
        "test": ["b"],
    }


def test_split_of_seed_and_seeds_are_disjoint():
    assert [split_of_seed(s) for s in (0, 7, 8, 9, 18, 19, 20)] == [
        "train",
        "train",
        "val",
        "test",
        "val",
        "test",
        "train",
    ]
    tr, va, te = (set(seeds_of(s, 20)) for s in ("train", "val", "test"))
    assert len(tr) == len(va) == len(te) == 20
    assert not (tr & te or tr & va or va & te)
    with pytest.raises(TaskError, match="split='dev'"):
        seeds_of("dev", 3)


@pytest.fixture(scope="module")
def city_tasks():
    cfg = SuiteConfig("t", "procedural:seed=5,blocks=8x8", n=60, seed=0, radius=(60.0, 300.0))
    return generate_od_tasks(cfg)


def test_streetgraph_spatial_split_shares_no_destination_and_no_start(city_tasks, tmp_path):
    xs = [task_points(t)[0][0] for t in city_tasks]
    mid = (min(xs) + max(xs)) / 2
    areas = HeldOutAreas(test=box(mid, -1e4, 1e4, 1e4))
    parts = spatial_split(city_tasks, areas)
    train, test = parts["train"], parts["test"]
    assert train and test and len(train) + len(test) < len(city_tasks)
    for t in train:
        start, goals = task_points(t)
        assert not areas.test.covers(Point(start))
        assert not any(areas.test.covers(Point(g)) for g in goals)
    for t in test:
        start, goals = task_points(t)
        assert areas.test.covers(Point(start)) and all(areas.test.covers(Point(g)) for g in goals)
    assert not {t.goal["name"] for t in train} & {t.goal["name"] for t in test}
    assert not {t.start["node"] for t in train} & {t.start["node"] for t in test}
    paths = write_splits(city_tasks, tmp_path / "sg", areas)
    assert sorted(paths) == ["test", "train"]
    assert [t.id for t in load_suite(paths["test"])] == [t.id for t in test]


def test_default_areas_hold_out_the_east(city_tasks):
    parts = spatial_split(city_tasks)
    east = max(task_points(t)[0][0] for t in parts["train"])
    assert parts["test"]
    assert all(task_points(t)[0][0] > east for t in parts["test"])


def test_latlon_polygon_uses_the_frame():
    f = GeoFrame(60.17, 24.94)
    lat, lon = f.to_latlon(100.0, 50.0)
    d = 0.001
    poly = polygon([[lat - d, lon - d], [lat - d, lon + d], [lat + d, lon + d]], True, f)
    assert poly.area > 0 and polygon([[0, 0], [1, 0], [0, 1]]).area == 0.5
    with pytest.raises(TaskError, match="3 or more"):
        polygon([[0, 0], [1, 1]])


def test_procedural_train_and_test_cities_differ():
    train = ProceduralTasks.parse("procedural:blocks=2x2-3x3,split=train,cities=6")
    test = ProceduralTasks.parse("procedural:blocks=2x2-3x3,split=test,cities=6")
    rng = np.random.default_rng(1)
    a = [train.draw(rng) for _ in range(30)]
    b = [test.draw(rng) for _ in range(30)]
    seeds = lambda ts: {t.meta["seed"] for t in ts}  # noqa: E731
    assert seeds(a) <= set(seeds_of("train", 6)) and seeds(b) <= set(seeds_of("test", 6))
    assert not seeds(a) & seeds(b)
    assert not {t.city for t in a} & {t.city for t in b}
    # names repeat between procedural cities, but no place is the same place
    place = lambda ts: {(t.goal["name"], tuple(t.goal["position"])) for t in ts}  # noqa: E731
    assert not place(a) & place(b)


def test_procedural_suite_draws_new_tasks_at_every_reset():
    env = gym.make(
        "UrbanGym/StreetGraph-v0",
        suite="procedural:blocks=2x2-4x4,split=val,cities=4",
        observation="symbolic",
        max_degree=8,
    )
    ids = [env.reset(seed=s)[1]["task_id"] for s in range(40)]
    assert len(set(ids)) == 40
    assert env.reset(seed=3)[1]["task_id"] == ids[3]  # seeded
    env.unwrapped.set_curriculum(2)
    sizes = {env.reset(seed=100 + s)[1]["task"].city.split("blocks=")[1] for s in range(10)}
    assert sizes == {"2x2"}
    o, _ = env.reset(seed=0)
    while True:  # an episode runs to its end
        o, r, term, trunc, info = env.step(int(np.flatnonzero(o["action_mask"])[0]))
        if term or trunc:
            break
    assert "metrics" in info


@pytest.mark.parametrize(
    "spec,msg",
    [
        ("procedural:blocks=4x5", "blocks"),
        ("procedural:split=dev", "split"),
        ("procedural:colour=red", "colour"),
        ("procedural:blocks=1x1", "2x2"),
    ],
)
def test_bad_procedural_specs_are_named(spec, msg):
    with pytest.raises(TaskError, match=msg):
        ProceduralTasks.parse(spec)


def test_citywalk_procedural_suite_holds_out_cities():
    kw = {"goal": "vector"}
    train = gym.make("UrbanGym/CityWalk-NoView-v0", suite="procedural:blocks=2x2,cities=2", **kw)
    test = gym.make(
        "UrbanGym/CityWalk-NoView-v0", suite="procedural:blocks=2x2,cities=2,split=test", **kw
    )
    a = [train.reset(seed=s)[1]["task"] for s in range(6)]
    b = [test.reset(seed=s)[1]["task"] for s in range(6)]
    assert {t.type for t in a + b} == {"SGN"}
    assert all(t.id.startswith("citywalk-proc-train-s") for t in a)
    assert not {t.city for t in a} & {t.city for t in b}
    assert len({t.id for t in a}) > 1


def test_posegraph360_procedural_suite_holds_out_cities():
    kw = {"goal": "vector", "view_size": 16, "pano_width": 64}
    spec = "procedural:blocks=2x2-3x3,cities=2"
    train = gym.make("UrbanGym/PoseGraph360-v0", suite=spec, **kw)
    test = gym.make("UrbanGym/PoseGraph360-v0", suite=spec + ",split=test", **kw)
    a = [train.reset(seed=s)[1]["task"] for s in range(6)]
    b = [test.reset(seed=s)[1]["task"] for s in range(6)]
    assert {t.type for t in a + b} == {"map_navigation"}
    assert all(t.id.startswith("posegraph360-proc-train-s") for t in a)
    assert not {t.city for t in a} & {t.city for t in b}
    assert len({t.id for t in a}) == 6


def test_a_family_without_a_source_refuses_procedural_suites():
    import tests.toy_family as toy

    toy.register()
    try:
        with pytest.raises(TaskError, match="toy_corridor family makes no tasks on the fly"):
            gym.make(toy.ENV_ID, suite="procedural:blocks=2x2")
    finally:
        toy.unregister()
