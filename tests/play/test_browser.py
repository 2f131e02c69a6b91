"""The play page in a real browser: headless Chromium (Debian's ``chromium`` and
``chromium-driver``, installed by ``.ci/run``) plays one task per family to success by
pressing the keys the oracle's next action calls for, takes a screenshot of each family's
page into ``out/`` (a CI artifact) and checks the records.

Without chromium the test is skipped -- except in CI (``CI`` set), where it fails.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from urban_gym.eval.records import RunDir
from urban_gym.play.app import PlayServer
from urban_gym.play.browser import ScriptedPlayer, chromium_paths, open_chromium, presses_for
from urban_gym.play.run import PlayRun

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "out"

pytestmark = pytest.mark.slow

CASES = [
    # (env id, env kwargs, task, step after which the screenshot is taken)
    ("UrbanGym/PoseGraph360-Procedural-v0", {}, "map_navigation-easy-000", 3),
    ("UrbanGym/StreetGraph-v0", {"image_size": 256}, "streetgraph-helsinki-009", 0),
    ("UrbanGym/CityWalk-v0", {}, "citywalk-helsinki-sgn-000", 0),
]


@pytest.fixture(scope="module")
def chromium():
    if chromium_paths() is None:
        if os.environ.get("CI"):
            pytest.fail("CI must install chromium and chromium-driver (see .ci/run)")
        pytest.skip("no chromium/chromedriver (apt-get install chromium chromium-driver)")
    driver = open_chromium(1280, 800)
    yield driver
    driver.quit()


class Recorder(ScriptedPlayer):
    """A scripted player that keeps the oracle actions it performed."""

    def __init__(self, *a, **kw) -> None:
        super().__init__(*a, **kw)
        self.actions: list[dict] = []

    def play(self, shot: int, path: Path) -> None:
        if shot == 0:
            self.screenshot(path)
        n = 0
        while self.body("phase") == "playing":
            action = self.session().oracle_action()
            self.actions.append(action)
            self.step(presses_for(self.run.family, action))
            n += 1
            if n == shot:
                self.screenshot(path)
            assert n < 200


def citywalk_map_gestures(p: ScriptedPlayer) -> None:
    """Open the map (M), zoom out with the wheel, drag, click a point, close it (M)."""
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.actions.wheel_input import ScrollOrigin
    from selenium.webdriver.common.by import By

    d = p.driver
    p.step([presses_for("citywalk", {"action": "open_map"})[0]])
    img = d.find_element(By.ID, "img-view")
    p.gesture(
        lambda: ActionChains(d).scroll_from_origin(ScrollOrigin.from_element(img), 0, 100).perform()
    )
    img = d.find_element(By.ID, "img-view")
    p.gesture(
        lambda: ActionChains(d).click_and_hold(img).move_by_offset(64, 32).release().perform()
    )
    img = d.find_element(By.ID, "img-view")
    p.screenshot(OUT / "play_citywalk_map.png")
    p.gesture(lambda: ActionChains(d).move_to_element_with_offset(img, 0, 0).click().perform())
    p.step([presses_for("citywalk", {"action": "close_map"})[0]])


@pytest.mark.parametrize(("env_id", "kwargs", "task", "shot"), CASES)
def test_play_one_task_per_family_in_chromium(chromium, tmp_path, env_id, kwargs, task, shot):
    run = PlayRun(env_id, tmp_path / "human", env_kwargs=kwargs, task_ids=[task])
    family = run.family
    with PlayServer(run) as srv:
        p = Recorder(chromium, run)
        p.load(srv.page_url)
        assert p.body("phase") == "playing"
        if family == "citywalk":
            width = chromium.execute_script(
                "return document.getElementById('img-view').getBoundingClientRect().width"
            )
            citywalk_map_gestures(p)
        p.play(shot, OUT / f"play_{family}.png")
        assert p.body("phase") == "between"
        lat = p.client_latencies()
    (rec,) = RunDir(tmp_path / "human").read_episodes()
    assert rec["task_id"] == task and rec["is_success"], rec
    assert rec["termination"] in ("answered", "arrived")
    steps = RunDir(tmp_path / "human").read_trace(rec)[1:]
    assert rec["steps"] == len(steps) == p.steps == len(lat)
    assert all(s["valid"] for s in steps)
    done = [s["action"] for s in steps[len(steps) - len(p.actions) :]]
    if family == "citywalk":
        # the map: one wheel notch zoomed out by 2 (2 -> 4 m per pixel); the drag moved the
        # map 64 x 32 CSS px of a `width` px wide image of 128 px: 4 m per image pixel
        zoom, pan, select = (s["action"] for s in steps[1:4])
        assert zoom == {"action": "map_zoom", "factor": 2.0}  # UrbanGround: > 1 is farther
        scale = 128 / width * 4.0
        assert pan["action"] == "map_pan"
        assert pan["east"] == pytest.approx(-64 * scale, abs=0.05)
        assert pan["north"] == pytest.approx(32 * scale, abs=0.05)
        assert select["action"] == "map_select" and select["x"] == pytest.approx(0.5, abs=0.01)
        # durations and turns went through the page's number boxes: 4 decimals
        for got, want in zip(done, p.actions):
            assert got["action"] == want["action"]
            for k in ("seconds", "yaw", "yaw_rate"):
                if want.get(k):
                    assert got[k] == pytest.approx(want[k], abs=2e-3, rel=1e-3), (got, want)
    else:
        assert done == p.actions  # exactly the oracle's structured actions
    shot_path = OUT / f"play_{family}.png"
    assert shot_path.stat().st_size > 20_000
    assert all(x["client_ms"] >= x["server_ms"] > 0 for x in lat)
