"""The rendering layer's error type."""

from __future__ import annotations

from urban_gym.errors import UrbanGymError


class RenderError(UrbanGymError):
    """Bad input to a renderer or camera: a panorama that is not a 2:1 ``uint8`` RGB
    equirectangular image, a field of view outside (0, 180) degrees, a non-positive image
    size, a position outside the city, unknown conditions. The message names the value.
    """
