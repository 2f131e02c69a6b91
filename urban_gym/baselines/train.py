"""``urban-gym train``: train a policy on a registered id from a config file, evaluate it on
held-out tasks while it trains, and save checkpoints ``urban-gym eval --agent sb3:PATH``
loads.

A config (JSON; each family ships one per id and goal mode in its ``configs/`` folder) is a
:class:`TrainConfig`; unknown keys are an error naming the valid ones. A run writes into
its output folder:

* ``config.json`` -- the config as run (with the seed);
* ``val.jsonl`` / ``test.jsonl`` -- the held-out tasks evaluated (drawn once from the
  ``val_suite`` / ``test_suite``, so every evaluation and the harness see the same ones),
  and ``train.jsonl``, as many tasks of the ``train_suite`` (for comparing train and test
  success through the harness; not evaluated while training);
* ``evals.jsonl`` -- one line per evaluation: ``timesteps``, ``split``, ``episodes``,
  ``success`` and ``spl`` with their 95% intervals (``success_low``/``success_high``:
  Wilson; ``spl_low``/``spl_high``: mean +- 1.96 standard errors), ``wall_s``;
* ``model.zip`` (the last policy) and ``best.zip`` (best validation success), each with
  its RL-face record (:mod:`urban_gym.baselines.sb3_agent`);
* ``tb/`` -- TensorBoard logs when ``tensorboard`` is installed (the ``rl`` extra).

Algorithms: sb3-contrib's ``MaskablePPO`` (reads the env's action mask) and
``RecurrentPPO`` (an LSTM policy for partially observed families; it does not read
masks, so a masked action is an invalid-action step). Extractors: ``"mlp"`` (flattened
vectors) or ``"cnn"`` (sb3's NatureCNN for image entries): both through sb3's
``MultiInputPolicy`` family. ``n_envs`` envs run in the id's native batched vector env
(``vec_env: "native"``: one process, frames of all envs drawn by the batched kernels,
:func:`urban_gym.baselines.vec_env.make_native_vec_env`), in ``SubprocVecEnv`` workers
(``"subproc"``) or one after another in-process (``"dummy"``); ``"auto"`` (the default)
is native where it fits the config (:func:`native_vec_env_problem`), else dummy. ``workers``
(default 1) spreads a native vector env's ``n_envs`` over that many processes
(:class:`urban_gym.envs.workers.ShardedVectorEnv`: each steps its shard as a native vector
env, so the cores are used where one process's threads share the GIL). The curriculum (``curriculum``: a list of
``[fraction of training, max blocks]``) raises the size of on-the-fly procedural cities
(``suite="procedural:blocks=2x2-8x8,..."``) as training goes on.
"""

from __future__ import annotations

import dataclasses
import json
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

from urban_gym.errors import InputError, MissingFileError


def shipped_configs() -> dict[str, Path]:
    """The shipped configs, file name -> path: the ``configs/`` folder of each registered
    family (:meth:`~urban_gym.tasks.families.Family.folder`).
    """
    from urban_gym.tasks.families import FAMILIES

    out: dict[str, Path] = {}
    for fam in FAMILIES.values():
        folder = fam.folder()
        if folder is not None:
            out.update({p.name: p for p in sorted((folder / "configs").glob("*.json"))})
    return out


ALGOS: tuple[str, ...] = ("MaskablePPO", "RecurrentPPO")
#: the ways ``n_envs`` envs are run (see the module docstring)
VEC_ENVS: tuple[str, ...] = ("auto", "native", "subproc", "dummy")
EXTRACTORS: tuple[str, ...] = ("mlp", "cnn")


@dataclass(frozen=True)
class TrainConfig:
    """One training run (see the module docstring); lengths in env steps."""

    env_id: str
    env_kwargs: dict[str, Any] = field(default_factory=dict)
    train_suite: str | None = None
    val_suite: str | None = None
    test_suite: str | None = None
    eval_tasks: int = 100
    algo: str = "MaskablePPO"
    extractor: str = "mlp"
    net_arch: tuple[int, ...] = (64, 64)
    image_size: tuple[int, int] | None = None
    text: str = "drop"
    angles: str = "sincos"
    ppo: dict[str, Any] = field(default_factory=dict)
    total_timesteps: int = 50_000
    n_envs: int = 2
    vec_env: str = "auto"
    workers: int = 1
    eval_every: int = 10_000
    curriculum: tuple[tuple[float, int], ...] = ()
    seed: int = 0
    description: str = ""

    def __post_init__(self) -> None:
        if self.algo not in ALGOS:
            raise InputError(f"algo={self.algo!r} must be one of {', '.join(ALGOS)}")
        if self.extractor not in EXTRACTORS:
            raise InputError(f"extractor={self.extractor!r} must be one of {EXTRACTORS}")
        if self.vec_env not in VEC_ENVS:
            raise InputError(f"vec_env={self.vec_env!r} must be one of {', '.join(VEC_ENVS)}")
        for k in ("total_timesteps", "n_envs", "eval_every", "eval_tasks", "workers"):
            v = getattr(self, k)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise InputError(f"{k}={v!r} must be a positive integer")
        if self.workers > self.n_envs:
            raise InputError(f"workers={self.workers} must not exceed n_envs={self.n_envs}")
        if self.workers > 1 and self.vec_env in ("subproc", "dummy"):
            raise InputError(
                f"workers={self.workers} spreads the native vector env over processes; "
                f"vec_env={self.vec_env!r} does not use it (use 'native' or 'auto')"
            )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TrainConfig:
        """A config from a dict; unknown keys are an error listing the valid ones."""
        names = [f.name for f in dataclasses.fields(cls)]
        bad = sorted(set(data) - set(names))
        if bad:
            raise InputError(f"unknown train config keys {bad}; valid: {', '.join(names)}")
        d = dict(data)
        if "net_arch" in d:
            d["net_arch"] = tuple(int(v) for v in d["net_arch"])
        if d.get("image_size") is not None:
            d["image_size"] = tuple(int(v) for v in d["image_size"])
        if "curriculum" in d:
            d["curriculum"] = tuple((float(f), int(b)) for f, b in d["curriculum"])
        return cls(**d)

    @classmethod
    def load(cls, path: str | Path) -> TrainConfig:
        """The config in file ``path`` (JSON), or a shipped config by its file name."""
        p = Path(path)
        shipped = shipped_configs()
        if not p.exists() and p.name in shipped:
            p = shipped[p.name]
        if not p.exists():
            raise MissingFileError(
                f"train config {str(path)!r} does not exist (shipped: {', '.join(sorted(shipped))})"
            )
        try:
            return cls.from_dict(json.loads(p.read_text()))
        except json.JSONDecodeError as exc:
            raise InputError(f"train config {str(p)!r} is not JSON ({exc})") from None

    def to_dict(self) -> dict[str, Any]:
        """The config as JSON-ready data."""
        return json.loads(json.dumps(dataclasses.asdict(self)))

    def kwargs_for(self, suite: str | None) -> dict[str, Any]:
        """``env_kwargs`` with ``suite`` (when given)."""
        kw = dict(self.env_kwargs)
        if suite is not None:
            kw["suite"] = suite
        return kw


# ---------------------------------------------------------------- statistics
def wilson(successes: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """Wilson score interval of a proportion (95% for ``z=1.96``)."""
    if n == 0:
        return math.nan, math.nan
    p = successes / n
    den = 1 + z * z / n
    mid = (p + z * z / (2 * n)) / den
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / den
    return max(0.0, mid - half), min(1.0, mid + half)


def mean_interval(values: Sequence[float], z: float = 1.96) -> tuple[float, float, float]:
    """Mean and mean +- ``z`` standard errors."""
    v = np.asarray(values, dtype=float)
    if v.size == 0:
        return math.nan, math.nan, math.nan
    m = float(v.mean())
    se = float(v.std(ddof=1) / math.sqrt(v.size)) if v.size > 1 else 0.0
    return m, m - z * se, m + z * se


# ---------------------------------------------------------------- envs
def make_env_fn(cfg: TrainConfig, suite: str | None, rank: int = 0) -> Callable[[], gym.Env]:
    """A thunk building the RL face of ``cfg.env_id`` on ``suite`` inside sb3's
    ``Monitor`` (for the vector env workers; a ``SubprocVecEnv`` worker draws with OpenCV
    on one thread: :func:`urban_gym.render.threads.one_thread_in_worker`).
    """

    def make() -> gym.Env:
        from stable_baselines3.common.monitor import Monitor

        from urban_gym.wrappers.rl import make_rl_env

        if cfg.vec_env == "subproc":  # a worker process of SubprocVecEnv
            from urban_gym.render.threads import one_thread_in_worker

            one_thread_in_worker()

        env = make_rl_env(
            cfg.env_id,
            image_size=cfg.image_size,
            text=cfg.text,
            env_kwargs=cfg.kwargs_for(suite),
            angles=cfg.angles,
        )
        env.reset(seed=cfg.seed * 1000 + rank)
        return Monitor(env, info_keywords=("is_success",))

    return make


def native_vec_env_problem(cfg: TrainConfig) -> str | None:
    """Why ``cfg`` cannot train on its id's native vector env (whose RL face drops text,
    encodes compass entries as sines and cosines and keeps the env's own image size), or
    None when it can.
    """
    if cfg.text != "drop":
        return f"text={cfg.text!r} (the native vector env drops text)"
    if cfg.angles != "sincos":
        return f"angles={cfg.angles!r} (the native vector env encodes angles as 'sincos')"
    if cfg.image_size is not None:
        return (
            f"image_size={list(cfg.image_size)!r} (the native vector env keeps the env's own "
            "image size: set it in env_kwargs instead)"
        )
    try:
        spec = gym.spec(cfg.env_id)
    except gym.error.Error as exc:
        raise InputError(f"env id {cfg.env_id!r} is not registered ({exc})") from None
    if spec.vector_entry_point is None:
        return f"{cfg.env_id} registers no native vector env"
    return None


def vec_env_kind(cfg: TrainConfig) -> str:
    """The way ``cfg``'s envs run: its ``vec_env``, with ``"auto"`` resolved (native where
    it fits, else dummy); ``"native"`` where it does not fit is an error saying why.
    """
    if cfg.vec_env in ("subproc", "dummy"):
        return cfg.vec_env
    problem = native_vec_env_problem(cfg)
    if problem is None:
        return "native"
    if cfg.vec_env == "native":
        raise InputError(f"vec_env='native' does not fit this config: {problem}")
    return "dummy"


def make_train_vec_env(cfg: TrainConfig, progress: Callable[[str], None] | None = None) -> Any:
    """The stable-baselines3 ``VecEnv`` of ``cfg.n_envs`` training envs on
    ``cfg.train_suite``, run as :func:`vec_env_kind` says (told to ``progress``). The
    model seeds them (stable-baselines3 resets env ``i`` first with ``cfg.seed + i``),
    whichever way they run.
    """
    from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv

    kind = vec_env_kind(cfg)
    if progress is not None:
        where = (
            f" over {cfg.workers} worker processes" if kind == "native" and cfg.workers > 1 else ""
        )
        progress(f"{cfg.n_envs} envs in a {kind} vector env{where}")
    if kind == "native":
        from urban_gym.baselines.vec_env import make_native_vec_env

        return make_native_vec_env(
            cfg.env_id, cfg.n_envs, workers=cfg.workers, **cfg.kwargs_for(cfg.train_suite)
        )
    fns = [make_env_fn(cfg, cfg.train_suite, r) for r in range(cfg.n_envs)]
    return SubprocVecEnv(fns) if kind == "subproc" else DummyVecEnv(fns)


def held_out_tasks(cfg: TrainConfig, suite: str, path: Path) -> Path:
    """Write ``cfg.eval_tasks`` distinct tasks of ``suite`` to ``path`` (a JSONL suite):
    drawn from an on-the-fly suite (fewer if its cities hold fewer), the first ones of a
    suite file.
    """
    from urban_gym.tasks.suite import save_suite

    env = gym.make(cfg.env_id, **cfg.kwargs_for(suite))
    u: Any = env.unwrapped  # the family's UrbanEnv
    if getattr(u, "task_source", None) is not None:
        rng = np.random.default_rng(10_000 + cfg.seed)
        drawn: dict[str, Any] = {}  # distinct tasks (a pool may give one twice)
        for _ in range(20 * cfg.eval_tasks):
            if len(drawn) >= cfg.eval_tasks:
                break
            t = u.task_source.draw(rng)
            drawn.setdefault(t.id, t)
        tasks = list(drawn.values())
    else:
        tasks = list(u.tasks)[: cfg.eval_tasks]
    env.close()
    return save_suite(path, tasks)


def evaluate_policy(
    model: Any, cfg: TrainConfig, suite_path: Path, deterministic: bool = True
) -> dict[str, Any]:
    """Success and SPL of ``model`` on every task of ``suite_path`` (one episode each,
    reset seed = task index), with their 95% intervals.
    """
    from urban_gym.wrappers.rl import make_rl_env

    env = make_rl_env(
        cfg.env_id,
        image_size=cfg.image_size,
        text=cfg.text,
        env_kwargs=cfg.kwargs_for(str(suite_path)),
        angles=cfg.angles,
    )
    u: Any = env.unwrapped  # the family's UrbanEnv
    n = len(u.tasks)
    succ: list[float] = []
    spl: list[float] = []
    recurrent = cfg.algo == "RecurrentPPO"
    for i in range(n):
        obs, info = env.reset(seed=i, options={"task_index": i})
        state, start = None, np.ones((1,), dtype=bool)
        while True:
            if recurrent:
                action, state = model.predict(
                    obs, state=state, episode_start=start, deterministic=deterministic
                )
                start = np.zeros((1,), dtype=bool)
            else:
                action, _ = model.predict(
                    obs, action_masks=env.action_masks(), deterministic=deterministic
                )
            obs, _, term, trunc, info = env.step(int(action))
            if term or trunc:
                break
        m = info.get("metrics", {})
        succ.append(float(info.get("is_success", False)))
        spl.append(float(m.get("spl", 0.0)) if m.get("spl") is not None else 0.0)
    env.close()
    k = int(sum(succ))
    lo, hi = wilson(k, n)
    s_m, s_lo, s_hi = mean_interval(spl)
    return {
        "episodes": n,
        "success": k / n if n else math.nan,
        "success_low": lo,
        "success_high": hi,
        "spl": s_m,
        "spl_low": s_lo,
        "spl_high": s_hi,
    }


# ---------------------------------------------------------------- training
def build_model(cfg: TrainConfig, venv: Any, tensorboard_log: str | None) -> Any:
    """The untrained model of ``cfg`` on ``venv``."""
    from stable_baselines3.common.torch_layers import CombinedExtractor

    policy_kwargs: dict[str, Any] = {
        "net_arch": list(cfg.net_arch),
        "features_extractor_class": CombinedExtractor,
        "features_extractor_kwargs": {"cnn_output_dim": 64 if cfg.extractor == "cnn" else 16},
    }
    ppo = {"n_steps": 256, "batch_size": 256, "n_epochs": 4, "learning_rate": 3e-4}
    ppo.update(cfg.ppo)
    common: dict[str, Any] = {
        "seed": cfg.seed,
        "verbose": 0,
        "device": "cpu",
        "tensorboard_log": tensorboard_log,
        "policy_kwargs": policy_kwargs,
        **ppo,
    }
    if cfg.algo == "RecurrentPPO":
        from sb3_contrib import RecurrentPPO

        return RecurrentPPO("MultiInputLstmPolicy", venv, **common)
    from sb3_contrib import MaskablePPO

    return MaskablePPO("MultiInputPolicy", venv, **common)


def _tensorboard_dir(out: Path) -> str | None:
    try:
        import tensorboard  # noqa: F401
    except ImportError:
        return None
    return str(out / "tb")


def save_checkpoint(model: Any, cfg: TrainConfig, path: Path) -> Path:
    """Save ``model`` to ``path`` with its RL-face record; returns the file."""
    from urban_gym.baselines.sb3_agent import write_face

    model.save(str(path))
    write_face(
        path,
        cfg.algo,
        cfg.env_id,
        cfg.kwargs_for(None),
        cfg.image_size,
        cfg.text,
        angles=cfg.angles,
    )
    return path


@dataclass
class TrainResult:
    """What :func:`train` made: the folder, the last and best checkpoints, the evaluations
    and the wall time (s).
    """

    out: Path
    model: Path
    best: Path | None
    evals: list[dict[str, Any]]
    wall_s: float


def train(
    cfg: TrainConfig,
    out: str | Path,
    progress: Callable[[str], None] | None = print,
    torch_threads: int = 1,
) -> TrainResult:
    """Train ``cfg`` into folder ``out`` (see the module docstring)."""
    import torch
    from stable_baselines3.common.callbacks import BaseCallback

    torch.set_num_threads(int(torch_threads))
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "config.json").write_text(json.dumps(cfg.to_dict(), indent=1))
    suites = {}
    for split, suite in (("val", cfg.val_suite), ("test", cfg.test_suite)):
        if suite is not None:
            suites[split] = held_out_tasks(cfg, suite, out / f"{split}.jsonl")
    if cfg.train_suite is not None:  # a sample of the training tasks, for the harness table
        held_out_tasks(cfg, cfg.train_suite, out / "train.jsonl")
    venv = make_train_vec_env(cfg, progress)
    model = build_model(cfg, venv, _tensorboard_dir(out))
    log = out / "evals.jsonl"
    log.write_text("")
    evals: list[dict[str, Any]] = []
    best: dict[str, Any] = {"success": -1.0, "path": None}
    t0 = time.perf_counter()

    def evaluate_now(step: int) -> None:
        for split, path in suites.items():
            row = {"timesteps": step, "split": split, **evaluate_policy(model, cfg, path)}
            row["wall_s"] = round(time.perf_counter() - t0, 1)
            evals.append(row)
            with log.open("a") as f:
                f.write(json.dumps(row) + "\n")
            if progress is not None:
                progress(
                    f"[{step:>8} steps, {row['wall_s']:>6.0f} s] {split}: success "
                    f"{row['success']:.2f} [{row['success_low']:.2f}, {row['success_high']:.2f}]"
                    f", SPL {row['spl']:.2f}"
                )
            if split == "val" and row["success"] > best["success"]:
                best.update(success=row["success"])
                best["path"] = save_checkpoint(model, cfg, out / "best.zip")

    schedule = sorted(cfg.curriculum)

    class Hooks(BaseCallback):
        def __init__(self) -> None:
            super().__init__()
            self.next_eval = 0
            self.level: int | None = None

        def _on_step(self) -> bool:
            step = self.model.num_timesteps
            frac = step / cfg.total_timesteps
            level = None
            for f, b in schedule:
                if frac >= f:
                    level = b
            if level is not None and level != self.level:
                self.training_env.env_method("set_curriculum", level)
                self.level = level
                if progress is not None:
                    progress(f"[{step:>8} steps] curriculum: cities up to {level}x{level} blocks")
            if step >= self.next_eval:
                evaluate_now(step)
                self.next_eval = step + cfg.eval_every
            return True

    model.learn(total_timesteps=cfg.total_timesteps, callback=Hooks(), tb_log_name="run")
    evaluate_now(int(model.num_timesteps))
    last = save_checkpoint(model, cfg, out / "model.zip")
    venv.close()
    wall = time.perf_counter() - t0
    return TrainResult(out, last, best["path"], evals, wall)


__all__ = [
    "ALGOS",
    "EXTRACTORS",
    "TrainConfig",
    "shipped_configs",
    "TrainResult",
    "build_model",
    "evaluate_policy",
    "held_out_tasks",
    "make_env_fn",
    "make_train_vec_env",
    "native_vec_env_problem",
    "vec_env_kind",
    "VEC_ENVS",
    "save_checkpoint",
    "train",
    "mean_interval",
    "wilson",
]
