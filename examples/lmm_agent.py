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

Each episode's record (every step, the model's replies, the metrics) is appended to --out.
"""

from __future__ import annotations

import argparse
import json

import urban_gym  # noqa: F401  (registers the UrbanGym/... ids)
from urban_gym.baselines.lmm import ChatClient, ClientConfig, LMMAgent, run_episode
from urban_gym.wrappers import make_lm_env


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--env", default="UrbanGym/StreetGraph-v0", help="environment id")
    p.add_argument("--env-kwargs", type=json.loads, default={}, help="gym.make kwargs (JSON)")
    p.add_argument("--episodes", type=int, default=1)
    p.add_argument("--seed", type=int, default=0, help="seed of the first episode")
    p.add_argument("--base-url", default=None, help="overrides URBAN_GYM_LMM_BASE_URL")
    p.add_argument("--model", default=None, help="overrides URBAN_GYM_LMM_MODEL")
    p.add_argument(
        "--image-budget",
        type=int,
        default=4_000_000,
        help="bytes of images per request (downscaled in steps to fit)",
    )
    p.add_argument("--text-only", action="store_true", help="send no images")
    p.add_argument("--map", action="store_true", help="add an agent-centred map image")
    p.add_argument("--out", default="lmm_episodes.jsonl", help="JSONL file of episode records")
    args = p.parse_args()

    config = ClientConfig.from_env(base_url=args.base_url, model=args.model)
    env = make_lm_env(
        args.env,
        env_kwargs=args.env_kwargs,
        map_observation=args.map,
        record_path=args.out,
        lm_kwargs={"image_budget_bytes": args.image_budget, "include_images": not args.text_only},
    )
    print(f"{args.env} with {config.model} at {config.base_url}")
    with ChatClient(config) as client:
        agent = LMMAgent(client)
        for i in range(args.episodes):
            rec = run_episode(env, agent, seed=args.seed + i)
            m = rec["metrics"]
            print(
                f"episode {i}: task {rec['task']['id']} termination={rec['termination']} "
                f"success={rec['is_success']} steps={rec['l']} "
                f"unreadable={m.get('unreadable_replies', 0)} "
                f"tokens={rec['usage']['total_tokens']}"
            )
    env.close()
    print(f"records appended to {args.out}")


if __name__ == "__main__":
    main()
