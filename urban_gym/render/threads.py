"""OpenCV's thread pool as the renderer uses it.

Three rules, each applied where it belongs rather than in the environments:

* **Small images on one thread.** Drawing an image of at most :data:`ONE_THREAD_MAX_PIXELS`
  pixels (a view up to about 360x360, a panorama up to 512x256) OpenCV's pool costs more
  than it gives: its threads sleep between a frame's few small calls and must be woken
  (a first-person 84x84 rollout: 2,463 steps/s on one thread against 2,174 on two, with
  1.00 against 1.33 cores busy; ``benchmarks/bench_cv2_threads.py``). The renderers' entry
  points (:class:`~urban_gym.render.FirstPersonRenderer`,
  :class:`~urban_gym.render.PanoramaRenderer`, :func:`~urban_gym.render.perspective`, the
  map) run through :func:`for_image`, which pins one thread for a small image and restores
  the process's count after; larger images keep it. ``URBAN_GYM_CV2_THREADS`` in the
  environment leaves the count to the process.
* **Workers on one thread.** A worker process -- of the evaluation harness, of
  stable-baselines3's ``SubprocVecEnv`` in ``urban-gym train``, an RLlib env runner --
  calls :func:`one_thread_in_worker` when it starts: the workers already use the cores, and
  OpenCV's own threads would make them fight over them (``URBAN_GYM_CV2_THREADS`` sets
  another number).
* **Forks never copy a running pool.** A forked child must not resize a thread pool its
  parent had running (its condition variables come over with waiters that do not exist in
  the child: OpenCV would wait for them forever), so while this module is loaded -- as
  soon as anything renders -- each fork stops the parent's pool for the moment of the fork
  (:func:`install_fork_guard`); the child starts with one thread.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any, TypeVar

import cv2

#: Pixels of the largest image drawn with OpenCV on one thread (see the module docstring).
ONE_THREAD_MAX_PIXELS = 2**17
#: The environment variable that leaves OpenCV's thread count to the process (or, in a
#: worker, sets it).
ENV_VAR = "URBAN_GYM_CV2_THREADS"

T = TypeVar("T")


#: OpenCV's thread count while a :func:`call_with_opencv_threads` is in progress that set it
#: (0: none): a call inside it for the same count (every small frame a pool of drawing
#: threads draws) then asks OpenCV nothing -- each OpenCV call releases the GIL, handing it
#: to another drawing thread
_PINNED: list[int] = [0]


def call_with_opencv_threads(n: int, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """``fn(*args, **kwargs)`` with OpenCV on ``n`` threads, its count as it was afterwards
    (a pair of ``cv2.setNumThreads`` calls costs about 0.2 us).
    """
    if _PINNED[0] == n:
        return fn(*args, **kwargs)
    before = cv2.getNumThreads()
    if before != n:
        cv2.setNumThreads(n)
    outer = _PINNED[0]
    _PINNED[0] = n
    try:
        return fn(*args, **kwargs)
    finally:
        _PINNED[0] = outer
        if before != n:
            cv2.setNumThreads(before)


def threads_for(pixels: int) -> int | None:
    """OpenCV's thread count for drawing an image of ``pixels`` pixels: 1 for a small one
    (:data:`ONE_THREAD_MAX_PIXELS`), None (the process's count) for a larger one or when
    ``URBAN_GYM_CV2_THREADS`` is set.
    """
    if pixels > ONE_THREAD_MAX_PIXELS or os.environ.get(ENV_VAR, "").strip():
        return None
    return 1


def for_image(pixels: int, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """``fn(*args, **kwargs)``, on one OpenCV thread when it draws a small image of
    ``pixels`` pixels (:func:`threads_for`).
    """
    n = threads_for(pixels)
    if n is None:
        return fn(*args, **kwargs)
    return call_with_opencv_threads(n, fn, *args, **kwargs)


def one_thread_in_worker() -> int:
    """Set OpenCV's thread count of this worker process: 1, or ``URBAN_GYM_CV2_THREADS``
    when set (call it where a worker starts). Returns the count.
    """
    n = os.environ.get(ENV_VAR, "")
    want = int(n) if n.strip().isdigit() else 1
    if cv2.getNumThreads() != want:
        cv2.setNumThreads(want)
    return want


#: OpenCV's thread count in this process before each fork in progress (restored after it)
_FORK_THREADS: list[int] = []
_GUARD: dict[str, bool] = {"installed": False}


def _before_fork() -> None:
    """Before ``os.fork``: OpenCV down to one thread, so that no running pool is copied."""
    n = cv2.getNumThreads()
    _FORK_THREADS.append(n)
    if n != 1:
        cv2.setNumThreads(1)


def _after_fork_in_parent() -> None:
    """After ``os.fork``, in the parent: OpenCV's thread count back as it was."""
    n = _FORK_THREADS.pop() if _FORK_THREADS else 1
    if n != 1:
        cv2.setNumThreads(n)


def _after_fork_in_child() -> None:
    _FORK_THREADS.clear()
    _PINNED[0] = 0  # the child's OpenCV starts on one thread, whatever the parent had pinned


def install_fork_guard() -> None:
    """Stop OpenCV's pool for the moment of every fork of this process (idempotent; see
    the module docstring).
    """
    if _GUARD["installed"] or not hasattr(os, "register_at_fork"):
        return
    os.register_at_fork(
        before=_before_fork,
        after_in_parent=_after_fork_in_parent,
        after_in_child=_after_fork_in_child,
    )
    _GUARD["installed"] = True


install_fork_guard()  # the renderer has loaded OpenCV: from now on forks are guarded

__all__ = [
    "ENV_VAR",
    "ONE_THREAD_MAX_PIXELS",
    "call_with_opencv_threads",
    "for_image",
    "install_fork_guard",
    "one_thread_in_worker",
    "threads_for",
]
