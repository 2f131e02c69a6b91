#!/usr/bin/env bash
# Create .venv and install urban_gym with every extra (rl, lmm, eval, dev).
# PyTorch is pinned to the CPU build first, so that stable-baselines3 does not pull a
# multi-GB CUDA build. Every other package at the version in scripts/constraints.txt (the
# environment the tests and goldens were recorded in). Safe to run again: it only installs
# what is missing.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PY" -m venv .venv
.venv/bin/python -m pip install --quiet --disable-pip-version-check "torch==2.13.0"
.venv/bin/python -m pip install --quiet --disable-pip-version-check -c scripts/constraints.txt -e ".[all]"
echo "urban_gym installed in .venv"
