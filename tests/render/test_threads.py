"""OpenCV's threads as the renderer uses them (:mod:`urban_gym.render.threads`): small images
on one thread with the process's count restored, workers on one thread, forks that never
copy a running pool."""

from __future__ import annotations

import multiprocessing

import cv2
import gymnasium as gym
import numpy as np
import pytest

import urban_gym  # noqa: F401
from urban_gym.render import threads
from urban_gym.render.firstperson import FirstPersonRenderer


def test_small_images_on_one_thread_and_the_count_restored(monkeypatch):
    monkeypatch.delenv(threads.ENV_VAR, raising=False)
    cv2.setNumThreads(2)
    seen = []
    record = lambda: seen.append(cv2.getNumThreads())  # noqa: E731
    threads.for_image(threads.ONE_THREAD_MAX_PIXELS, record)  # 2**17 pixels: small
    threads.for_image(400 * 400, record)  # 160,000 pixels: the process's count
    assert seen == [1, 2] and cv2.getNumThreads() == 2
    assert threads.threads_for(84 * 84) == 1 and threads.threads_for(512 * 512) is None
    monkeypatch.setenv(threads.ENV_VAR, "2")  # leaves the count to the process
    assert threads.threads_for(84 * 84) is None


@pytest.mark.parametrize(("view_size", "want"), [(84, 1), (400, 2)])
def test_an_env_renders_small_views_on_one_thread(view_size, want, monkeypatch):
    """A first-person 84x84 view is drawn on one OpenCV thread, a 400x400 one on the
    process's; the env's step gives the process its count back either way."""
    monkeypatch.delenv(threads.ENV_VAR, raising=False)
    cv2.setNumThreads(2)
    seen = []
    render = FirstPersonRenderer._render
    monkeypatch.setattr(
        FirstPersonRenderer,
        "_render",
        lambda self, *a: (seen.append(cv2.getNumThreads()), render(self, *a))[1],
    )
    env = gym.make("UrbanGym/CityWalk-v0", view_size=view_size)
    obs, _ = env.reset(seed=0)
    env.step(int(np.flatnonzero(obs["action_mask"])[0]))
    assert seen and set(seen) == {want} and cv2.getNumThreads() == 2


def _threads_in_child(conn) -> None:
    import cv2

    from urban_gym.render import perspective
    from urban_gym.render.threads import one_thread_in_worker

    conn.send(cv2.getNumThreads())  # what the child starts with
    n = one_thread_in_worker()
    view = perspective(np.full((256, 512, 3), 7, np.uint8), 0.0, size=64)  # it draws
    conn.send(n if cv2.getNumThreads() == n and (view == 7).all() else -1)


@pytest.mark.parametrize("start", ["spawn", "fork"])
def test_a_worker_starts_on_one_thread_and_a_fork_does_not_hang(start, monkeypatch):
    """A worker process sets OpenCV to one thread when it starts; the parent keeps its
    count. With ``fork`` the worker starts as a copy of a parent whose OpenCV pool was
    running: the pool is stopped for the fork, so the child starts on one thread and does
    not hang (resizing a pool copied from the parent waits forever)."""
    if start not in multiprocessing.get_all_start_methods():
        pytest.skip(f"no {start!r} start method here")
    monkeypatch.delenv(threads.ENV_VAR, raising=False)
    cv2.setNumThreads(2)
    before = cv2.getNumThreads()
    big = np.zeros((1500, 1500, 4), np.uint8)
    grid = np.random.default_rng(0).random((1500, 1500), dtype=np.float32) * 1499
    cv2.remap(big, grid, grid, cv2.INTER_LINEAR)  # OpenCV's pool runs in this process now
    ctx = multiprocessing.get_context(start)
    parent, child = ctx.Pipe()
    p = ctx.Process(target=_threads_in_child, args=(child,))
    p.start()
    try:
        assert parent.poll(120), "the worker hung"
        first = parent.recv()
        assert parent.poll(120), "the worker hung drawing"
        got = parent.recv()
    finally:
        p.kill()
        p.join(timeout=10)
    assert got == 1
    if start == "fork":
        assert first == 1  # the parent's pool was stopped for the fork
    assert cv2.getNumThreads() == before  # and restored in the parent after it


def test_a_call_inside_a_pinned_call_keeps_the_count_and_restores_it_after(monkeypatch):
    monkeypatch.delenv(threads.ENV_VAR, raising=False)
    cv2.setNumThreads(2)
    seen = []

    def inner() -> str:
        seen.append(cv2.getNumThreads())
        return "drawn"

    def outer() -> list:
        # what a pool of drawing threads does: every small frame asks for one thread again
        return [threads.for_image(84 * 84, inner) for _ in range(3)]

    assert threads.call_with_opencv_threads(1, outer) == ["drawn"] * 3
    assert seen == [1, 1, 1] and cv2.getNumThreads() == 2
    assert threads.for_image(84 * 84, inner) == "drawn" and seen[-1] == 1
    assert cv2.getNumThreads() == 2  # restored after a call on its own too
