"""Touchdown's own routes as StreetGraph instruction tasks (``UrbanGym/StreetGraph-Touchdown-v0``).

Touchdown (Chen et al., "Touchdown: Natural Language Navigation and Spatial Reasoning in
Visual Street Environments", CVPR 2019; github.com/lil-lab/touchdown, CC BY 4.0) has two
parts:

* its Manhattan panorama graph (``graph/nodes.txt``, ``graph/links.txt``: 29,641
  panoramas, 61,319 links), shipped in this package xz-compressed
  (``urban_gym/data/touchdown``, 1.47 MB, with Touchdown's licence);
* its navigation routes (``data/{train,dev,test}.json``: JSON lines with
  ``route_panoids``, ``navigation_text``, ``start_heading`` ...), not shipped:
  ``urban-gym data touchdown`` installs them into :func:`touchdown_data_dir`
  (:mod:`urban_gym.families.streetgraph.touchdown_install`).

:func:`touchdown_tasks` turns one installed split into tasks on the shipped graph (its
links as published, plus the reverse of its three one-way links; nothing pruned or
merged, so every published route is a path of it).
"""

from __future__ import annotations

import os
from importlib import resources
from pathlib import Path
from typing import Any

from urban_gym.errors import InputError, MissingFileError
from urban_gym.families.streetgraph.tasks.instructions import instruction_tasks
from urban_gym.tasks.spec import TaskSpec

#: The commit of github.com/lil-lab/touchdown whose files are the reference.
TOUCHDOWN_COMMIT = "2ad8ef2664d1aa8ff1a8eebf88b9e88b2cb1d1c6"
#: The splits of Touchdown's navigation task.
SPLITS: tuple[str, ...] = ("train", "dev", "test")
#: Git blob SHA-1 of each split's file at :data:`TOUCHDOWN_COMMIT` (from the repository's
#: tree; Touchdown publishes no SHA-256): ``sha1(b"blob <size>\\0" + content)``.
BLOB_SHA1: dict[str, str] = {
    "train": "997772fd8e62753011cfed12bd8f920acc0a50d3",
    "dev": "59de00b9852a71d5d9ce27b0062e0f9fa09f3041",
    "test": "a3262bd6731378b44d5c285591f73a83a7848e54",
}
#: Where ``urban-gym data touchdown`` downloads from by default: the raw files of the
#: pinned commit.
DEFAULT_SOURCE = f"https://raw.githubusercontent.com/lil-lab/touchdown/{TOUCHDOWN_COMMIT}/data"
#: The city a Touchdown task names (``task.city``).
TOUCHDOWN_CITY = "touchdown:manhattan"


def touchdown_graph_path() -> Path:
    """The folder of the shipped Touchdown graph (``nodes.txt.xz``, ``links.txt.xz``,
    ``LICENSE.txt``): what the graph spec's ``path`` names.
    """
    return Path(str(resources.files("urban_gym") / "data" / "touchdown"))


def touchdown_data_dir() -> Path:
    """Where Touchdown's route files are installed: ``$URBAN_GYM_DATA/touchdown`` when
    ``URBAN_GYM_DATA`` is set and not blank, else ``$XDG_DATA_HOME/urban_gym/touchdown``
    (``~/.local/share`` when ``XDG_DATA_HOME`` is unset).
    """
    value = os.environ.get("URBAN_GYM_DATA", "")
    if value.strip():
        return Path(value).expanduser() / "touchdown"
    xdg = os.environ.get("XDG_DATA_HOME", "")
    base = Path(xdg).expanduser() if xdg.strip() else Path.home() / ".local" / "share"
    return base / "urban_gym" / "touchdown"


def check_split(split: str) -> str:
    """``split`` if it is one of :data:`SPLITS`, else :class:`InputError` naming it."""
    if split not in SPLITS:
        raise InputError(f"split={split!r} must be one of {', '.join(SPLITS)}")
    return split


def split_file(split: str, data_dir: str | os.PathLike | None = None) -> Path:
    """The installed route file of ``split``; :class:`MissingFileError` naming the
    command that installs it when it is not there.
    """
    d = Path(data_dir) if data_dir is not None else touchdown_data_dir()
    p = d / f"{check_split(split)}.json"
    if not p.is_file():
        raise MissingFileError(
            f"Touchdown's {split} split is not installed ({p} does not exist); install "
            "Touchdown's routes with `urban-gym data touchdown` (or `urban-gym data "
            "touchdown --source DIR_OR_URL` from a copy of github.com/lil-lab/touchdown's "
            "data/ folder), or set URBAN_GYM_DATA to where they are"
        )
    return p


def touchdown_spec(images: str | os.PathLike | None = None) -> dict[str, Any]:
    """The graph spec of Touchdown's tasks: the shipped graph as published (no pruning,
    no merging; the reverse of a one-way link added), with the user's real panoramas
    (``images``: a folder of ``<panoid>.jpg|jpeg|png`` equirectangular images) or none.
    """
    if images is not None and not Path(images).is_dir():
        raise InputError(f"images={str(images)!r} is not a folder of Touchdown panoramas")
    return {
        "source": "touchdown",
        "path": str(touchdown_graph_path()),
        "images": str(Path(images).resolve()) if images is not None else None,
        "prune": False,
        "largest_component": False,
        "merge_parallel": False,
    }


def touchdown_tasks(
    split: str,
    images: str | os.PathLike | None = None,
    data_dir: str | os.PathLike | None = None,
) -> list[TaskSpec]:
    """The instruction tasks of one installed Touchdown split (``train``, ``dev``,
    ``test``) on the shipped graph; ``images`` points the tasks at real panoramas.

    A task is one route: start = its first panorama and ``start_heading``, instruction =
    its ``navigation_text``, goal = the route (ids ``touchdown-<split>-<route_id>``). A
    route that is not a path of the graph is skipped and counted in each task's
    ``meta["skipped_routes"]``.
    """
    path = split_file(split, data_dir)
    spec = touchdown_spec(images)
    tasks = instruction_tasks(
        spec["path"],
        path,
        images=images,
        skip_bad_lines=True,
        id_prefix=f"touchdown-{split}",
        spec=spec,
        city=TOUCHDOWN_CITY,
        meta={"dataset": "touchdown", "split": split},
    )
    if not tasks:
        raise InputError(f"{path}: no route of Touchdown's {split} split fits the graph")
    return tasks
