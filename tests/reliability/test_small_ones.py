"""Issue 39 item 12, the small ones: ``load_city(123)`` is a CityLoadError naming the
value, and the scripted server answers a negative ``Content-Length`` at once instead of
waiting for a body that never ends."""

from __future__ import annotations

import json
import socket
import time

import pytest

from urban_gym.baselines.lmm.server import ScriptedServer
from urban_gym.errors import CityLoadError
from urban_gym.world import load_city


@pytest.mark.parametrize("spec", [123, 4.5, None, ["helsinki"]])
def test_load_city_of_a_non_path_names_it(spec):
    with pytest.raises(CityLoadError) as e:
        load_city(spec)  # type: ignore[arg-type]
    assert f"city {spec!r} is a {type(spec).__name__}" in str(e.value)


@pytest.mark.parametrize("length", ["-5", "-1", str(2**40)])
def test_scripted_server_refuses_a_length_it_cannot_read(length):
    server = ScriptedServer(env_id="UrbanGym/PoseGraph360-Procedural-v0", port=0)
    server.start()
    try:
        host, port = server.url.split("//")[1].split("/")[0].split(":")
        with socket.create_connection((host, int(port)), timeout=10) as s:
            t0 = time.monotonic()
            head = (
                f"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: {length}\r\n\r\n"
            )
            s.sendall(head.encode())
            answer = s.recv(4096).decode("latin-1")
        assert answer.startswith("HTTP/1.1 400") and time.monotonic() - t0 < 5
        assert "Content-Length" in answer
    finally:
        server.stop()


ROUTE = {
    "route_id": "r1",
    "route_panoids": ["X", "a1", "a2", "a3", "Y"],
    "navigation_text": "East to the corner.",
    "start_heading": 90,
}


def test_streetgraph_routes_reads_five_column_nodes_and_a_json_array(tmp_path, capsys):
    from tests.families.streetgraph.streetgraph_fixture import node_lines, write_fixture
    from urban_gym.cli import main
    from urban_gym.tasks.suite import load_suite

    # a fifth column on every node line (VELMA's graph files): the first four are used
    d = write_fixture(tmp_path / "td", nodes=[f"{line},1" for line in node_lines()])
    routes = tmp_path / "routes.json"
    second = {**ROUTE, "route_id": "r2", "start_heading": 270}
    routes.write_text(json.dumps([ROUTE, second], indent=2), encoding="utf-8")  # one array
    out = tmp_path / "suite.jsonl"
    assert main(["streetgraph-routes", str(d), str(routes), "--out", str(out)]) == 0, (
        capsys.readouterr().err
    )
    tasks = load_suite(out)
    assert len(tasks) == 2 and "East to the corner." in tasks[0].instruction
    # a bad item is named by its number in the array
    routes.write_text(json.dumps([ROUTE, {"route_panoids": ["X"]}]), encoding="utf-8")
    assert main(["streetgraph-routes", str(d), str(routes), "--out", str(out)]) == 2
    assert "line 2: route_panoids=" in capsys.readouterr().err


@pytest.mark.parametrize("x", [1e308, -5e6])
def test_a_citywalk_task_far_outside_its_city_is_refused(x):
    import dataclasses

    import gymnasium as gym

    from urban_gym.errors import TaskError

    env = gym.make("UrbanGym/CityWalk-NoView-v0")
    try:
        task = env.unwrapped.tasks[0]
        far = dataclasses.replace(task, id="far", start={**task.start, "x": x})
        with pytest.raises(TaskError) as e:
            env.reset(seed=0, options={"task": far})
        assert f"task 'far': start (x={x!r}" in str(e.value) and "outside its city" in str(e.value)
        env.reset(seed=0, options={"task": task})  # the task as generated still starts
    finally:
        env.close()


class ObjectConfigAgent:
    """The oracle, with an object (a new one per agent) in its ``config()``."""

    def __new__(cls):
        from urban_gym.baselines.agents import OracleAgent

        class _Agent(OracleAgent):
            def config(self):
                return {"kind": "oracle", "helper": object(), "sizes": (1, 2)}

        return _Agent()


def test_an_agent_whose_config_holds_an_object_resumes(tmp_path):
    from urban_gym.eval.records import RunDir
    from urban_gym.eval.runner import run

    spec = f"{__name__}:ObjectConfigAgent"
    pg, tasks = "UrbanGym/PoseGraph360-Procedural-v0", ["localization-easy-000"]
    first = run(pg, tmp_path / "r", agent=spec, task_ids=tasks, progress=False)
    again = run(pg, tmp_path / "r", agent=spec, task_ids=tasks, progress=False)  # a resume
    assert first.ran == 1 and again.done_before == 1 and again.ran == 0
    manifest = json.loads((tmp_path / "r" / "manifest.json").read_text())
    assert manifest["agent"]["config"]["helper"] == "<object object>"
    assert len(RunDir(tmp_path / "r").read_episodes()) == 1
