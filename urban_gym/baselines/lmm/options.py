"""The command-line options of the language-model agent (``urban-gym eval --agent lmm``)
and the agent options they make.

The face switches (``--location-prior``, ``--map``, ``--memory``, ``--history``, ...)
default to None, "not given", so that an explicit one -- ``--no-map`` included -- wins over
the scheme's and the family's defaults (:mod:`urban_gym.baselines.lmm.face`).
"""

from __future__ import annotations

import argparse
from typing import Any


def add_lmm_options(p: argparse.ArgumentParser, json_arg: Any, prefix: str = "") -> None:
    """Add the client settings of a language model to ``p`` (``prefix``: e.g. ``judge-``;
    ``json_arg``: the argparse type of a JSON object).
    """
    g = p.add_argument_group(f"{prefix or 'language-model '}client (API key from the environment)")
    g.add_argument(f"--{prefix}base-url", default=None, help="OpenAI-compatible endpoint")
    g.add_argument(f"--{prefix}model", default=None, help="model name")
    if prefix:
        return
    g.add_argument(
        "--preset",
        default=None,
        help="source-benchmark model settings: 360cityarena, citynav (its row by --model; "
        "citynav:ROW names one)",
    )
    g.add_argument("--temperature", type=float, default=None, help="sampling temperature")
    g.add_argument("--max-tokens", type=int, default=None, help="max output tokens per reply")
    g.add_argument(
        "--extra-body",
        type=json_arg,
        default=None,
        help='JSON merged into every request, e.g. \'{"reasoning_effort": "low"}\'',
    )
    g.add_argument("--timeout", type=float, default=None, help="seconds per request")
    g.add_argument("--max-retries", type=int, default=None, help="retries per request")
    g.add_argument(
        "--request-deadline",
        type=float,
        default=None,
        help="seconds one request may take in all, retries and waits included (default 600)",
    )
    g.add_argument(
        "--image-budget",
        type=int,
        default=None,
        help="bytes of images per request (default 4,000,000)",
    )
    g.add_argument("--max-image-side", type=int, default=None, help="pixels, before encoding")
    g.add_argument("--text-only", action="store_true", help="send no images")
    g.add_argument(
        "--map",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="add an agent-centred map image (MapObservation); --no-map: no map image at "
        "all, the location map included ('without map') (default: the scheme's or family's)",
    )
    g.add_argument(
        "--location-prior",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="show the map of the agent's current location each step (families that draw one) "
        "(default for the lmm agent: on, 360CityArena's main setting; --no-location-prior "
        "is the paper's 'without location' ablation)",
    )
    g.add_argument(
        "--memory",
        default="auto",
        choices=("auto", "reflection", "agentnav", "none"),
        help="memory texts (auto: the scheme's or family's; none: 'without memory')",
    )
    g.add_argument(
        "--memory-budget",
        type=int,
        default=None,
        help="characters per memory (default: the scheme's, else 2000)",
    )
    g.add_argument(
        "--history",
        type=_history_arg,
        default=None,
        help="past turns shown: a number, or 'all' for the whole conversation (default: the "
        "scheme's, else the family's)",
    )
    g.add_argument(
        "--history-images",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="past turns keep their images (default: the scheme's, else the family's)",
    )
    g.add_argument(
        "--action-schema",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="show the action's JSON schema in the system prompt (default: the protocol's)",
    )
    g.add_argument(
        "--scheme",
        default=None,
        help="a paper's agent or a reasoning baseline: react-reflection, agentnav, prep, "
        "urbanground-react, cot, self-reflection, reflexion, gepa (its prompt from urban-gym "
        "gepa's best.yaml via --scheme-config)",
    )
    g.add_argument("--scheme-config", default=None, help="YAML/JSON config of the scheme")
    g.add_argument(
        "--ablation",
        default=None,
        help="a named variant of the scheme's prompt, for schemes that define them "
        "(agentnav: base, P1..P7 and the rows of CityNav's component table)",
    )
    g.add_argument("--prompts", default=None, help="YAML/JSON prompt texts replacing ours")
    g.add_argument(
        "--client", default=None, choices=("httpx", "openai"), help="HTTP client (default ours)"
    )
    g.add_argument("--cache", default=None, help="folder of cached responses (by request hash)")
    g.add_argument(
        "--concurrency",
        type=int,
        default=None,
        help="episodes at once against the endpoint (worker processes; default --workers)",
    )


def _history_arg(text: str) -> int | str:
    """``--history``: a number of past turns or ``all``."""
    from urban_gym.baselines.lmm.prompt import check_history

    try:
        return check_history(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def lmm_options(args: argparse.Namespace) -> dict[str, Any]:
    """The ``lmm`` agent's options from the parsed arguments."""
    opts = {
        "base_url": args.base_url,
        "model": args.model,
        "temperature": args.temperature,
        "max_tokens": args.max_tokens,
        "extra_body": args.extra_body,
        "timeout_s": args.timeout,
        "max_retries": args.max_retries,
        "deadline_s": args.request_deadline,
        "image_budget_bytes": args.image_budget,
        "max_image_side": args.max_image_side,
        "include_images": not args.text_only,
        "map": args.map,
        "memory": args.memory,
        "memory_budget": args.memory_budget,
        "history": args.history,
        "history_images": args.history_images,
        "action_schema": args.action_schema,
        "scheme": args.scheme,
        "scheme_config": args.scheme_config,
        "prompts": args.prompts,
        "cache": args.cache,
        "client": args.client,
    }
    if getattr(args, "ablation", None) is not None:
        opts["scheme_config"] = with_ablation(args.scheme, args.scheme_config, args.ablation)
    opts = {k: v for k, v in opts.items() if v is not None}
    check_lmm_options(opts)
    return opts


#: The agent's own numeric options: (option, low, high).
_AGENT_NUMBERS = {
    "image_budget_bytes": ("--image-budget", 1, 2**40),
    "max_image_side": ("--max-image-side", 1, 2**16),
    "memory_budget": ("--memory-budget", 0, 2**31),
}


def check_lmm_options(opts: dict[str, Any]) -> None:
    """Check the ``lmm`` agent's options before the first episode: the client settings
    (:func:`~urban_gym.baselines.lmm.client.check_config`, with the environment's base URL
    and model where none is given) and the image and memory budgets. Raises
    :class:`~urban_gym.errors.InputError` naming the option and its value.
    """
    from urban_gym.baselines.lmm.client import ClientConfig
    from urban_gym.errors import InputError

    client = ("base_url", "model", "temperature", "max_tokens", "extra_body", "timeout_s")
    settings = {k: opts.get(k) for k in (*client, "max_retries", "deadline_s")}
    if settings["extra_body"] is not None:
        settings["extra_body"] = dict(settings["extra_body"])
    ClientConfig.from_env(**settings)  # raises on a bad setting
    for name, (option, low, high) in _AGENT_NUMBERS.items():
        v = opts.get(name)
        if v is not None and not (isinstance(v, int) and low <= v <= high):
            raise InputError(f"{option} {v!r}: must be a whole number from {low} to {high}")


def with_ablation(scheme: str | None, config: Any, ablation: str) -> dict[str, Any]:
    """The scheme config (a mapping or a YAML/JSON file) with ``ablation`` added; a clear
    error when no scheme is given or the scheme has no ablations (the value itself is
    checked by the scheme).
    """
    from collections.abc import Mapping

    from urban_gym.baselines.lmm.schemes import schemes
    from urban_gym.baselines.lmm.schemes.base import read_mapping
    from urban_gym.errors import InputError

    if scheme is None:
        raise InputError(f"--ablation {ablation} needs a scheme, e.g. --scheme agentnav")
    known = schemes()
    with_variants = sorted(n for n, c in known.items() if "ablation" in c.defaults)
    if scheme in known and "ablation" not in known[scheme].defaults:
        raise InputError(
            f"--ablation {ablation}: scheme {scheme!r} has no ablations; schemes with "
            f"ablations: {', '.join(with_variants) or 'none'}"
        )
    if config is None:
        base: dict[str, Any] = {}
    elif isinstance(config, Mapping):
        base = dict(config)
    else:
        base = read_mapping(config, "scheme config")
    return {**base, "ablation": ablation}
