"""Whether a reader can read a place's name in a rendered view.

Two tests of one view (its RGB and instance ids):

* **OCR** (:func:`ocr_similarity`): each connected patch of the place's sign id (the flat
  board, the blade) is cut out with a margin, turned grey, enlarged (bicubic) so the patch
  is about :data:`OCR_BOARD_PX` tall, binarised (Otsu, dark text on white), cleared of
  dark blobs touching its edge and read by Tesseract (``pytesseract``) as one line, then
  as a block; the name is read when the best similarity (:func:`similarity`) reaches
  :data:`READ_THRESHOLD`. ``benchmarks/bench_legibility.py`` uses the same test.
* **pixels** (:func:`pixel_measure`): for each board of the place (the facade board and
  its blade, :mod:`urban_gym.render.blades`), the height in pixels of a capital letter
  where the board's centre is, the width of a letter (the cap height times the board's
  foreshortening -- the cosine of the angle off its normal -- and its texture's
  squeeze) and the share of the board's projected area that carries its id in the view
  (occlusion, the view's edges). A board is legible when these pass
  :data:`MIN_CAP_PX`, :data:`MIN_LETTER_PX` and :data:`MIN_SHOWN` and its foreshortening
  :data:`MIN_FORE`; thresholds were set
  against OCR on a sample (see the docs' legibility page). Needs no Tesseract.

Both take a level first-person view (``pitch`` 0) of a ``FirstPersonRenderer``.
"""

from __future__ import annotations

import difflib
import math
import shutil
import unicodedata
from dataclasses import dataclass
from typing import Any

import numpy as np

#: OCR similarity at which a name counts as read
READ_THRESHOLD = 0.8
#: height (px) a sign patch is enlarged to before OCR
OCR_BOARD_PX = 64
#: the pixel measure's thresholds: capital-letter height, letter width, share shown
MIN_CAP_PX = 6.0
MIN_LETTER_PX = 3.0
MIN_SHOWN = 0.85
#: least foreshortening (width in view over width face-on): OCR fails on the slanted
#: lines of a board seen more than about 50 degrees off its normal, however large
MIN_FORE = 0.65
#: a bold capital's mean advance over its height (DejaVu Sans Bold)
LETTER_ASPECT = 0.8


def tesseract_available() -> bool:
    """Whether ``pytesseract`` imports and the ``tesseract`` command is on the path."""
    try:
        import pytesseract  # type: ignore[import-untyped]  # noqa: F401
    except ImportError:
        return False
    return shutil.which("tesseract") is not None


def norm_text(text: str) -> str:
    """Casefolded letters and digits, accents dropped (Tesseract's English model reads
    ``ä`` as ``a``).
    """
    t = unicodedata.normalize("NFKD", text).casefold()
    return "".join(c for c in t if c.isalnum() and not unicodedata.combining(c))


def similarity(name: str, text: str) -> float:
    """Best ``difflib`` ratio between the normalised name and a stretch of the
    normalised text about as long (0 when either is empty).
    """
    a, b = norm_text(name), norm_text(text)
    if not a or not b:
        return 0.0
    best = difflib.SequenceMatcher(None, a, b).ratio()
    n = len(a)
    for m in {max(1, n - 2), n - 1, n, n + 1, n + 2}:
        for i in range(0, max(1, len(b) - m + 1)):
            best = max(best, difflib.SequenceMatcher(None, a, b[i : i + m]).ratio())
    return best


def sign_patches(rgb: np.ndarray, ids: np.ndarray, sid: int) -> list[np.ndarray]:
    """The crops of ``rgb`` around each connected patch (8-connected, gaps of a pixel
    bridged) of at least 3 pixels of id ``sid``, with a margin of a tenth of its height,
    largest first.
    """
    import cv2

    mask = (ids == sid).astype(np.uint8)
    if int(mask.sum()) < 3:
        return []
    n, lab, stats, _ = cv2.connectedComponentsWithStats(
        cv2.dilate(mask, np.ones((3, 3), np.uint8)), connectivity=8
    )
    out = []
    h, w = ids.shape
    for k in np.argsort(-stats[1:, cv2.CC_STAT_AREA]) + 1:
        c0, r0, cw, ch, _ = (int(v) for v in stats[k])
        if int(mask[r0 : r0 + ch, c0 : c0 + cw].sum()) < 3:
            continue
        m = max(1, int(0.1 * ch))
        out.append(rgb[max(0, r0 - m) : min(h, r0 + ch + m), max(0, c0 - m) : min(w, c0 + cw + m)])
    return out


def read_sign(img: np.ndarray, name: str) -> tuple[float, str]:
    """``(similarity, text)``: Tesseract's reading of a sign crop and its similarity to
    ``name`` (see the module docstring).
    """
    import cv2
    import pytesseract

    g = cv2.cvtColor(img, cv2.COLOR_RGB2GRAY)
    scale = min(8.0, max(1.0, OCR_BOARD_PX / max(1, img.shape[0])))
    big = cv2.resize(g, None, fx=scale, fy=scale, interpolation=cv2.INTER_CUBIC)
    _, bw = cv2.threshold(big, 0, 255, cv2.THRESH_BINARY + cv2.THRESH_OTSU)
    if (bw > 0).mean() < 0.5:
        bw = 255 - bw
    # dark blobs touching the crop's edge are the board's frame or what is around it
    _, lab = cv2.connectedComponents((bw == 0).astype(np.uint8), connectivity=8)
    edge = np.unique(np.concatenate([lab[0], lab[-1], lab[:, 0], lab[:, -1]]))
    bw[np.isin(lab, edge[edge > 0])] = 255
    bw = cv2.copyMakeBorder(bw, 20, 20, 20, 20, cv2.BORDER_CONSTANT, value=255)
    best = (0.0, "")
    for psm in (7, 6):
        text = pytesseract.image_to_string(bw, config=f"--psm {psm}").strip()
        best = max(best, (similarity(name, text), text))
        if best[0] >= READ_THRESHOLD:
            break
    return best


def ocr_similarity(rgb: np.ndarray, ids: np.ndarray, sid: int, name: str) -> float:
    """The best OCR similarity to ``name`` over the patches of id ``sid`` (0 if none)."""
    best = 0.0
    for crop in sign_patches(rgb, ids, sid):
        best = max(best, read_sign(crop, name)[0])
        if best >= READ_THRESHOLD:
            break
    return best


# ---------------------------------------------------------------------- pixel measure
@dataclass(frozen=True)
class BoardView:
    """How one board shows in a view: ``kind`` ("facade" or "blade"), capital height and
    letter width (px), and the share of its projected area showing its id.
    """

    kind: str
    cap_px: float
    letter_px: float
    shown: float
    fore: float = 1.0

    @property
    def legible(self) -> bool:
        """Whether this board passes the pixel thresholds."""
        return (
            self.cap_px >= MIN_CAP_PX
            and self.letter_px >= MIN_LETTER_PX
            and self.shown >= MIN_SHOWN
            and self.fore >= MIN_FORE
        )


def _boards(scene: Any, poi: int) -> list[tuple[str, np.ndarray, float, float, float, float]]:
    """The place's boards: ``(kind, corners (2, 2) bottom-edge ends x/y, z0, z1, cap_m,
    squeeze)``.
    """
    from urban_gym.render import blades
    from urban_gym.render.textures import sign_cap_height_m, sign_width_m

    scene.ensure_signs()
    out = []
    name = scene.city.pois[poi].name
    s = scene.poi_sign.get(int(poi))
    if s is not None:
        L = float(scene.length[s.seg])
        dx, dy = float(scene.dx[s.seg]) / L, float(scene.dy[s.seg]) / L
        ax, ay = float(scene.ax[s.seg]), float(scene.ay[s.seg])
        ends = np.array([[ax + s.u0 * dx, ay + s.u0 * dy], [ax + s.u1 * dx, ay + s.u1 * dy]])
        lines = 2 if (s.z1 - s.z0) > 1.5 else 1
        squeeze = min(1.0, (s.u1 - s.u0) / sign_width_m(name, lines))
        out.append(("facade", ends, s.z0, s.z1, sign_cap_height_m(), squeeze))
    if blades.enabled():
        k = np.flatnonzero(scene.blade_poi == poi)
        if len(k):
            i = int(k[0])
            ends = scene.blade_xy[i].reshape(2, 2)
            font_cap = sign_cap_height_m() * blades.BLADE_LINE_M / 1.2
            out.append(("blade", ends, *scene.blade_z[i], font_cap, blades.blade_squeeze(name)))
    return out


def pixel_measure(
    scene: Any, ids: np.ndarray, fov: float, x: float, y: float, yaw: float, eye: float, poi: int
) -> list[BoardView]:
    """Each board of POI ``poi`` in a level perspective view (``ids`` of a view of
    horizontal field ``fov`` degrees from ``(x, y)`` along ``yaw`` degrees, the eye
    ``eye`` m up): see the module docstring. Boards behind the viewer are left out.
    """
    from urban_gym.render.ids import sign_id

    H, W = ids.shape
    f = (W / 2) / math.tan(math.radians(fov) / 2)
    fx, fy = math.sin(math.radians(yaw)), math.cos(math.radians(yaw))
    mask = ids == sign_id(poi)
    out = []
    for kind, ends, z0, z1, cap_m, squeeze in _boards(scene, poi):
        rel = ends - np.array([x, y])
        depth = rel[:, 0] * fx + rel[:, 1] * fy
        if (depth <= 0.3).any():
            continue
        side = rel[:, 0] * fy - rel[:, 1] * fx
        cols = W / 2 + f * side / depth
        mid = float(depth.mean())
        # foreshortening: the cosine between the board's normal and the line of sight to
        # its centre (the board's width in view over its width face-on, for a narrow one)
        ex, ey = ends[1] - ends[0]
        cx, cy = ends.mean(axis=0)
        fore = abs(ey * (x - cx) - ex * (y - cy)) / max(
            math.hypot(ex, ey) * math.hypot(x - cx, y - cy), 1e-9
        )
        cap = f * cap_m / mid
        # the board's projected area column by column (columns outside the view count as
        # not shown) and its pixels carrying the id
        c0, c1 = (int(math.floor(v)) for v in sorted(cols))
        full = 0.0
        got = 0
        for c in range(c0, c1 + 1):
            t = (c + 0.5 - cols[0]) / (cols[1] - cols[0]) if cols[1] != cols[0] else 0.5
            d = depth[0] + min(max(t, 0.0), 1.0) * (depth[1] - depth[0])
            full += f * (z1 - z0) / d
            if 0 <= c < W:
                rt, rb = H / 2 - f * (z1 - eye) / d, H / 2 - f * (z0 - eye) / d
                got += int(mask[max(0, int(rt)) : max(0, min(H, math.ceil(rb))), c].sum())
        shown = min(1.0, got / full) if full > 0 else 0.0
        out.append(BoardView(kind, cap, cap * fore * squeeze * LETTER_ASPECT, shown, fore))
    return out


__all__ = [
    "MIN_CAP_PX",
    "MIN_FORE",
    "MIN_LETTER_PX",
    "MIN_SHOWN",
    "OCR_BOARD_PX",
    "READ_THRESHOLD",
    "BoardView",
    "norm_text",
    "ocr_similarity",
    "pixel_measure",
    "read_sign",
    "sign_patches",
    "similarity",
    "tesseract_available",
]
