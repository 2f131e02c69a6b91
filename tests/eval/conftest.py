"""Shared helpers of the harness tests."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SG = "UrbanGym/StreetGraph-Procedural-v0"
SYMBOLIC = {"observation": "symbolic"}


def cli(*args: str, **kw) -> subprocess.Popen:
    """``python -m urban_gym.cli ARGS`` in a subprocess that imports this checkout."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.Popen(
        [sys.executable, "-m", "urban_gym.cli", *args],
        cwd=str(ROOT),
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        **kw,
    )
