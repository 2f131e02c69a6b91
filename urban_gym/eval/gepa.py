"""A GEPA-style prompt optimiser (Agrawal et al. 2025, as CityNav's baseline runs it):
evolve the agent's instructions on the ``val`` split with the harness, report the chosen
prompt.

The loop, on the tasks of the ``val`` split (:func:`val_split`):

1. the first candidate is the family's own instructions, scored on every val task;
2. each iteration picks a parent among the candidates on the Pareto front (best on at
   least one val task; the more tasks, the likelier), runs it on a minibatch of val tasks,
   and asks the model (a ``prompt_revision`` call, :mod:`urban_gym.baselines.lmm.calls`)
   for better instructions, given the parent's instructions and how its episodes ended;
3. the child runs on the same minibatch; when it does at least as well as the parent there,
   it is scored on the whole val split and joins the candidates;
4. the chosen prompt is the candidate with the best mean val score (the earliest on ties).

Every evaluation is a harness run (``OUT/cand<k>-batch<i>``, ``OUT/cand<k>-val``) of the
``gepa`` scheme (:mod:`urban_gym.baselines.lmm.schemes.gepa`). The report is
``OUT/gepa.json`` (the val task ids, every candidate with its parent, instructions and
scores, the chosen one) and ``OUT/best.yaml`` (the chosen instructions: ``urban-gym eval
... --scheme gepa --scheme-config OUT/best.yaml``).
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

VAL_FRACTION = 0.2


def val_split(task_ids: Sequence[str], fraction: float = VAL_FRACTION) -> list[str]:
    """The ``val`` split: the tasks whose id's SHA-256 falls in the first ``fraction`` of
    the hash range (stable whatever else the suite holds; at least one task).
    """

    def u(tid: str) -> float:
        return int.from_bytes(hashlib.sha256(tid.encode()).digest()[:8], "big") / 2.0**64

    val = [t for t in task_ids if u(t) < fraction]
    return val or sorted(task_ids, key=u)[:1]


def pareto_front(candidates: Sequence[Mapping[str, Any]], tasks: Sequence[str]) -> list[int]:
    """Indices of the candidates best (ties included) on at least one task, each repeated
    once per task it is best on.
    """
    out: list[int] = []
    for t in tasks:
        best = max(c["val"].get(t, 0.0) for c in candidates)
        out += [i for i, c in enumerate(candidates) if c["val"].get(t, 0.0) == best]
    return out


def optimise(
    env_id: str,
    out: str | Path,
    agent_options: Mapping[str, Any],
    env_kwargs: Mapping[str, Any] | None = None,
    iterations: int = 4,
    minibatch: int = 3,
    metric: str = "success",
    seed: int = 0,
    val_fraction: float = VAL_FRACTION,
    task_ids: Sequence[str] | None = None,
    reflect_model: str | None = None,
) -> dict[str, Any]:
    """Run the optimiser (see the module docstring); returns the report it writes."""
    import gymnasium as gym

    from urban_gym.baselines.lmm.schemes.gepa import seed_instructions
    from urban_gym.tasks.families import family_name

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    env = gym.make(env_id, **dict(env_kwargs or {}))
    u: Any = env.unwrapped  # the family's UrbanEnv
    ids = list(task_ids) if task_ids is not None else [t.id for t in u.tasks]
    family = family_name(env)
    env.close()
    val = val_split(ids, val_fraction)
    rng = random.Random(seed)
    ctx = _Context(env_id, out, agent_options, env_kwargs, metric)
    first: dict[str, Any] = {"id": 0, "parent": None, "instructions": seed_instructions(family)}
    first["val"] = ctx.scores(first, val, "val")[0]
    candidates = [first]
    tried: list[dict[str, Any]] = []
    for i in range(iterations):
        parent = candidates[rng.choice(pareto_front(candidates, val))]
        batch = rng.sample(val, min(minibatch, len(val)))
        p_scores, p_records = ctx.scores(parent, batch, f"batch{i}")
        text = ctx.revise(parent["instructions"], p_records, reflect_model)
        child: dict[str, Any] = {
            "id": len(candidates) + len(tried),
            "parent": parent["id"],
            "instructions": text,
        }
        c_scores, _ = ctx.scores(child, batch, f"batch{i}")
        child["batch"] = {"parent": sum(p_scores.values()), "child": sum(c_scores.values())}
        if sum(c_scores.values()) >= sum(p_scores.values()):
            child["val"] = ctx.scores(child, val, "val")[0]
            candidates.append(child)
        else:
            tried.append(child)
    for c in candidates:
        c["val_score"] = sum(c["val"].values()) / max(1, len(val))
    chosen = max(candidates, key=lambda c: (c["val_score"], -c["id"]))
    report = {
        "env_id": env_id,
        "metric": metric,
        "val_task_ids": val,
        "iterations": iterations,
        "candidates": candidates,
        "rejected": tried,
        "chosen": chosen["id"],
        "chosen_instructions": chosen["instructions"],
        "revisions": ctx.revisions,
    }
    (out / "gepa.json").write_text(json.dumps(report, indent=1, ensure_ascii=False) + "\n")
    import yaml

    (out / "best.yaml").write_text(
        yaml.safe_dump({"instructions": chosen["instructions"]}, allow_unicode=True)
    )
    return report


class _Context:
    """The harness runs and the revision calls of one optimisation."""

    def __init__(self, env_id, out, agent_options, env_kwargs, metric) -> None:
        self.env_id, self.out, self.metric = env_id, Path(out), metric
        self.agent_options = dict(agent_options)
        self.env_kwargs = dict(env_kwargs or {})
        self.revisions = 0

    def scores(self, cand: Mapping[str, Any], tasks: Sequence[str], tag: str):
        """``({task_id: metric}, records)`` of ``cand`` on ``tasks`` (a harness run)."""
        from urban_gym.eval.records import RunDir
        from urban_gym.eval.runner import run

        folder = self.out / f"cand{cand['id']}-{tag}"
        options = {
            **self.agent_options,
            "scheme": "gepa",
            "scheme_config": {"instructions": cand["instructions"]},
        }
        run(
            self.env_id,
            folder,
            agent="lmm",
            agent_options=options,
            env_kwargs=self.env_kwargs,
            task_ids=list(tasks),
            progress=False,
        )
        records = RunDir(folder).read_episodes()
        scores = {r["task_id"]: float(r["metrics"].get(self.metric, 0.0) or 0.0) for r in records}
        return scores, records

    def revise(self, instructions: str, records: Sequence[Mapping[str, Any]], model) -> str:
        """Better instructions from the model, given how the episodes ended."""
        from urban_gym.baselines.lmm.calls import CALL_HEADINGS
        from urban_gym.baselines.lmm.client import ChatClient, ClientConfig
        from urban_gym.baselines.lmm.schemes.cot import reply_field
        from urban_gym.baselines.lmm.schemes.texts import REASONING
        from urban_gym.baselines.lmm.session import CURRENT_HEADING, RESULTS_HEADING

        lines = [
            f"- {r['task_id']} ({r.get('task_type')}): ended as {r['termination']} after "
            f"{r['steps']} steps, {self.metric} {r['metrics'].get(self.metric)}"
            for r in records
        ]
        user = f"{CURRENT_HEADING}\n{instructions}\n\n{RESULTS_HEADING}\n" + "\n".join(lines)
        system = CALL_HEADINGS["prompt_revision"] + "\n" + REASONING["revise"]
        keys = ("base_url", "model", "temperature", "max_tokens", "timeout_s", "max_retries")
        settings = {k: self.agent_options.get(k) for k in keys}
        if model:
            settings["model"] = model
        with ChatClient(ClientConfig.from_env(**settings)) as client:
            text = client.chat(
                [{"role": "system", "content": system}, {"role": "user", "content": user}]
            ).text
        self.revisions += 1
        return reply_field(text, "prompt") or instructions


def add_gepa_arguments(p: Any, add_lmm_options: Any, json_arg: Any) -> None:
    """The arguments of ``urban-gym gepa``."""
    p.add_argument("env_id", help="a registered id (UrbanGym/...)")
    p.add_argument("--out", required=True, help="folder of the candidates' runs and the report")
    p.add_argument("--env-kwargs", type=json_arg, default=None, help="gym.make kwargs (JSON)")
    p.add_argument("--iterations", type=int, default=4, help="proposals (default 4)")
    p.add_argument("--minibatch", type=int, default=3, help="val tasks per proposal")
    p.add_argument("--metric", default="success", help="episode metric to maximise")
    p.add_argument("--val-fraction", type=float, default=VAL_FRACTION, help="val split size")
    p.add_argument("--reflect-model", default=None, help="model of the revisions")
    p.add_argument("--gepa-seed", type=int, default=0, help="seed of the optimiser's choices")
    add_lmm_options(p)


def run_gepa_command(args: Any, agent_options: Mapping[str, Any]) -> int:
    """``urban-gym gepa``: optimise and print the chosen prompt."""
    options = {k: v for k, v in agent_options.items() if k not in ("scheme", "scheme_config")}
    report = optimise(
        args.env_id,
        args.out,
        options,
        env_kwargs=args.env_kwargs,
        iterations=args.iterations,
        minibatch=args.minibatch,
        metric=args.metric,
        seed=args.gepa_seed,
        val_fraction=args.val_fraction,
        reflect_model=args.reflect_model,
    )
    for c in report["candidates"]:
        print(f"candidate {c['id']} (parent {c['parent']}): val {args.metric} {c['val_score']:.3f}")
    print(f"chosen: candidate {report['chosen']}\n{report['chosen_instructions']}")
    print(f"  use it: --scheme gepa --scheme-config {Path(args.out) / 'best.yaml'}")
    return 0
