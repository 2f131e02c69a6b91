"""The page's picture of one moment of an episode, built from the agent's observation only.

:func:`page_state` turns an observation (the dict the env returns to every agent) into the
JSON the page draws: the images (``view``, ``reference``, ``map`` -- whichever the
observation holds; all-black images are an absent reference and are left out), the
options of an intersection (one picture and compass bearing per street: ``bearings``,
``views``), the texts (instruction,
status, notice) and the actions the action mask allows now. Nothing else of the env is
read except the action table (the names behind the mask, as the language-model face's
"Actions possible now" line) and the env's ``map_mode`` where it has a map mode (which its status line states): the
``info`` dict -- pose, distance to the goal, the task's answer -- never reaches the page.

Images travel as data URLs (JPEG, quality :data:`JPEG_QUALITY`) at the agent's own
resolution; the page scales them up for the eye.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from typing import Any

import cv2
import numpy as np

from urban_gym.play.controls import answer_letters, available_actions

#: JPEG quality of the images sent to the page (0-100).
JPEG_QUALITY = 90
#: Observation keys shown as texts, in this order, with their titles.
TEXT_KEYS: tuple[tuple[str, str], ...] = (
    ("instruction", "Task"),
    ("status", "Status"),
    ("notice", "Notice"),
    ("memory", "Memory"),
)
#: Observation keys shown as images, with their captions.
IMAGE_KEYS: tuple[tuple[str, str], ...] = (
    ("view", "View"),
    ("reference", "Reference"),
    ("map", "Map"),
)


def data_url(img: np.ndarray, quality: int = JPEG_QUALITY) -> str:
    """An RGB ``uint8`` image as a ``data:image/jpeg;base64,...`` URL."""
    arr = np.ascontiguousarray(np.asarray(img, dtype=np.uint8)[:, :, ::-1])  # RGB -> BGR
    ok, buf = cv2.imencode(".jpg", arr, [cv2.IMWRITE_JPEG_QUALITY, int(quality)])
    if not ok:  # pragma: no cover - cv2 encodes any uint8 image
        raise ValueError(f"cannot encode an image of shape {arr.shape} as JPEG")
    return "data:image/jpeg;base64," + base64.b64encode(buf.tobytes()).decode("ascii")


def compass_text(bearing: float) -> str:
    """``"45° (NE)"``: a bearing in degrees and its compass name (as the language-model
    face writes it).
    """
    from urban_gym.wrappers.memory import compass_name

    b = float(bearing) % 360.0
    return f"{b:.0f}° ({compass_name(b)})"


def _images(obs: Mapping[str, Any]) -> list[dict[str, Any]]:
    out = []
    for key, caption in IMAGE_KEYS:
        v = obs.get(key)
        if v is None:
            continue
        arr = np.asarray(v)
        if arr.ndim != 3 or arr.shape[2] != 3 or not arr.any():
            continue
        out.append(
            {
                "name": key,
                "caption": caption,
                "src": data_url(arr),
                "width": int(arr.shape[1]),
                "height": int(arr.shape[0]),
            }
        )
    return out


def _options(obs: Mapping[str, Any], mask: np.ndarray) -> list[dict[str, Any]]:
    """An intersection's options (``bearings``, ``views``) the mask allows, each with its
    bearing and picture.
    """
    bearings = np.asarray(obs["bearings"], dtype=float).reshape(-1)
    views = obs.get("views")
    out = []
    for i, b in enumerate(bearings):
        if i >= len(mask) or not mask[i]:
            continue
        opt: dict[str, Any] = {"index": i, "bearing": round(float(b), 1), "label": compass_text(b)}
        if views is not None and i < len(views) and np.asarray(views[i]).any():
            opt["src"] = data_url(np.asarray(views[i]))
        out.append(opt)
    return out


def page_state(env: Any, obs: Mapping[str, Any]) -> dict[str, Any]:
    """What the page shows for observation ``obs`` of ``env`` (see the module docstring):
    ``images``, ``texts`` (title, text), ``options`` (an observation with ``bearings``),
    ``heading`` (the direction of travel), ``available`` (action names the mask allows),
    ``letters`` (a question's answer letters), ``map_mode`` (an env with a map mode).
    """
    mask = np.asarray(obs.get("action_mask", []), dtype=np.int8).reshape(-1)
    state: dict[str, Any] = {
        "images": _images(obs),
        "texts": [
            {"name": k, "title": t, "text": str(obs[k]).strip()}
            for k, t in TEXT_KEYS
            if isinstance(obs.get(k), str) and str(obs[k]).strip()
        ],
        "available": available_actions(env, mask) if mask.size else [],
        "letters": answer_letters(env, mask) if mask.size else [],
        "map_mode": bool(getattr(env.unwrapped, "map_mode", False)),
    }
    if "bearings" in obs:
        state["options"] = _options(obs, mask)
    if "heading" in obs:
        state["heading"] = compass_text(float(np.asarray(obs["heading"]).reshape(-1)[0]))
    return state


__all__ = ["IMAGE_KEYS", "JPEG_QUALITY", "TEXT_KEYS", "compass_text", "data_url", "page_state"]
