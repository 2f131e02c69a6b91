"""PoseGraph360's native batched vector env, what ``gymnasium.make_vec`` returns for its ids:
:class:`urban_gym.envs.vector.NativeVectorEnv` over :class:`PoseGraph360Env`.
"""

from __future__ import annotations

from urban_gym.envs.vector import NativeVectorEnv
from urban_gym.families.posegraph360.env import PoseGraph360Env


class PoseGraph360VectorEnv(NativeVectorEnv):
    """N PoseGraph360 episodes stepped in one call, their observations drawn on a pool of threads
    (:class:`~urban_gym.envs.vector.NativeVectorEnv`; its arguments, then those of
    :class:`PoseGraph360Env`).
    """

    env_class = PoseGraph360Env
