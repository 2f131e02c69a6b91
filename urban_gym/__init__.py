"""urban_gym: Gymnasium environments for finding one's way through real cities.

``import urban_gym`` registers the environment families and their ids (``UrbanGym/...``)
with Gymnasium (:mod:`urban_gym.families`); it does not import torch, stable-baselines3
or any HTTP client. :func:`clear_caches` empties every in-memory cache of the process
(worlds, graphs, distance fields, fonts, frames).
"""

from urban_gym.caching import clear_caches
from urban_gym.errors import BundleError, CityLoadError, UrbanGymError
from urban_gym.families import register_all

__version__ = "0.1.0"

register_all()

__all__ = [
    "BundleError",
    "CityLoadError",
    "UrbanGymError",
    "__version__",
    "clear_caches",
    "register_all",
]
