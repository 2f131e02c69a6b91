"""Shared fixtures: an isolated world cache and the cities most tests use."""

from __future__ import annotations

import os

import pytest


@pytest.fixture(scope="session", autouse=True)
def _isolated_cache(tmp_path_factory):
    """Point URBAN_GYM_CACHE at a fresh directory for the whole test session."""
    old = os.environ.get("URBAN_GYM_CACHE")
    os.environ["URBAN_GYM_CACHE"] = str(tmp_path_factory.mktemp("urban_gym_cache"))
    yield
    if old is None:
        os.environ.pop("URBAN_GYM_CACHE", None)
    else:
        os.environ["URBAN_GYM_CACHE"] = old


@pytest.fixture(scope="session", autouse=True)
def _touchdown_fixture_data(tmp_path_factory):
    """Point URBAN_GYM_DATA at a fresh directory holding the test fixture's Touchdown-format
    routes (tests/families/streetgraph/touchdown_fixture: our routes on Touchdown's graph,
    not Touchdown's data), so that every registered id -- UrbanGym/StreetGraph-Touchdown-v0
    too -- makes in the registry sweeps.
    """
    from tests.families.streetgraph.touchdown_data import fixture_data_dir

    old = os.environ.get("URBAN_GYM_DATA")
    os.environ["URBAN_GYM_DATA"] = str(fixture_data_dir(tmp_path_factory.mktemp("urban_gym_data")))
    yield
    if old is None:
        os.environ.pop("URBAN_GYM_DATA", None)
    else:
        os.environ["URBAN_GYM_DATA"] = old


@pytest.fixture(scope="session")
def helsinki(_isolated_cache):
    from urban_gym.world import load_city

    return load_city("helsinki")


@pytest.fixture(scope="session")
def tiny_city(_isolated_cache):
    """A 2x2-block procedural city (about 200 m across)."""
    from urban_gym.world import load_city

    return load_city("procedural:seed=3,blocks=2x2")


@pytest.fixture(scope="session")
def small_city(_isolated_cache):
    """A 4x4-block procedural city (about 420 m across)."""
    from urban_gym.world import load_city

    return load_city("procedural:seed=7,blocks=4x4")
