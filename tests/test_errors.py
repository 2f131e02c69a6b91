"""Every error in one module (:mod:`urban_gym.errors`) under one root, each also the
built-in it resembles; no other module of the core defines a public exception."""

from __future__ import annotations

import ast
import pickle
from pathlib import Path

import pytest

import urban_gym
from urban_gym import errors
from urban_gym.errors import UrbanGymError

PKG = Path(urban_gym.__file__).parent

#: error -> the built-in it is also (None: only UrbanGymError).
BUILTINS = {
    "InputError": ValueError,
    "MissingFileError": FileNotFoundError,
    "CityLoadError": ValueError,
    "CityNotFoundError": FileNotFoundError,
    "BundleError": ValueError,
    "TaskError": ValueError,
    "SuiteNotFoundError": FileNotFoundError,
    "SuiteGenerationError": ValueError,
    "JSONDataError": ValueError,
    "GraphError": ValueError,
    "GoalModeError": ValueError,
    "RenderError": ValueError,
    "InfoSchemaError": ValueError,
    "RecordsError": ValueError,
    "ManifestMismatch": ValueError,
    "TraceFormatError": ValueError,
    "JudgeError": ValueError,
    "ControlError": ValueError,
    "SessionBusy": RuntimeError,
    "ModelError": RuntimeError,
    "WorkerError": RuntimeError,
    "AgentGaveUp": None,
    "InvalidAction": None,
}


def test_every_error_has_the_root_and_its_builtin():
    defined = {
        n
        for n, v in vars(errors).items()
        if isinstance(v, type) and issubclass(v, Exception) and v is not UrbanGymError
    }
    assert defined == set(BUILTINS) | {"CityLoadWarning"}
    for name, builtin in BUILTINS.items():
        cls = getattr(errors, name)
        assert issubclass(cls, UrbanGymError), name
        if builtin is not None:
            assert issubclass(cls, builtin), name
    assert not issubclass(UrbanGymError, ValueError)  # the root is every error's, not input's
    assert not issubclass(errors.ModelError, ValueError)
    assert issubclass(errors.CityLoadWarning, UserWarning)


def test_a_missing_city_or_suite_is_a_file_not_found_naming_the_path():
    from urban_gym.tasks.suite import load_suite
    from urban_gym.world import load_city

    with pytest.raises(FileNotFoundError, match="/no/such.osm"):
        load_city("/no/such.osm")
    with pytest.raises(FileNotFoundError, match="/no/such.jsonl: no such suite file"):
        load_suite("/no/such.jsonl")


def test_errors_cross_processes():
    e = pickle.loads(pickle.dumps(errors.ModelError("down", status=503, attempts=4)))
    assert str(e) == "down" and (e.status, e.attempts) == (503, 4)
    assert isinstance(pickle.loads(pickle.dumps(errors.CityNotFoundError("x"))), ValueError)


def test_no_public_exception_is_defined_outside_the_errors_module():
    """Families may subclass the core's errors for their own data; a module of the core
    defines none (private signals of one module, named ``_...``, aside)."""
    found = []
    for path in sorted(PKG.rglob("*.py")):
        if path.name == "errors.py" and path.parent == PKG:
            continue
        in_family = (PKG / "families") in path.parents
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.ClassDef) or node.name.startswith("_"):
                continue
            bases = {getattr(b, "id", getattr(b, "attr", "")) for b in node.bases}
            if bases & {"Exception", "ValueError", "RuntimeError", "UrbanGymError"} or (
                bases & set(BUILTINS) and not in_family
            ):
                found.append(f"{path.relative_to(PKG.parent)}: {node.name}")
    assert not found, found
