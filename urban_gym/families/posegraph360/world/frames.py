"""Frame sources: where a pose graph's panoramas come from.

A :class:`FrameSource` supplies the equirectangular panorama of a frame;
:class:`RenderedFrames` renders them on demand (the environment passes
:class:`urban_gym.render.PanoramaRenderer`) into a memory-bounded cache. Real captures
(:class:`~urban_gym.families.posegraph360.world.capture.ImageFolderFrames`,
:class:`~urban_gym.families.posegraph360.world.capture.VideoFrames`) live in
:mod:`urban_gym.families.posegraph360.world.capture`.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from urban_gym.caching import LRUCache


class FrameSource:
    """Supplies the equirectangular panorama of a frame.

    :meth:`panorama` returns ``(rgb, pano_heading)``: an ``(H, 2H, 3)`` uint8 image and
    the bearing (degrees) its centre column looks along.
    """

    def panorama(self, key: tuple[str, int], x: float, y: float) -> tuple[np.ndarray, float]:
        """The ``(rgb, pano_heading)`` of frame ``key`` at ``(x, y)`` metres (see the class)."""
        raise NotImplementedError

    def close(self) -> None:
        """Release file handles (a source reopens them on demand)."""


class RenderedFrames(FrameSource):
    """Panoramas rendered on demand by ``render(x, y) -> (H, 2H, 3) uint8`` (a rendered
    panorama's centre column looks north, ``pano_heading`` 0).

    Frames are cached by position (rounded to a centimetre) in an LRU holding at most
    ``cache_mb`` megabytes, so the frames that two trajectories share at a junction are
    rendered once.
    """

    def __init__(self, render: Callable[[float, float], np.ndarray], cache_mb: float = 512.0):
        self.render = render
        self.cache: LRUCache[tuple[float, float], np.ndarray] = LRUCache(
            int(cache_mb * 1024 * 1024)
        )

    def panorama(self, key: tuple[str, int], x: float, y: float) -> tuple[np.ndarray, float]:
        """The rendered panorama at ``(x, y)`` metres (cached) and ``pano_heading`` 0."""
        k = (round(float(x), 2), round(float(y), 2))
        img = self.cache.get(k)
        if img is None:
            img = np.ascontiguousarray(self.render(float(x), float(y)), dtype=np.uint8)
            self.cache.put(k, img, img.nbytes)
        return img, 0.0
