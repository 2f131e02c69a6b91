"""Ready-made wrapper stacks: the language-model face of any registered id.

:func:`make_lmm_env` stacks, from the env outwards: the map of the current location where
the family shows one, the optional overview map
(:class:`~urban_gym.wrappers.map_observation.MapObservation`), the family's memory
(:class:`~urban_gym.wrappers.memory.ReflectionMemory`, or one the family defines) and the
language-model interface on top; each default is the family's
(:meth:`~urban_gym.tasks.families.Family.lmm_defaults`). The RL face is
:func:`urban_gym.wrappers.rl.make_rl_env`.

Made from an id, the language-model face sees views sized for a multimodal model, not
the small RL defaults: :func:`lmm_env_kwargs` adds the family's ``env_kwargs`` of its
language-model defaults wherever neither the id's registration nor the caller sets that
argument (so an id registered without a view stays without one, and small procedural
variants stay small).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

import gymnasium as gym

from urban_gym.errors import InputError
from urban_gym.tasks.families import FAMILIES, family_of, family_of_id
from urban_gym.wrappers.protocols import PromptProtocol

#: The memory the core defines (families add theirs: ``Family.lmm_memories``).
CORE_MEMORIES: tuple[str, ...] = ("reflection",)


def memory_names() -> tuple[str, ...]:
    """Every memory name ``make_lmm_env(memory=...)`` takes: the core's and the registered
    families' (plus ``"auto"``, the family's default, and None).
    """
    names = list(CORE_MEMORIES)
    for fam in FAMILIES.values():
        names += [n for n in fam.lmm_memories() if n not in names]
    return tuple(names)


def find_wrapper(env: gym.Env, cls: type) -> Any:
    """The first wrapper of type ``cls`` in ``env``'s stack (outermost first), or None."""
    e: Any = env
    while True:
        if isinstance(e, cls):
            return e
        if not isinstance(e, gym.Wrapper):
            return None
        e = e.env


def lmm_env_kwargs(env_id: str, env_kwargs: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """``env_kwargs`` plus the language-model view settings of ``env_id``'s family.

    A setting is added only where neither ``env_kwargs`` nor the id's registered kwargs
    set it. An id of no registered family gets ``env_kwargs`` unchanged.

    Example: an id whose family's defaults say ``{"view_size": [960, 540]}`` gets that
    view; an id registered with ``view_size=None`` keeps None.
    """
    out = dict(env_kwargs or {})
    try:
        spec = gym.spec(env_id)
    except gym.error.Error:
        return out  # gym.make names the unknown id
    fam = family_of_id(env_id)
    if fam is None:
        return out
    registered = spec.kwargs or {}
    for key, value in fam.lmm_defaults().env_kwargs.items():
        if key not in out and key not in registered:
            out[key] = copy.deepcopy(value)
    return out


def make_lmm_env(
    env: str | gym.Env,
    protocol: str | PromptProtocol | None = None,
    map_observation: bool | Mapping[str, Any] = False,
    memory: str | None = "auto",
    memory_budget: int = 2000,
    lmm_kwargs: Mapping[str, Any] | None = None,
    env_kwargs: Mapping[str, Any] | None = None,
    location_map: bool | None = None,
) -> gym.Env:
    """The language-model face of ``env`` (an id for ``gym.make`` with ``env_kwargs``, or
    an env).

    Args:
        env: a registered id (made with ``gym.make``) or an env instance.
        protocol: a prompt protocol or its name (None: the family's).
        map_observation: add a ``map`` image (True, or a dict of MapObservation arguments).
        memory: ``"auto"`` (the family's), a memory name (:func:`memory_names`) or None.
        memory_budget: characters per memory text.
        lmm_kwargs: more arguments of :class:`LMMInterface` (image budget, ...).
        env_kwargs: keyword arguments of ``gym.make`` when ``env`` is an id; the
            family's language-model views fill in what they leave unset
            (:func:`lmm_env_kwargs`). A given env instance is used as it is.
        location_map: show the map of the agent's current location each step
            (:class:`~urban_gym.wrappers.map_observation.AddLocationMap`). None: the
            family's default (``location_map`` of its language-model defaults); False
            leaves it out. (The "without location" ablation also draws an extra map
            without the agent's arrow, ``map_observation={"show_location": False}``; the
            ``lmm`` agent decides both, :mod:`urban_gym.baselines.lmm.face`.)
    """
    from urban_gym.wrappers.lmm_interface import LMMInterface
    from urban_gym.wrappers.memory import ReflectionMemory

    e = gym.make(env, **lmm_env_kwargs(env, env_kwargs)) if isinstance(env, str) else env
    e = _location_setting(e, location_map)
    if map_observation:
        from urban_gym.wrappers.map_observation import MapObservation

        kw = dict(map_observation) if isinstance(map_observation, Mapping) else {}
        if kw.get("key", "map") in getattr(e.observation_space, "spaces", {}):
            kw["key"] = "overview_map"  # the env draws its own "map" (e.g. a location prior)
        e = MapObservation(e, **kw)
    fam = family_of(e)
    if memory == "auto":
        kind = fam.lmm_defaults().memory if fam is not None else None
    else:
        kind = memory
    family_memories = fam.lmm_memories() if fam is not None else {}
    if kind == "reflection":
        e = ReflectionMemory(e, budget=memory_budget)
    elif kind is not None and kind in family_memories:
        e = family_memories[kind](e, budget=memory_budget)
    elif kind is not None:
        known = ", ".join(repr(n) for n in ("auto", *CORE_MEMORIES, *family_memories))
        raise InputError(f"memory={memory!r} is not one of {known}, None")
    return LMMInterface(e, protocol=protocol, **dict(lmm_kwargs or {}))


def _location_setting(e: gym.Env, location_map: bool | None) -> gym.Env:
    """Add (or check the absence of) the location map of 360CityArena's main setting."""
    has = "map" in getattr(e.observation_space, "spaces", {})
    if location_map is None:  # the family's default: where the env can draw the map
        can = callable(getattr(e.unwrapped, "location_map", None))
        fam = family_of(e)
        want = fam is not None and fam.lmm_defaults().location_map and can
    else:
        want = bool(location_map)
    if want and not has:
        from urban_gym.wrappers.map_observation import AddLocationMap

        return AddLocationMap(e)
    if not want and has and getattr(e.unwrapped, "location_prior", False):
        raise InputError(
            "location_map=False (the 'without location' setting) but the env was made with "
            "location_prior=True; make it with location_prior=False"
        )
    return e
