"""``urban-gym train`` and ``split-suite`` (the RL track; the work is in
:mod:`urban_gym.baselines.train_cli`).
"""

from __future__ import annotations

from urban_gym.baselines import train_cli
from urban_gym.cli._common import command

command("train", "train a policy (MaskablePPO / RecurrentPPO) from a config file")(
    train_cli.add_train
)(train_cli.run_train)
command("split-suite", "split a suite into train/val/test by held-out areas")(
    train_cli.add_split_suite
)(train_cli.run_split_suite)
