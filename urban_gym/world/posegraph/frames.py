"""Frame sources: where a pose graph's panoramas come from.

A :class:`FrameSource` supplies the equirectangular panorama of a frame;
:class:`RenderedFrames` renders them on demand (the environment passes
:class:`urban_gym.render.PanoramaRenderer`) into a memory-bounded cache. Real captures
(:class:`~urban_gym.world.posegraph.capture.ImageFolderFrames`,
:class:`~urban_gym.world.posegraph.capture.VideoFrames`) live in
:mod:`urban_gym.world.posegraph.capture`.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any

import numpy as np


class FrameSource:
    """Supplies the equirectangular panorama of a frame.

    :meth:`panorama` returns ``(rgb, pano_heading)``: an ``(H, 2H, 3)`` uint8 image and
    the bearing (degrees) its centre column looks along.
    """

    def panorama(self, key: tuple[str, int], x: float, y: float) -> tuple[np.ndarray, float]:
        raise NotImplementedError

    def close(self) -> None:
        """Release file handles (a source reopens them on demand)."""


class ByteLRU:
    """A byte-bounded least-recently-used cache of numpy arrays."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = int(max_bytes)
        self.data: OrderedDict[Hashable, tuple[Any, int]] = OrderedDict()
        self.nbytes = 0
        self.hits = 0
        self.misses = 0

    def get(self, key: Hashable) -> Any:
        v = self.data.get(key)
        if v is None:
            self.misses += 1
            return None
        self.data.move_to_end(key)
        self.hits += 1
        return v[0]

    def put(self, key: Hashable, value: Any, nbytes: int) -> None:
        if key in self.data:
            return
        self.data[key] = (value, int(nbytes))
        self.nbytes += int(nbytes)
        while self.nbytes > self.max_bytes and len(self.data) > 1:
            _, (_, n) = self.data.popitem(last=False)
            self.nbytes -= n

    def __len__(self) -> int:
        return len(self.data)

    def clear(self) -> None:
        self.data.clear()
        self.nbytes = 0


class RenderedFrames(FrameSource):
    """Panoramas rendered on demand by ``render(x, y) -> (H, 2H, 3) uint8`` (a rendered
    panorama's centre column looks north, ``pano_heading`` 0).

    Frames are cached by position (rounded to a centimetre) in an LRU holding at most
    ``cache_mb`` megabytes, so the frames that two trajectories share at a junction are
    rendered once.
    """

    def __init__(self, render: Callable[[float, float], np.ndarray], cache_mb: float = 512.0):
        self.render = render
        self.cache = ByteLRU(int(cache_mb * 1024 * 1024))

    def panorama(self, key: tuple[str, int], x: float, y: float) -> tuple[np.ndarray, float]:
        k = (round(float(x), 2), round(float(y), 2))
        img = self.cache.get(k)
        if img is None:
            img = np.ascontiguousarray(self.render(float(x), float(y)), dtype=np.uint8)
            self.cache.put(k, img, img.nbytes)
        return img, 0.0

    def __getstate__(self) -> dict[str, Any]:
        d = self.__dict__.copy()
        d["cache"] = ByteLRU(self.cache.max_bytes)
        return d
