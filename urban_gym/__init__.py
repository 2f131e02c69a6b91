"""urban_gym: Gymnasium environments for finding one's way through real cities.

``import urban_gym`` registers the environment ids (``UrbanGym/...``) with Gymnasium; it
does not import torch, stable-baselines3 or any HTTP client.
"""

from urban_gym.envs.registration import register_envs
from urban_gym.errors import BundleError, CityLoadError, UrbanGymError

__version__ = "0.1.0"

register_envs()

__all__ = ["BundleError", "CityLoadError", "UrbanGymError", "__version__", "register_envs"]
