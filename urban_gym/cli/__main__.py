"""``python -m urban_gym.cli ...``: the ``urban-gym`` command."""

import sys

from urban_gym.cli import main

sys.exit(main())
