"""The environment families of urban_gym, one package each, and how families are found.

Every sub-package of this package is a built-in family: its ``FAMILY`` is an instance of a
:class:`~urban_gym.tasks.families.Family` subclass, and :func:`register_all` registers it
with its ids (``import urban_gym`` calls it). Adding a built-in family is adding a folder
here; nothing else in the package changes.

Families from elsewhere are found the same way, by name:

* an installed package that declares an entry point in the group ``urban_gym.families``
  (``[project.entry-points."urban_gym.families"] corridor = "my_pkg.corridor:FAMILY"``);
* the environment variable ``URBAN_GYM_FAMILIES``: comma-separated modules whose ``FAMILY``
  to register (``URBAN_GYM_FAMILIES=my_pkg.corridor urban-gym eval ...``), or
  ``module:attribute`` entries.

A family from elsewhere that fails to load is reported with a warning naming it; the
built-in families and ``import urban_gym`` are not held up by it.
"""

from __future__ import annotations

import importlib
import os
import pkgutil
import warnings
from collections.abc import Iterator

from urban_gym.tasks.families import FAMILIES, Family, load_entry, register_family

#: The entry-point group installed packages declare their families in.
ENTRY_POINT_GROUP = "urban_gym.families"
#: The environment variable that names families to register (comma-separated).
ENV_VAR = "URBAN_GYM_FAMILIES"


def builtin_names() -> list[str]:
    """The names of the built-in family packages (sorted)."""
    return sorted(m.name for m in pkgutil.iter_modules(__path__) if m.ispkg)


def _as_family(obj: object, where: str) -> Family:
    fam = obj() if isinstance(obj, type) and issubclass(obj, Family) else obj
    if not isinstance(fam, Family):
        from urban_gym.errors import InputError

        raise InputError(f"{where} is {type(fam).__name__}, not a Family")
    return fam


def _load(entry: str) -> Family:
    """The family an entry names: ``module`` (its ``FAMILY``) or ``module:attribute``."""
    return _as_family(load_entry(entry if ":" in entry else f"{entry}:FAMILY"), entry)


def _plugin_entries() -> Iterator[tuple[str, object]]:
    from importlib.metadata import entry_points

    for ep in entry_points(group=ENTRY_POINT_GROUP):
        yield f"entry point {ep.name} = {ep.value}", ep
    for item in os.environ.get(ENV_VAR, "").split(","):
        if item.strip():
            yield f"{ENV_VAR} entry {item.strip()!r}", item.strip()


def register_all() -> None:
    """Register the built-in families, then those of installed packages and of
    ``URBAN_GYM_FAMILIES`` (each once; see the module docstring).
    """
    for name in builtin_names():
        module = importlib.import_module(f"{__name__}.{name}")
        fam = module.FAMILY
        if FAMILIES.get(fam.name) is not fam:
            register_family(fam)
    for where, source in _plugin_entries():
        try:
            obj = source.load() if hasattr(source, "load") else None
            fam = _as_family(obj, where) if obj is not None else _load(str(source))
            if FAMILIES.get(fam.name) is not fam:
                register_family(fam)
        except Exception as exc:  # a broken plugin must not break import urban_gym
            warnings.warn(f"urban_gym: family from {where} not registered: {exc}", stacklevel=2)


__all__ = ["ENTRY_POINT_GROUP", "ENV_VAR", "builtin_names", "register_all"]
