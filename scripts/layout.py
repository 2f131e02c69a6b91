"""The package's layout at a git revision: modules and lines per folder, and any module
over the 900-line limit; run it at two revisions to compare them.

    python scripts/layout.py            # HEAD
    python scripts/layout.py c2c814b    # any revision
"""

from __future__ import annotations

import argparse
import subprocess
from collections import defaultdict

LIMIT = 900


def git(*args: str) -> str:
    """The output of a git command in the current repository."""
    return subprocess.run(["git", *args], capture_output=True, text=True, check=True).stdout


def main(argv: list[str] | None = None) -> int:
    """Print the layout of the revision given on the command line."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("rev", nargs="?", default="HEAD", help="git revision (default HEAD)")
    rev = p.parse_args(argv).rev
    folders: dict[str, list[tuple[str, int]]] = defaultdict(list)
    for path in git("ls-tree", "-r", "--name-only", rev, "urban_gym").split():
        if path.endswith(".py"):
            folder, _, name = path.rpartition("/")
            folders[folder].append((name, git("show", f"{rev}:{path}").count("\n")))
    total = over = 0
    for folder in sorted(folders):
        mods = sorted(folders[folder], key=lambda m: -m[1])
        lines = sum(n for _, n in mods)
        total += lines
        listing = ", ".join(f"{name} {n}" for name, n in mods)
        print(f"{folder}/  ({len(mods)} modules, {lines} lines): {listing}")
        over += sum(n > LIMIT for _, n in mods)
    n_mods = sum(len(m) for m in folders.values())
    print(f"total: {n_mods} modules, {total} lines, {over} over {LIMIT} lines")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
