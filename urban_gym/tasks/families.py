"""The one registry of task families: what every part of urban_gym needs to know about a
family, by name, as data.

A family is a package of tasks (``urban_gym.tasks.<family>``) that exports the same names
on every family:

=================  ============================================================================
``FAMILY``         the family's name (the ``family`` field of its tasks)
``TASK_TYPES``     type name -> :class:`~urban_gym.tasks.spec.TaskType` (the type table)
``check_task``     ``check_task(task) -> task``: the family's fields, or ``TaskError``
``generate``       ``generate(city, out, seed, per_type) -> GeneratedSuite``: write a suite
                   (``out`` None = the committed default suite) with its per-type report
``evaluate``       ``evaluate(task, outcome) -> metrics``: an episode's scores
``DEFAULT_SUITES`` suite name -> path of the committed suites (JSONL)
=================  ============================================================================

plus an environment class (a subclass of :class:`urban_gym.envs.base.UrbanEnv`), an oracle
and the settings of its language-model face. A :class:`Family` names them all with string
entry points (``"module:attribute"``), so that reading the registry imports nothing: the
environment, the oracle and the wrappers each load what they need when they need it, and
the one-way import direction (``tasks`` <- ``envs`` <- ``wrappers`` <- ``baselines``) holds.

:func:`register_family` adds a family defined anywhere (a test, another package) without
editing a file of urban_gym.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType, ModuleType
from typing import Any

from urban_gym.errors import UrbanGymError

#: The names every family's task package exports (see the module docstring).
PACKAGE_EXPORTS: tuple[str, ...] = (
    "FAMILY",
    "TASK_TYPES",
    "check_task",
    "generate",
    "evaluate",
    "DEFAULT_SUITES",
)


def load_entry(entry: str) -> Any:
    """The object a ``"module:attribute"`` entry point names (``"module"`` alone: the
    module). Raises :class:`UrbanGymError` naming the entry when it cannot be loaded.
    """
    module, _, attr = entry.partition(":")
    try:
        mod = importlib.import_module(module)
    except ImportError as exc:
        raise UrbanGymError(f"entry point {entry!r}: cannot import {module!r} ({exc})") from exc
    if not attr:
        return mod
    try:
        return getattr(mod, attr)
    except AttributeError:
        raise UrbanGymError(f"entry point {entry!r}: {module!r} has no {attr!r}") from None


@dataclass(frozen=True, eq=False)
class Family:
    """One task family (see the module docstring).

    Attributes:
        name: the family's name, as tasks spell it in their ``family`` field.
        package: the module of its tasks (exports :data:`PACKAGE_EXPORTS`).
        env: ``"module:Class"`` of its environment (a subclass of ``UrbanEnv``).
        oracle: ``"module:Class"`` of its oracle (``reset(env)``, ``act(env) -> action``).
        protocol: the name of its prompt protocol (:mod:`urban_gym.wrappers.protocols`).
        memory: the memory wrapper of its language-model face (``"reflection"``,
            ``"agentnav"``) or None.
        history: past turns a language-model agent sees (:class:`PromptBuilder`).
        history_images: whether those past turns keep their images.
        demo_env_id: the registered id ``urban-gym demo`` runs (None: not in the demo).
        demo_kwargs: its ``gym.make`` kwargs (the demo's language-model face adds
            ``lm_env_kwargs`` where these leave them unset).
        demo_options: its reset options.
        lm_env_kwargs: ``gym.make`` kwargs of its language-model face: views sized for a
            multimodal model rather than for RL (:func:`urban_gym.wrappers.lm_env_kwargs`
            fills in those that neither the id's registration nor the caller sets).
    """

    name: str
    package: str
    env: str
    oracle: str
    protocol: str = "generic"
    memory: str | None = None
    history: int = 0
    history_images: bool = False
    demo_env_id: str | None = None
    demo_kwargs: Mapping[str, Any] = field(default_factory=dict)
    demo_options: Mapping[str, Any] | None = None
    lm_env_kwargs: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.name or not isinstance(self.name, str):
            raise UrbanGymError(f"family name={self.name!r} must be a non-empty string")
        for what in ("env", "oracle"):
            entry = getattr(self, what)
            if not isinstance(entry, str) or ":" not in entry:
                raise UrbanGymError(
                    f"family {self.name!r}: {what}={entry!r} must be a 'module:Class' entry point"
                )
        if self.history < 0:
            raise UrbanGymError(f"family {self.name!r}: history={self.history!r} must be >= 0")

    @property
    def generator(self) -> str:
        """The entry point of the suite generator: ``"<package>:generate"``."""
        return f"{self.package}:generate"

    def tasks_module(self) -> ModuleType:
        """The family's task package (imported now)."""
        return load_entry(self.package)

    def env_class(self) -> type:
        """The environment class (imported now)."""
        return load_entry(self.env)

    def make_oracle(self) -> Any:
        """A new oracle of this family."""
        return load_entry(self.oracle)()

    def default_suites(self) -> Mapping[str, Path]:
        """Suite name -> path of the committed suites."""
        return self.tasks_module().DEFAULT_SUITES


_FAMILIES: dict[str, Family] = {}
#: name -> :class:`Family`, read-only (add one with :func:`register_family`).
FAMILIES: Mapping[str, Family] = MappingProxyType(_FAMILIES)


def register_family(family: Family, replace: bool = False) -> Family:
    """Add ``family`` to the registry (``replace=True``: overwrite one of the same name)."""
    if not isinstance(family, Family):
        raise UrbanGymError(f"register_family takes a Family, got {type(family).__name__}")
    old = _FAMILIES.get(family.name)
    if old is not None and old is not family and not replace:
        raise UrbanGymError(
            f"family {family.name!r} is already registered; pass replace=True to overwrite it"
        )
    _FAMILIES[family.name] = family
    return family


def unregister_family(name: str) -> None:
    """Remove a family (a no-op when it is not registered)."""
    _FAMILIES.pop(name, None)


def get_family(name: str) -> Family:
    """The registered family ``name``; :class:`UrbanGymError` naming the known ones."""
    fam = _FAMILIES.get(name) if isinstance(name, str) else None
    if fam is None:
        raise UrbanGymError(
            f"unknown task family {name!r}; registered: {', '.join(_FAMILIES) or 'none'}"
        )
    return fam


def family_names() -> tuple[str, ...]:
    """The names of the registered families, in registration order."""
    return tuple(_FAMILIES)


register_family(
    Family(
        name="posegraph360",
        package="urban_gym.families.posegraph360.tasks",
        env="urban_gym.families.posegraph360.env:PoseGraph360Env",
        oracle="urban_gym.families.posegraph360.oracle:PoseGraphOracle",
        protocol="react",
        memory="reflection",
        demo_env_id="UrbanGym/PoseGraph360-v0",
        demo_kwargs={"task_types": ["map_navigation"], "difficulties": ["easy"]},
        # 768x768 cut from a 3072-px panorama: a 90-degree crop is never upsampled
        lm_env_kwargs={"view_size": [768, 768], "pano_width": 3072},
    )
)
register_family(
    Family(
        name="streetgraph",
        package="urban_gym.families.streetgraph.tasks",
        env="urban_gym.families.streetgraph.env:StreetGraphEnv",
        oracle="urban_gym.families.streetgraph.oracle:StreetGraphOracle",
        protocol="verbalized_path",
        memory="agentnav",
        demo_env_id="UrbanGym/StreetGraph-v0",
        demo_options={"task_index": 0},
        # CityNav's 512x512 per street, cut from a 2048-px panorama (4 x the width)
        lm_env_kwargs={"image_size": [512, 512]},
    )
)
register_family(
    Family(
        name="citywalk",
        package="urban_gym.families.citywalk.tasks",
        env="urban_gym.families.citywalk.env:CityWalkEnv",
        oracle="urban_gym.families.citywalk.oracle:CityWalkOracle",
        protocol="observe_reason_act",
        memory=None,
        history=2,
        demo_env_id="UrbanGym/CityWalk-v0",
        demo_kwargs={"task_types": ["SGN"]},
        demo_options={"task_index": 0},
        # a 16:9 first-person view cast at its own resolution, as UrbanGround's screenshots
        lm_env_kwargs={"view_size": [960, 540]},
    )
)

__all__ = [
    "FAMILIES",
    "PACKAGE_EXPORTS",
    "Family",
    "family_names",
    "get_family",
    "load_entry",
    "register_family",
    "unregister_family",
]
