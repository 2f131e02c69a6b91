"""Whether a CityWalk task's target is *legible* from a position: its name can be read in
the language-model view (:func:`urban_gym.wrappers.make_lmm_env`'s defaults: 960x540,
90° field of view, level) straight ahead or after turning toward the target -- the test
the SGN task text's "in sight" means (the paper's appendix B: the goal's sign is visible
from the start).

Two readers, one view each (:mod:`urban_gym.render.legibility`): Tesseract OCR (the test
of ``benchmarks/bench_legibility.py``) or the pixel measure (capital-letter height,
letter width after foreshortening, share of the board shown), which needs no Tesseract
and agrees with OCR on the docs' legibility page's sample.
"""

from __future__ import annotations

import math
from typing import Any, Literal

from urban_gym.render import FirstPersonRenderer
from urban_gym.render.ids import sign_id
from urban_gym.render.legibility import (
    READ_THRESHOLD,
    ocr_similarity,
    pixel_measure,
    tesseract_available,
)
from urban_gym.render.scene import scene_for

#: the language-model view of CityWalk (width, height, horizontal fov in degrees)
LMM_VIEW = (960, 540, 90.0)
EYE_M = 1.6

_renderers: dict[tuple, FirstPersonRenderer] = {}


def _city(env_or_city: Any) -> Any:
    city = getattr(getattr(env_or_city, "unwrapped", env_or_city), "city", env_or_city)
    if not hasattr(city, "pois"):
        raise TypeError(f"env_or_city={env_or_city!r} is neither a CityWalk env nor a City")
    return city


def _renderer(city: Any, view: tuple[int, int, float]) -> FirstPersonRenderer:
    key = (id(city), view)
    r = _renderers.get(key)
    if r is None or r.city is not city:
        if len(_renderers) > 8:
            _renderers.clear()
        r = _renderers[key] = FirstPersonRenderer(
            city, view[0], view[1], fov=view[2], eye_height=EYE_M
        )
    return r


def bearing_to(position: tuple[float, float], target: tuple[float, float]) -> float:
    """Compass bearing (degrees) from ``position`` to ``target``."""
    return math.degrees(math.atan2(target[0] - position[0], target[1] - position[1])) % 360.0


def target_point(city: Any, poi: int) -> tuple[float, float]:
    """Where a reader turns to: the middle of the place's facade board (its anchor where
    it has none).
    """
    scene = scene_for(city)
    scene.ensure_signs()
    s = scene.poi_sign.get(int(poi))
    if s is None:
        x, y = city.pois[int(poi)].anchor
        return float(x), float(y)
    L = float(scene.length[s.seg])
    um = 0.5 * (s.u0 + s.u1)
    return (
        float(scene.ax[s.seg] + um * scene.dx[s.seg] / L),
        float(scene.ay[s.seg] + um * scene.dy[s.seg] / L),
    )


def legible_in_view(
    city: Any,
    position: tuple[float, float],
    yaw: float,
    target_poi: int,
    method: Literal["pixels", "ocr"] = "pixels",
    view: tuple[int, int, float] = LMM_VIEW,
) -> bool:
    """Whether the target's name is read in the one level view from ``position`` along
    ``yaw`` (degrees) by ``method``.
    """
    if method not in ("pixels", "ocr"):
        raise ValueError(f"method={method!r} must be 'pixels' or 'ocr'")
    r = _renderer(city, view)
    x, y = float(position[0]), float(position[1])
    res = r.render(x, y, float(yaw), ids=True)
    assert res.ids is not None
    if method == "ocr":
        name = city.pois[int(target_poi)].name
        return ocr_similarity(res.rgb, res.ids, sign_id(int(target_poi)), name) >= READ_THRESHOLD
    boards = pixel_measure(scene_for(city), res.ids, view[2], x, y, float(yaw), EYE_M, target_poi)
    return any(b.legible for b in boards)


def legible_from(
    env_or_city: Any,
    position: tuple[float, float],
    target_poi: int,
    heading: float | None = None,
    method: Literal["auto", "pixels", "ocr"] = "pixels",
    view: tuple[int, int, float] = LMM_VIEW,
) -> bool:
    """Whether, from ``position`` (metres), the name of place ``target_poi`` can be read
    in the view along ``heading`` (when given) or after turning toward the place's sign.

    Args:
        env_or_city: a CityWalk env (its city is used) or a :class:`~urban_gym.world.City`.
        position: ``(x, y)`` metres.
        target_poi: the place's POI id (it must have a name).
        heading: the view straight ahead (degrees), tried first; None: only the view
            turned toward the target.
        method: ``"pixels"`` (default: the pixel measure, no Tesseract needed), ``"ocr"``
            (Tesseract) or ``"auto"`` (OCR where Tesseract is installed, else pixels).
        view: ``(width, height, fov)`` of the view (default: CityWalk's language-model
            view).

    Raises:
        ValueError: an unknown ``method`` or a POI without a name; RuntimeError: ``"ocr"``
        without Tesseract.
    """
    city = _city(env_or_city)
    poi = int(target_poi)
    if not 0 <= poi < len(city.pois) or not city.pois[poi].name:
        raise ValueError(f"target_poi={target_poi!r} is not a named place of {city.name!r}")
    if method not in ("auto", "pixels", "ocr"):
        raise ValueError(f"method={method!r} must be 'auto', 'pixels' or 'ocr'")
    if method == "auto":
        method = "ocr" if tesseract_available() else "pixels"
    elif method == "ocr" and not tesseract_available():
        raise RuntimeError("method='ocr' needs pytesseract and the tesseract command")
    yaws = [] if heading is None else [float(heading)]
    yaws.append(bearing_to(position, target_point(city, poi)))
    return any(legible_in_view(city, position, yw, poi, method, view) for yw in yaws)


__all__ = ["LMM_VIEW", "bearing_to", "legible_from", "legible_in_view", "target_point"]


def sgn_target_legible(city: Any, start: dict[str, Any], poi: Any) -> bool:
    """The check the shipped suites put SGN targets through: the target's name is legible
    (:func:`legible_from` with the pixel measure, which agrees with Tesseract on 93% of a
    sampled set of views; see the docs' legibility benchmark) from the task's start, in
    the start view or after turning toward the sign -- what "its sign is in sight from
    where you start" promises a reader.

    Args:
        city: the :class:`~urban_gym.world.City` the task is made in.
        start: the task's start (``x``, ``y``, ``heading`` as the generator writes it).
        poi: the target :class:`~urban_gym.world.features.POI`.
    """
    xy = (float(start["x"]), float(start["y"]))
    return legible_from(city, xy, poi.id, heading=float(start["heading"]), method="pixels")
