"""The family registry (:mod:`urban_gym.tasks.families`): every family exports the same
names, every former table reads the registry, and a family defined outside the package --
the toy corridor family of :mod:`tests.toy_family` -- plugs in with ``register_family``
alone (run in full, both faces and the oracle runner, by ``tests/test_extending.py``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests import toy_family as toy
from urban_gym.errors import UrbanGymError
from urban_gym.tasks.families import (
    FAMILIES,
    PACKAGE_EXPORTS,
    Family,
    get_family,
    register_family,
)
from urban_gym.tasks.spec import TaskType

FAMILY = toy.FAMILY


@pytest.fixture
def toy_family():
    yield toy.register()
    toy.unregister()


# --------------------------------------------------------------------------- tests
def test_every_family_exports_the_same_names(toy_family):
    assert FAMILY in FAMILIES  # the toy family, from tests/, is held to the same contract
    for fam in FAMILIES.values():
        mod = fam.tasks_module()
        missing = [n for n in PACKAGE_EXPORTS if not hasattr(mod, n)]
        assert not missing, (fam.name, missing)
        assert mod.FAMILY == fam.name
        assert all(isinstance(t, TaskType) and t.name == n for n, t in mod.TASK_TYPES.items())
        assert all(Path(p).is_file() for p in mod.DEFAULT_SUITES.values())
        assert fam.env_class().family == fam.name


def test_the_former_tables_read_the_registry(toy_family):
    from urban_gym.baselines.lmm.prompt import prompt_builder_for
    from urban_gym.wrappers.protocols import protocol_for

    assert protocol_for("citywalk").name == FAMILIES["citywalk"].protocol == "observe_reason_act"
    assert prompt_builder_for("citywalk").history == 2 and prompt_builder_for(FAMILY).history == 0
    assert protocol_for(FAMILY).name == "generic"
    with pytest.raises(UrbanGymError, match="unknown task family 'nowhere'; registered: "):
        get_family("nowhere")
    with pytest.raises(UrbanGymError, match="already registered"):
        register_family(Family(name=FAMILY, package="x", env="a:B", oracle="a:C"))
