"""StreetGraph's native batched vector env, what ``gymnasium.make_vec`` returns for its ids:
:class:`urban_gym.envs.vector.NativeVectorEnv` over :class:`StreetGraphEnv`.
"""

from __future__ import annotations

from urban_gym.envs.vector import NativeVectorEnv
from urban_gym.families.streetgraph.env import StreetGraphEnv


class StreetGraphVectorEnv(NativeVectorEnv):
    """N StreetGraph episodes stepped in one call, their observations drawn on a pool of threads
    (:class:`~urban_gym.envs.vector.NativeVectorEnv`; its arguments, then those of
    :class:`StreetGraphEnv`).
    """

    env_class = StreetGraphEnv
