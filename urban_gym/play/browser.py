"""Playing the page in a real browser, by its keys: headless Chromium driven by Selenium.

For the browser test and the latency benchmark. :func:`presses_for` says how a person
performs an agent's structured action on the page (which widget to set, which key to
press); :class:`ScriptedPlayer` does it in Chromium -- reading each next action from the
privileged oracle of the server-side session (:meth:`PlaySession.oracle_action`, never sent
to the page) -- and waits for the page to draw the new frame.

The browser is the system's: Debian's ``chromium`` and ``chromium-driver``
(``/usr/bin/chromium``, ``/usr/bin/chromedriver``; ``URBAN_GYM_CHROMIUM`` and
``URBAN_GYM_CHROMEDRIVER`` point elsewhere). Nothing is downloaded: Selenium is given the
driver's path, so its driver manager never runs. Selenium (the ``dev`` extra) is imported
only when a browser is opened.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from urban_gym.errors import UrbanGymError
from urban_gym.play.controls import Press, presses_for

#: Chromium's flags: headless, as root, on a machine without a network or a GPU.
CHROMIUM_FLAGS: tuple[str, ...] = (
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-extensions",
    "--disable-default-apps",
    "--mute-audio",
    "--hide-scrollbars",
)


def chromium_paths() -> tuple[str, str] | None:
    """``(chromium, chromedriver)`` executables, or None when either is missing."""
    browser = os.environ.get("URBAN_GYM_CHROMIUM") or shutil.which("chromium") or ""
    driver = os.environ.get("URBAN_GYM_CHROMEDRIVER") or shutil.which("chromedriver") or ""
    for default, name in (("/usr/bin/chromium", "browser"), ("/usr/bin/chromedriver", "driver")):
        if name == "browser" and not browser and os.path.exists(default):
            browser = default
        if name == "driver" and not driver and os.path.exists(default):
            driver = default
    if browser and driver and os.access(browser, os.X_OK) and os.access(driver, os.X_OK):
        return browser, driver
    return None


def open_chromium(width: int = 1280, height: int = 900) -> Any:
    """A headless Chromium (Selenium ``webdriver.Chrome``) with a fresh profile; its
    ``quit()`` also removes the profile folder.
    """
    paths = chromium_paths()
    if paths is None:
        raise UrbanGymError(
            "no chromium/chromedriver found: install Debian's chromium and chromium-driver "
            "(apt-get install chromium chromium-driver) or set URBAN_GYM_CHROMIUM and "
            "URBAN_GYM_CHROMEDRIVER"
        )
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    profile = tempfile.mkdtemp(prefix="urban_gym_chromium_")
    opts = webdriver.ChromeOptions()
    opts.binary_location = paths[0]
    for flag in CHROMIUM_FLAGS:
        opts.add_argument(flag)
    opts.add_argument(f"--user-data-dir={profile}")
    opts.add_argument(f"--window-size={int(width)},{int(height)}")
    driver = webdriver.Chrome(service=Service(executable_path=paths[1]), options=opts)
    quit_ = driver.quit

    def quit_and_clean() -> None:
        try:
            quit_()
        finally:
            shutil.rmtree(profile, ignore_errors=True)

    driver.quit = quit_and_clean  # type: ignore[method-assign]  # on purpose: quit cleans up
    return driver


class ScriptedPlayer:
    """Plays the page in ``driver`` with the oracle's choices (see the module docstring).

    Args:
        driver: a Selenium driver (:func:`open_chromium`).
        run: the server's :class:`~urban_gym.play.run.PlayRun` (same process), whose
            sessions answer :meth:`~urban_gym.play.session.PlaySession.oracle_action`.
        timeout: seconds to wait for the page to draw a new frame.
    """

    def __init__(self, driver: Any, run: Any, timeout: float = 60.0) -> None:
        self.driver = driver
        self.run = run
        self.timeout = float(timeout)
        self.steps = 0

    # ------------------------------------------------------------------ page
    def body(self, name: str) -> str:
        """The page's ``data-<name>`` attribute of ``<body>`` (phase, version, busy, ...)."""
        return str(self.driver.execute_script(f"return document.body.dataset.{name} || ''"))

    def wait(self, what: Callable[[], bool], message: str) -> None:
        """Wait until ``what()`` is true, else :class:`UrbanGymError` with ``message``."""
        t0 = time.monotonic()
        while not what():
            if time.monotonic() - t0 > self.timeout:
                raise UrbanGymError(f"timed out after {self.timeout:g} s: {message}")
            time.sleep(0.01)

    def load(self, url: str) -> None:
        """Open the page and wait for its first frame."""
        self.driver.get(url)
        self.wait(
            lambda: (
                self.body("phase") in ("playing", "between", "done") and self.body("busy") == "0"
            ),
            "the page's first frame",
        )

    def session(self) -> Any:
        """The server-side session of this browser."""
        sid = self.body("session")
        for s in list(self.run.sessions.values()):
            if s.sid == sid:
                return s
        raise UrbanGymError(f"no session {sid!r} on the server")

    def _blur(self) -> None:
        self.driver.execute_script("if (document.activeElement) document.activeElement.blur();")

    def key(self, key: str, shift: bool = False) -> None:
        """Press ``key`` (a ``KeyboardEvent.key`` value) on the page."""
        from selenium.webdriver.common.action_chains import ActionChains
        from selenium.webdriver.common.keys import Keys

        special = {
            "ArrowLeft": Keys.ARROW_LEFT,
            "ArrowRight": Keys.ARROW_RIGHT,
            "ArrowUp": Keys.ARROW_UP,
            "ArrowDown": Keys.ARROW_DOWN,
            "Enter": Keys.ENTER,
            "Escape": Keys.ESCAPE,
        }
        k = special.get(key, key)
        chain = ActionChains(self.driver)
        if shift:
            chain = chain.key_down(Keys.SHIFT).send_keys(k).key_up(Keys.SHIFT)
        else:
            chain = chain.send_keys(k)
        chain.perform()

    def do(self, press: Press) -> None:
        """Carry out one :class:`Press` (setting a widget does not step the env)."""
        from selenium.webdriver.common.by import By
        from selenium.webdriver.common.keys import Keys

        if press.kind == "set":
            box = self.driver.find_element(By.ID, f"w-{press.name}")
            box.send_keys(Keys.CONTROL, "a")
            box.send_keys(press.value)
            self._blur()
        elif press.kind == "answer":
            box = self.driver.find_element(By.ID, "answer")
            box.click()
            box.send_keys(press.value, Keys.ENTER)
        else:
            self._blur()
            self.key(press.value, press.shift)

    def step(self, presses: list[Press]) -> None:
        """Do ``presses`` (the last one steps the env) and wait for the new frame."""
        before = int(self.body("version") or 0)
        for p in presses:
            self.do(p)
        self.wait(
            lambda: int(self.body("version") or 0) > before and self.body("busy") == "0",
            f"a new frame after {presses}",
        )
        self.steps += 1

    def gesture(self, run_it: Callable[[], None]) -> None:
        """Run a mouse gesture (``run_it``) that steps the env once; wait for the frame."""
        before = int(self.body("version") or 0)
        run_it()
        self.wait(
            lambda: int(self.body("version") or 0) > before and self.body("busy") == "0",
            "a new frame after a gesture",
        )
        self.steps += 1

    def play_oracle_episode(self, max_steps: int = 500, on_step: Callable | None = None) -> int:
        """Play the running episode to its end with the oracle's choices, by keys; returns
        the steps taken. ``on_step(player, step)`` is called after each step.
        """
        n = 0
        family = self.run.family
        while self.body("phase") == "playing":
            if n >= max_steps:
                raise UrbanGymError(f"the episode did not end within {max_steps} steps")
            self.step(presses_for(family, self.session().oracle_action()))
            n += 1
            if on_step is not None:
                on_step(self, n)
        return n

    def next_task(self) -> None:
        """Press N for the next task and wait for its first frame."""
        before = int(self.body("version") or 0)
        self.key("n")
        self.wait(
            lambda: int(self.body("version") or 0) > before and self.body("busy") == "0",
            "the next task's first frame",
        )

    def screenshot(self, path: str | os.PathLike) -> Path:
        """Save the page as a PNG at ``path``."""
        p = Path(path)
        p.parent.mkdir(parents=True, exist_ok=True)
        self.driver.save_screenshot(str(p))
        return p

    def client_latencies(self) -> list[dict[str, Any]]:
        """The page's own measurements: per command, milliseconds from the press to the
        new frame decoded (``client_ms``) and the server's share (``server_ms``).
        """
        return list(self.driver.execute_script("return window.__play.latencies") or [])


__all__ = [
    "CHROMIUM_FLAGS",
    "Press",
    "ScriptedPlayer",
    "chromium_paths",
    "open_chromium",
    "presses_for",
]
