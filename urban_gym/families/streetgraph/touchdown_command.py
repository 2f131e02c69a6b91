"""``urban-gym data touchdown``: install Touchdown's routes (see
:mod:`urban_gym.families.streetgraph.touchdown_install`).
"""

from __future__ import annotations

import argparse

from urban_gym.families.streetgraph.tasks.touchdown import DEFAULT_SOURCE, SPLITS


def add_data_arguments(p: argparse.ArgumentParser) -> None:
    """The arguments of ``urban-gym data``."""
    p.add_argument("dataset", choices=("touchdown",), help="the dataset to install")
    p.add_argument(
        "--source",
        default=DEFAULT_SOURCE,
        help="URL or folder holding train.json, dev.json, test.json (default: "
        "github.com/lil-lab/touchdown's data/ at the pinned commit)",
    )
    p.add_argument(
        "--splits", default=",".join(SPLITS), help="comma-separated splits (default all)"
    )
    p.add_argument(
        "--data-dir",
        default=None,
        help="install here (default $URBAN_GYM_DATA/touchdown or ~/.local/share/urban_gym/touchdown)",
    )
    p.add_argument(
        "--unverified",
        action="store_true",
        help="install files whose git blob SHA-1 is not Touchdown's (marked unverified)",
    )
    p.add_argument("--timeout", type=float, default=60.0, help="seconds to wait for a server")


def run_data(args: argparse.Namespace) -> int:
    """Install the dataset and print what was installed."""
    from urban_gym.families.streetgraph.touchdown_install import install_touchdown, print_progress

    splits = [s.strip() for s in args.splits.split(",") if s.strip()]
    report = install_touchdown(
        args.source,
        data_dir=args.data_dir,
        splits=splits,
        allow_unverified=args.unverified,
        progress=print_progress(),
        timeout=args.timeout,
    )
    print(report.format())
    return 0
