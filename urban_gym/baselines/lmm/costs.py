"""Token and cost accounting of a run: the tokens of its episode records times a price
table the user can edit.

A price table maps model names (shell-style patterns, first match wins) to US dollars per
million prompt and completion tokens::

    gpt-4o-mini: {prompt: 0.15, completion: 0.60}
    "qwen*": {prompt: 0, completion: 0}      # a local model

:data:`DEFAULT_PRICES` holds a few list prices as examples only (check your provider's
current prices and pass your own file with ``--prices FILE``, YAML or JSON); a model
that no pattern matches is priced at 0 and reported in ``unpriced``. Tokens are what the
endpoint reported (the scripted server estimates them as characters / 4); responses from
the response cache count no tokens (:mod:`.cache`), so a cached rerun costs nothing.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from urban_gym.errors import InputError

#: Example prices (USD per 1M tokens); edit or replace with ``--prices FILE``.
DEFAULT_PRICES: dict[str, dict[str, float]] = {
    "gpt-4o-mini*": {"prompt": 0.15, "completion": 0.60},
    "gpt-4o*": {"prompt": 2.50, "completion": 10.00},
    "gpt-4.1-mini*": {"prompt": 0.40, "completion": 1.60},
    "gpt-4.1*": {"prompt": 2.00, "completion": 8.00},
    "urban-gym-scripted": {"prompt": 0.0, "completion": 0.0},
}


def load_prices(path: str | Path | None) -> dict[str, dict[str, float]]:
    """A price table from a YAML/JSON file (None: :data:`DEFAULT_PRICES`);
    :class:`UrbanGymError` naming a bad entry.
    """
    if path is None:
        return {k: dict(v) for k, v in DEFAULT_PRICES.items()}
    from urban_gym.baselines.lmm.schemes.base import read_mapping

    table = read_mapping(path, "prices")
    out: dict[str, dict[str, float]] = {}
    for model, entry in table.items():
        if not isinstance(entry, Mapping) or set(entry) - {"prompt", "completion"}:
            raise InputError(
                f"prices {str(path)!r}: {model!r} must map prompt/completion to USD per 1M tokens"
            )
        try:
            out[model] = {k: float(entry.get(k, 0.0)) for k in ("prompt", "completion")}
        except (TypeError, ValueError):
            raise InputError(
                f"prices {str(path)!r}: {model!r} has a price that is not a number"
            ) from None
    return out


def price_of(model: str, prices: Mapping[str, Mapping[str, float]]) -> Mapping[str, float] | None:
    """The price entry of ``model`` (the first matching pattern), or None."""
    for pattern, entry in prices.items():
        if fnmatch.fnmatchcase(model, pattern):
            return entry
    return None


def cost_usd(
    usage: Mapping[str, Any], model: str, prices: Mapping[str, Mapping[str, float]]
) -> float:
    """US dollars of ``usage`` (prompt and completion tokens) for ``model``."""
    entry = price_of(model, prices) or {}
    p = float(usage.get("prompt_tokens", 0) or 0) * float(entry.get("prompt", 0.0))
    c = float(usage.get("completion_tokens", 0) or 0) * float(entry.get("completion", 0.0))
    return (p + c) / 1e6


def run_cost(
    run_dir: str | Path,
    prices: Mapping[str, Mapping[str, float]] | None = None,
    read: Callable[[Path], tuple[Mapping[str, Any], Sequence[Mapping[str, Any]]]] | None = None,
) -> dict[str, Any]:
    """The tokens and cost of a run folder: ``episodes``, ``requests``, ``prompt_tokens``,
    ``completion_tokens``, ``total_tokens``, ``cost_usd``, ``model``, ``unpriced``.
    ``read``: ``folder -> (manifest, records)`` -- ``urban-gym cost`` passes the run
    folder's own reader (:class:`urban_gym.eval.records.RunDir`: a torn last line left
    out, a key counted once, a malformed record an error naming its line); default: every
    line of ``episodes.jsonl`` as JSON.
    """
    import json

    root = Path(run_dir)
    if read is not None:
        manifest, records = read(root)
    else:
        try:
            manifest = json.loads((root / "manifest.json").read_text(encoding="utf-8"))
            lines = (root / "episodes.jsonl").read_text(encoding="utf-8").splitlines()
            records = [json.loads(line) for line in lines if line.strip()]
        except (OSError, ValueError) as exc:
            raise InputError(f"{str(root)!r} is not a run folder: {exc}") from exc
    prices = DEFAULT_PRICES if prices is None else prices
    model = str(((manifest.get("agent") or {}).get("config") or {}).get("model") or "")
    totals = dict.fromkeys(("requests", "prompt_tokens", "completion_tokens", "total_tokens"), 0)
    for r in records:
        for k in totals:
            totals[k] += int((r.get("tokens") or {}).get(k, 0) or 0)
    return {
        "episodes": len(records),
        **totals,
        "model": model,
        "cost_usd": round(cost_usd(totals, model, prices), 6),
        "unpriced": bool(model) and price_of(model, prices) is None,
    }


def add_cost_arguments(p: Any) -> None:
    """The arguments of ``urban-gym cost``."""
    p.add_argument("run_dirs", nargs="+", help="run folders")
    p.add_argument("--prices", default=None, help="YAML/JSON price table (USD per 1M tokens)")
    p.add_argument("--json", action="store_true", help="print JSON")


def run_cost_command(args: Any, read: Any = None) -> int:
    """``urban-gym cost``: tokens and US dollars of each run folder (``read``: see
    :func:`run_cost`).
    """
    import json

    prices = load_prices(args.prices)
    rows = [{"run": str(r), **run_cost(r, prices, read)} for r in args.run_dirs]
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    for row in rows:
        note = " (model not in the price table)" if row["unpriced"] else ""
        print(
            f"{row['run']}: {row['episodes']} episodes, {row['requests']:,} requests, "
            f"{row['prompt_tokens']:,} prompt + {row['completion_tokens']:,} completion "
            f"tokens, ${row['cost_usd']:.4f} ({row['model']}){note}"
        )
    return 0
