"""A control for the vector-env scaling of ``bench_throughput.py``: an env whose steps only
spend CPU time, as long as a real env's steps took, with a view of the same size and no
``info``.

``gym.make_vec(..., vectorization_mode="async")`` steps its workers in lockstep: every
vector step lasts as long as the slowest worker's step plus the main process's work
(merging observations and ``info``). Run beside a real env, this control separates the
two: with every step the real env's *mean* CPU time it shows what lockstep and 2 cores
allow for steps of that length; replaying the real env's *recorded* step times (resets
added to the step before them, as autoreset runs them) it shows what the spread of
those times costs, without the real env's observations and ``info`` to merge.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

import gymnasium as gym
import numpy as np
from gymnasium import spaces

ID = "Bench/BusySteps-v0"


def spin(seconds: float) -> None:
    """Keep the CPU busy for ``seconds`` (wall time, which is CPU time on a core of its
    own): a step's work, not a sleep that would free the core."""
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


class BusySteps(gym.Env):
    """Steps that cost ``times[k]`` seconds of CPU in turn (from an offset set by the reset
    seed, so that workers do not replay the same times side by side). Observations: an
    all-zero ``view`` of ``view_size`` pixels and an all-valid ``action_mask``."""

    metadata: dict = {"render_modes": []}

    def __init__(self, times: Sequence[float], view_size: int = 84, actions: int = 8) -> None:
        if not len(times) or min(times) < 0:
            raise ValueError(f"times must be a non-empty sequence of seconds >= 0, got {times!r}")
        self.times = [float(t) for t in times]
        self.k = 0
        self.observation_space = spaces.Dict(
            {
                "view": spaces.Box(0, 255, (view_size, view_size, 3), np.uint8),
                "action_mask": spaces.Box(0, 1, (actions,), np.int8),
            }
        )
        self.action_space = spaces.Discrete(actions)
        self._view = np.zeros((view_size, view_size, 3), np.uint8)
        self._mask = np.ones(actions, np.int8)

    def _obs(self) -> dict[str, np.ndarray]:
        return {"view": self._view.copy(), "action_mask": self._mask.copy()}

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        if seed is not None:
            self.k = (seed * 7919) % len(self.times)
        return self._obs(), {}

    def step(self, action):
        spin(self.times[self.k % len(self.times)])
        self.k += 1
        return self._obs(), 0.0, False, False, {}


if ID not in gym.registry:
    gym.register(ID, entry_point=BusySteps)
