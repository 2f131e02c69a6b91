"""Images for chat messages: base64 data URLs that fit a byte budget.

Chat APIs limit the size of a request (OpenAI: 20 MB per image, many self-hosted servers
much less). :func:`fit_images` encodes a list of images and, while their data URLs together
exceed the budget, shrinks every image by :data:`DOWNSCALE_STEP` per side and encodes again,
down to :data:`MIN_SIDE` pixels on the shorter side; if even that is over budget the last
images are dropped (and the count reported), never silently.
"""

from __future__ import annotations

import base64
import io
from dataclasses import dataclass, field

import numpy as np
from PIL import Image

#: Factor applied to both sides at each downscaling step.
DOWNSCALE_STEP = 0.75
#: Shortest side, in pixels, below which images are not shrunk further.
MIN_SIDE = 32


@dataclass
class FittedImages:
    """The data URLs of :func:`fit_images` and what it did to fit them.

    ``scale`` is the side factor finally applied (1.0 = untouched), ``total_bytes`` the
    summed length of the URLs, ``dropped`` the number of images left out.
    """

    urls: list[str] = field(default_factory=list)
    scale: float = 1.0
    total_bytes: int = 0
    dropped: int = 0
    steps: int = 0


def as_rgb(image: np.ndarray) -> np.ndarray:
    """An (H, W, 3) uint8 array from an (H, W), (H, W, 1), (H, W, 3) or (H, W, 4) image."""
    a = np.asarray(image)
    if a.dtype != np.uint8:
        a = np.clip(a, 0, 255).astype(np.uint8)
    if a.ndim == 2:
        a = np.repeat(a[:, :, None], 3, axis=2)
    if a.ndim != 3 or a.shape[2] not in (1, 3, 4):
        raise ValueError(f"image of shape {a.shape} is not (H, W), (H, W, 1|3|4)")
    if a.shape[2] == 1:
        a = np.repeat(a, 3, axis=2)
    if a.shape[2] == 4:
        a = a[:, :, :3]
    return np.ascontiguousarray(a)


def image_data_url(image: np.ndarray, fmt: str = "JPEG", quality: int = 85) -> str:
    """``data:image/...;base64,...`` for an image array (``fmt`` ``"JPEG"`` or ``"PNG"``)."""
    fmt = fmt.upper()
    if fmt not in ("JPEG", "PNG"):
        raise ValueError(f"image format {fmt!r} is not JPEG or PNG")
    buf = io.BytesIO()
    pil = Image.fromarray(as_rgb(image))
    if fmt == "JPEG":
        pil.save(buf, format="JPEG", quality=int(quality))
    else:
        pil.save(buf, format="PNG", optimize=False)
    mime = "image/jpeg" if fmt == "JPEG" else "image/png"
    return f"data:{mime};base64," + base64.b64encode(buf.getvalue()).decode("ascii")


def decode_data_url(url: str) -> np.ndarray:
    """The (H, W, 3) uint8 image inside a data URL made by :func:`image_data_url`."""
    head, _, data = url.partition(",")
    if not head.startswith("data:image/") or ";base64" not in head:
        raise ValueError(f"not an image data URL: {url[:40]!r}")
    with Image.open(io.BytesIO(base64.b64decode(data))) as im:
        return np.asarray(im.convert("RGB"))


def fit_images(
    images: list[np.ndarray],
    budget_bytes: int,
    fmt: str = "JPEG",
    quality: int = 85,
    max_side: int | None = None,
    step: float = DOWNSCALE_STEP,
) -> FittedImages:
    """Encode ``images`` as data URLs whose summed length is at most ``budget_bytes``.

    ``max_side`` (pixels) first caps the longer side of each image. Then the images are
    shrunk together by the factor ``step`` per side (default :data:`DOWNSCALE_STEP`;
    360CityArena's 15% steps are ``0.85``) while over budget (see the module docstring).
    """
    if not 0.0 < float(step) < 1.0:
        raise ValueError(f"step={step!r} must be a factor in (0, 1), e.g. 0.85 for 15% steps")
    if budget_bytes <= 0:
        return FittedImages(dropped=len(images))
    rgb = [as_rgb(im) for im in images]
    if max_side:
        rgb = [_cap(im, max_side) for im in rgb]
    scale, steps = 1.0, 0
    while True:
        current = [_scaled(im, scale) for im in rgb]
        urls = [image_data_url(im, fmt, quality) for im in current]
        total = sum(len(u) for u in urls)
        smallest = min((min(im.shape[:2]) for im in current), default=MIN_SIDE)
        if total <= budget_bytes or smallest * step < MIN_SIDE:
            break
        scale *= step
        steps += 1
    dropped = 0
    while urls and total > budget_bytes:
        total -= len(urls.pop())
        dropped += 1
    return FittedImages(urls=urls, scale=scale, total_bytes=total, dropped=dropped, steps=steps)


def _cap(image: np.ndarray, max_side: int) -> np.ndarray:
    h, w = image.shape[:2]
    if max(h, w) <= max_side:
        return image
    f = max_side / max(h, w)
    return _resize(image, max(1, round(w * f)), max(1, round(h * f)))


def _scaled(image: np.ndarray, scale: float) -> np.ndarray:
    if scale >= 1.0:
        return image
    h, w = image.shape[:2]
    return _resize(image, max(1, round(w * scale)), max(1, round(h * scale)))


def _resize(image: np.ndarray, w: int, h: int) -> np.ndarray:
    import cv2

    return cv2.resize(image, (w, h), interpolation=cv2.INTER_AREA)
