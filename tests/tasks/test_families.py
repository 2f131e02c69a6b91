"""The family registry (:mod:`urban_gym.tasks.families`): every family exports the same
names and answers every question of the core, registering checks a family, and families
are found as the docs say -- a folder under ``urban_gym/families/``, an installed
package's entry point, ``URBAN_GYM_FAMILIES`` -- with the toy corridor family of
:mod:`tests.toy_family` (run in full by ``tests/test_extending.py``) as the outside one."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import gymnasium as gym
import pytest

import tests.toy_family as toy
from urban_gym.errors import UrbanGymError
from urban_gym.families import builtin_names
from urban_gym.tasks.families import (
    FAMILIES,
    PACKAGE_EXPORTS,
    DemoEpisode,
    Family,
    LMMDefaults,
    check_family,
    family_of,
    family_of_id,
    get_family,
    register_family,
)
from urban_gym.tasks.spec import TaskType

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def toy_family():
    yield toy.register()
    toy.unregister()


# --------------------------------------------------------------------------- the contract
def test_every_family_exports_the_same_names(toy_family):
    assert "toy_corridor" in FAMILIES  # the toy family, from tests/, is held to the same contract
    for fam in FAMILIES.values():
        mod = fam.tasks()
        missing = [n for n in PACKAGE_EXPORTS if not hasattr(mod, n)]
        assert not missing, (fam.name, missing)
        assert mod.FAMILY == fam.name
        assert all(isinstance(t, TaskType) and t.name == n for n, t in mod.TASK_TYPES.items())
        assert all(Path(p).is_file() for p in mod.DEFAULT_SUITES.values())
        assert fam.env_class().family == fam.name
        assert all(gym.spec(i).entry_point == fam.env_entry for i in fam.env_ids)
        assert isinstance(fam.lmm_defaults(), LMMDefaults)


def test_the_built_in_families_are_the_folders_of_the_package():
    folders = sorted(
        p.name for p in (ROOT / "urban_gym" / "families").iterdir() if (p / "__init__.py").exists()
    )
    assert builtin_names() == folders == ["citywalk", "posegraph360", "streetgraph"]
    assert set(folders) <= set(FAMILIES)


def test_the_core_asks_the_family(toy_family):
    from urban_gym.baselines.lmm.prompt import prompt_builder_for
    from urban_gym.play.controls import family_controls
    from urban_gym.wrappers.protocols import protocol_for

    cw = FAMILIES["citywalk"]
    assert protocol_for("citywalk").name == cw.lmm_defaults().protocol == "observe_reason_act"
    assert prompt_builder_for("citywalk").history == 2
    assert prompt_builder_for("toy_corridor").history == 0  # the defaults of Family
    assert protocol_for("toy_corridor").name == "generic"
    assert family_controls("toy_corridor").family == "toy_corridor"
    assert family_of_id("Toy/Corridor-v0") is toy_family
    assert family_of(gym.make("Toy/Corridor-v0")) is toy_family
    demos = {f.name: f.demo() for f in FAMILIES.values()}
    assert demos["toy_corridor"] is None and isinstance(demos["citywalk"], DemoEpisode)
    with pytest.raises(UrbanGymError, match="unknown task family 'nowhere'; registered: "):
        get_family("nowhere")


# --------------------------------------------------------------------------- checks
class _Bad(Family):
    name = "bad_one"
    title = "Bad"
    tasks_module = "tests.toy_family.tasks"
    env_entry = "tests.toy_family.env:CorridorEnv"
    oracle_entry = "tests.toy_family.oracle:CorridorOracle"
    env_ids = {"Bad/One-v0": {}}


@pytest.mark.parametrize(
    ("attrs", "message"),
    [
        ({"name": "Bad One"}, "name='Bad One' must be lower-case"),
        ({"title": ""}, "title='' must be a non-empty string"),
        ({"env_entry": "tests.toy_family.env.CorridorEnv"}, "env_entry=.*'module:Class'"),
        ({"env_ids": {}}, "env_ids={} must name one id or more"),
        ({"env_ids": {"bad-id": {}}}, "env id 'bad-id' is not 'Namespace/Name-vN'"),
        ({"env_ids": {"Bad/One-v0": {"f": object()}}}, "kwargs of Bad/One-v0 must be a JSON"),
        ({"controls_entry": "no colon"}, "controls_entry='no colon' must be a 'module:attr"),
        ({"lmm_scheme_entries": {"x": 3}}, "lmm_scheme_entries=.* must map names to"),
    ],
)
def test_registering_checks_the_declarations(attrs, message):
    fam = type("Bad", (_Bad,), attrs)()
    with pytest.raises(UrbanGymError, match=message):
        register_family(fam)
    assert "bad_one" not in FAMILIES and "Bad/One-v0" not in gym.registry


def test_registering_checks_the_defaults_and_clashes(toy_family):
    class BadDefaults(_Bad):
        def lmm_defaults(self):
            return LMMDefaults(history=-1)

    with pytest.raises(UrbanGymError, match="history=-1 must be >= 0"):
        check_family(BadDefaults())
    with pytest.raises(UrbanGymError, match="already registered"):
        register_family(type("Again", (_Bad,), {"name": "toy_corridor"})())
    taken = type("Taken", (_Bad,), {"env_ids": {"Toy/Corridor-v0": {}}})()
    with pytest.raises(UrbanGymError, match=r"ids \['Toy/Corridor-v0'\] belong to family"):
        register_family(taken)


# --------------------------------------------------------------------------- plug-ins
def _run(code: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        env={**os.environ, **env},
        cwd=ROOT,
        timeout=120,
    )


def test_a_family_named_in_the_environment_is_registered():
    out = _run(
        """
        import gymnasium as gym, urban_gym
        from urban_gym.tasks.families import FAMILIES
        env = gym.make("Toy/Corridor-v0")
        print(FAMILIES["toy_corridor"].title, env.reset(seed=0)[1]["task_id"])
        """,
        {"URBAN_GYM_FAMILIES": "tests.toy_family", "PYTHONPATH": str(ROOT)},
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split()[0] == "Corridor"


def test_a_family_from_an_installed_package_and_a_broken_one(tmp_path):
    """An entry point of the group ``urban_gym.families`` (a distribution's metadata on
    the path, as ``pip install`` writes it) registers the family; a broken entry warns,
    naming it, and ``import urban_gym`` goes on."""
    dist = tmp_path / "corridor_plugin-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: corridor-plugin\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text(
        "[urban_gym.families]\ncorridor = tests.toy_family:FAMILY\nbroken = no_such_module:FAMILY\n"
    )
    out = _run(
        """
        import warnings
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            import urban_gym
        from urban_gym.tasks.families import FAMILIES
        print("toy_corridor" in FAMILIES)
        print(" | ".join(str(w.message) for w in caught))
        """,
        {"PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT)])},
    )
    assert out.returncode == 0, out.stderr
    registered, warned = out.stdout.splitlines()
    assert registered == "True"
    assert "broken = no_such_module:FAMILY" in warned and "not registered" in warned
