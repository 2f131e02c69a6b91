"""Baseline agents: the oracles (privileged, solve every generated task), a random agent,
RL training with stable-baselines3 (:mod:`urban_gym.baselines.rl`) and language-model
agents with their HTTP client (:mod:`urban_gym.baselines.lmm`).

Optional heavy dependencies (torch, stable-baselines3, httpx) are imported by the
submodules that need them, never by this package.
"""
