"""Golden rollouts: every registered id, 3 seeds x 50 seeded random (masked) steps.

``python -m tests.golden.golden record`` writes ``tests/golden/rollouts.json.gz``
(``... refresh instruction`` re-records only the instruction hashes; ``... rerecord ID...``
re-records all of those ids' rollouts, e.g. after their task suite was regenerated); the test
``tests/golden/test_golden.py`` replays the same rollouts and compares observation hashes,
rewards, end flags and the recorded ``info`` values.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import math
import sys
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

import urban_gym  # noqa: F401
from urban_gym.tasks.families import env_specs

ENV_SPECS = env_specs()

SEEDS = (0, 1, 2)
STEPS = 50
PATH = Path(__file__).with_name("rollouts.json.gz")


def digest(value: Any) -> str:
    """A short stable hash of an observation entry (array bytes, text)."""
    if isinstance(value, np.ndarray):
        data = value.tobytes() + str(value.shape).encode() + str(value.dtype).encode()
    else:
        data = str(value).encode("utf-8", "surrogatepass")
    return hashlib.sha1(data).hexdigest()[:16]


def plain(value: Any) -> Any:
    """A JSON value for an ``info`` entry (floats rounded to 6 digits)."""
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        v = float(value)
        return round(v, 6) if math.isfinite(v) else str(v)
    if isinstance(value, str) or value is None:
        return value
    if isinstance(value, np.ndarray):
        return "sha1:" + digest(value)
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    tid = getattr(value, "id", None)
    if isinstance(tid, str):
        return "task:" + tid
    return repr(value)


def rollout(env_id: str, seed: int) -> list[dict[str, Any]]:
    env = gym.make(env_id)
    rng = np.random.default_rng(seed)
    obs, info = env.reset(seed=seed)
    out = [{"obs": {k: digest(v) for k, v in obs.items()}, "info": plain(info)}]
    episode = 0
    for _ in range(STEPS):
        mask = obs.get("action_mask")
        valid = np.flatnonzero(mask) if mask is not None else np.arange(env.action_space.n)
        a = int(rng.choice(valid)) if len(valid) else 0
        obs, reward, terminated, truncated, info = env.step(a)
        out.append(
            {
                "action": a,
                "obs": {k: digest(v) for k, v in obs.items()},
                "reward": round(float(reward), 6),
                "terminated": bool(terminated),
                "truncated": bool(truncated),
                "info": plain(info),
            }
        )
        if terminated or truncated:
            episode += 1
            obs, info = env.reset(seed=seed + 100 * episode)
            out.append({"obs": {k: digest(v) for k, v in obs.items()}, "info": plain(info)})
    env.close()
    return out


def record() -> None:
    data = {env_id: {str(s): rollout(env_id, s) for s in SEEDS} for env_id in sorted(ENV_SPECS)}
    text = json.dumps(data, ensure_ascii=False, sort_keys=True, indent=0)
    PATH.write_bytes(gzip.compress(text.encode("utf-8"), mtime=0))
    print(f"wrote {PATH} ({PATH.stat().st_size // 1024} KB)")


def refresh(keys: list[str]) -> None:
    """Re-record only the hashes of the observation entries ``keys`` (after a deliberate
    change of, say, the instruction texts), keeping every other recorded value as it was.
    Refuses, naming the first difference, when the replay differs anywhere else: episode
    lengths, actions, other observations, rewards, ends or ``info`` (compared as
    ``test_golden`` does). A full :func:`record` would also rewrite the recorded ``info``
    in today's schema, which ``test_golden``'s checks of renamed keys do not expect."""
    from tests.golden.test_golden import _info_matches

    data = load()
    changed = 0
    for env_id, by_seed in data.items():
        for seed, recorded in by_seed.items():
            now = rollout(env_id, int(seed))
            if len(now) != len(recorded):
                raise SystemExit(f"{env_id} seed {seed}: episode ends moved; not refreshed")
            for i, (r, n) in enumerate(zip(recorded, now)):
                where = f"{env_id} seed {seed} entry {i}"
                same = {k: v for k, v in n["obs"].items() if k not in keys}
                if same != {k: v for k, v in r["obs"].items() if k not in keys}:
                    raise SystemExit(f"{where}: observations other than {keys} differ")
                for k in ("action", "reward", "terminated", "truncated"):
                    if n.get(k) != r.get(k):
                        raise SystemExit(f"{where}: {k} differs")
                _info_matches(r["info"], n["info"], where)
                for k in keys:
                    if k in r["obs"] and r["obs"][k] != n["obs"][k]:
                        r["obs"][k] = n["obs"][k]
                        changed += 1
    text = json.dumps(data, ensure_ascii=False, sort_keys=True, indent=0)
    PATH.write_bytes(gzip.compress(text.encode("utf-8"), mtime=0))
    print(f"refreshed {changed} hashes of {', '.join(keys)} in {PATH}")


def rerecord(env_ids: list[str]) -> None:
    """Re-record every rollout of ``env_ids`` (after a deliberate change of what those ids
    do, such as a regenerated task suite), keeping every other id as it was. ``info`` keys
    that :data:`tests.golden.test_golden.DERIVED` derives from today's ``info`` are stored
    as it derives them, so that the replay compares them the same way as the older ids."""
    from tests.golden.test_golden import DERIVED

    data = load()
    for env_id in env_ids:
        if env_id not in ENV_SPECS:
            raise SystemExit(f"{env_id!r} is not a registered id")
        data[env_id] = {str(s): rollout(env_id, s) for s in SEEDS}
        for steps in data[env_id].values():
            for step in steps:
                info = step["info"]
                for key, derive in DERIVED.items():
                    if key in info:
                        info[key] = derive(info)
    text = json.dumps(data, ensure_ascii=False, sort_keys=True, indent=0)
    PATH.write_bytes(gzip.compress(text.encode("utf-8"), mtime=0))
    print(f"re-recorded {', '.join(env_ids)} in {PATH}")


def load() -> dict[str, Any]:
    """The recorded rollouts: id -> seed -> steps."""
    return json.loads(gzip.decompress(PATH.read_bytes()).decode("utf-8"))


if __name__ == "__main__":
    # the Touchdown id's routes: the tests' fixture, as under pytest (tests/conftest.py)
    import os
    import tempfile

    from tests.families.streetgraph.touchdown_data import fixture_data_dir

    os.environ["URBAN_GYM_DATA"] = str(fixture_data_dir(Path(tempfile.mkdtemp())))
    if sys.argv[1:] == ["record"]:
        record()
    elif sys.argv[1:2] == ["refresh"] and sys.argv[2:]:
        refresh(sys.argv[2:])
    elif sys.argv[1:2] == ["rerecord"] and sys.argv[2:]:
        rerecord(sys.argv[2:])
