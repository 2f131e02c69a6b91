"""Issue 39 item 9, the harness's half: an agent that hangs ends its episode at
``--episode-deadline`` with termination ``episode_deadline`` and the reason, and the run
goes on to the next episode."""

from __future__ import annotations

import threading
import time

from urban_gym.baselines.agents import OracleAgent
from urban_gym.eval.records import RunDir
from urban_gym.eval.runner import run

PG = "UrbanGym/PoseGraph360-Procedural-v0"
TASKS = ["localization-easy-000", "localization-medium-000"]
#: released when the test ends, so the hung call's thread ends too
RELEASE = threading.Event()


class HangingAgent(OracleAgent):
    """The oracle, except that it hangs in its first ``act`` of the first task."""

    def reset(self, env, task, seed=None):
        super().reset(env, task, seed)
        self.hang = task.id == TASKS[0]

    def act(self, obs, info):
        if self.hang:
            RELEASE.wait(120)
        return super().act(obs, info)


def test_a_hanging_agent_ends_at_the_episode_deadline(tmp_path):
    t0 = time.monotonic()
    try:
        res = run(
            PG,
            tmp_path / "run",
            agent=f"{__name__}:HangingAgent",
            task_ids=TASKS,
            episode_deadline_s=2.0,
            progress=False,
        )
    finally:
        RELEASE.set()
    took = time.monotonic() - t0
    recs = {r["task_id"]: r for r in RunDir(tmp_path / "run").read_episodes()}
    hung, fine = recs[TASKS[0]], recs[TASKS[1]]
    assert hung["termination"] == "episode_deadline" and not hung["is_success"]
    assert hung["steps"] == 0 and "episode deadline of 2 s passed" in hung["error"]
    assert fine["termination"] == "answered" and fine["is_success"]
    assert res.ran == 2 and res.errors == 1 and took < 60  # the deadline is an error


#: the threads the watched agent's ``act`` ran in, and how many calls
SEEN: list[threading.Thread] = []  # the objects: an OS thread id is reused


class WatchedAgent(OracleAgent):
    """The oracle, noting the thread of each ``act``."""

    def act(self, obs, info):
        SEEN.append(threading.current_thread())
        return super().act(obs, info)


def test_an_episode_acts_through_one_worker_thread_that_ends_with_it(tmp_path):
    """Every ``act`` of an episode runs in the same worker thread (not a new thread per
    step), and that thread is gone once its episode is recorded."""
    SEEN.clear()
    before = {t.ident for t in threading.enumerate()}
    res = run(
        "UrbanGym/StreetGraph-v0",
        tmp_path / "run",
        agent=f"{__name__}:WatchedAgent",
        episode_deadline_s=60.0,
        progress=False,
        max_episodes=2,
    )
    assert res.ran == 2 and len(SEEN) > 2  # more steps than episodes
    assert len({id(t) for t in SEEN}) == 2  # one worker per episode, however many steps it took
    deadline = time.monotonic() + 5
    while any(t.name == "agent-act" and t.ident not in before for t in threading.enumerate()):
        assert time.monotonic() < deadline, "an episode's worker thread outlived it"
        time.sleep(0.05)
