"""The families' oracle/random commands (``urban-gym <family>-eval``) as thin aliases of the harness: they run ``urban-gym eval`` with the oracle and the random
agent (into a temporary run folder, or ``--out``) and print each family's table of results
from the records. The episodes' seeds follow :func:`urban_gym.eval.runner.episode_keys`, so
one ``--seed`` gives the same figures on every run.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any


@contextmanager
def run_folder(out: str | None, agent: str) -> Iterator[Path]:
    """``out/<agent>`` (kept) or a temporary folder (removed afterwards)."""
    if out:
        p = Path(out) / agent
        p.mkdir(parents=True, exist_ok=True)
        yield p
        return
    with tempfile.TemporaryDirectory(prefix=f"urban-gym-{agent}-") as d:
        yield Path(d)


def alias_records(
    env_id: str,
    env_kwargs: dict[str, Any],
    agent: str,
    seed: int,
    seeding: str,
    task_ids: Sequence[str] | None = None,
    out: str | None = None,
    progress: bool = True,
) -> list[dict[str, Any]]:
    """The records of one agent's harness run, in the order of the env's tasks."""
    from urban_gym.eval.records import RunDir
    from urban_gym.eval.runner import run

    with run_folder(out, agent) as d:
        run(
            env_id,
            d,
            agent=agent,
            env_kwargs=env_kwargs,
            task_ids=task_ids,
            seed=seed,
            seeding=seeding,
            track_visibility=False,
            progress=progress,
            force=True,
        )
        records = RunDir(d).read_episodes()
    order = {t: i for i, t in enumerate(task_ids or [])}
    if order:
        records.sort(key=lambda r: order.get(r["task_id"], len(order)))
    return records


__all__ = ["alias_records", "run_folder"]
