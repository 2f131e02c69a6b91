"""The four image tasks of the strict-JSON grounding protocol, generated from a city with
exact ground truth from the renderer's instance ids.

Each is a question with lettered options over rendered views (a 640 x 480 view with a
90-degree horizontal field of view, :data:`FRAME`), answered
``{"answer_option_id": "A", "bbox_xyxy_norm": [x0, y0, x1, y1]}``: the option and the box
of the target landmark (a named shop sign), normalised to [0, 1], x to the right, y down.

* ``relative_position`` (agent state) -- a reference photo shows the landmark's facade
  head-on; where do you stand relative to the landmark, in its own frame (its facade's
  front)? Five sectors of the angle between the facade's outward normal and the line
  from the sign to you, left / right as the reference photo shows them: well left (more
  than 50 degrees), front-left (15-50), straight in front (within 15), front-right,
  well right. The box: the sign in the current view.
* ``self_position`` (world state) -- where is the landmark relative to you? The sign's
  bearing from the camera's axis (left below -8 degrees, ahead within 8, right above 8)
  times its distance (within 12 m or farther): six options. Box in the current view.
* ``future_observation`` (agent state) -- four candidate images are the views after
  turning the camera 30 or 90 degrees left or right from where you stand; which one do
  you see after the named turn (a 30-degree one)? The box: the sign in the candidate
  chosen (zero localisation credit when that candidate does not show it or the id is no
  candidate).
* ``action_decision`` (world state) -- the sign is off to one side of your view; which of
  the same four turns brings it nearest the middle of your view? Box in the current view.

Truth: a sign is in a view when at least :data:`MIN_PIXELS` pixels of the
:data:`ID_SIZE` id image (sampled from a :data:`ID_PANO_WIDTH`-pixel id panorama) show
it; its box is the envelope of those pixels (clipped to the frame by construction).
Draws whose angle or distance lies within a margin of a sector border are rejected, so
no answer hangs on a rounding. Difficulty: the box's share of the view (easy >= 2%,
medium 0.5-2%, hard below), for the action pair the share of the sign's box in a view
centred on it. Pairs (``meta["pair"]``): relative_position / self_position and
future_observation / action_decision are made from one draw (same landmark, place and
difficulty), so each pair shares its ``key``.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

import numpy as np

from urban_gym.families.posegraph360.world import State
from urban_gym.tasks import metrics

#: The protocol's view: width, height (pixels) and horizontal field of view (degrees).
FRAME = (640, 480, 90.0)
#: The id image truth is read from (a quarter of :data:`FRAME` on each side).
ID_SIZE = (160, 120)
#: Width (pixels) of the id panoramas the id images are sampled from.
ID_PANO_WIDTH = 1024
#: Pixels of a sign in the id image that make it visible.
MIN_PIXELS = 10
#: The most of a truth box's pixels that other POIs' signs may fill (a draw with more is
#: rejected: the box would hold another landmark).
MAX_FOREIGN_SHARE = 0.05
#: Box share of the view that bounds the difficulties.
AREA_BANDS = {"easy": (0.02, 1.01), "medium": (0.005, 0.02), "hard": (0.0, 0.005)}
LETTERS = "ABCDEFGH"
IMAGE_TASK_TYPES = ("relative_position", "future_observation", "self_position", "action_decision")

#: relative_position: (label, low, high) of the signed angle (degrees, + to the right as
#: the reference photo shows the facade) between the facade's normal and the sign -> you.
POSITION_SECTORS = (
    ("well to the left of its front", -180.0, -50.0),
    ("in front of it, to the left", -50.0, -15.0),
    ("straight in front of it", -15.0, 15.0),
    ("in front of it, to the right", 15.0, 50.0),
    ("well to the right of its front", 50.0, 180.0),
)
#: self_position: direction bands of the sign's bearing from the camera axis (degrees,
#: + right) and the distance that splits near from far (metres).
SELF_DIRECTIONS: tuple[tuple[str, float, float], ...] = (
    ("ahead on your left", -90.0, -8.0),
    ("straight ahead", -8.0, 8.0),
    ("ahead on your right", 8.0, 90.0),
)
NEAR_M = 12.0
#: Margins (degrees, metres) a drawn angle or distance keeps from a border.
ANGLE_MARGIN = 3.0
DISTANCE_MARGIN = 1.5
#: The four camera turns of the action pair: label -> (structured action, degrees, + right).
TURNS = {
    "turn the camera 90 degrees left (A, LARGE)": ({"action": "A", "size": "LARGE"}, -90.0),
    "turn the camera 30 degrees left (A, SMALL)": ({"action": "A", "size": "SMALL"}, -30.0),
    "turn the camera 30 degrees right (D, SMALL)": ({"action": "D", "size": "SMALL"}, 30.0),
    "turn the camera 90 degrees right (D, LARGE)": ({"action": "D", "size": "LARGE"}, 90.0),
}
#: The options of ``action_decision``: the same turns and keeping the camera as it is.
DECISION_TURNS = {
    "turn the camera 90 degrees left": -90.0,
    "turn the camera 30 degrees left": -30.0,
    "keep the camera as it is": 0.0,
    "turn the camera 30 degrees right": 30.0,
    "turn the camera 90 degrees right": 90.0,
}
OPTION_KEYS = ("answer_option_id", "option_id", "choice", "answer", "option")
BOX_KEYS = ("bbox_xyxy_norm", "bbox", "bounding_box", "box", "bbox_norm")


class FrameIds:
    """Instance-id images of a city's panoramas in the protocol's frame (nearest samples)."""

    def __init__(self, city: Any, width: int = ID_PANO_WIDTH) -> None:
        from urban_gym.render import PanoramaRenderer
        from urban_gym.render.ids import sign_id

        self.renderer = PanoramaRenderer(city, width=width, height=width // 2)
        self._panos: dict[tuple[float, float], np.ndarray] = {}
        #: The instance ids of every POI's sign.
        self.signs = np.array(sorted({sign_id(p.id) for p in city.pois}), dtype=np.int64)

    def view(self, x: float, y: float, bearing: float, size: tuple[int, int] = ID_SIZE):
        """The id image (``size`` = width, height) looking along ``bearing`` (degrees),
        level, with the horizontal field of view of :data:`FRAME`.
        """
        from urban_gym.render.camera import view_directions

        key = (round(x, 3), round(y, 3))
        pano = self._panos.get(key)
        if pano is None:
            ids = self.renderer.render(x, y, ids=True).ids
            assert ids is not None  # rendered with ids=True
            pano = self._panos[key] = ids
        ph, pw = pano.shape
        b, e = view_directions(int(size[0]), int(size[1]), FRAME[2], 0.0, float(bearing))
        col = np.floor((b / 360.0 + 0.5) * pw).astype(np.int64) % pw
        row = np.clip(np.floor((90.0 - e) / 180.0 * ph).astype(np.int64), 0, ph - 1)
        return pano[row, col]


def foreign_share(ids: np.ndarray, sign: int, signs: np.ndarray, box: list[float]) -> float:
    """The share of ``box``'s pixels in an id image that show a sign other than ``sign``
    (``signs``: every sign's id).
    """
    h, w = ids.shape
    x0, y0, x1, y1 = (round(box[0] * w), round(box[1] * h), round(box[2] * w), round(box[3] * h))
    inside = ids[y0:y1, x0:x1]
    return float(np.isin(inside, signs[signs != sign]).mean()) if inside.size else 0.0


def box_of(
    ids: np.ndarray, sign: int, signs: np.ndarray | None = None
) -> tuple[list[float], float] | None:
    """The normalised envelope of ``sign``'s pixels in an id image and its share of the
    image, or None when fewer than :data:`MIN_PIXELS` show it or (given ``signs``, every
    sign's id) other signs fill more than :data:`MAX_FOREIGN_SHARE` of it.
    """
    hit = ids == sign
    if int(hit.sum()) < MIN_PIXELS:
        return None
    rows, cols = np.nonzero(hit)
    h, w = ids.shape
    box = [cols.min() / w, rows.min() / h, (cols.max() + 1) / w, (rows.max() + 1) / h]
    box = [round(float(v), 4) for v in box]
    if signs is not None and foreign_share(ids, sign, signs, box) > MAX_FOREIGN_SHARE:
        return None
    return box, (box[2] - box[0]) * (box[3] - box[1])


def _band(value: float, bands: tuple[tuple[str, float, float], ...], margin: float) -> int | None:
    """Index of the band holding ``value`` at least ``margin`` from its inner borders."""
    for i, (_, lo, hi) in enumerate(bands):
        if lo <= value < hi:
            inner_lo = i > 0 and value - lo < margin
            inner_hi = i < len(bands) - 1 and hi - value < margin
            return None if inner_lo or inner_hi else i
    return None


def difficulty_of(area: float) -> str:
    """The difficulty of a box's share of the view (:data:`AREA_BANDS`)."""
    return next(d for d, (lo, hi) in AREA_BANDS.items() if lo <= area < hi)


def rendered_bearing(gen: Any, s: State, look: float) -> float:
    """The camera bearing the env renders for a task started at ``s`` looking along
    ``look`` (the task stores the yaw to 0.01 degree, the env draws to 0.1 degree).
    """
    from urban_gym.world.geo import angle_diff

    heading = float(gen.graph.heading(s))
    yaw = round(float(angle_diff(look % 360.0, heading)), 2)
    return round((heading + yaw) % 360.0, 1)


def _place_and_state(gen: Any, rng: np.random.Generator) -> tuple[Any, State] | None:
    if not gen.landmark_list:
        return None
    pl = gen.landmark_list[int(rng.integers(len(gen.landmark_list)))]
    t = gen.graph.trajectories[pl.state.trajectory]
    frame = int(np.clip(pl.state.frame + int(rng.integers(-8, 9)), 0, t.last))
    return pl, State(t.id, frame)


def position_pair(gen: Any, rng: np.random.Generator, want: str, views: FrameIds) -> dict | None:
    """One draw of the position pair: place, state, camera bearing, the sign's box in the
    view and both answers (None when the draw does not fit ``want`` or a margin).
    """
    from urban_gym.render.ids import sign_id
    from urban_gym.world.geo import angle_diff, bearing

    got = _place_and_state(gen, rng)
    if got is None:
        return None
    pl, s = got
    x, y = (round(v, 3) for v in gen.graph.position(s))
    ax, ay = pl.poi.anchor
    dist = math.hypot(ax - x, ay - y)
    if not 3.0 <= dist <= 45.0:
        return None
    eps = float(rng.uniform(-25.0, 25.0))  # the sign's bearing from the camera axis
    look = rendered_bearing(gen, s, float(bearing(ax - x, ay - y)) - eps)
    eps = float(angle_diff(float(bearing(ax - x, ay - y)), look))
    found = box_of(views.view(x, y, look), sign_id(pl.poi.id), views.signs)
    if found is None or difficulty_of(found[1]) != want:
        return None
    # + to the right of a viewer facing the facade (looking along facing + 180)
    rho = -float(angle_diff(float(bearing(x - ax, y - ay)), float(pl.poi.facing)))
    sector = _band(rho, POSITION_SECTORS, ANGLE_MARGIN)
    direction = _band(eps, SELF_DIRECTIONS, ANGLE_MARGIN)
    if sector is None or direction is None or abs(dist - NEAR_M) < DISTANCE_MARGIN:
        return None
    self_opt = 2 * direction + (0 if dist < NEAR_M else 1)
    return {
        "place": pl,
        "state": s,
        "look": look,
        "box": found[0],
        "area": found[1],
        "sector": sector,
        "self": self_opt,
        "distance": dist,
        "rho": rho,
        "eps": eps,
    }


def action_pair(gen: Any, rng: np.random.Generator, want: str, views: FrameIds) -> dict | None:
    """One draw of the action pair: the future-observation view (the sign near the
    middle), its four candidates with the sign's box in each (None where not shown), the
    asked turn, and the action-decision view (the sign 22-38 degrees off the axis).
    """
    from urban_gym.render.ids import sign_id
    from urban_gym.world.geo import angle_diff, bearing

    got = _place_and_state(gen, rng)
    if got is None:
        return None
    pl, s = got
    x, y = (round(v, 3) for v in gen.graph.position(s))
    ax, ay = pl.poi.anchor
    if not 3.0 <= math.hypot(ax - x, ay - y) <= 45.0:
        return None
    sid = sign_id(pl.poi.id)
    b = float(bearing(ax - x, ay - y))
    centred = box_of(views.view(x, y, b), sid, views.signs)
    if centred is None or difficulty_of(centred[1]) != want:
        return None
    look = rendered_bearing(gen, s, b - float(rng.uniform(-10.0, 10.0)))
    cands = []
    for label, (_, turn) in TURNS.items():
        f = box_of(views.view(x, y, round((look + turn) % 360.0, 1)), sid, views.signs)
        cands.append(
            {
                "turn": label,
                "bearing": round((look + turn) % 360.0, 1),
                "box": None if f is None else f[0],
            }
        )
    small = [i for i, (_, t) in enumerate(TURNS.values()) if abs(t) < 45.0]
    if any(cands[i]["box"] is None for i in small):
        return None
    asked = small[int(rng.integers(len(small)))]
    order = [int(i) for i in rng.permutation(len(cands))]
    # the sign's bearing from the axis: near it, or 22-38 degrees to either side
    side = float(rng.integers(-1, 2))
    off = side * 30.0 + float(rng.uniform(-8.0, 8.0))
    dlook = rendered_bearing(gen, s, b - off)
    dbox = box_of(views.view(x, y, dlook), sid, views.signs)
    if dbox is None:
        return None
    turns = list(DECISION_TURNS.values())
    best = min(range(len(turns)), key=lambda i: abs(angle_diff(b, dlook) - turns[i]))
    return {
        "place": pl,
        "state": s,
        "look": look,
        "candidates": [cands[i] for i in order],
        "answer": order.index(asked),
        "asked": cands[asked]["turn"],
        "area": centred[1],
        "decision_look": dlook,
        "decision_box": dbox[0],
        "decision_answer": best,
    }


# ------------------------------------------------------------------ answers and scores
def _first_object(text: str) -> Any:
    """The first balanced ``{...}`` in ``text`` that parses as JSON (strings respected)."""
    for start in [m.start() for m in re.finditer(r"\{", text)]:
        depth, quoted, escaped = 0, False, False
        for i in range(start, len(text)):
            c = text[i]
            if quoted:
                if escaped:
                    escaped = False
                elif c == "\\":
                    escaped = True
                elif c == '"':
                    quoted = False
                continue
            if c == '"':
                quoted = True
            elif c in "{}":
                depth += 1 if c == "{" else -1
                if depth == 0:
                    try:
                        return json.loads(text[start : i + 1])
                    except ValueError:
                        break
    return None


def _value(answer: Any) -> Any:
    if isinstance(answer, (dict, list)):
        return answer
    text = str(answer).strip()
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        pass
    fenced = re.search(r"```(?:json)?\s*(.*?)```", text, re.S)
    if fenced:
        try:
            return json.loads(fenced.group(1))
        except (ValueError, RecursionError):
            pass
    return _first_object(text) or text


def read_choice(answer: Any) -> tuple[str | None, list[float] | None]:
    """``(option id, box)`` of an image-task answer: the strict JSON object, one in a code
    fence or prose, a singleton ``answers`` list, the protocol's synonym keys, or a bare
    letter (an option without a box). Either part is None when it is missing or
    unreadable; the box is returned as given (scale conversion is the scorer's).
    """
    v = _value(answer)
    if isinstance(v, dict) and isinstance(v.get("answers"), list) and len(v["answers"]) == 1:
        v = v["answers"][0]
    if isinstance(v, str):
        letter = v.strip().strip(".").upper()
        return (letter if len(letter) == 1 and letter.isalpha() else None), None
    if not isinstance(v, dict):
        return None, None
    opt = next((v[k] for k in OPTION_KEYS if k in v), None)
    option = opt.strip().upper() if isinstance(opt, str) and opt.strip() else None
    raw = next((v[k] for k in BOX_KEYS if k in v), None)
    box = None
    if isinstance(raw, list) and len(raw) == 4:
        if all(isinstance(c, (int, float)) and not isinstance(c, bool) for c in raw):
            box = [float(c) for c in raw] if all(math.isfinite(c) for c in raw) else None
    return option, box


def truth_box(task: Any, option: str | None) -> list[float] | None:
    """The box an answer's box is scored against: the sign in the query view, or, in a
    ``future_observation`` task, in the candidate ``option`` names (None: no such
    candidate, or the sign is not in it).
    """
    g = task.goal
    if task.type != "future_observation":
        return list(g["bbox"])
    cand = g["candidates"].get(option) if option is not None else None
    return None if cand is None or cand.get("box") is None else list(cand["box"])


def score_choice(task: Any, answer: Any) -> dict[str, float]:
    """The protocol's per-episode image metrics of ``answer`` (None: unanswered):
    ``option_correct``, ``bbox_iou``, ``bbox_hit`` (IoU >= 0.5), ``semantic_ok``,
    ``evidence_ok``. Option and box are scored independently; a box counts only in
    [0, 1] (corners in either order) -- the run-level rescaling is the report's.
    """
    from urban_gym.tasks.grounding import convert_box

    option, box = read_choice(answer) if answer is not None else (None, None)
    correct = float(option is not None and option == task.goal["option"])
    truth = truth_box(task, option)
    unit = convert_box(box, "unit") if box is not None else None
    iou = metrics.bbox_iou(unit, truth) if unit is not None and truth is not None else 0.0
    hit = float(iou >= metrics.IOU_THRESHOLD)
    return {
        "option_correct": correct,
        "bbox_iou": float(iou),
        "bbox_hit": hit,
        "semantic_ok": correct,
        "evidence_ok": hit,
    }


# ------------------------------------------------------------------ task specs
REPLY_FORMAT = (
    'Reply with ANSWER and one JSON object, nothing else: {"answer_option_id": "A", '
    '"bbox_xyxy_norm": [x0, y0, x1, y1]} -- exactly one option letter, and the box as '
    "fractions of the image's width and height (0 to 1, x to the right, y down). Do not "
    "move."
)


def _options_text(labels: list[str]) -> str:
    return " ".join(f"{LETTERS[i]}) {lab}." for i, lab in enumerate(labels))


def _answer(option: int, box: list[float] | None) -> str:
    return json.dumps({"answer_option_id": LETTERS[option], "bbox_xyxy_norm": box})


def _spec(gen: Any, kind: str, got: dict, look: float, **kw: Any) -> Any:
    """A TaskSpec of an image task from a draw (``kw``: its own fields)."""
    from urban_gym.families.posegraph360.tasks.types import FAMILY
    from urban_gym.tasks.spec import TaskSpec
    from urban_gym.world.geo import angle_diff

    pl, s = got["place"], got["state"]
    want = difficulty_of(got["area"])
    group, state = {
        "relative_position": ("position", "agent"),
        "self_position": ("position", "world"),
        "future_observation": ("action_observation", "agent"),
        "action_decision": ("action_observation", "world"),
    }[kind]
    key = f"{group}:{pl.poi.id}:{s.trajectory}:{s.frame}:{want}"
    yaw = round(float(angle_diff(look, gen.graph.heading(s))), 2)
    labels = kw.pop("labels")
    instruction = str(kw.pop("instruction"))
    refs = tuple(kw.pop("reference_images", ()))
    goal = {"poi": pl.poi.name, "anchor": list(pl.poi.anchor), "frame": list(FRAME)}
    goal.update(bearing=round(float(look), 1), **kw)
    goal["choices"] = {LETTERS[i]: lab for i, lab in enumerate(labels)}
    return TaskSpec(
        id="tmp",
        family=FAMILY,
        type=kind,
        difficulty=want,
        city=gen.city_spec,
        instruction=instruction,
        start=gen._start(s, yaw),
        answer=_answer(LETTERS.index(goal["option"]), goal.get("bbox") or goal.get("box")),
        reference_images=refs,
        goal=goal,
        meta=gen._meta(
            key=(kind, key),
            pair={"group": group, "key": key, "state": state},
            bbox_area=round(float(got["area"]), 5),
            oracle_steps=1,
        ),
    )


def position_tasks(gen: Any, got: dict) -> tuple[Any, Any]:
    """The ``relative_position`` and ``self_position`` tasks of one draw."""
    pl = got["place"]
    name = pl.poi.name
    x, y = gen.graph.position(pl.state)
    from urban_gym.world.geo import bearing

    ax, ay = pl.poi.anchor
    ref_view = {
        "trajectory": pl.state.trajectory,
        "frame": pl.state.frame,
        "bearing": round(float(bearing(ax - x, ay - y)), 2),
        "pitch": 10.0,
        "fov": 60.0,
    }
    labels = [lab for lab, _, _ in POSITION_SECTORS]
    rel = _spec(
        gen,
        "relative_position",
        got,
        got["look"],
        labels=labels,
        option=LETTERS[got["sector"]],
        bbox=got["box"],
        view=ref_view,
        x=round(x, 3),
        y=round(y, 3),
        reference_images=("landmark",),
        instruction=(
            f"The reference image faces the front of {name}: its facade, seen head-on. "
            f"Taking that front as the landmark's own forward direction (left and right as "
            f"the reference image shows them), where are you relative to {name}, judging "
            f"from your current view? Options: {_options_text(labels)} Also give the box of "
            f"the sign of {name} in your current view. {REPLY_FORMAT}"
        ),
    )
    self_labels = [
        f"{d}, {n}"
        for d, _, _ in SELF_DIRECTIONS
        for n in (f"within {NEAR_M:.0f} m", f"farther than {NEAR_M:.0f} m")
    ]
    own = _spec(
        gen,
        "self_position",
        got,
        got["look"],
        labels=self_labels,
        option=LETTERS[got["self"]],
        bbox=got["box"],
        instruction=(
            f"Where is {name} relative to you: which way from the direction you face, and "
            f"how far? Options: {_options_text(self_labels)} Also give the box of its sign "
            f"in your current view. {REPLY_FORMAT}"
        ),
    )
    return rel, own


def action_tasks(gen: Any, got: dict) -> tuple[Any, Any]:
    """The ``future_observation`` and ``action_decision`` tasks of one draw."""
    name = got["place"].poi.name
    cands = {LETTERS[i]: c for i, c in enumerate(got["candidates"])}
    labels = [f"candidate image {k}" for k in cands]
    fo = _spec(
        gen,
        "future_observation",
        got,
        got["look"],
        labels=labels,
        option=LETTERS[got["answer"]],
        candidates=cands,
        # the target's box per candidate, read by the run-level rescoring
        # (urban_gym.eval.grounded): the box is scored in the candidate chosen
        candidate_bboxes={k: (c["box"] if c else None) for k, c in cands.items()},
        box=cands[LETTERS[got["answer"]]]["box"],
        reference_images=("candidates",),
        instruction=(
            f"Suppose that, from where you stand, you {got['asked'].split(' (')[0]}. The "
            "reference image "
            f"holds candidate images {', '.join(cands)} (labelled), each the view after "
            "one camera turn from here. Which candidate is the view you see after that "
            f"turn? Options: {_options_text(labels)} Also give the box of the sign of "
            f"{name} in the candidate you choose (fractions of that candidate image). "
            f"{REPLY_FORMAT}"
        ),
    )
    turn_labels = list(DECISION_TURNS)
    ad = _spec(
        gen,
        "action_decision",
        got,
        got["decision_look"],
        labels=turn_labels,
        option=LETTERS[got["decision_answer"]],
        bbox=got["decision_box"],
        instruction=(
            f"You want to face {name}. Which one camera turn brings its sign nearest the "
            f"middle of your view? Options: {_options_text(turn_labels)} Also give the box "
            f"of the sign of {name} in your current view. {REPLY_FORMAT}"
        ),
    )
    return fo, ad
