"""Errors of urban_gym's own.

Every error the library raises on bad input derives from :class:`UrbanGymError` and is
also a :class:`ValueError`, so callers may catch either. Messages name the bad value
and say what was wrong with it.
"""

from __future__ import annotations


class UrbanGymError(ValueError):
    """Base class of all urban_gym input errors."""


class CityLoadError(UrbanGymError):
    """A city could not be loaded: missing or unreadable file, not OSM data, an extract
    without buildings or walkable ways, an empty bounding box, an unknown city name.
    """


class BundleError(UrbanGymError):
    """A saved city bundle is missing a file or holds malformed data."""


class CityLoadWarning(UserWarning):
    """A city loaded, with a caveat: features dropped for bad coordinates, a cache that
    could not be written. Turn it into an error with
    ``warnings.simplefilter("error", CityLoadWarning)``.
    """
