"""Model-settings presets of the harness's ``lmm`` agent: the settings a source benchmark
ran its models with, by name (``urban-gym eval ... --agent lmm --preset NAME``).

Every preset is a paper's, declared by the family that follows the paper
(:meth:`~urban_gym.tasks.families.Family.lmm_presets`) under the paper's name: either a
mapping of agent options (one setting for every model) or a :class:`ModelPreset`, a table
of settings per model. For a table, ``--preset NAME`` picks the row whose model patterns
match ``--model`` (a provider prefix such as ``openai/`` is ignored, case too);
``--preset NAME:ROW`` names the row, for a model served under a name of its own. A model
in no row is a clear error naming the rows.

A preset fills options the user did not give: an explicit ``--temperature`` (or an
``--agent-kwargs`` entry) wins over the preset's, and ``--extra-body`` keys win over the
preset's request fields of the same name. The agent's ``preset`` option records which
preset, row and settings were used; the run manifest shows it.
"""

from __future__ import annotations

import argparse
import fnmatch
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from urban_gym.errors import InputError

#: Presets of the core by name -> options of :class:`~urban_gym.baselines.lmm.agent.LMMAgent`
#: (none: every preset is a paper's, declared by its family).
LMM_PRESETS: dict[str, dict[str, Any]] = {}


@dataclass(frozen=True)
class PresetRow:
    """One row of a paper's table of model settings.

    Attributes:
        name: the row's name (``--preset PRESET:ROW``).
        models: ``fnmatch`` patterns of the model names the row is for (lower case).
        options: the agent options it sets (``temperature``, ``max_tokens``,
            ``extra_body`` -- request fields beyond those two -- ...).
        label: the row as the paper writes it (the models, and how its settings map onto
            the request when they differ).
    """

    name: str
    models: tuple[str, ...]
    options: Mapping[str, Any]
    label: str = ""

    def matches(self, model: str) -> bool:
        """Whether ``model`` (any case, a provider prefix ignored) is one of the row's."""
        key = str(model).strip().casefold()
        names = {key, key.rsplit("/", 1)[-1]}
        return any(fnmatch.fnmatchcase(n, p) for n in names for p in self.models)


@dataclass(frozen=True)
class ModelPreset:
    """A paper's model settings, one :class:`PresetRow` per model it ran.

    Attributes:
        name: the preset's name (``--preset NAME``).
        source: where the paper gives the table.
        rows: the rows, in the paper's order.
        unlisted: what the paper says of the models it gives no settings for.
    """

    name: str
    source: str
    rows: tuple[PresetRow, ...]
    unlisted: str = ""

    def row(self, model: str | None, row: str | None = None) -> PresetRow:
        """The row named ``row``, else the row of ``model``; :class:`UrbanGymError`
        naming the model and the rows when there is none.
        """
        names = ", ".join(r.name for r in self.rows)
        if row is not None:
            got = next((r for r in self.rows if r.name == row.strip().casefold()), None)
            if got is None:
                raise InputError(f"preset {self.name!r} has no row {row!r}; its rows: {names}")
            return got
        if not model:
            raise InputError(
                f"preset {self.name!r} has settings per model: give --model, or name a row "
                f"with --preset {self.name}:ROW (rows: {names})"
            )
        got = next((r for r in self.rows if r.matches(model)), None)
        if got is None:
            listed = "; ".join(f"{r.name}: {r.label}" for r in self.rows)
            extra = f" ({self.unlisted})" if self.unlisted else ""
            raise InputError(
                f"preset {self.name!r} ({self.source}) lists no settings for model "
                f"{model!r}{extra}; its rows are {listed}. Name one with --preset "
                f"{self.name}:ROW to use its settings for this model"
            )
        return got


def all_presets() -> dict[str, dict[str, Any] | ModelPreset]:
    """Every preset by name: the core's, then those the registered families declare."""
    from urban_gym.tasks.families import FAMILIES

    out: dict[str, dict[str, Any] | ModelPreset] = dict(LMM_PRESETS)
    for fam in FAMILIES.values():
        out.update(fam.lmm_presets())
    return out


def lmm_preset(name: str, model: str | None = None) -> dict[str, Any]:
    """The agent options of preset ``name`` (``NAME`` or ``NAME:ROW``) for ``model``,
    with ``preset``: the record of which preset, row and settings (a copy); a clear error
    for an unknown name, row or model.
    """
    key, _, row = str(name).strip().casefold().partition(":")
    known = all_presets()
    preset = known.get(key)
    if preset is None:
        raise InputError(f"preset {name!r} is not one of {', '.join(sorted(known))}")
    if isinstance(preset, ModelPreset):
        got = preset.row(model, row or None)
        options = _copy(got.options)
        record = {
            "name": preset.name,
            "row": got.name,
            "label": got.label,
            "source": preset.source,
            "model": model,
            "settings": _copy(got.options),
        }
        return {**options, "preset": record}
    if row:
        raise InputError(f"preset {key!r} has no rows; use --preset {key}")
    return {**_copy(preset), "preset": {"name": key, "settings": _copy(preset)}}


def _copy(options: Mapping[str, Any]) -> dict[str, Any]:
    return {k: dict(v) if isinstance(v, Mapping) else v for k, v in options.items()}


def agent_options(args: argparse.Namespace) -> dict:
    """The agent's options of ``urban-gym eval``: for ``lmm``, the ``--preset``'s settings,
    overridden by the explicit client options, overridden by ``--agent-kwargs``.
    """
    options = dict(args.agent_kwargs or {})
    if args.agent != "lmm":
        if args.preset:
            raise InputError(f"--preset {args.preset} applies to --agent lmm only")
        return options
    from urban_gym.baselines.lmm.options import lmm_options

    given = lmm_options(args)
    model = options.get("model") or given.get("model") or os.environ.get("URBAN_GYM_LMM_MODEL")
    preset = lmm_preset(args.preset, model) if args.preset else {}
    merged = {**preset, **given, **options}
    body = [o.get("extra_body") for o in (preset, given, options)]
    if preset.get("extra_body") and any(b for b in body[1:]):
        merged["extra_body"] = {k: v for b in body if b for k, v in b.items()}
    if args.location_prior is not None:  # a location map: main setting or its ablation
        merged.setdefault("location", args.location_prior)
    return merged
