"""The family registry: every question the core asks of an environment family, and the
families registered in this process.

The core of urban_gym (``world``, ``render``, ``tasks``, ``envs``, ``wrappers``,
``baselines``, ``eval``, ``play``, ``cli``) never names a family. Where it needs something
only a family knows -- its env class, its tasks, its oracle, the keys of its play page, the
extra tables of its report, the prompt its language-model face writes -- it asks the
family's :class:`Family` object, found by name with :func:`get_family`. A family is one
package (``urban_gym/families/<name>/`` for the built-in ones, or any importable package of
a user's) whose ``FAMILY`` is an instance of a :class:`Family` subclass:

======================  ====================================================================
what the core asks      where :class:`Family` answers it
======================  ====================================================================
the family's tasks      :attr:`~Family.tasks_module` (a package exporting
                        :data:`PACKAGE_EXPORTS`: the type table, ``check_task``,
                        ``generate``, ``evaluate``, the committed suites)
its environment         :attr:`~Family.env_entry`, registered under every id of
                        :attr:`~Family.env_ids`
its oracle              :attr:`~Family.oracle_entry`
where a task starts     :meth:`~Family.task_points`, :meth:`~Family.task_frame` (held-out
and ends                splits by area)
report groups           :meth:`~Family.task_category`, :meth:`~Family.category_order`
report extras           :meth:`~Family.report_sections`, :meth:`~Family.report_markdown`,
                        :meth:`~Family.report_plots`
report layouts          :meth:`~Family.report_layouts` (``urban-gym report --layout``)
threshold sensitivity   :meth:`~Family.threshold_sweep`, :meth:`~Family.rescore`
the play page           :meth:`~Family.play_controls`
the language-model      :meth:`~Family.lmm_defaults`, :meth:`~Family.lmm_protocols`,
face                    :meth:`~Family.lmm_memories`, :meth:`~Family.lmm_schemes`,
                        :meth:`~Family.lmm_presets`
the demo                :meth:`~Family.demo`
command-line tools      :meth:`~Family.cli_commands`
worlds to hand to       :meth:`~Family.world_memos`
worker processes
======================  ====================================================================

Every answer but the first three has a default that fits a family with nothing special
to say, so a new family starts with a name, three entry points and its ids.

Entry points are strings (``"module:attribute"``) so that reading the registry imports
nothing heavy: ``import urban_gym`` registers the families and their ids, and the env,
oracle and task modules load when first used. :func:`register_family` checks a family
before it is added (names, entry-point syntax, ids, JSON-serialisable kwargs, the
language-model defaults) and registers its ids with Gymnasium.
"""

from __future__ import annotations

import argparse
import importlib
import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType, ModuleType
from typing import Any, ClassVar

from urban_gym.errors import InputError

#: A task (:class:`urban_gym.tasks.spec.TaskSpec`, which imports this registry).
TaskSpec = Any

#: The names every family's task package exports.
PACKAGE_EXPORTS: tuple[str, ...] = (
    "FAMILY",
    "TASK_TYPES",
    "check_task",
    "generate",
    "evaluate",
    "DEFAULT_SUITES",
)

#: A family's name: lower-case letters, digits and underscores, starting with a letter.
NAME_PATTERN = re.compile(r"^[a-z][a-z0-9_]*$")
#: A registered id: ``Namespace/Name-vN``.
ENV_ID_PATTERN = re.compile(r"^[A-Za-z][\w.-]*/[A-Za-z][\w.-]*-v\d+$")
#: Where an entry point is ``module:attribute``.
ENTRY_PATTERN = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_][\w.]*$")


def load_entry(entry: str) -> Any:
    """The object a ``"module:attribute"`` entry point names (``"module"`` alone: the
    module). Raises :class:`UrbanGymError` naming the entry when it cannot be loaded.
    """
    module, _, attr = entry.partition(":")
    try:
        obj: Any = importlib.import_module(module)
    except ImportError as exc:
        raise InputError(f"entry point {entry!r}: cannot import {module!r} ({exc})") from exc
    for part in attr.split(".") if attr else ():
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise InputError(f"entry point {entry!r}: {module!r} has no {attr!r}") from None
    return obj


@dataclass(frozen=True)
class LMMDefaults:
    """How a family's language-model face is set up unless the caller says otherwise.

    Attributes:
        protocol: the name of its prompt protocol (:meth:`Family.lmm_protocols` or one of
            the core's, :mod:`urban_gym.wrappers.protocols`).
        memory: the name of its memory wrapper (:meth:`Family.lmm_memories` or the core's
            ``"reflection"``), or None.
        history: past turns a language-model agent sees besides the current one.
        history_images: whether those past turns keep their images.
        location_map: whether the model sees a map of its current location each step.
        env_kwargs: ``gym.make`` kwargs of the face: views sized for a multimodal model
            rather than for RL (filled in where neither the id's registration nor the
            caller sets them).
        notes: what switching a setting off (``"location"``, ``"map"``, ``"memory"``)
            leaves in place on this family, one sentence each; a run that switches it off
            records the sentence in its manifest (:mod:`urban_gym.baselines.lmm.face`).
    """

    protocol: str = "generic"
    memory: str | None = None
    history: int = 0
    history_images: bool = False
    location_map: bool = False
    env_kwargs: Mapping[str, Any] = field(default_factory=dict)
    notes: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class ThresholdSweep:
    """The success thresholds ``urban-gym sensitivity`` varies for a family's runs.

    Attributes:
        scales: factors applied to every episode's own success radius at once.
        radii: task type -> absolute radii (metres) tried for that type alone, the other
            types keeping their own.
        source: where the values come from (a paper and its section), for the output.
    """

    scales: tuple[float, ...] = (0.75, 1.0, 1.25, 1.5)
    radii: Mapping[str, tuple[float, ...]] = field(default_factory=dict)
    source: str = ""


@dataclass(frozen=True)
class DemoEpisode:
    """The episode ``urban-gym demo`` runs for a family: an id, its kwargs and reset
    options (the demo's language-model face adds the family's view sizes).
    """

    env_id: str
    env_kwargs: Mapping[str, Any] = field(default_factory=dict)
    options: Mapping[str, Any] | None = None


@dataclass(frozen=True)
class FamilyCommand:
    """A sub-command of ``urban-gym`` that a family adds.

    Attributes:
        name: the sub-command (``urban-gym NAME``).
        help: one line for ``urban-gym --help``.
        add_arguments: fills the sub-command's ``argparse`` parser.
        run: runs it with the parsed arguments; returns the exit status.
    """

    name: str
    help: str
    add_arguments: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int]


def _json_ok(value: Any) -> bool:
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError):
        return False
    return True


class Family:
    """One environment family as the core sees it (see the module docstring).

    A family subclasses this, sets the class attributes and overrides the methods where
    its answer differs from the default. The methods import their family's modules when
    called, never before.

    Attributes:
        name: the family's name, as its tasks spell it in their ``family`` field.
        title: how people write it (``"Corridor"``): page titles, reports.
        paper: the benchmark the family follows, for reports and docs ("" for none).
        tasks_module: the family's task package (exports :data:`PACKAGE_EXPORTS`).
        env_entry: ``"module:Class"`` of its environment, a subclass of
            :class:`~urban_gym.envs.base.UrbanEnv`.
        vector_entry: ``"module:Class"`` of its native batched vector env (a subclass of
            :class:`~urban_gym.envs.vector.NativeVectorEnv`), registered as every id's
            ``vector_entry_point`` so that ``gym.make_vec(id, num_envs=N)`` returns it
            ("" for none: ``gym.make_vec`` then steps N copies in sync mode).
        oracle_entry: ``"module:Class"`` of its oracle (``reset(env)``,
            ``act(env) -> action``).
        env_ids: the Gymnasium ids of its environment -> their ``gym.make`` kwargs
            (JSON-serialisable).
        report_module: the module of its own report sections ("" for none): its
            ``sections(run, table, resamples, seed)``, ``markdown(results)`` and
            ``plots(plt, out, stem, name, results)``, and for the threshold-sensitivity
            check its ``THRESHOLD_SWEEP`` and ``rescore(record, scale, radius_m)``, each
            optional.
        report_layout_entries: the layouts of ``urban-gym report --layout NAME`` it
            offers (a paper's tables), name -> ``"module:attribute"`` of a
            :class:`urban_gym.eval.layouts.ReportLayout`.
        controls_entry: ``"module:attribute"`` of its play page's controls ("" for none).
        commands_entry: ``"module:attribute"`` of its ``urban-gym`` sub-commands.
        lmm_protocol_entries: its prompt protocols, name -> ``"module:Class"``.
        lmm_memory_entries: its memory wrappers, name -> ``"module:Class"``.
        lmm_scheme_entries: the agents of its paper, name -> ``"module:Class"``.
        lmm_preset_entries: its paper's model settings (``--preset NAME``), name ->
            ``"module:attribute"`` of a mapping of agent options (one setting for every
            model) or a :class:`urban_gym.eval.presets.ModelPreset` (settings per model).
        world_memo_entries: in-process memos of its loaded worlds, ``(module, attribute)``.
        suite_track_entries: its suites beside the default one (``urban-gym
            generate-suite --track NAME``), name -> ``"module:function"`` of a generator
            ``(city, out, seed, per_type, progress) -> GeneratedSuite`` (``per_type``
            None: the track's own default; ``progress``: a callable taking one line).
    """

    name: ClassVar[str] = ""
    title: ClassVar[str] = ""
    paper: ClassVar[str] = ""
    tasks_module: ClassVar[str] = ""
    env_entry: ClassVar[str] = ""
    vector_entry: ClassVar[str] = ""
    oracle_entry: ClassVar[str] = ""
    env_ids: ClassVar[Mapping[str, Mapping[str, Any]]] = MappingProxyType({})
    report_module: ClassVar[str] = ""
    report_layout_entries: ClassVar[Mapping[str, str]] = MappingProxyType({})
    controls_entry: ClassVar[str] = ""
    commands_entry: ClassVar[str] = ""
    lmm_protocol_entries: ClassVar[Mapping[str, str]] = MappingProxyType({})
    lmm_memory_entries: ClassVar[Mapping[str, str]] = MappingProxyType({})
    lmm_scheme_entries: ClassVar[Mapping[str, str]] = MappingProxyType({})
    lmm_preset_entries: ClassVar[Mapping[str, str]] = MappingProxyType({})
    world_memo_entries: ClassVar[tuple[tuple[str, str], ...]] = ()
    suite_track_entries: ClassVar[Mapping[str, str]] = MappingProxyType({})

    # ------------------------------------------------------------------ the three parts
    def tasks(self) -> ModuleType:
        """The family's task package (imported now)."""
        return load_entry(self.tasks_module)

    def env_class(self) -> type:
        """The environment class (imported now)."""
        return load_entry(self.env_entry)

    def make_oracle(self) -> Any:
        """A new oracle of this family."""
        return load_entry(self.oracle_entry)()

    def folder(self) -> Path | None:
        """The family's folder (that of the module defining its class): where its
        ``suites/`` and shipped training ``configs/`` are. None for a class defined
        outside a file.
        """
        import sys

        path = getattr(sys.modules.get(type(self).__module__), "__file__", None)
        return Path(path).resolve().parent if path else None

    def default_suites(self) -> Mapping[str, Path]:
        """Suite name -> path of the committed suites."""
        return self.tasks().DEFAULT_SUITES

    def generate(self, city: str, out: str | Path | None, seed: int, per_type: int | None):
        """Write a suite for ``city`` (the task package's ``generate``)."""
        return self.tasks().generate(city=city, out=out, seed=seed, per_type=per_type)

    def generate_track(
        self,
        track: str,
        city: str,
        out: str | Path | None,
        seed: int,
        per_type: int | None,
        progress: Any = None,
    ):
        """Write the suite of ``track`` (:attr:`suite_track_entries`) for ``city``;
        :class:`InputError` naming ``track`` and the family's tracks when it has no such
        track.
        """
        entry = self.suite_track_entries.get(track)
        if entry is None:
            have = ", ".join(self.suite_track_entries) or "none besides the default"
            raise InputError(f"--track {track!r} is not a track of {self.name}; its tracks: {have}")
        return load_entry(entry)(city, out, seed, per_type, progress)

    # ------------------------------------------------------------------ task geometry
    def task_points(self, task: TaskSpec) -> tuple[tuple[float, float], list[tuple[float, float]]]:
        """A task's start and goal places (metres in its world's frame; no goal places for
        a question). Default: ``start`` ``x``/``y``; the goal's ``stops``, or its
        ``x``/``y`` when the task has no answer.
        """
        g = task.goal or {}
        start = (float(task.start["x"]), float(task.start["y"]))
        if g.get("stops"):
            return start, [(float(s["x"]), float(s["y"])) for s in g["stops"]]
        if "x" in g and "y" in g and task.answer is None:
            return start, [(float(g["x"]), float(g["y"]))]
        return start, []

    def task_frame(self, task: TaskSpec) -> Any:
        """The :class:`~urban_gym.world.geo.GeoFrame` of a task's world (its city's)."""
        from urban_gym.world.loader import load_city

        return load_city(task.city).frame

    # ------------------------------------------------------------------ reports
    def task_category(self, task: TaskSpec) -> str:
        """The report category of a task: its type's ``level`` (upper case) where the
        type table gives one, else its type.
        """
        tt = self.tasks().TASK_TYPES.get(task.type)
        level = getattr(tt, "level", "")
        return str(level).upper() if level else str(task.type)

    def category_order(self) -> Sequence[str]:
        """The order the report lists categories in (others after them, sorted)."""
        return ()

    def _report(self, function: str) -> Any:
        """The function of :attr:`report_module` (None where there is none)."""
        if not self.report_module:
            return None
        return getattr(load_entry(self.report_module), function, None)

    def report_sections(self, run: Any, table: Any, resamples: int, seed: int) -> dict:
        """The family's own sections of a run's results (``urban-gym report``): a dict of
        JSON-serialisable values added to the run's results. ``run`` is an
        :class:`urban_gym.eval.report.Run`, ``table`` its per-task table. Default: its
        report module's ``sections``.
        """
        fn = self._report("sections")
        return fn(run, table, resamples, seed) if fn is not None else {}

    def report_markdown(self, results: Mapping[str, Any]) -> list[str]:
        """Markdown lines of the family's sections of one run's ``results`` (default: its
        report module's ``markdown``).
        """
        fn = self._report("markdown")
        return fn(results) if fn is not None else []

    def report_plots(self, plt: Any, out: Path, stem: str, name: str, results: Any) -> list:
        """Draw the family's sections of one run's ``results`` (``name``: the run's name)
        with matplotlib's ``plt`` into PNG files ``out/<stem>_*.png``; returns their paths
        (default: its report module's ``plots``).
        """
        fn = self._report("plots")
        return fn(plt, out, stem, name, results) if fn is not None else []

    def report_layouts(self) -> Mapping[str, Any]:
        """The report layouts the family offers: name -> a
        :class:`urban_gym.eval.layouts.ReportLayout` (:attr:`report_layout_entries`,
        imported now).
        """
        return {n: load_entry(e) for n, e in self.report_layout_entries.items()}

    def threshold_sweep(self) -> ThresholdSweep | None:
        """The success thresholds ``urban-gym sensitivity`` varies (its report module's
        ``THRESHOLD_SWEEP``), or None when the family's success depends on no radius.
        """
        if not self.report_module:
            return None
        sweep = getattr(load_entry(self.report_module), "THRESHOLD_SWEEP", None)
        return sweep if isinstance(sweep, ThresholdSweep) else None

    def rescore(
        self, record: Mapping[str, Any], scale: float = 1.0, radius_m: float | None = None
    ) -> bool | None:
        """Whether the episode of ``record`` (an ``episodes.jsonl`` line) would have
        succeeded with its success radius multiplied by ``scale``, or set to ``radius_m``
        metres when given; None when its success does not depend on a radius (a question,
        an episode that ended in an error) -- it keeps its recorded success. With
        ``scale=1`` it gives the recorded ``is_success``. Default: its report module's
        ``rescore``, else None.
        """
        fn = self._report("rescore")
        return fn(record, scale, radius_m) if fn is not None else None

    # ------------------------------------------------------------------ play
    def play_controls(self) -> Any:
        """The family's page controls (:class:`urban_gym.play.controls.FamilyControls`:
        :attr:`controls_entry`), or None when it has no play page.
        """
        return load_entry(self.controls_entry) if self.controls_entry else None

    # ------------------------------------------------------------------ language models
    def lmm_defaults(self) -> LMMDefaults:
        """How its language-model face is set up by default."""
        return LMMDefaults()

    def lmm_protocols(self) -> Mapping[str, type]:
        """Prompt protocols the family defines: name -> a subclass of
        :class:`urban_gym.wrappers.protocols.PromptProtocol` (:attr:`lmm_protocol_entries`).
        """
        return {n: load_entry(e) for n, e in self.lmm_protocol_entries.items()}

    def lmm_memories(self) -> Mapping[str, Callable[..., Any]]:
        """Memory wrappers the family defines: name -> ``make(env, budget) -> env``
        (:attr:`lmm_memory_entries`).
        """
        return {n: load_entry(e) for n, e in self.lmm_memory_entries.items()}

    def lmm_schemes(self) -> Mapping[str, type]:
        """Language-model agents of the family's paper: name -> a subclass of
        :class:`urban_gym.baselines.lmm.schemes.base.Scheme` (:attr:`lmm_scheme_entries`).
        """
        return {n: load_entry(e) for n, e in self.lmm_scheme_entries.items()}

    def lmm_presets(self) -> Mapping[str, Any]:
        """Model settings of the family's paper: name -> a mapping of agent options or a
        :class:`urban_gym.eval.presets.ModelPreset` (:attr:`lmm_preset_entries`).
        """
        return {n: load_entry(e) for n, e in self.lmm_preset_entries.items()}

    def demo(self) -> DemoEpisode | None:
        """The episode ``urban-gym demo`` runs, or None to leave the family out."""
        return None

    # ------------------------------------------------------------------ the rest
    def cli_commands(self) -> Sequence[FamilyCommand]:
        """``urban-gym`` sub-commands of the family's own (:attr:`commands_entry`)."""
        return tuple(load_entry(self.commands_entry)) if self.commands_entry else ()

    def world_memos(self) -> Sequence[tuple[str, str]]:
        """In-process memos of loaded worlds (``(module, attribute)`` of an
        :class:`~urban_gym.caching.LRUCache`) to hand to worker processes that do not start
        as a fork (Ray actors): :attr:`world_memo_entries`.
        """
        return self.world_memo_entries

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r}>"


def check_family(family: Family) -> Family:
    """``family`` if its declarations are well formed, else :class:`UrbanGymError` naming
    the bad value: its name, title, entry points, ids and their kwargs, its language-model
    defaults. What loads modules (protocols, schemes, commands) is checked where it is
    used, so that registering a family imports nothing heavy.
    """
    if not isinstance(family, Family):
        raise InputError(f"a family must be a Family instance, got {type(family).__name__}")
    name = family.name
    if not isinstance(name, str) or not NAME_PATTERN.match(name):
        raise InputError(f"family name={name!r} must be lower-case letters, digits and underscores")
    where = f"family {name!r}"
    if not isinstance(family.title, str) or not family.title:
        raise InputError(f"{where}: title={family.title!r} must be a non-empty string")
    if not isinstance(family.tasks_module, str) or not family.tasks_module:
        raise InputError(f"{where}: tasks_module={family.tasks_module!r} must be a module")
    _check_entries(family, where)
    if not isinstance(family.env_ids, Mapping) or not family.env_ids:
        raise InputError(f"{where}: env_ids={family.env_ids!r} must name one id or more")
    for env_id, kwargs in family.env_ids.items():
        if not isinstance(env_id, str) or not ENV_ID_PATTERN.match(env_id):
            raise InputError(f"{where}: env id {env_id!r} is not 'Namespace/Name-vN'")
        if not isinstance(kwargs, Mapping) or not _json_ok(dict(kwargs)):
            raise InputError(f"{where}: the kwargs of {env_id} must be a JSON object")
    d = family.lmm_defaults()
    if not isinstance(d, LMMDefaults):
        raise InputError(f"{where}: lmm_defaults() must return LMMDefaults, got {d!r}")
    if not isinstance(d.history, int) or d.history < 0:
        raise InputError(f"{where}: lmm_defaults().history={d.history!r} must be >= 0")
    if not _json_ok(dict(d.env_kwargs)):
        raise InputError(f"{where}: lmm_defaults().env_kwargs must be a JSON object")
    return family


def _is_entry(entry: Any) -> bool:
    return isinstance(entry, str) and ENTRY_PATTERN.match(entry) is not None


def _check_entries(family: Family, where: str) -> None:
    """The entry points of ``family``: required, optional, and the named tables."""
    for what in ("env_entry", "oracle_entry"):
        entry = getattr(family, what)
        if not _is_entry(entry):
            raise InputError(f"{where}: {what}={entry!r} must be a 'module:Class' entry point")
    for what in ("controls_entry", "commands_entry", "vector_entry"):
        entry = getattr(family, what)
        if entry and not _is_entry(entry):
            raise InputError(f"{where}: {what}={entry!r} must be a 'module:attribute' entry point")
    for what in (
        "lmm_protocol_entries",
        "lmm_memory_entries",
        "lmm_scheme_entries",
        "lmm_preset_entries",
        "report_layout_entries",
        "suite_track_entries",
    ):
        table = getattr(family, what)
        if not isinstance(table, Mapping) or not all(
            isinstance(n, str) and _is_entry(e) for n, e in table.items()
        ):
            raise InputError(f"{where}: {what}={table!r} must map names to 'module:Class'")
    for n in family.report_layout_entries:
        if not NAME_PATTERN.match(n) or n == "standard":
            raise InputError(
                f"{where}: report layout {n!r} must be lower-case letters, digits and "
                "underscores, and not 'standard' (the default report's)"
            )


_FAMILIES: dict[str, Family] = {}
#: name -> :class:`Family`, read-only (add one with :func:`register_family`).
FAMILIES: Mapping[str, Family] = MappingProxyType(_FAMILIES)


def register_family(family: Family, replace: bool = False) -> Family:
    """Check ``family`` (:func:`check_family`), add it to the registry and register its
    ids with Gymnasium. ``replace=True`` overwrites a family of the same name.
    """
    check_family(family)
    old = _FAMILIES.get(family.name)
    if old is not None and old is not family and not replace:
        raise InputError(
            f"family {family.name!r} is already registered; pass replace=True to overwrite it"
        )
    taken = {i: f.name for f in _FAMILIES.values() if f.name != family.name for i in f.env_ids}
    clash = sorted(set(family.env_ids) & set(taken))
    if clash:
        raise InputError(
            f"family {family.name!r}: ids {clash} belong to family {taken[clash[0]]!r}"
        )
    if old is not None and old is not family:
        _unregister_ids(old)
    _FAMILIES[family.name] = family
    _register_ids(family)
    return family


def unregister_family(name: str) -> None:
    """Remove a family and its ids (a no-op when it is not registered)."""
    fam = _FAMILIES.pop(name, None)
    if fam is not None:
        _unregister_ids(fam)


def _register_ids(family: Family) -> None:
    from gymnasium.envs.registration import register, registry

    for env_id, kwargs in family.env_ids.items():
        if env_id not in registry:
            register(
                id=env_id,
                entry_point=family.env_entry,
                vector_entry_point=family.vector_entry or None,
                kwargs=dict(kwargs),
            )


def _unregister_ids(family: Family) -> None:
    from gymnasium.envs.registration import registry

    for env_id in family.env_ids:
        spec = registry.get(env_id)
        if spec is not None and spec.entry_point == family.env_entry:
            registry.pop(env_id, None)


def get_family(name: str) -> Family:
    """The registered family ``name``; :class:`UrbanGymError` naming the known ones."""
    fam = _FAMILIES.get(name) if isinstance(name, str) else None
    if fam is None:
        raise InputError(
            f"unknown task family {name!r}; registered: {', '.join(_FAMILIES) or 'none'}"
        )
    return fam


def family_names() -> tuple[str, ...]:
    """The names of the registered families, in registration order."""
    return tuple(_FAMILIES)


def family_of(env: Any) -> Family | None:
    """The registered family of an env or a stack of wrappers: the ``family`` of its
    class (every ``UrbanEnv`` names one), else of its current task; None for an env of no
    registered family.
    """
    u = getattr(env, "unwrapped", env)
    for name in (getattr(u, "family", None), getattr(getattr(u, "task", None), "family", None)):
        if isinstance(name, str) and name in _FAMILIES:
            return _FAMILIES[name]
    return None


def family_name(env: Any) -> str | None:
    """The name of :func:`family_of` ``env`` (None for an env of no registered family)."""
    fam = family_of(env)
    return fam.name if fam is not None else None


def family_of_id(env_id: str) -> Family | None:
    """The registered family whose ids include ``env_id`` (None for another id)."""
    for fam in _FAMILIES.values():
        if env_id in fam.env_ids:
            return fam
    try:
        from gymnasium.envs.registration import registry

        entry = registry[env_id].entry_point
    except KeyError:
        return None
    return next((f for f in _FAMILIES.values() if f.env_entry == entry), None)


def env_specs() -> dict[str, tuple[str, dict[str, Any]]]:
    """Every registered family's ids: id -> (entry point, kwargs)."""
    return {
        env_id: (fam.env_entry, dict(kwargs))
        for fam in _FAMILIES.values()
        for env_id, kwargs in fam.env_ids.items()
    }


__all__ = [
    "FAMILIES",
    "PACKAGE_EXPORTS",
    "DemoEpisode",
    "Family",
    "FamilyCommand",
    "LMMDefaults",
    "ThresholdSweep",
    "check_family",
    "env_specs",
    "family_name",
    "family_names",
    "family_of",
    "family_of_id",
    "get_family",
    "load_entry",
    "register_family",
    "unregister_family",
]
