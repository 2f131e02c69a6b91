"""``UrbanGym/StreetGraph-Touchdown-v0``: the shipped Touchdown graph, ``urban-gym data
touchdown`` against a real loopback HTTP server, the env on installed routes, and
Touchdown's metrics on hand-checkable graphs.

The route files served here are ``tests/families/streetgraph/touchdown_fixture/*.json``:
routes written by these tests on the panorama ids of Touchdown's real graph (each line
says so in its ``fixture`` field), not Touchdown's data.
"""

from __future__ import annotations

import hashlib
import json
import math
import socket
import threading
from collections.abc import Iterator
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

from urban_gym.cli import main
from urban_gym.errors import InputError, MissingFileError
from urban_gym.families.streetgraph.oracle import StreetGraphOracle
from urban_gym.families.streetgraph.tasks import EpisodeOutcome, evaluate, instruction_tasks
from urban_gym.families.streetgraph.tasks.evaluate import graph_of, hop_costs
from urban_gym.families.streetgraph.tasks.touchdown import (
    BLOB_SHA1,
    touchdown_graph_path,
    touchdown_spec,
)
from urban_gym.families.streetgraph.touchdown_install import git_blob_sha1, install_touchdown
from urban_gym.families.streetgraph.world import StreetGraphError, load_streetgraph
from urban_gym.tasks import metrics as M

FIXTURE = Path(__file__).parent / "touchdown_fixture"
ENV_ID = "UrbanGym/StreetGraph-Touchdown-v0"
ROOT = Path(__file__).resolve().parents[3]


def fixture_routes(split: str) -> list[dict]:
    """The fixture routes of a split, as written in the file."""
    lines = (FIXTURE / f"{split}.json").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        pass


@pytest.fixture
def http_dir(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """A real loopback HTTP server (stdlib, port 0) serving a fresh folder: yields its
    base URL and the folder.
    """
    root = tmp_path / "served"
    root.mkdir()
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), partial(_Quiet, directory=str(root)))
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/data", root
    finally:
        httpd.shutdown()
        httpd.server_close()


def serve_fixture(root: Path) -> None:
    """Put the fixture files under ``root/data``."""
    (root / "data").mkdir()
    for split in ("train", "dev", "test"):
        (root / "data" / f"{split}.json").write_bytes((FIXTURE / f"{split}.json").read_bytes())


@pytest.fixture
def installed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The fixture routes installed (from the folder) into a fresh URBAN_GYM_DATA."""
    monkeypatch.setenv("URBAN_GYM_DATA", str(tmp_path / "userdata"))
    install_touchdown(FIXTURE, allow_unverified=True)
    return tmp_path / "userdata" / "touchdown"


# ---------------------------------------------------------------- the shipped graph
def test_the_shipped_graph_is_touchdowns_with_its_licence():
    d = touchdown_graph_path()
    assert sorted(p.name for p in d.iterdir()) == ["LICENSE.txt", "links.txt.xz", "nodes.txt.xz"]
    assert "Attribution 4.0 International" in (d / "LICENSE.txt").read_text(encoding="utf-8")
    g = load_streetgraph(touchdown_spec())
    # Touchdown's graph/nodes.txt has 29,641 lines, graph/links.txt 61,319; three links
    # have no reverse, which the spec adds
    assert g.num_nodes == 29641
    assert len(g.src) == 61319 + 3
    # the first line of nodes.txt: HgFMRzAguxKiBHkwCQ_TgQ,117,40.742253,-73.991273
    i = g.index["HgFMRzAguxKiBHkwCQ_TgQ"]
    assert g.latlon[i].tolist() == [40.742253, -73.991273]
    # links.txt: HgFMRzAguxKiBHkwCQ_TgQ,297,dRcwDM5CITnKzxelOixO2Q
    j = g.index["dRcwDM5CITnKzxelOixO2Q"]
    assert g.has_link(i, j) and g.link_heading(i, j) == 297.0
    for notice in (ROOT / "NOTICE", ROOT / "urban_gym" / "data" / "NOTICE"):
        text = notice.read_text(encoding="utf-8")
        assert "lil-lab/touchdown" in text and "CC BY 4.0" in text


def test_an_xz_compressed_graph_reads_like_the_plain_one(tmp_path: Path):
    import lzma

    nodes = "a,0,40.0,-73.0\nb,0,40.0001,-73.0\n"
    links = "a,0,b\nb,180,a\n"
    plain, packed = tmp_path / "plain", tmp_path / "packed"
    for d in (plain, packed):
        d.mkdir()
    (plain / "nodes.txt").write_text(nodes)
    (plain / "links.txt").write_text(links)
    (packed / "nodes.txt.xz").write_bytes(lzma.compress(nodes.encode()))
    (packed / "links.txt.xz").write_bytes(lzma.compress(links.encode()))
    spec = {"source": "touchdown", "prune": False, "largest_component": False}
    a = load_streetgraph({**spec, "path": str(plain)})
    b = load_streetgraph({**spec, "path": str(packed)})
    assert a.ids == b.ids == ["a", "b"]
    assert a.src.tolist() == b.src.tolist() and a.heading.tolist() == b.heading.tolist()


# ---------------------------------------------------------------- urban-gym data touchdown
def test_git_blob_sha1_of_hello(tmp_path: Path):
    # `printf 'hello\n' | git hash-object --stdin`
    p = tmp_path / "hello"
    p.write_bytes(b"hello\n")
    assert git_blob_sha1(p) == "ce013625030ba8dba906f756967f9e9ca394464a"


def test_data_touchdown_installs_from_a_server_with_progress(
    http_dir, tmp_path, monkeypatch, capsys
):
    url, root = http_dir
    serve_fixture(root)
    monkeypatch.setenv("URBAN_GYM_DATA", str(tmp_path / "userdata"))
    assert main(["data", "touchdown", "--source", url, "--unverified"]) == 0
    out, err = capsys.readouterr()
    dest = tmp_path / "userdata" / "touchdown"
    for split in ("train", "dev", "test"):
        assert (dest / f"{split}.json").read_bytes() == (FIXTURE / f"{split}.json").read_bytes()
        size = (FIXTURE / f"{split}.json").stat().st_size
        assert f"{split}.json: {size / 1e6:.2f} / {size / 1e6:.2f} MB (100%)" in err
    assert "dev: 4 routes (4 on the graph)" in out and "UNVERIFIED" in out
    man = json.loads((dest / "manifest.json").read_text())
    dev = man["files"]["dev"]
    assert dev["routes"] == 4 and dev["routes_on_graph"] == 4 and dev["verified"] is False
    assert dev["sha256"] == hashlib.sha256((FIXTURE / "dev.json").read_bytes()).hexdigest()
    assert dev["source"] == url + "/dev.json"
    assert man["commit"] == "2ad8ef2664d1aa8ff1a8eebf88b9e88b2cb1d1c6"
    assert not list(dest.glob("*.part"))


def test_data_touchdown_refuses_a_file_that_is_not_touchdowns(
    http_dir, tmp_path, monkeypatch, capsys
):
    url, root = http_dir
    serve_fixture(root)
    monkeypatch.setenv("URBAN_GYM_DATA", str(tmp_path / "userdata"))
    assert main(["data", "touchdown", "--source", url]) == 2
    err = capsys.readouterr().err
    assert BLOB_SHA1["train"] in err and "--unverified" in err
    assert not (tmp_path / "userdata" / "touchdown" / "train.json").exists()


def test_a_file_with_touchdowns_hash_is_verified(http_dir, tmp_path, monkeypatch):
    # the check compares git blob SHA-1s: give the fixture's as the published one
    url, root = http_dir
    serve_fixture(root)
    content = (FIXTURE / "dev.json").read_bytes()
    blob = hashlib.sha1(b"blob %d\0" % len(content) + content).hexdigest()
    monkeypatch.setitem(BLOB_SHA1, "dev", blob)
    rep = install_touchdown(url, data_dir=tmp_path / "d", splits=["dev"])
    assert [(f.split, f.verified) for f in rep.files] == [("dev", True)]


def test_data_touchdown_names_the_bad_line(http_dir, tmp_path):
    url, root = http_dir
    serve_fixture(root)
    lines = (FIXTURE / "dev.json").read_text().splitlines()
    bad = json.loads(lines[1])
    del bad["navigation_text"]
    lines[1] = json.dumps(bad)
    (root / "data" / "dev.json").write_text("\n".join(lines) + "\n")
    with pytest.raises(StreetGraphError, match=r"dev\.json, line 2: navigation_text=None"):
        install_touchdown(url, data_dir=tmp_path / "d", splits=["dev"], allow_unverified=True)
    assert not (tmp_path / "d" / "dev.json").exists()


def test_data_touchdown_404_and_offline(http_dir, tmp_path):
    url, _ = http_dir
    with pytest.raises(MissingFileError, match=r"dev\.json: HTTP 404"):
        install_touchdown(url, data_dir=tmp_path / "d", splits=["dev"])
    with socket.socket() as s:  # a port nothing listens on: connection refused
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(MissingFileError, match=r"may be offline.*--source DIR"):
        install_touchdown(f"http://127.0.0.1:{port}/data", data_dir=tmp_path / "d", timeout=5)
    with pytest.raises(MissingFileError, match="must be a folder holding"):
        install_touchdown(tmp_path / "nowhere", data_dir=tmp_path / "d")
    with pytest.raises(InputError, match="split='val'"):
        install_touchdown(FIXTURE, data_dir=tmp_path / "d", splits=["val"])


# ---------------------------------------------------------------- the env
def test_make_without_installed_data_names_the_command(tmp_path, monkeypatch):
    monkeypatch.setenv("URBAN_GYM_DATA", str(tmp_path / "empty"))
    with pytest.raises(MissingFileError, match=r"urban-gym data touchdown"):
        gym.make(ENV_ID)


def test_the_tasks_are_the_installed_routes(installed):
    env = gym.make(ENV_ID)
    u = env.unwrapped
    dev = fixture_routes("dev")
    assert [t.id for t in u.tasks] == [f"touchdown-dev-{r['route_id']}" for r in dev]
    t = u.tasks[0]
    assert t.instruction == dev[0]["navigation_text"]
    assert t.goal["route"] == dev[0]["route_panoids"]
    assert t.start["node"] == dev[0]["route_panoids"][0]
    assert t.meta["split"] == "dev" and t.city == "touchdown:manhattan"
    obs, info = env.reset(options={"task_index": 0})
    assert "views" not in obs  # no panoramas given: symbolic
    assert obs["heading"][0] == pytest.approx(dev[0]["start_heading"])
    assert info["node"] == dev[0]["route_panoids"][0]
    assert len(gym.make(ENV_ID, split="train").unwrapped.tasks) == 3
    with pytest.raises(InputError, match="split='val'"):
        gym.make(ENV_ID, split="val")
    with pytest.raises(InputError, match="suite='touchdown'"):
        gym.make("UrbanGym/StreetGraph-v0", split="dev")


def test_oracle_and_random_through_urban_gym_eval(installed, tmp_path, capsys):
    for agent in ("oracle", "random"):
        out = tmp_path / agent
        assert main(["eval", ENV_ID, "--agent", agent, "--out", str(out), "--no-progress"]) == 0
    recs = [
        json.loads(x) for x in (tmp_path / "oracle" / "episodes.jsonl").read_text().splitlines()
    ]
    assert len(recs) == 4
    for r in recs:
        m = r["metrics"]
        assert r["is_success"] and m["task_completion"] == 1.0 and m["spd"] == 0
        assert m["ndtw"] == 1.0 and m["sdtw"] == 1.0 and m["spl"] == pytest.approx(1.0)
    rnd = [json.loads(x) for x in (tmp_path / "random" / "episodes.jsonl").read_text().splitlines()]
    for r in rnd:
        m = r["metrics"]
        assert 0.0 <= m["ndtw"] <= 1.0 and m["spd"] >= 0
        assert m["task_completion"] == float(r["is_success"]) and m["spl"] <= m["task_completion"]
    capsys.readouterr()
    rep = tmp_path / "report"
    assert (
        main(["report", str(tmp_path / "oracle"), str(tmp_path / "random"), "--out", str(rep)]) == 0
    )
    md = (rep / "report.md").read_text()
    assert "| tasks | episodes | TC | SPD (links) | SPL | nDTW | SDTW |" in md
    assert (
        "| 4 | 4 | 100.0% [100.0, 100.0] | 0.000 [0.000, 0.000] | 1.000 [1.000, 1.000] | 1.000 [1.000, 1.000] |"
        in md
    )


def test_real_panoramas_give_views_of_the_current_panorama(installed, tmp_path):
    import cv2

    route = fixture_routes("dev")[0]["route_panoids"]
    pics = tmp_path / "panos"
    pics.mkdir()
    colours = {}
    for k, pid in enumerate(route):
        c = (10 * k + 5, 200 - 10 * k, 100)
        colours[pid] = c
        img = np.zeros((64, 128, 3), np.uint8)
        img[:] = c[::-1]  # BGR on disk
        cv2.imwrite(str(pics / f"{pid}.png"), img)
    env = gym.make(ENV_ID, images=str(pics), image_size=32)
    obs, info = env.reset(options={"task_index": 0})
    oracle = StreetGraphOracle()
    oracle.reset(env)
    for _ in range(len(route) - 1):
        n = len(info["option_bearings"])
        assert obs["views"][:n].reshape(-1, 3).tolist() == [list(colours[info["node"]])] * (
            n * 32 * 32
        )
        obs, _, term, _, info = env.step(oracle.act(env))
        assert not term
    assert info["node"] == route[-1]


# ---------------------------------------------------------------- metrics by hand
def _line_tasks(tmp_path: Path) -> tuple:
    """Panoramas a-b-c-d on a meridian, 0.0001 deg (about 11 m) apart, linked both ways;
    the route a, b, c.
    """
    d = tmp_path / "line"
    d.mkdir()
    (d / "nodes.txt").write_text(
        "".join(f"{n},0,{40 + 0.0001 * k:.4f},-73.0\n" for k, n in enumerate("abcd"))
    )
    (d / "links.txt").write_text("a,0,b\nb,180,a\nb,0,c\nc,180,b\nc,0,d\nd,180,c\n")
    routes = tmp_path / "routes.json"
    routes.write_text(
        json.dumps(
            {
                "route_id": 1,
                "route_panoids": list("abc"),
                "navigation_text": "north",
                "start_heading": 0,
            }
        )
        + "\n"
    )
    (task,) = instruction_tasks(d, routes)
    g = graph_of(task)
    return task, g


def test_hop_costs_and_dtw_by_hand(tmp_path):
    task, g = _line_tasks(tmp_path)
    a, b, c, d = (g.index[n] for n in "abcd")
    cost = hop_costs(g, [a, b, c, d], [a, b, c])
    assert cost == [[0, 1, 2], [1, 0, 1], [2, 1, 0], [3, 2, 1]]
    # the best warping pairs a-a, b-b, c-c, d-c: DTW = 1
    assert M.dtw_of_costs(cost) == 1.0
    assert M.ndtw_of_costs(cost, 1.0) == pytest.approx(math.exp(-1 / 3))
    assert M.ndtw_of_costs(cost, 2.0) == pytest.approx(math.exp(-1 / 6))


def test_touchdown_metrics_by_hand(tmp_path):
    task, g = _line_tasks(tmp_path)
    a, b, c, d = (g.index[n] for n in "abcd")
    step = g.path_length([a, b])
    # overshoot: a, b, c, d and stop on d, a neighbour of the goal c
    out = EpisodeOutcome(
        node=d,
        trajectory=[a, b, c, d],
        distance_m=3 * step,
        shortest_m=2 * step,
        remaining_m=step,
        remaining_hops=1,
        dtw_threshold=1.0,
        dtw_distance="hops",
    )
    m = evaluate(task, out)
    assert m["task_completion"] == 1.0  # Touchdown: the goal or a neighbour of it
    assert m["spd"] == 1
    assert m["spl"] == pytest.approx(2 / 3)
    assert m["ndtw"] == pytest.approx(math.exp(-1 / 3))
    assert m["sdtw"] == pytest.approx(math.exp(-1 / 3))
    # stopping at the start, two links short: no completion, SPD 2
    short = EpisodeOutcome(
        node=a,
        trajectory=[a],
        distance_m=0.0,
        shortest_m=2 * step,
        remaining_m=2 * step,
        remaining_hops=2,
        dtw_threshold=1.0,
        dtw_distance="hops",
    )
    m = evaluate(task, short)
    # DTW of [a] against [a, b, c]: 0 + 1 + 2 = 3
    assert (m["task_completion"], m["spd"], m["spl"], m["sdtw"]) == (0.0, 2, 0.0, 0.0)
    assert m["ndtw"] == pytest.approx(math.exp(-3 / 3))


def test_the_language_model_face_is_sent_the_navigation_text(installed):
    from urban_gym.baselines.lmm import LMMAgent, ScriptedServer
    from urban_gym.eval.trace import run_episode

    route = fixture_routes("dev")[1]
    with ScriptedServer(ENV_ID, wrap="mixed", record_requests=True) as server:
        agent = LMMAgent(base_url=server.url, model="scripted")
        face = agent.wrap(gym.make(ENV_ID))
        record, _ = run_episode(face, agent, seed=0, options={"task_index": 1})
        first = json.dumps(server.recorded[0]["messages"], ensure_ascii=False)
    assert route["navigation_text"] in first
    # the scripted oracle replies: one link per step along the route, then stop
    assert record["is_success"] and record["steps"] == len(route["route_panoids"])
    assert record["metrics"]["ndtw"] == 1.0 and record["metrics"]["task_completion"] == 1.0


def _first_request(env_id: str, env_kwargs: dict, options: dict) -> tuple[str, str, dict]:
    """The system and user texts of the first request the language-model face sends on
    ``env_id`` to a real loopback :class:`ScriptedServer`, and the episode's record.
    """
    from urban_gym.baselines.lmm import LMMAgent, ScriptedServer
    from urban_gym.eval.trace import run_episode

    with ScriptedServer(env_id, env_kwargs, wrap="mixed", record_requests=True) as server:
        agent = LMMAgent(base_url=server.url, model="scripted")
        face = agent.wrap(gym.make(env_id, **env_kwargs))
        record, _ = run_episode(face, agent, seed=0, options=options)
        system, user = server.recorded[0]["messages"][:2]
    text = user["content"]
    if not isinstance(text, str):
        text = "\n".join(p.get("text", "") for p in text if p.get("type") == "text")
    return system["content"], text, record


def test_an_instruction_task_is_prompted_as_directions_to_follow(installed):
    system, user, record = _first_request(ENV_ID, {}, {"task_index": 1})
    # Touchdown's directions, followed link by link, with no images (no panoramas given)
    assert "written directions" in system and "one short step at a time" in system
    assert "There are no pictures" in system
    for wrong in ("named destination", "one image per street", "destination_location"):
        assert wrong not in system
    assert "`instruction_progress`" in system and "`next_step`" in system
    assert "## Options (the ways on from here)" in user
    assert record["is_success"]  # the scripted replies with the new fields still parse


def test_a_destination_task_keeps_citynavs_wording_and_says_when_there_are_no_images():
    from urban_gym.families.streetgraph.prompts import INTROS

    system, user, record = _first_request(
        "UrbanGym/StreetGraph-v0", {"observation": "symbolic"}, {"task_index": 0}
    )
    assert system.startswith(INTROS[(False, False, False)])
    assert "named destination" in system and "no pictures" in system
    assert "one image per street" not in system
    assert "`destination_location`" in system and "instruction_progress" not in system
    assert "## Options (streets leaving this intersection)" in user
    assert record["is_success"]


def test_agentnav_on_a_route_in_words_is_not_told_of_a_destination(installed):
    """CityNav's AgentNav on an instruction task: its own opening (follow the described
    route), no VoP text and no address fields, whatever ``vop`` says; on a destination task
    (the next test's env) the destination wording and ``destination_location`` stay.
    """
    from urban_gym.baselines.lmm import LMMAgent, ScriptedServer
    from urban_gym.eval.trace import run_episode

    def first_system(env_id: str, env_kwargs: dict) -> str:
        with ScriptedServer(env_id, env_kwargs, wrap="mixed", record_requests=True) as server:
            agent = LMMAgent(
                base_url=server.url,
                model="scripted",
                scheme="agentnav",
                scheme_config={"vop": "full", "self_positioning_every": 0},
            )
            face = agent.wrap(gym.make(env_id, **env_kwargs))
            run_episode(face, agent, seed=0, options={"task_index": 1})
            return server.recorded[0]["messages"][0]["content"]

    system = first_system(ENV_ID, {})
    assert "following a route described to you in words" in system
    for wrong in ("destination", "walking_directions", "current_location"):
        assert wrong not in system.split("JSON schema")[0], wrong
    system = first_system("UrbanGym/StreetGraph-v0", {"observation": "symbolic"})
    assert "towards a destination you know only by name" in system
    assert "`destination_location`" in system and "walking directions" in system
