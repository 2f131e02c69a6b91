"""The worlds of ``PoseGraph360Env``: a city with its pose graph and rendered frames,
loaded once per process and shared by every env of the process; and a task's reference
image drawn from its world.

A PoseGraph360 env runs the world of its current task (``task.city``): one city for a
suite of one city, a new one whenever an episode's task names another (a suite drawn
from many procedural cities, ``suite="procedural:..."``). :func:`rendered_world` keeps
the last :data:`WORLD_CACHE_ITEMS` worlds in an LRU cache, so switching back to a city
costs a lookup; each world's frames are cached by its :class:`RenderedFrames` within
``cache_mb`` megabytes, episodes' start frames within as many again (frames are rendered
on demand, so a world holds only the frames visited). What never changes on a world --
tasks' reference images and starts, finished views -- is kept per world too
(:func:`world_caches`), for every env of the process.
"""

from __future__ import annotations

import math
import threading
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from urban_gym.caching import LRUCache
from urban_gym.errors import InputError, UrbanGymError
from urban_gym.families.posegraph360.world import PoseGraph, RenderedFrames, State, load_posegraph
from urban_gym.tasks.spec import TaskError, TaskSpec
from urban_gym.world.grid import GridOverlay
from urban_gym.world.names import DEFAULT_NAMES, check_names_mode

#: Worlds kept per process (the cities of a procedural training suite, say).
WORLD_CACHE_ITEMS = 64
_WORLDS: LRUCache[tuple, tuple[Any, PoseGraph]] = LRUCache(
    max_items=WORLD_CACHE_ITEMS, lock=True, name="envs.posegraph360.worlds"
)


def rendered_source(
    city: Any, width: int, time_of_day: str, weather: str, cache_mb: float
) -> RenderedFrames:
    """Frames of ``city`` rendered by :class:`urban_gym.render.PanoramaRenderer` as
    ``width``-pixel panoramas (lazy import) under the given conditions: drawn piecemeal,
    the tiles a view reads (``PanoramaRenderer.render_window``), except under rain or a
    clear night, whose streaks and stars are scattered over the whole image.
    """
    from urban_gym.render import Conditions

    try:
        from urban_gym.render import PanoramaRenderer
    except ImportError:
        from urban_gym.render.panorama import PanoramaRenderer
    if width < 64 or width % 2:
        raise InputError(f"pano_width={width!r} must be an even number >= 64")
    renderer = PanoramaRenderer(city, width=width, height=width // 2)
    cond = Conditions(time_of_day=time_of_day, weather=weather)

    def render(x: float, y: float) -> np.ndarray:
        return renderer.render(x, y, conditions=cond).rgb

    def window(x: float, y: float, cols: tuple[int, int], rows: tuple[int, int]) -> np.ndarray:
        return renderer.render_window(x, y, cols, rows, conditions=cond)

    if weather == "rain" or (time_of_day == "night" and weather == "clear"):
        return RenderedFrames(render, cache_mb)  # streaks and stars span the whole image
    return RenderedFrames(render, cache_mb, window, (width // 2, width))


def rendered_world(
    city_spec: str,
    spacing: float,
    pano_width: int,
    time_of_day: str = "day",
    weather: str = "clear",
    cache_mb: float | None = None,
    names: str = DEFAULT_NAMES,
) -> tuple[Any, PoseGraph]:
    """``(city, pose graph with rendered frames)`` of ``load_city(city_spec, names=names)``
    for frames ``spacing`` metres apart, cached per process (see the module docstring;
    each ``names`` mode its own: the frames' signs differ); ``cache_mb`` defaults to
    :data:`FRAME_CACHE_MB`.
    """
    cache_mb = FRAME_CACHE_MB if cache_mb is None else cache_mb
    key = (
        str(city_spec),
        float(spacing),
        int(pano_width),
        time_of_day,
        weather,
        float(cache_mb),
        check_names_mode(names),
    )

    def build() -> tuple[Any, PoseGraph]:
        from urban_gym.world.loader import load_city

        city = load_city(city_spec, names=names)
        graph = load_posegraph(city_spec, spacing=spacing)
        source = rendered_source(city, int(pano_width), time_of_day, weather, cache_mb)
        return city, graph.with_source(source)

    return _WORLDS.get_or_create(key, build)


def task_markers(task: TaskSpec) -> Any:
    """The markers of ``task`` the agent may see on a map (a
    :class:`~urban_gym.render.MapMarkers`): the blue start and red goal of a
    map-navigation task, the grid of a localization task, nothing otherwise (the goal of a
    landmark or VLN task is what the agent must find). The agent's own marker is not
    included: whether the position is shown is the location-prior choice.
    """
    from urban_gym.render import MapMarkers

    kind = task.reference_images[0] if task.reference_images else None
    if kind == "route_map":
        return MapMarkers(
            start=(float(task.start["x"]), float(task.start["y"])),
            goal=(float(task.goal["x"]), float(task.goal["y"])),
        )
    if kind == "grid_map":
        x0, y0, x1, y1 = (float(v) for v in task.goal["grid"])
        nx, ny = int(task.goal.get("nx", 5)), int(task.goal.get("ny", 5))
        return MapMarkers(grid=GridOverlay((x0, y0, x1, y1), nx, ny))
    return MapMarkers()


#: the default LRU of a world's frames, MB: 8 panoramas of 2048x1024. A random agent's
#: frame hit rate on PoseGraph360-v0, 20 s each (``benchmarks/profile_rollout.py
#: UrbanGym/PoseGraph360-v0 --env-kwargs '{"cache_mb": N}' --seconds 20 --caches``):
#: 74.9% at 128 MB, 74.1% at 48, 73.9% at 24 -- the hits are views turned on the spot; a
#: walk rarely comes back to a frame it left several frames ago
FRAME_CACHE_MB = 48.0
#: bytes of task reference images kept per world (a 512 px image is 0.8 MB)
REFERENCE_CACHE_BYTES = 48 * 2**20
#: task starts (start frame, goal distances, reference route) kept per world
START_CACHE_ITEMS = 1024
#: bytes of finished views kept per world (an 84x84 view is 21 kB, a 512x512 one 0.8 MB).
#: A random agent's exact repeats -- a task's first view at each of its episodes, a turn
#: undone -- are about a quarter of its views at 84x84
VIEW_CACHE_BYTES = 16 * 2**20
#: bytes of episodes' first views kept per world, apart from the others (a task's first
#: view comes back with each of its episodes, after many other views have passed)
START_VIEW_CACHE_BYTES = 8 * 2**20


@dataclass(frozen=True)
class WorldCaches:
    """What a world keeps for every env of the process that runs it, since it never changes
    on one pose graph and comes back: a task's reference images (keyed by task and size)
    and its episode start (:class:`~urban_gym.families.posegraph360.tasks.routes.EpisodeStart`),
    which every episode of the task needs again -- in each of the N envs of a vector env
    alike -- and finished views (keyed by frame, camera and view settings), episodes'
    first views apart.
    """

    reference: LRUCache[tuple, np.ndarray]
    start: LRUCache[tuple, Any]
    views: LRUCache[tuple, np.ndarray]
    start_views: LRUCache[tuple, np.ndarray]


_WORLD_CACHES: weakref.WeakKeyDictionary[PoseGraph, WorldCaches] = weakref.WeakKeyDictionary()
_WORLD_CACHES_LOCK = threading.Lock()


def world_caches(graph: PoseGraph) -> WorldCaches:
    """The :class:`WorldCaches` of ``graph`` (one per graph object, so per world and frame
    source; dropped with the graph).
    """
    with _WORLD_CACHES_LOCK:
        got = _WORLD_CACHES.get(graph)
        if got is None:
            got = _WORLD_CACHES[graph] = WorldCaches(
                LRUCache(REFERENCE_CACHE_BYTES, lock=True),
                LRUCache(max_items=START_CACHE_ITEMS, lock=True),
                LRUCache(VIEW_CACHE_BYTES, lock=True),
                LRUCache(START_VIEW_CACHE_BYTES, lock=True),
            )
        return got


def reference_image(
    task: TaskSpec, graph: PoseGraph, maps: Callable[[], Any], size: int
) -> np.ndarray:
    """The ``size`` x ``size`` reference image of ``task`` (the ``reference`` entry of the
    observation): its grid map or route map (:func:`task_markers`) drawn by ``maps()`` (a
    :class:`~urban_gym.render.MapRenderer` of the task's city), the photo of a landmark
    taken on ``graph``, or zeros when the task has none.
    """
    if not task.reference_images:
        return np.zeros((size, size, 3), np.uint8)
    kind = task.reference_images[0]
    if kind == "grid_map":
        x0, y0, x1, y1 = (float(v) for v in task.goal["grid"])
        mpp = max(x1 - x0, y1 - y0) / (size - 4)
        return maps().render(((x0 + x1) / 2, (y0 + y1) / 2), mpp, size, markers=task_markers(task))
    if kind == "route_map":
        m = task.goal["map"]
        mpp = float(m["extent"]) / size
        return maps().render(tuple(m["center"]), mpp, size, markers=task_markers(task))
    if kind == "landmark":
        from urban_gym.render import perspective

        v = task.goal["view"]
        s = State(int(v["trajectory"]), int(v["frame"]))
        try:
            graph.check_state(s)
            ok = math.dist(graph.position(s), (task.goal["x"], task.goal["y"])) <= 1.0
        except UrbanGymError:
            ok = False
        if not ok:
            s = graph.nearest_state(float(task.goal["x"]), float(task.goal["y"]))
        pano, ph = graph.panorama(s)
        return perspective(
            pano,
            float(v["bearing"]),
            float(v.get("pitch", 10.0)),
            float(v.get("fov", 60.0)),
            size,
            pano_heading=ph,
        )
    if kind == "candidates":
        return candidate_sheet(task, graph, size)
    raise TaskError(f"task {task.id!r}: unknown reference image {kind!r}")


def candidate_sheet(task: TaskSpec, graph: PoseGraph, size: int) -> np.ndarray:
    """The ``size`` x ``size`` sheet of a ``future_observation`` task's candidate images:
    each the view (the task's frame aspect and field of view) from its start frame along
    the candidate's bearing, labelled with its letter, two to a row.
    """
    from urban_gym.render import frame as F
    from urban_gym.render import perspective

    w, h, fov = task.goal["frame"]
    s = State(int(task.start["trajectory"]), int(task.start["frame"]))
    pano, ph = graph.panorama(s)
    cw = max(8, size // 2 - 2)
    ch = max(6, int(round(cw * float(h) / float(w))))
    cells = []
    for letter, cand in task.goal["candidates"].items():
        view = perspective(pano, float(cand["bearing"]), 0.0, float(fov), (cw, ch), pano_heading=ph)
        cells.append(F.label(view, letter, (4, 2), font_size=max(8, ch // 6), bold=True))
    sheet = F.grid(cells, 2, gap=2)
    if sheet.shape[0] > size or sheet.shape[1] > size:  # a tiny reference: squeezed
        return F.resize(sheet, size, size)
    return F.pad(sheet, size, size)


def compose_frame(view: np.ndarray, side: np.ndarray, text: str) -> np.ndarray:
    """The ``rgb_array`` frame of a PoseGraph360 env: ``view``, beside it ``side`` (a map
    or the reference image) scaled to the view's height, and under both ``text``.
    """
    from urban_gym.render import frame as F

    h = view.shape[0]
    top = F.hstack([view, F.resize(side, h, h)])
    th = max(48, h // 4)
    panel = F.text_panel(text, top.shape[1], th, font_size=max(10, th // 8), colour=(0, 0, 0))
    return F.vstack([top, panel])


def view_pano_width(width: int, fov: float) -> int:
    """Width of rendered panoramas for a ``width``-pixel view of ``fov`` degrees: as many
    pixels per degree as the view has at its centre, times about 1.27 (``4 * width`` at
    90 degrees); even, at least 256.
    """
    w = 4.0 * width / math.tan(math.radians(fov) / 2.0)
    return max(256, 2 * math.ceil(round(w, 6) / 2.0))


__all__ = [
    "WORLD_CACHE_ITEMS",
    "WorldCaches",
    "compose_frame",
    "reference_image",
    "rendered_source",
    "rendered_world",
    "task_markers",
    "view_pano_width",
    "world_caches",
]
