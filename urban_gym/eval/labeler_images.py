"""What the failure labeller sees of an episode besides its text trace: the agent's
viewpoint images and maps of its location at some of its steps, within a byte budget.

360CityArena (section 5.2) labels failure causes with a model that sees the viewpoint
images, the maps and the thought history of each failed episode. A trace keeps actions,
poses and replies, not pixels; the images are made again by replaying the episode from
its record (:func:`urban_gym.eval.trace.replay`: the run's env, reset with the episode's
seed and task, stepped with the recorded actions), which gives the very observations the
agent had. At each chosen step the labeller gets:

* the images of the env's observation -- its view (or views), a task's reference image --
  captioned by their key; an image equal to the one last sent under the same key (a task's
  reference image, a view that did not change) is not sent again;
* the map of the agent's current location, where the env draws one (``location_map()``)
  and the observation has no ``map`` of its own.

**Which steps.** All of them when their images fit the budget (the summed length of their
base64 data URLs, :func:`urban_gym.wrappers.images.fit_images`); else as many steps as fit,
evenly spaced over the episode and always ending with the last step
(:func:`spread_steps`). How many fit is estimated from steps 0 and 1 (what step 1 adds
is what a step costs; the rest of step 0, a task's reference image, is sent once), then
checked: while the chosen steps fit, up to :data:`MAX_TRIES` replays try more of them;
while they are over budget, fewer are taken; when even the last step alone is over, its
images are shrunk in 15% steps (360CityArena's way of fitting a model's input limit,
its appendix A.4) until they fit. Images' longer side is first capped at :data:`MAX_SIDE`
pixels. A replay that departs from the record (it should not) stops giving images at that
step.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym
import numpy as np

#: Images' longer side is capped at this many pixels before encoding.
MAX_SIDE = 512
#: The default byte budget of one labelling request's images.
IMAGE_BUDGET = 4_000_000
#: Replays spent looking for room for more steps than first estimated.
MAX_TRIES = 3


def spread_steps(n: int, k: int) -> list[int]:
    """``k`` of the steps ``0..n-1``, evenly spaced and ending with the last (all of them
    when ``k >= n``; the last alone when ``k <= 1``).

    Example: ``spread_steps(11, 3) == [0, 5, 10]``.
    """
    if n <= 0:
        return []
    if k >= n:
        return list(range(n))
    if k <= 1:
        return [n - 1]
    return sorted({round(i * (n - 1) / (k - 1)) for i in range(k)})


def observation_images(obs: Any) -> list[tuple[str, np.ndarray]]:
    """``(caption, image)`` of every image in an observation (a dict of arrays): uint8
    ``(H, W, 3)`` arrays, and each image of a ``(N, H, W, 3)`` stack (captioned ``key i``);
    all-black images (padding) left out.
    """
    if not isinstance(obs, Mapping):
        return []
    out = []
    for key, v in obs.items():
        arr = np.asarray(v)
        if arr.dtype != np.uint8 or arr.ndim not in (3, 4) or arr.shape[-1] != 3:
            continue
        if arr.ndim == 3:
            if arr.any():
                out.append((str(key), arr))
        else:
            out += [(f"{key} {i}", im) for i, im in enumerate(arr) if im.any()]
    return out


class _LastObservation(gym.Wrapper):
    """Keeps the latest observation (``last``)."""

    def __init__(self, env: gym.Env) -> None:
        super().__init__(env)
        self.last: Any = None

    def reset(self, **kwargs: Any):
        obs, info = self.env.reset(**kwargs)
        self.last = obs
        return obs, info

    def step(self, action: Any):
        out = self.env.step(action)
        self.last = out[0]
        return out


def _step_images(env: _LastObservation) -> list[tuple[str, np.ndarray]]:
    imgs = observation_images(env.last)
    draw = getattr(env.unwrapped, "location_map", None)
    if callable(draw) and not any(c == "map" for c, _ in imgs):
        imgs.append(("location map", np.asarray(draw())))
    return imgs


@dataclass
class EpisodeImages:
    """The images chosen of one episode: per step ``t``, ``(caption, data URL)`` pairs.

    ``steps``: the episode's steps (0 the reset); ``sent``: the step numbers sent;
    ``total_bytes``: the summed URL lengths; ``scale``: the factor images were shrunk by
    (1.0: only the side cap); ``exact``: whether the replay matched the record.
    """

    images: dict[int, list[tuple[str, str]]] = field(default_factory=dict)
    steps: int = 0
    total_bytes: int = 0
    scale: float = 1.0
    exact: bool = True
    problems: list[str] = field(default_factory=list)

    @property
    def sent(self) -> list[int]:
        """The steps whose images are sent, in order."""
        return sorted(self.images)


class _Collector:
    """The images of an episode's steps, made by replaying it: per step, ``(caption,
    digest, data URL)`` of each image (encoded once, its longer side capped); the arrays
    of the latest step only (to shrink it when it alone is over the budget).
    """

    def __init__(self, env: gym.Env, record: Any, steps: Sequence[Any], max_side: int):
        self.env = _LastObservation(env)
        self.record, self.steps, self.max_side = record, steps, max_side
        self.urls: dict[int, list[tuple[str, bytes, str]]] = {}
        self.last: tuple[int, list[tuple[str, np.ndarray]]] = (-1, [])
        self.exact: bool = True
        self.problems: list[str] = []

    def collect(self, wanted: set[int]) -> None:
        """Replay the episode and encode the images of the ``wanted`` steps not yet held."""
        from urban_gym.eval.trace import replay
        from urban_gym.wrappers.images import fit_images

        todo = wanted - self.urls.keys()
        if not todo:
            return
        seen: list[int] = []

        def grab(e: Any, info: Mapping[str, Any]) -> None:
            t = len(seen)
            seen.append(t)
            if t not in todo:
                return
            imgs = _step_images(self.env)
            urls = fit_images([im for _, im in imgs], 1 << 62, max_side=self.max_side).urls
            self.urls[t] = [(c, _digest(im), u) for (c, im), u in zip(imgs, urls)]
            if t >= self.last[0]:
                self.last = (t, imgs)

        exact, _, problems = replay(self.env, self.record, self.steps, on_step=grab)
        self.exact, self.problems = exact, list(problems)

    def message(self, picks: Sequence[int]) -> dict[int, list[tuple[str, str]]]:
        """The picked steps' images as sent: an image equal to the one last sent under its
        caption left out.
        """
        last: dict[str, bytes] = {}
        out: dict[int, list[tuple[str, str]]] = {}
        for t in sorted(p for p in picks if p in self.urls):
            out[t] = []
            for cap, digest, url in self.urls[t]:
                if last.get(cap) != digest:
                    last[cap] = digest
                    out[t].append((cap, url))
        return out


def _digest(image: np.ndarray) -> bytes:
    a = np.ascontiguousarray(image)
    return hashlib.blake2b(a.tobytes() + repr(a.shape).encode(), digest_size=16).digest()


def _size(encoded: Mapping[int, list[tuple[str, str]]]) -> int:
    return sum(len(u) for urls in encoded.values() for _, u in urls)


def episode_images(
    env: gym.Env,
    record: Mapping[str, Any],
    steps: Sequence[Mapping[str, Any]],
    budget: int = IMAGE_BUDGET,
    max_side: int = MAX_SIDE,
) -> EpisodeImages:
    """Replay ``record`` (its trace ``steps``) on ``env`` -- a fresh core env of its run --
    and choose its images within ``budget`` bytes (see the module docstring).
    """
    from urban_gym.wrappers.images import fit_images

    n = len(steps)
    col = _Collector(env, record, steps, max_side)

    def tried(k: int) -> tuple[list[int], dict[int, list[tuple[str, str]]]]:
        picks = spread_steps(n, k)
        col.collect(set(picks))
        return picks, col.message(picks)

    # estimate from steps 0 and 1: what step 1 adds is what a step costs; the rest of
    # step 0 (a task's reference image) is sent once
    col.collect({0, 1} & set(range(n)))
    first = col.message([0, 1])
    per_step = _size({1: first.get(1, [])}) or 1
    once = max(0, _size({0: first.get(0, [])}) - per_step)
    k = max(1, min(n, (budget - once) // per_step))
    picks, msg = tried(k)
    if _size(msg) <= budget:  # room left: try more steps, a few times
        for _ in range(MAX_TRIES):
            more = min(n, max(k + 1, k * budget // max(1, _size(msg))))
            if more <= k:
                break
            p2, m2 = tried(more)
            if _size(m2) > budget:
                break
            k, picks, msg = more, p2, m2
    while _size(msg) > budget and k > 1:  # over: fewer steps
        k = max(1, min(k - 1, k * budget // _size(msg)))
        picks, msg = tried(k)
    scale = 1.0
    if _size(msg) > budget and msg:  # one step alone is over: shrink its images
        t, imgs = col.last
        sent = {c for c, _ in msg.get(t, [])}
        ims = [(c, im) for c, im in imgs if c in sent]
        fit = fit_images([im for _, im in ims], budget, max_side=max_side, step=0.85)
        msg = {t: [(c, u) for (c, _), u in zip(ims, fit.urls)]} if fit.urls else {}
        scale = fit.scale
    return EpisodeImages(msg, n, _size(msg), scale, col.exact, col.problems)


__all__ = [
    "IMAGE_BUDGET",
    "MAX_SIDE",
    "EpisodeImages",
    "episode_images",
    "observation_images",
    "spread_steps",
]
