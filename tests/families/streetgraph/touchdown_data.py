"""The test fixture's Touchdown-format routes (``touchdown_fixture/*.json``: routes written
by the tests on the panorama ids of Touchdown's real graph, labelled as such in every line;
not Touchdown's data), laid out as ``urban-gym data touchdown`` installs them.
"""

from __future__ import annotations

import shutil
from pathlib import Path

FIXTURE = Path(__file__).with_name("touchdown_fixture")


def fixture_data_dir(root: Path) -> Path:
    """Copy the fixture's ``train``/``dev``/``test`` routes into ``root/touchdown`` and
    return ``root``: what ``URBAN_GYM_DATA`` names for the Touchdown id to use them.
    """
    dest = root / "touchdown"
    dest.mkdir(parents=True, exist_ok=True)
    for split in ("train", "dev", "test"):
        shutil.copyfile(FIXTURE / f"{split}.json", dest / f"{split}.json")
    return root
