"""What a StreetGraph agent sees: the observation, the option views, the goal modes and the
frame a person watches.

:class:`StreetGraphObservation` is that part of
:class:`~urban_gym.families.streetgraph.env.StreetGraphEnv` (a mixin): option ``i``'s view
looks down its street from the node's panorama (rendered from the city, or read from an
imported Touchdown panorama), :data:`VIEW_FOV` wide at :data:`VIEW_PITCH`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from urban_gym.caching import LRUCache
from urban_gym.envs.text import clean_text
from urban_gym.families.streetgraph.world import Street, StreetGraph, StreetGraphError

if TYPE_CHECKING:
    from urban_gym.tasks.spec import TaskSpec

#: Camera of the option views: horizontal field of view and pitch (degrees, positive up).
VIEW_FOV = 90.0
VIEW_PITCH = 30.0
#: Side of one option's tile in the ``rgb_array`` frame (pixels).
FRAME_TILE = 160


class StreetGraphObservation:
    """The observation, views and goal modes of
    :class:`~urban_gym.families.streetgraph.env.StreetGraphEnv` (a mixin).
    """

    if TYPE_CHECKING:  # the env's state that the observation reads
        task: TaskSpec
        graph: StreetGraph
        node: int
        heading: float
        options: list[Street]
        images: bool
        image_wh: tuple[int, int]
        max_degree: int
        pano_width: int
        conditions: Any
        decisions: int
        transitions: int
        _graph_key: str
        _bearings: np.ndarray
        _charset: frozenset[str]
        _clean_for: TaskSpec | None
        _clean_text: str
        _masks: dict[tuple[int, bool], np.ndarray]
        _views: LRUCache[tuple[str, int], np.ndarray]
        _renderers: dict[str, Any]

        def _graph_of(self, task: TaskSpec) -> StreetGraph: ...
        def load_world(self, spec: str) -> Any: ...  # noqa: D102 (UrbanEnv's)

    def _mask(self) -> np.ndarray:
        key = (len(self.options), self.task.type == "instruction")
        m = self._masks.get(key)
        if m is None:
            m = np.zeros(self.max_degree + 1, dtype=np.int8)
            m[: key[0]] = 1
            m[-1] = int(key[1])
            m.setflags(write=False)
            self._masks[key] = m
        return m.copy()

    def _observe(self) -> dict[str, Any]:
        heading = _ONE_FLOAT32.copy()  # a copy and a store: half a np.array([...]) call
        heading[0] = min(self.heading % 360.0, 359.999)
        obs: dict[str, Any] = {
            "bearings": self._bearings.copy(),
            "heading": heading,
            "action_mask": self._mask(),
            "instruction": self._instruction_text(),
        }
        if self.images:
            obs["views"] = self._option_views()
        return obs

    def _instruction_text(self) -> str:
        """The task's instruction in the observation's charset (cleaned once per task)."""
        task = self.task
        if self._clean_for is not task:
            self._clean_text = clean_text(task.instruction, self._charset)
            self._clean_for = task
        return self._clean_text

    # ------------------------------------------------------------------ goal modes
    no_view_reason = "observation='symbolic' renders no views"

    def _goal_point(self) -> tuple[float, float] | None:
        """The destination's position, or the panorama of the goal node (the last one of an
        instruction route).
        """
        task = self.task
        g = task.goal or {}
        if "position" in g:
            return float(g["position"][0]), float(g["position"][1])
        if "route" in g or "node" in g:
            node = g["route"][-1] if "route" in g else g["node"]
            graph = self._graph_of(task)
            x, y = graph.xy[graph.index[node]]
            return float(x), float(y)
        return None

    def _goal_landmarks(self, task: TaskSpec) -> np.ndarray:
        """The city's landmarks; for a graph of imported panoramas (no city data), its
        nodes spread over it.
        """
        g = self._graph_of(task)
        if g.meta.get("source") == "city":
            # the env's UrbanEnv, after this mixin in its MRO
            return super()._goal_landmarks(task)  # type: ignore[misc]
        from urban_gym.envs.goals import landmarks_of

        xy = np.asarray(g.xy)
        x0, y0 = xy.min(axis=0)
        x1, y1 = xy.max(axis=0)
        key = f"streetgraph:{g.meta.get('source')}:{len(xy)}:{x0:.1f}:{y0:.1f}"
        return landmarks_of(key, xy, (x0, y0, x1, y1))

    def _view_shape(self) -> tuple[int, int] | None:
        return (self.image_wh[1], self.image_wh[0]) if self.images else None

    def _goal_view(self, task: TaskSpec, goal: tuple[float, float]) -> np.ndarray:
        """The view down the first street of the goal node nearest ``goal``."""
        g = self._graph_of(task)
        gl = task.goal
        names = gl.get("nodes") or [gl["route"][-1] if "route" in gl else gl["node"]]
        idx = [g.index[n] for n in names]
        d = np.hypot(*(g.xy[idx] - np.asarray(goal)).T)
        node = idx[int(np.argmin(d))]
        streets = g.streets_from(node)
        heading = float(streets[0].heading) if streets else 0.0
        return np.asarray(self._render_views(g, node, [heading])[0], dtype=np.uint8)

    def _goal_visible(self) -> bool:
        """The goal place's sign in one of the option views (observations with images of a
        graph built from a city; False otherwise): :mod:`urban_gym.envs.visibility`.
        """
        g = self.graph
        if not self.images or not self.options or g.meta.get("source") != "city":
            return False
        from urban_gym.envs.visibility import id_view_size, in_view, tracker_for_spec

        tr = tracker_for_spec(self, str(g.meta["city"]))
        targets = tr.targets(self.task)
        if targets.size == 0:
            return False
        x, y = g.xy[self.node]

        def look() -> bool:  # the option views of a node never change
            pano = tr.panoramas.panorama(float(x), float(y))
            size = id_view_size(self.image_wh)
            for s in self.options:
                ids = tr.panoramas.view(x, y, s.heading, VIEW_PITCH, VIEW_FOV, size, pano=pano)
                if in_view(ids, targets):
                    return True
            return False

        return tr.remember((self.task.id, self._graph_key, self.node), look)

    # ------------------------------------------------------------------ images
    def _option_views(self) -> np.ndarray:
        d = self.max_degree
        w, h = self.image_wh
        out = np.zeros((d, h, w, 3), dtype=np.uint8)
        if not self.options:
            return out
        key = (self._graph_key, self.node)
        views = self._views.get_or_create(
            key,
            lambda: self._render_views(self.graph, self.node, [s.heading for s in self.options]),
        )
        out[: len(views)] = views
        return out

    def _render_views(self, g: StreetGraph, node: int, headings: list[float]) -> np.ndarray:
        from urban_gym.render import perspective_batch

        pano, pano_heading = self._panorama(g, node)
        return perspective_batch(
            pano,
            np.asarray(headings, dtype=float),
            pitch=VIEW_PITCH,
            fov=VIEW_FOV,
            size=self.image_wh,
            pano_heading=pano_heading,
        )

    def _panorama(self, g: StreetGraph, node: int) -> tuple[np.ndarray, float]:
        if g.meta.get("source") == "touchdown":
            return read_equirect(g, node), float(g.pano_heading[node])
        key = g.meta["city"]
        r = self._renderers.get(key)
        if r is None:
            r = panorama_renderer_class()(
                self.load_world(key), width=self.pano_width, height=self.pano_width // 2
            )
            self._renderers[key] = r
        x, y = g.xy[node]
        return r.render(float(x), float(y), conditions=self.conditions).rgb, 0.0

    def _frame(self) -> np.ndarray:
        """The ``rgb_array`` frame, one size for the whole env (a video needs that):
        ``FRAME_TILE * max_degree`` pixels wide. The options shown here share that width
        equally, each tile holding its view (covering the tile, its middle kept) or, without
        images, a dial of its bearing in its middle, labelled with its index and bearing;
        under them the instruction and the decision counts.
        """
        from urban_gym.render import frame as F

        bg = (32, 32, 36)
        w = FRAME_TILE * max(1, self.max_degree)
        views = self._option_views() if self.images and self.options else None
        k = len(self.options)
        edges = [w * i // max(1, k) for i in range(k + 1)]
        tiles = [
            F.label(
                F.tile(views[i], FRAME_TILE, background=bg, width=edges[i + 1] - edges[i])
                if views is not None
                else F.centre(
                    F.bearing_dial(FRAME_TILE, s.heading, background=bg),
                    edges[i + 1] - edges[i],
                    background=bg,
                ),
                f"{i}: {s.heading:.0f}°",
                (6, FRAME_TILE - 20),
            )
            for i, s in enumerate(self.options)
        ] or [F.text_panel("no way on from here", w, FRAME_TILE, background=bg)]
        text = F.text_panel(
            self.task.instruction, w, 48, colour=(230, 230, 230), background=bg, margin=(6, 8)
        )
        status = F.text_panel(
            f"decisions {self.decisions} | transitions {self.transitions}",
            w,
            22,
            colour=(160, 160, 170),
            background=bg,
            margin=(6, 0),
        )
        return F.vstack([F.hstack(tiles), text, status])


_ONE_FLOAT32 = np.zeros(1, np.float32)


def panorama_renderer_class() -> Any:
    """``PanoramaRenderer`` from :mod:`urban_gym.render` (or its module), None if absent."""
    try:
        from urban_gym.render import PanoramaRenderer

        return PanoramaRenderer
    except ImportError:
        pass
    try:
        from urban_gym.render.panorama import PanoramaRenderer

        return PanoramaRenderer
    except ImportError:
        return None


def renderer_available() -> bool:
    """Whether the panorama renderer can be imported."""
    return panorama_renderer_class() is not None


def read_equirect(g: StreetGraph, node: int) -> np.ndarray:
    """The equirectangular panorama of ``node`` of an imported graph (RGB), checked."""
    import cv2

    path = g.image_path(node)
    if path is None:
        raise StreetGraphError(
            f"no image for panorama {g.ids[node]!r} in {g.image_dir} (tried .jpg, .jpeg, .png)"
        )
    img = cv2.imread(str(path), cv2.IMREAD_COLOR)
    if img is None or img.size == 0:
        raise StreetGraphError(f"cannot read image {path} (corrupt or not an image)")
    h, w = img.shape[:2]
    if w != 2 * h:
        raise StreetGraphError(f"image {path} is {w}x{h}, not a 2:1 equirectangular panorama")
    return cv2.cvtColor(img, cv2.COLOR_BGR2RGB)
