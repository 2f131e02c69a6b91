"""Whether the goal object is in view: the privileged ``info["goal_visible"]``.

An environment made with ``track_visibility=True`` adds ``goal_visible`` (a ``bool``, on
every ``info`` after ``reset`` and every ``step``, on every task) computed here from the
renderer's instance ids (:mod:`urban_gym.render.ids`): the goal is visible when at least
:data:`MIN_GOAL_PIXELS` pixels of a :data:`ID_VIEW_SIZE`-pixel id image of what the agent
sees now show the signboard of one of the task's goal places. Without
``track_visibility`` the key is absent and nothing is rendered for it (RL training pays
nothing).

The goal places of a task (:func:`goal_poi_indices`), read from the task's fields the same
way on every family:

================================  =============================================================
field                             goal place
================================  =============================================================
``goal["poi_id"]``                the POI with that index; a multi-stop task: every stop's
                                  ``poi_id``
``meta["poi_id"]``                the place a question asks about (when the goal names none)
``goal["osm_id"]``                the POI with that OpenStreetMap id
``goal["poi"]``                   the named place (the one nearest ``goal["anchor"]``, else
                                  the goal's ``x``/``y``, when several share the name)
================================  =============================================================

A family may name one more place (``named=``: a question whose answer is the place to
find, say). Tasks without a goal place always report False. What "what
the agent sees" means is the family's: its env's ``_goal_visible`` renders the ids of its
own view (a crop of an id panorama, a first-person id view, the option views) and asks
:func:`in_view`.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from urban_gym.tasks.spec import TaskSpec
    from urban_gym.world.city import City

#: Pixels of a goal's signboard needed (in the id image of :data:`ID_VIEW_SIZE`) to count
#: as visible.
MIN_GOAL_PIXELS = 3
#: Longer side (pixels) of the id image the visibility is computed on.
ID_VIEW_SIZE = 96
#: Width (pixels) of the id panoramas sampled for panorama-based families.
ID_PANO_WIDTH = 256


def goal_poi_indices(
    city: City, task: TaskSpec, named: tuple[str, Any] | None = None
) -> tuple[int, ...]:
    """Indices into ``city.pois`` of the task's goal places (see the module docstring);
    ``()`` when the task has none or they are not in ``city``. ``named``: ``(name, near)``
    of one more place, the POI so named nearest ``near`` (x, y metres).
    """
    g, meta = task.goal or {}, task.meta or {}
    ids: list[int] = []
    n = len(city.pois)
    for value in (g.get("poi_id"), *(st.get("poi_id") for st in g.get("stops") or [])):
        if isinstance(value, int) and 0 <= value < n and city.pois[value].id == value:
            ids.append(value)
    if not ids and isinstance(meta.get("poi_id"), int):
        p = meta["poi_id"]
        if 0 <= p < n:
            ids.append(p)
    if isinstance(g.get("osm_id"), str):
        ids.extend(i for i, p in enumerate(city.pois) if p.osm_id == g["osm_id"])
    name, near = None, None
    if isinstance(g.get("poi"), str):
        name, near = g["poi"], g.get("anchor") or (g.get("x"), g.get("y"))
    elif named is not None:
        name, near = named
    if name is not None:
        p = _named_poi(city, name, near)
        if p is not None:
            ids.append(p)
    return tuple(sorted(set(ids)))


def _named_poi(city: City, name: str, near: Any) -> int | None:
    """The index of the POI called ``name`` nearest to ``near`` (x, y metres)."""
    hits = [i for i, p in enumerate(city.pois) if p.name == name]
    if not hits:
        return None
    try:
        x, y = float(near[0]), float(near[1])
    except (TypeError, ValueError, IndexError):
        return hits[0]
    if not (math.isfinite(x) and math.isfinite(y)):
        return hits[0]
    return min(hits, key=lambda i: math.dist(city.pois[i].anchor, (x, y)))


def sign_ids(poi_indices: Iterable[int]) -> np.ndarray:
    """The instance ids of the signboards of ``poi_indices`` (``int32``)."""
    from urban_gym.render.ids import sign_id

    return np.array(sorted(sign_id(p) for p in poi_indices), dtype=np.int32)


def in_view(ids: np.ndarray | None, targets: np.ndarray, min_pixels: int = MIN_GOAL_PIXELS) -> bool:
    """Whether at least ``min_pixels`` pixels of the id image ``ids`` show one of
    ``targets``.
    """
    if targets.size == 0 or ids is None:
        return False
    if targets.size <= 4:  # the usual case: one goal place
        n = 0
        for t in targets:
            n += int(np.count_nonzero(ids == t))
        return n >= int(min_pixels)
    return int(np.isin(ids, targets).sum()) >= int(min_pixels)


def id_view_size(wh: tuple[int, int]) -> tuple[int, int]:
    """``(w, h)`` of the id image for a view of ``wh`` pixels: the same aspect, longer side
    :data:`ID_VIEW_SIZE` (never larger than the view).
    """
    w, h = int(wh[0]), int(wh[1])
    s = min(1.0, ID_VIEW_SIZE / max(w, h))
    return max(1, round(w * s)), max(1, round(h * s))


class IdPanoramas:
    """Instance-id equirectangular panoramas of a city, rendered on demand
    (:class:`urban_gym.render.PanoramaRenderer`, ``ids=True``) and kept in an LRU cache.

    Args:
        city: the world.
        width: panorama width in pixels (height is half).
        cache: panoramas kept.
    """

    def __init__(self, city: City, width: int = ID_PANO_WIDTH, cache: int = 128) -> None:
        from urban_gym.render import PanoramaRenderer

        self.renderer = PanoramaRenderer(city, width=width, height=width // 2)
        self.cache = int(cache)
        self._panos: OrderedDict[tuple[float, float], np.ndarray | None] = OrderedDict()
        self._grids: OrderedDict[tuple, np.ndarray] = OrderedDict()

    def panorama(self, x: float, y: float) -> np.ndarray | None:
        """The id panorama at ``(x, y)`` metres (centre column north); None when the
        renderer cannot render there (outside the city).
        """
        from urban_gym.render import RenderError

        key = (round(float(x), 3), round(float(y), 3))
        if key in self._panos:
            self._panos.move_to_end(key)
            return self._panos[key]
        try:
            ids = self.renderer.render(key[0], key[1], ids=True).ids
        except RenderError:
            ids = None
        self._panos[key] = ids
        while len(self._panos) > self.cache:
            self._panos.popitem(last=False)
        return ids

    def view(
        self,
        x: float,
        y: float,
        yaw: float,
        pitch: float,
        fov: float,
        size: tuple[int, int],
        pano: np.ndarray | None = None,
    ) -> np.ndarray | None:
        """The id image of a perspective view from ``(x, y)`` along ``yaw`` / ``pitch``
        (degrees) with horizontal ``fov``, ``size = (w, h)`` pixels (nearest samples of
        the id panorama, or of ``pano`` when given).
        """
        pano = self.panorama(x, y) if pano is None else pano
        if pano is None:
            return None
        return pano.reshape(-1)[self._grid(yaw, pitch, fov, size, pano.shape)]

    def _grid(self, yaw: float, pitch: float, fov: float, size: tuple[int, int], shape) -> Any:
        from urban_gym.render.camera import view_directions

        w, h = int(size[0]), int(size[1])
        ph, pw = int(shape[0]), int(shape[1])
        key = (w, h, round(float(fov), 6), round(float(pitch), 6), round(float(yaw) % 360, 6))
        hit = self._grids.get(key)
        if hit is not None:
            self._grids.move_to_end(key)
            return hit
        bearing, elev = view_directions(w, h, float(fov), float(pitch), float(yaw))
        col = np.floor((bearing / 360.0 + 0.5) * pw).astype(np.int64) % pw
        row = np.clip(np.floor((90.0 - elev) / 180.0 * ph).astype(np.int64), 0, ph - 1)
        grid = row * pw + col
        self._grids[key] = grid
        while len(self._grids) > 256:
            self._grids.popitem(last=False)
        return grid


class GoalTracker:
    """What an env keeps to answer ``goal_visible``: the goal sign ids of the current task
    and the id panoramas / id renderers of its city (built on first use).

    Use :func:`tracker_of` to get an env's tracker (it is not pickled with the env).
    """

    #: the ``load_city`` spec of the city (set by :func:`tracker_for_spec`)
    spec: str

    def __init__(self, city: City) -> None:
        self.city = city
        self._targets: tuple[Any, np.ndarray] = (None, np.zeros(0, np.int32))
        self._panos: IdPanoramas | None = None
        self._views: dict[tuple, Any] = {}
        self._answers: OrderedDict[tuple, bool] = OrderedDict()

    def remember(self, key: tuple, compute: Any) -> bool:
        """``compute()`` for a view that ``key`` determines (e.g. task, position, camera),
        kept in a small LRU cache so that a view seen again costs nothing.
        """
        hit = self._answers.get(key)
        if hit is not None:
            self._answers.move_to_end(key)
            return hit
        value = bool(compute())
        self._answers[key] = value
        while len(self._answers) > 4096:
            self._answers.popitem(last=False)
        return value

    def targets(self, task: TaskSpec, named: tuple[str, Any] | None = None) -> np.ndarray:
        """The goal sign ids of ``task`` (cached per task id; ``named`` as in
        :func:`goal_poi_indices`).
        """
        if self._targets[0] != task.id:
            self._targets = (task.id, sign_ids(goal_poi_indices(self.city, task, named)))
        return self._targets[1]

    @property
    def panoramas(self) -> IdPanoramas:
        """The city's id panoramas."""
        if self._panos is None:
            self._panos = IdPanoramas(self.city)
        return self._panos

    def first_person(self, size: tuple[int, int], fov: float) -> Any:
        """A :class:`urban_gym.render.FirstPersonRenderer` of ``size`` and ``fov``."""
        key = (int(size[0]), int(size[1]), round(float(fov), 6))
        r = self._views.get(key)
        if r is None:
            from urban_gym.render import FirstPersonRenderer

            r = FirstPersonRenderer(self.city, width=key[0], height=key[1], fov=fov)
            self._views[key] = r
        return r


def tracker_of(env: Any, city: City) -> GoalTracker:
    """The :class:`GoalTracker` of ``env`` for ``city`` (a new one when the city changed);
    kept in ``env._visibility``, which :class:`~urban_gym.envs.base.UrbanEnv` drops when
    pickled.
    """
    t = env.__dict__.get("_visibility")
    if t is None or t.city is not city:
        t = GoalTracker(city)
        env._visibility = t
    return t


def tracker_for_spec(env: Any, spec: str) -> GoalTracker:
    """:func:`tracker_of` for the city of a ``load_city`` spec, loaded once per env (not
    on every step).
    """
    t = env.__dict__.get("_visibility")
    if t is None or getattr(t, "spec", None) != spec:
        from urban_gym.world.loader import load_city

        t = GoalTracker(load_city(spec))
        t.spec = spec
        env._visibility = t
    return t


__all__ = [
    "GoalTracker",
    "tracker_for_spec",
    "tracker_of",
    "ID_PANO_WIDTH",
    "ID_VIEW_SIZE",
    "MIN_GOAL_PIXELS",
    "IdPanoramas",
    "goal_poi_indices",
    "id_view_size",
    "in_view",
    "sign_ids",
]
