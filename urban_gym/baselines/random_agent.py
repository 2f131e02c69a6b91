"""A uniformly random agent over the valid entries of an env's discrete action table."""

from __future__ import annotations

from typing import Any

import numpy as np


class RandomAgent:
    """Picks a uniformly random valid action index.

    When the observation carries an ``action_mask`` (1 = valid), only valid indices are
    drawn; otherwise any index of the ``Discrete`` action space. Deterministic for a seed.
    """

    def __init__(self, action_space: Any, seed: int | None = None) -> None:
        self.n = int(action_space.n)
        self.rng = np.random.default_rng(seed)

    def act(self, observation: Any) -> int:
        """A uniformly random action index, among the valid ones when the observation has a mask."""
        mask = observation.get("action_mask") if isinstance(observation, dict) else None
        if mask is not None:
            valid = np.flatnonzero(np.asarray(mask) > 0)
            if len(valid):
                return int(self.rng.choice(valid))
        return int(self.rng.integers(self.n))
