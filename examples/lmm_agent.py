"""Run a multimodal language model on urban_gym tasks through any OpenAI-compatible
chat-completions endpoint (OpenAI, vLLM, Ollama, SGLang, LM Studio).

    export URBAN_GYM_LMM_BASE_URL=http://localhost:8000/v1   # default: https://api.openai.com/v1
    export URBAN_GYM_LMM_MODEL=Qwen/Qwen2.5-VL-7B-Instruct  # default: gpt-4o-mini
    export URBAN_GYM_LMM_API_KEY=...                          # or OPENAI_API_KEY; none for local servers
    python examples/lmm_agent.py --env UrbanGym/StreetGraph-v0 --episodes 3

No model at hand? Serve the scripted oracle in another terminal and point the example at it
(episode i uses seed --seed + i on both sides):

    urban-gym serve-scripted UrbanGym/StreetGraph-v0 --port 8000 --seed 0
    URBAN_GYM_LMM_BASE_URL=http://127.0.0.1:8000/v1 python examples/lmm_agent.py --episodes 3

Before the first episode it prints the endpoint, the model and whether an API key was found
(never the key). The episodes run in urban_gym's one episode loop (the evaluation harness's),
so each one's record goes to --out/episodes.jsonl and its trace -- every step, the model's
replies and what the parser read from them -- to --out/traces/, as in any run folder. An
episode the endpoint failed (down, key rejected, not a chat completion) ends as
termination=model_error and its reason is printed. The exit status is 1 when every episode
failed that way.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

import gymnasium as gym

import urban_gym  # noqa: F401  (registers the UrbanGym/... ids)
from urban_gym.baselines.lmm import ChatClient, ClientConfig, LMMAgent
from urban_gym.eval.records import RunDir
from urban_gym.eval.trace import run_episode
from urban_gym.wrappers import lmm_env_kwargs


def where_from(flag: str | None, flag_name: str, *variables: str) -> str:
    """Which setting a value came from: the command-line flag, the first environment
    variable set, or the built-in default."""
    if flag is not None:
        return flag_name
    return next((v for v in variables if os.environ.get(v)), "default")


def describe(config: ClientConfig, args: argparse.Namespace) -> str:
    """The endpoint, model and whether an API key was found (the key itself never)."""
    key_vars = ("URBAN_GYM_LMM_API_KEY", "OPENAI_API_KEY")
    found = next((v for v in key_vars if os.environ.get(v)), None)
    key = (
        f"found in {found}"
        if config.api_key
        else f"none ({' / '.join(key_vars)} not set; fine for a local server)"
    )
    url_from = where_from(args.base_url, "--base-url", "URBAN_GYM_LMM_BASE_URL", "OPENAI_BASE_URL")
    model_from = where_from(args.model, "--model", "URBAN_GYM_LMM_MODEL")
    return (
        f"endpoint: {config.base_url} (from {url_from})\n"
        f"model:    {config.model} (from {model_from})\n"
        f"API key:  {key}\n"
        f"retries:  {config.max_retries}, timeout {config.timeout_s:g} s per request"
    )


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--env", default="UrbanGym/StreetGraph-v0", help="environment id")
    p.add_argument("--env-kwargs", type=json.loads, default={}, help="gym.make kwargs (JSON)")
    p.add_argument("--episodes", type=int, default=1)
    p.add_argument("--seed", type=int, default=0, help="seed of the first episode")
    p.add_argument("--base-url", default=None, help="overrides URBAN_GYM_LMM_BASE_URL")
    p.add_argument("--model", default=None, help="overrides URBAN_GYM_LMM_MODEL")
    p.add_argument("--max-retries", type=int, default=None, help="retries per request (4)")
    p.add_argument("--timeout", type=float, default=None, help="seconds per request (120)")
    p.add_argument(
        "--image-budget",
        type=int,
        default=4_000_000,
        help="bytes of images per request (downscaled in steps to fit)",
    )
    p.add_argument("--text-only", action="store_true", help="send no images")
    p.add_argument("--map", action="store_true", help="add an agent-centred map image")
    p.add_argument("--out", default="lmm_run", help="folder of the episode records and traces")
    args = p.parse_args()

    settings = {"base_url": args.base_url, "model": args.model, "max_retries": args.max_retries}
    if args.timeout is not None:
        connect = min(args.timeout, ClientConfig.connect_timeout_s)
        settings.update(timeout_s=args.timeout, connect_timeout_s=connect)
    config = ClientConfig.from_env(**settings)
    agent = LMMAgent(
        client=ChatClient(config),
        map=args.map or None,  # None: the family's maps; False would mean "without map"
        image_budget_bytes=args.image_budget,
        include_images=not args.text_only,
    )
    face = agent.wrap(gym.make(args.env, **lmm_env_kwargs(args.env, args.env_kwargs)))
    out = RunDir(args.out)
    print(f"{args.env}, {args.episodes} episode(s)\n{describe(config, args)}", flush=True)
    failed = 0  # episodes the endpoint failed (no completion, rejected request, bad answer)
    for i in range(args.episodes):
        rec, trace = run_episode(face, agent, seed=args.seed + i)
        rec["trace"] = out.write_trace(rec["key"], trace)
        out.append(rec)
        print(
            f"episode {i}: task {rec['task_id']} termination={rec['termination']} "
            f"success={rec['is_success']} steps={rec['steps']} "
            f"unreadable={rec['unreadable_replies']} "
            f"tokens={rec['tokens']['total_tokens']}",
            flush=True,
        )
        if rec["termination"] == "model_error":
            failed += 1
            print(f"  model error: {rec.get('error') or 'no reason recorded'}", flush=True)
    out.close()
    agent.close()
    face.close()
    print(f"records and traces in {args.out}/")
    if failed and failed == args.episodes:
        print(
            f"every episode failed on the endpoint {config.base_url}: is the server running, "
            "and are the URL, model and API key right?",
            file=sys.stderr,
        )
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
