"""A toy family defined entirely inside ``tests/``: walk a corridor.

The corridor has ten cells, 0 to 9, one metre apart from west to east. The family is this
folder, laid out as every family of ``urban_gym/families/`` is -- ``tasks`` (its task
package), ``env``, ``oracle``, ``controls`` (its play page) and, here, the :class:`Family`
that names them -- and nothing under ``urban_gym/`` knows of it. ``docs/extending.md`` is
written from the regions marked ``# [doc:NAME]`` in these files and in
``tests/test_extending.py`` (that test checks that every snippet of the doc is, character
for character, a region of the code).
"""

from __future__ import annotations

# [doc:family]
from urban_gym.tasks.families import Family, register_family, unregister_family


class Corridor(Family):
    """The toy family: a name, its entry points (strings: nothing loads before it is
    used), its ids and its play page."""

    name = "toy_corridor"
    title = "Corridor"
    tasks_module = "tests.toy_family.tasks"
    env_entry = "tests.toy_family.env:CorridorEnv"
    oracle_entry = "tests.toy_family.oracle:CorridorOracle"
    env_ids = {"Toy/Corridor-v0": {}}
    controls_entry = "tests.toy_family.controls:CONTROLS"


FAMILY = Corridor()
# [/doc:family]

ENV_ID = "Toy/Corridor-v0"


# [doc:register]
def register() -> Family:
    """Register the family and its id (again after :func:`unregister`)."""
    return register_family(FAMILY, replace=True)


# [/doc:register]


def unregister() -> None:
    """Remove the family and its id (the registries are process-wide)."""
    unregister_family(FAMILY.name)
