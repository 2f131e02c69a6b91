"""What a language-model agent's model sees, and which setting decides it.

The settings of the language-model face are the source papers' ablations plus one of
ours:

* ``location`` -- the map of the agent's current location each step (360CityArena's main
  setting, appendix A.4: "a map indicating the agent's current location"). False is the
  paper's *without location* setting (Section 5.2, Table 3: the agent is not given its
  current location): no location map, and any other map the model gets is drawn without
  the agent's arrow and trail, north-up over the whole district
  (``MapObservation(show_location=False)``).
* ``map`` -- a map image besides the env's own (``MapObservation``: True, or its
  arguments). False is *without map*: no map image of the agent's surroundings at all,
  the location map included. The task's own reference image stays (a Map Navigation
  task's route map is the task itself, not an input to ablate).
* ``memory`` -- the memory texts carried from step to step (a memory name, or ``"none"``:
  *without memory*; AgentNav's component table in CityNav switches its memory off the same
  way). Without memory the model is not asked for a ``memory`` field either, the prompts
  leave out how to keep one, and a scheme's own memory (AgentNav's parts, PReP's record of
  earlier steps) is off too. Past turns are a separate setting.
* ``history`` / ``history_images`` -- past turns shown besides the current one (a number,
  or ``"all"``: the whole conversation), with their images, without them, or with those
  of the last k past turns only.
* ``action_schema`` -- the JSON schema of the action object in the system prompt (None:
  the prompt protocol's own choice).

**Precedence.** A setting the user gives explicitly wins over the scheme's default
(:meth:`~urban_gym.baselines.lmm.schemes.base.Scheme.stack_options`,
:meth:`~urban_gym.baselines.lmm.schemes.base.Scheme.history`), which wins over the
family's default (:meth:`~urban_gym.tasks.families.Family.lmm_defaults`). It is decided
here, once, for every scheme -- a scheme only states its defaults.

**What a family cannot show.** Asking for something the family cannot show (a location
map on a family whose env draws none) is an :class:`~urban_gym.errors.InputError` naming
the family. Switching off something the family does not show is a no-op, recorded in
the run's manifest as a note (with the family's own notes, ``LMMDefaults.notes``, e.g. a
map the agent opens itself as an action).

:func:`describe_face` is what the manifest records (``agent.config.face``): the images and
maps the model gets, whether a map shows the agent's arrow, the memory, the history
window, the reply format, and where each setting came from.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym
from gymnasium import spaces

from urban_gym.baselines.lmm.prompt import check_history, check_history_images
from urban_gym.errors import InputError
from urban_gym.tasks.families import LMMDefaults, family_of

#: The settings, in the order the manifest lists them.
SETTINGS: tuple[str, ...] = (
    "location",
    "map",
    "memory",
    "memory_budget",
    "history",
    "history_images",
    "action_schema",
)
#: The default characters per memory text.
MEMORY_BUDGET = 2000
#: Keys of a scheme's ``stack_options`` -> the setting each one sets.
SCHEME_KEYS: dict[str, str] = {
    "location_map": "location",
    "map_observation": "map",
    "memory": "memory",
    "memory_budget": "memory_budget",
}


@dataclass(frozen=True)
class FaceRequest:
    """The settings a user gave explicitly (None: not given; ``memory="none"``: without
    memory). See the module docstring for each one.
    """

    location: bool | None = None
    map: bool | Mapping[str, Any] | None = None
    memory: str | None = None
    memory_budget: int | None = None
    history: int | str | None = None
    history_images: bool | int | None = None
    action_schema: bool | None = None

    def __post_init__(self) -> None:
        try:
            if self.history is not None:
                check_history(self.history)
            if self.history_images is not None:
                check_history_images(self.history_images)
        except ValueError as exc:
            raise InputError(str(exc)) from None
        if self.memory_budget is not None and int(self.memory_budget) < 1:
            raise InputError(f"memory_budget={self.memory_budget!r} must be >= 1")

    def given(self) -> dict[str, Any]:
        """The settings given, by name (``memory="auto"`` counts as not given)."""
        out = {k: getattr(self, k) for k in SETTINGS if getattr(self, k) is not None}
        if out.get("memory") == "auto":
            del out["memory"]
        return out


@dataclass(frozen=True)
class FaceSettings:
    """The settings in effect for one env (see :func:`resolve_face`).

    Attributes:
        family: the env's family name (None: no registered family).
        location_map: add the map of the current location.
        map_observation: the ``MapObservation`` arguments of the extra map, or None.
        memory: the memory name, or None.
        memory_budget: characters per memory text.
        history: past turns shown (``"all"``: every one).
        history_images: whether past turns keep their images (an int k: the last k).
        action_schema: show the action's JSON schema (None: the protocol's choice).
        sources: setting -> ``user``, ``scheme``, ``family`` or ``default``.
        notes: what the settings did not change, and the family's notes about them.
    """

    family: str | None
    location_map: bool
    map_observation: Mapping[str, Any] | None
    memory: str | None
    memory_budget: int
    history: int | str
    history_images: bool | int
    action_schema: bool | None
    sources: Mapping[str, str] = field(default_factory=dict)
    notes: tuple[str, ...] = ()

    @property
    def without_memory(self) -> bool:
        """Whether the user switched memory off (``memory="none"``): a scheme's own memory
        goes too, not only the memory texts of the face.
        """
        return self.memory is None and self.sources.get("memory") == "user"

    def stack_options(self) -> dict[str, Any]:
        """The arguments of :func:`~urban_gym.wrappers.stacks.make_lmm_env` besides the
        env, the protocol and the interface's own.
        """
        return {
            "location_map": self.location_map,
            "map_observation": dict(self.map_observation)
            if self.map_observation is not None
            else False,
            "memory": self.memory,
            "memory_budget": self.memory_budget,
        }


def resolve_face(env: gym.Env, request: FaceRequest, scheme: Any = None) -> FaceSettings:
    """The settings in effect on ``env``: the user's explicit ones, else the scheme's
    defaults, else the family's (see the module docstring).

    Raises :class:`InputError` for a request the family cannot show or that contradicts
    itself (``map=False`` with ``location=True``).
    """
    fam = family_of(env)
    name = fam.name if fam is not None else None
    d = fam.lmm_defaults() if fam is not None else LMMDefaults()
    can_locate = callable(getattr(env.unwrapped, "location_map", None)) or bool(
        getattr(env.unwrapped, "location_prior", False)
    )
    values: dict[str, Any] = {
        "location": bool(d.location_map and can_locate),
        "map": None,
        "memory": d.memory,
        "memory_budget": MEMORY_BUDGET,
        "history": check_history(d.history),
        "history_images": check_history_images(d.history_images),
        "action_schema": None,
    }
    base = "family" if fam is not None else "default"
    sources = dict.fromkeys(SETTINGS, base)
    sources["memory_budget"] = sources["action_schema"] = "default"
    if scheme is not None:
        for key, value in scheme.stack_options(name).items():
            if key in SCHEME_KEYS and value is not None:
                values[SCHEME_KEYS[key]] = value
                sources[SCHEME_KEYS[key]] = "scheme"
        past = scheme.history(name)
        if past is not None:
            try:
                values["history"] = check_history(past[0])
                values["history_images"] = check_history_images(past[1])
            except ValueError as exc:
                raise InputError(f"scheme {scheme.name!r}: {exc}") from None
            sources["history"] = sources["history_images"] = "scheme"
    before = dict(values)
    given = request.given()
    for k, v in given.items():
        values[k] = v
        sources[k] = "user"
    notes = _apply_rules(values, sources, before, given, name, can_locate, d)
    if given.get("memory") == "none" and getattr(scheme, "own_memory", ""):
        notes = [n for n in notes if not n.startswith("without memory:")]
        notes.append(f"without memory: the scheme's own memory ({scheme.own_memory}) is off")
    if values["memory"] == "none":
        values["memory"] = None
    return FaceSettings(
        family=name,
        location_map=bool(values["location"]),
        map_observation=_map_kwargs(values["map"]),
        memory=values["memory"],
        memory_budget=int(values["memory_budget"]),
        history=check_history(values["history"]),
        history_images=check_history_images(values["history_images"]),
        action_schema=values["action_schema"],
        sources=sources,
        notes=tuple(notes),
    )


def _map_kwargs(value: Any) -> dict[str, Any] | None:
    if value is None or value is False:
        return None
    if value is True:
        return {}
    if isinstance(value, Mapping):
        return dict(value)
    raise InputError(f"map={value!r} must be true, false or a mapping of MapObservation arguments")


def _apply_rules(
    values: dict[str, Any],
    sources: dict[str, str],
    before: Mapping[str, Any],
    given: Mapping[str, Any],
    family: str | None,
    can_locate: bool,
    defaults: LMMDefaults,
) -> list[str]:
    """Apply "without map" and "without location" to the merged settings; the notes."""
    notes: list[str] = []
    fam = repr(family) if family is not None else "this env's"
    if given.get("location") is True and not can_locate:
        raise InputError(
            f"location=True (--location-prior): the {fam} family draws no map of the current "
            "location; leave the switch out"
        )
    if given.get("map") is False:  # without map: no map image of any kind
        if given.get("location") is True:
            raise InputError(
                "map=False (--no-map, without map) contradicts location=True "
                "(--location-prior): the map of the current location is a map"
            )
        if not before["location"] and not _map_kwargs(before["map"]):
            notes.append(f"without map: the {fam} family shows no map here; nothing removed")
        values["location"] = False
        sources["location"] = "user (map=False)"
        values["map"] = None
    if given.get("location") is False:  # without location: nothing shows where it is
        removed = bool(before["location"])
        kw = _map_kwargs(values["map"])
        if kw is not None:
            if kw.get("show_location", True):
                removed = True
            values["map"] = {**kw, "show_location": False}
            notes.append(
                "without location: the map is drawn north-up over the district, without the "
                "agent's arrow or trail"
            )
        if not removed:
            notes.append(
                f"without location: the {fam} family shows no location map here; nothing removed"
            )
    if given.get("memory") == "none" and before["memory"] is None:
        notes.append(f"without memory: the {fam} family keeps no memory texts here")
    for setting, off in (
        ("location", given.get("location") is False or given.get("map") is False),
        ("map", given.get("map") is False),
        ("memory", given.get("memory") == "none"),
    ):
        text = defaults.notes.get(setting) if off else None
        if text:
            notes.append(text)
    return notes


# --------------------------------------------------------------------------- the record
def describe_face(
    stack: gym.Env, settings: FaceSettings, include_images: bool = True
) -> dict[str, Any]:
    """What the model sees on ``stack`` (a face :func:`make_lmm_env` built with
    ``settings``): for the run's manifest (see the module docstring).
    """
    from urban_gym.wrappers.lmm_interface import LMMInterface
    from urban_gym.wrappers.map_observation import AddLocationMap, MapObservation
    from urban_gym.wrappers.protocols import protocol_for, title

    lm = stack if isinstance(stack, LMMInterface) else None
    e: Any = stack
    maps: list[dict[str, Any]] = []
    while isinstance(e, gym.Wrapper):
        if isinstance(e, LMMInterface):
            lm = lm or e
        elif isinstance(e, AddLocationMap):
            maps.append({"key": e.key, "kind": "location", "agent_arrow": True})
        elif isinstance(e, MapObservation) and e.enabled and e.observe:
            maps.append(
                {"key": e.key, "kind": "map", "view": e.view, "agent_arrow": e.show_location}
            )
        e = e.env
    core = e
    if getattr(core, "location_prior", False):
        maps.append({"key": "map", "kind": "location", "agent_arrow": True, "drawn_by": "env"})
    protocol = (lm.protocol if lm is not None else None) or protocol_for(settings.family)
    hidden = set(getattr(protocol, "hidden", ()))
    space = (lm.env if lm is not None else stack).observation_space
    images = [k for k, sub in getattr(space, "spaces", {}).items() if _is_image_space(sub)]
    images = [k for k in images if k not in hidden] if include_images else []
    shown = set(images)
    maps = [m for m in maps if m["key"] in shown]
    include_schema = lm.include_schema if lm is not None else settings.action_schema
    return {
        "family": settings.family,
        "images": [{"key": k, "caption": title(k)} for k in images],
        "maps": maps,
        "agent_arrow": any(m["agent_arrow"] for m in maps),
        "memory": None
        if settings.memory is None
        else {"kind": settings.memory, "budget": settings.memory_budget},
        "history": {"turns": settings.history, "images": settings.history_images},
        "reply_format": protocol.reply_format(include_schema),
        "include_images": bool(include_images),
        "sources": dict(settings.sources),
        "notes": list(settings.notes),
    }


def _is_image_space(sub: Any) -> bool:
    """A ``uint8`` Box of one image (H, W, C) or a stack of them (N, H, W, C)."""
    if not isinstance(sub, spaces.Box) or sub.dtype != "uint8":
        return False
    shape = sub.shape
    if len(shape) == 3:
        return shape[2] in (1, 3, 4) and min(shape[:2]) >= 8
    return len(shape) == 4 and shape[3] in (1, 3, 4) and min(shape[1:3]) >= 8
