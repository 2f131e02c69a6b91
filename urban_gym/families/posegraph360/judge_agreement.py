"""``urban-gym judge-agreement``: how often the language-model ``fuzzy_match`` judge
(:mod:`urban_gym.baselines.lmm.judge`) agrees with the deterministic one
(:func:`urban_gym.tasks.metrics.name_judge`: normalised names plus the OSM aliases).

The answers judged (:func:`probes`) come from the suite's relational tasks -- for each:
the expected name itself, each alias, the name lower-cased without accents, the name in a
sentence ("It is X."), the name without its generic words ("Ravintola La Mer" -> "La
Mer") and every wrong option of the task -- and from the answers agents gave in run
folders. :func:`agreement` returns the share of answers on which the two judges agree,
Cohen's kappa, the 2x2 table and the disagreements.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from urban_gym.eval.stats import cohen_kappa


def _plain(s: str) -> str:
    t = unicodedata.normalize("NFKD", s.casefold())
    return "".join(ch for ch in t if not unicodedata.combining(ch))


def probes(
    suite: str = "default", city: str | None = None, runs: Sequence[str | Path] = ()
) -> list[dict[str, Any]]:
    """The answers to judge: ``{"task_id", "answer", "candidates", "source"}`` each
    (``candidates``: the expected name, then its aliases).
    """
    import gymnasium as gym

    import urban_gym  # noqa: F401
    from urban_gym.baselines.lmm.judge import GENERIC_WORDS

    kwargs: dict[str, Any] = {"suite": suite, "task_types": ["relational"], "view_size": 32}
    if city:
        kwargs["city"] = city
    env: Any = gym.make("UrbanGym/PoseGraph360-v0", pano_width=64, **kwargs).unwrapped
    tasks = {t.id: t for t in env.tasks}
    env.close()
    out: list[dict[str, Any]] = []
    seen: set[tuple[str, str]] = set()

    def add(task: Any, answer: str, source: str) -> None:
        key = (task.id, answer)
        if answer.strip() and key not in seen:
            seen.add(key)
            cands = [str(task.answer), *task.goal.get("aliases", [])]
            out.append(
                {"task_id": task.id, "answer": answer, "candidates": cands, "source": source}
            )

    for t in tasks.values():
        name = str(t.answer)
        add(t, name, "expected name")
        for a in t.goal.get("aliases", []):
            add(t, str(a), "alias")
        add(t, _plain(name), "lower case, no accents")
        add(t, f"It is {name}.", "in a sentence")
        words = name.split()
        core = [w for w in words if _plain(w).strip(".,") not in GENERIC_WORDS]
        if core and len(core) < len(words):
            add(t, " ".join(core), "generic words dropped")
        for o in t.options:
            if str(o) != name:
                add(t, str(o), "wrong option")
    for run_dir in runs:
        from urban_gym.eval.records import RunDir

        for r in RunDir(run_dir).read_episodes():
            if r.get("task_id") in tasks and r.get("answer"):
                add(tasks[r["task_id"]], str(r["answer"]), f"run {Path(run_dir).name}")
    return out


def agreement(items: Sequence[dict[str, Any]], judge: Any) -> dict[str, Any]:
    """Judge every answer with ``judge`` and with the deterministic judge; returns
    ``{"answers", "agree", "agreement", "kappa", "table", "by_source",
    "disagreements"}``.
    """
    from urban_gym.tasks.metrics import name_judge

    rows = []
    for it in items:
        rule = bool(name_judge(it["answer"], it["candidates"]))
        model = bool(judge(it["answer"], it["candidates"]))
        rows.append({**it, "rules": rule, "model": model})
    n = len(rows)
    table = {
        "both_true": sum(r["rules"] and r["model"] for r in rows),
        "both_false": sum(not r["rules"] and not r["model"] for r in rows),
        "rules_only": sum(r["rules"] and not r["model"] for r in rows),
        "model_only": sum(r["model"] and not r["rules"] for r in rows),
    }
    by_source: dict[str, dict[str, int]] = {}
    for r in rows:
        s = by_source.setdefault(r["source"], {"answers": 0, "agree": 0, "rules": 0, "model": 0})
        s["answers"] += 1
        s["agree"] += int(r["rules"] == r["model"])
        s["rules"] += int(r["rules"])
        s["model"] += int(r["model"])
    agree = sum(r["rules"] == r["model"] for r in rows)
    return {
        "answers": n,
        "agree": agree,
        "agreement": round(agree / n, 4) if n else None,
        "kappa": round(cohen_kappa([r["rules"] for r in rows], [r["model"] for r in rows]), 4)
        if n
        else None,
        "table": table,
        "by_source": by_source,
        "judge_calls": getattr(judge, "calls", None),
        "disagreements": [r for r in rows if r["rules"] != r["model"]],
    }


def format_agreement(res: dict[str, Any]) -> str:
    """The agreement report as Markdown."""
    t = res["table"]
    lines = [
        f"judged answers: {res['answers']}; the model judge agrees with the deterministic one "
        f"on {res['agree']} ({100 * (res['agreement'] or 0):.1f}%), Cohen's kappa "
        f"{res['kappa']}",
        "",
        "| | model True | model False |",
        "|---|---:|---:|",
        f"| rules True | {t['both_true']} | {t['rules_only']} |",
        f"| rules False | {t['model_only']} | {t['both_false']} |",
        "",
        "| answers | n | agree | rules True | model True |",
        "|---|---:|---:|---:|---:|",
    ]
    for s, v in res["by_source"].items():
        lines.append(f"| {s} | {v['answers']} | {v['agree']} | {v['rules']} | {v['model']} |")
    if res["disagreements"]:
        lines += ["", "Disagreements (first 20):"]
        for r in res["disagreements"][:20]:
            lines.append(
                f"- {r['task_id']}: {r['answer']!r} vs {r['candidates'][0]!r} -> rules "
                f"{r['rules']}, model {r['model']} ({r['source']})"
            )
    return "\n".join(lines)


__all__ = ["agreement", "format_agreement", "probes"]
