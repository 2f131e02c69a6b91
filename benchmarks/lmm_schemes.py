"""Each language-model scheme under ``serve-scripted --policy noisy-oracle:0.3`` on every
family's default suite (a stated subset of its tasks), through the evaluation harness,
with bootstrap CIs over tasks from the report (``urban-gym report``'s numbers).

    PYTHONPATH=. python benchmarks/lmm_schemes.py [--out lmm_schemes_out] [--per-type 2]

The scripted server's noisy policy chooses every reply (from the episode's ground truth),
so a scheme changes what is *sent* -- messages, images, extra calls, tokens -- not which
action comes back: success and SPL are alike across the schemes of a family by design
(paired episodes), and the rows of the oracle and random policies frame them. The table
checks that every scheme runs end to end on every suite and measures its cost per step.
Prints a Markdown table.
"""

from __future__ import annotations

import argparse
import shutil
import time
from pathlib import Path
from typing import Any

import gymnasium as gym

import urban_gym  # noqa: F401  (registers the ids)

#: family -> (env id, gym.make kwargs (small images), schemes)
SUITES: dict[str, tuple[str, dict[str, Any], list[str]]] = {
    "posegraph360": (
        "UrbanGym/PoseGraph360-v0",
        {"view_size": 64, "pano_width": 256},
        ["react-reflection", "cot", "self-reflection", "reflexion", "gepa"],
    ),
    "streetgraph": (
        "UrbanGym/StreetGraph-v0",
        {"image_size": 48},
        ["agentnav", "prep", "cot", "self-reflection", "reflexion", "gepa"],
    ),
    "citywalk": (
        "UrbanGym/CityWalk-v0",
        {"view_size": 48},
        ["urbanground-react", "cot", "self-reflection", "reflexion", "gepa"],
    ),
}


def subset(env_id: str, kwargs: dict[str, Any], per_type: int) -> list[str]:
    """The first ``per_type`` tasks of each type of the default suite, in suite order (of
    a suite of one type, like StreetGraph's: the first ``5 * per_type``)."""
    env = gym.make(env_id, **kwargs)
    if len({t.type for t in env.unwrapped.tasks}) == 1:
        per_type *= 5
    counts: dict[str, int] = {}
    ids = []
    for t in env.unwrapped.tasks:
        if counts.get(t.type, 0) < per_type:
            counts[t.type] = counts.get(t.type, 0) + 1
            ids.append(t.id)
    env.close()
    return ids


def one_run(env_id, kwargs, ids, out, policy, scheme, seeds=1) -> dict[str, Any]:
    """One harness run against a fresh scripted server; its report's overall results."""
    from urban_gym.baselines.lmm.server import ScriptedServer
    from urban_gym.eval.report import load_run, run_results
    from urban_gym.eval.runner import run

    options: dict[str, Any] = {"model": "urban-gym-scripted", "max_image_side": 64}
    if scheme:
        options["scheme"] = scheme
    # each server listens on a new port (the agent's base_url): a rerun is a new run,
    # so the folder of an earlier run of this benchmark is cleared, not resumed
    shutil.rmtree(out, ignore_errors=True)
    t0 = time.perf_counter()
    with ScriptedServer(env_id=env_id, env_kwargs=kwargs, policy=policy) as server:
        run(
            env_id,
            out,
            agent="lmm",
            agent_options={"base_url": server.url, **options},
            env_kwargs=kwargs,
            task_ids=ids,
            seeds=seeds,
            progress=False,
        )
        calls = dict(server.calls)
    res = run_results(load_run(out))
    recs = load_run(out).records
    steps = sum(r["steps"] for r in recs)
    requests = sum(int(r["tokens"].get("requests", 0)) for r in recs)
    return {
        "overall": res["overall"],
        "episodes": len(recs),
        "steps": steps,
        "requests_per_step": requests / max(1, steps),
        "tokens_per_step": res["tokens"]["total"] / max(1, steps),
        "calls": calls,
        "wall_s": time.perf_counter() - t0,
    }


def ci(x: dict[str, Any] | None, pct: bool) -> str:
    """``mean [low, high]``."""
    if not x or x.get("mean") is None:
        return "-"
    if pct:
        return f"{100 * x['mean']:.0f}% [{100 * x['low']:.0f}, {100 * x['high']:.0f}]"
    return f"{x['mean']:.2f} [{x['low']:.2f}, {x['high']:.2f}]"


def main() -> None:
    """Run every scheme on every suite and print the table."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", default="lmm_schemes_out")
    p.add_argument("--per-type", type=int, default=2, help="tasks per task type")
    p.add_argument("--families", default=",".join(SUITES))
    args = p.parse_args()
    rows = []
    for fam in args.families.split(","):
        env_id, kwargs, schemes = SUITES[fam]
        ids = subset(env_id, kwargs, args.per_type)
        runs = [("oracle", "oracle", None, 1), ("random", "random", None, 1)]
        runs.append(("family prompts", "noisy-oracle:0.3", None, 1))
        runs += [(s, "noisy-oracle:0.3", s, 2 if s == "reflexion" else 1) for s in schemes]
        for name, policy, scheme, seeds in runs:
            out = Path(args.out) / fam / name.replace(" ", "_")
            r = one_run(env_id, kwargs, ids, out, policy, scheme, seeds)
            m = r["overall"]["metrics"]
            rows.append(
                f"| {fam} | {name} | {policy} | {len(ids)} | {r['episodes']} | "
                f"{ci(m.get('success'), True)} | {ci(m.get('spl'), False)} | "
                f"{r['steps'] / r['episodes']:.1f} | {r['requests_per_step']:.2f} | "
                f"{r['tokens_per_step']:,.0f} | {r['wall_s']:.0f} |"
            )
            print(rows[-1], flush=True)
    print(
        "\n| family | agent | scripted policy | tasks | episodes | success [95% CI] | SPL "
        "[95% CI] | steps/episode | requests/step | tokens/step | wall s |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    print("\n".join(rows))


if __name__ == "__main__":
    main()
