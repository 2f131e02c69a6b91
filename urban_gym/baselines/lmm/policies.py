"""What the scripted server (:mod:`.server`) answers: its policies.

A policy is named by a spec string (``urban-gym serve-scripted --policy SPEC``):

=====================  ==============================================================
``oracle``             the family's privileged oracle (the default): every reply right
``noisy-oracle:P``     the oracle, but with probability ``P`` (0 <= P <= 1) a *wrong but
                       valid* action instead: one of the env's currently valid action
                       table entries other than the oracle's, uniformly; seeded per
                       episode, so a rerun gives the same replies
``random``             a uniformly random valid action table entry (seeded per episode)
``replay:FILE``        recorded replies, in order: a JSONL file whose lines are reply
                       strings, objects with ``"text"``, the harness's trace steps
                       (``{"reply": {"text": ...}}``; steps without a reply are skipped),
                       or whole episodes' trace lines (a part file of a run's
                       ``traces/``: the replies of its steps, in order)
=====================  ==============================================================

Every policy but ``replay`` chooses a structured action that the server writes as a reply
in the prompt protocol and carries out on its own env (the env in lockstep with the
client's); a ``replay`` reply is read with the protocol's parser and carried out the same
way, so the server knows when the episode ends.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from urban_gym.errors import InputError

#: The policy kinds (``noisy-oracle`` and ``replay`` take an argument after a colon).
POLICY_KINDS: tuple[str, ...] = ("oracle", "noisy-oracle", "random", "replay")


class ScriptedPolicy:
    """The oracle policy; the others refine :meth:`choose`.

    Attributes:
        spec: the spec string the policy was made from.
        seed: the base seed of the per-episode random generators.
    """

    kind = "oracle"

    def __init__(self, spec: str = "oracle", seed: int = 0) -> None:
        self.spec = spec
        self.seed = int(seed)

    def rng_for(self, episode_seed: Any, task_id: Any) -> random.Random:
        """The random generator of one episode: a function of the policy's seed, the
        episode's seed and its task id (never of the order in which episodes arrive).
        """
        digest = hashlib.sha256(f"{self.seed}|{episode_seed}|{task_id}".encode()).digest()
        return random.Random(int.from_bytes(digest[:8], "big"))

    def choose(self, env: Any, oracle: Any, rng: random.Random) -> tuple[dict, bool]:
        """``(canonical action, deviated)``: the action to reply with, and whether it is
        not the oracle's.
        """
        return _canonical(env, oracle.act(env)), False

    def next_text(self) -> str | None:
        """The next recorded reply (``replay`` only; None for the others)."""
        return None


class NoisyOraclePolicy(ScriptedPolicy):
    """The oracle, with a wrong but valid action with probability ``p``."""

    kind = "noisy-oracle"

    def __init__(self, spec: str, p: float, seed: int = 0) -> None:
        super().__init__(spec, seed)
        if not 0.0 <= p <= 1.0:
            raise InputError(f"policy {spec!r}: P={p!r} must be in [0, 1]")
        self.p = float(p)

    def choose(self, env: Any, oracle: Any, rng: random.Random) -> tuple[dict, bool]:
        """The oracle's action, or with probability ``p`` another valid one."""
        best = _canonical(env, oracle.act(env))
        if rng.random() >= self.p:
            return best, False
        others = [a for a in valid_actions(env) if a != best]
        if not others:
            return best, False
        return others[rng.randrange(len(others))], True


class RandomPolicy(ScriptedPolicy):
    """A uniformly random valid action table entry."""

    kind = "random"

    def choose(self, env: Any, oracle: Any, rng: random.Random) -> tuple[dict, bool]:
        """A random valid action (compared with the oracle's for ``deviated``)."""
        actions = valid_actions(env)
        if not actions:
            return _canonical(env, oracle.act(env)), False
        return actions[rng.randrange(len(actions))], True


class ReplayPolicy(ScriptedPolicy):
    """Recorded replies, in the order of the file (see the module docstring)."""

    kind = "replay"

    def __init__(self, spec: str, path: str, seed: int = 0) -> None:
        super().__init__(spec, seed)
        self.path = Path(path)
        self.texts = read_replies(self.path)
        self.position = 0

    def next_text(self) -> str | None:
        """The next recorded reply; :class:`UrbanGymError` when the file is spent."""
        if self.position >= len(self.texts):
            raise InputError(
                f"replay {self.path}: all {len(self.texts)} recorded replies were used"
            )
        self.position += 1
        return self.texts[self.position - 1]


def read_replies(path: Path) -> list[str]:
    """The reply texts of a replay file (see the module docstring)."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise InputError(f"replay file {str(path)!r} cannot be read: {exc}") from exc
    texts: list[str] = []
    for n, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InputError(f"replay file {str(path)!r} line {n} is not JSON: {exc}") from exc
        texts += _reply_texts(value)
    if not texts:
        raise InputError(f"replay file {str(path)!r} holds no reply")
    return texts


def _reply_texts(value: Any) -> list[str]:
    """The replies of one line of a replay file: one, or none, or the replies of the
    steps of an episode's trace line (format 2 of :mod:`urban_gym.eval.tracefile`: the
    step's other entries, ``reply`` among them, are in ``more`` by step number).
    """
    more = value.get("more") if isinstance(value, Mapping) and value.get("format") == 2 else None
    if not isinstance(more, Mapping):
        text = _reply_text(value)
        return [] if text is None else [text]
    steps = sorted((int(t), m) for t, m in more.items() if str(t).isdigit())
    return [text for _, m in steps if (text := _reply_text(m)) is not None]


def _reply_text(value: Any) -> str | None:
    if isinstance(value, str):
        return value
    if isinstance(value, Mapping):
        if isinstance(value.get("text"), str):
            return value["text"]
        reply = value.get("reply")
        if isinstance(reply, Mapping) and isinstance(reply.get("text"), str):
            return reply["text"]
    return None


def parse_policy(spec: str, seed: int = 0) -> ScriptedPolicy:
    """A policy from its spec (see the module docstring); :class:`UrbanGymError` naming
    a bad spec.
    """
    if not isinstance(spec, str) or not spec.strip():
        raise InputError(f"policy {spec!r} must be a non-empty string")
    kind, _, arg = spec.strip().partition(":")
    if kind == "oracle" and not arg:
        return ScriptedPolicy(spec, seed)
    if kind == "random" and not arg:
        return RandomPolicy(spec, seed)
    if kind == "noisy-oracle":
        try:
            p = float(arg)
        except ValueError:
            raise InputError(
                f"policy {spec!r}: noisy-oracle needs a probability, e.g. noisy-oracle:0.3"
            ) from None
        return NoisyOraclePolicy(spec, p, seed)
    if kind == "replay" and arg:
        return ReplayPolicy(spec, arg, seed)
    raise InputError(f"policy {spec!r} is not one of: oracle, noisy-oracle:P, random, replay:FILE")


def _canonical(env: Any, action: Any) -> dict:
    aset = env.unwrapped.action_set
    if isinstance(action, int) and not isinstance(action, bool):
        action = env.unwrapped.action_table[action]
    return dict(aset.normalise(action))


def valid_actions(env: Any) -> list[dict]:
    """The distinct canonical actions of ``env``'s action table that its mask allows now."""
    u = env.unwrapped
    table = getattr(u, "action_table", None) or []
    try:
        mask = list(u.action_masks())
    except Exception:  # an env without a mask: every entry
        mask = [1] * len(table)
    out: list[dict] = []
    for ok, entry in zip(mask, table):
        if not ok:
            continue
        try:
            a = dict(u.action_set.normalise(entry))
        except Exception:  # an entry the action set rejects now
            continue
        if a not in out:
            out.append(a)
    return out
