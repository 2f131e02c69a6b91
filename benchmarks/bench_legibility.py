"""What a language model can read: shop signs in each family's language-model view, by OCR.

For a fixed seeded sample of named Helsinki places whose signboard hangs on a facade, the
script stands a viewer in front of the sign at 8 m and 15 m, straight on and 30°, 45°,
60° and 75° off the facade's normal to one side (the same distance from the sign's
centre; at 60° from 8 m and at 75° the viewer stands within 4 m of the facade, on the
walkway, as a walker looking along the street does; nearer the normal, farther out in the
street), and renders the view each family sends a
language model by default (:func:`urban_gym.wrappers.make_lmm_env`: its size, field of
view, pitch, and for the panorama families the panorama the view is cut from), by day and
by night (``--times``; ``--families`` picks families). ``--no-blades`` draws no projecting
signs (:mod:`urban_gym.render.blades`): the "before" of the blade signs; the sample is
chosen without them either way. The viewer faces the sign; where the family's camera tilts (CityWalk,
PoseGraph360) and the board would leave the view's top or bottom, it looks up at the
board's middle (StreetGraph keeps its fixed tilt). A place enters the sample only if all
viewpoints stand in the open and see the facade board whole: five points across it are
checked in the renderer's instance ids (blades off).

Each view's sign regions (the bounding box of each connected patch of the board's
instance id -- the flat board, the blade -- with a margin) are cut out of the rendered image, turned grey, enlarged with bicubic interpolation so the
board is about 64 px tall (the view's own pixels: nothing is added), binarised, cleared
of what touches the crop's edge (the board's frame, the facade), and read
by the Tesseract OCR engine (``tesseract-ocr``, through ``pytesseract``) as one line and,
failing that, as a block; the best-read patch counts. A name counts as read when the
normalised similarity (``difflib`` ratio of the casefolded letters and digits, accents
dropped) between
the name and the best-matching stretch of the OCR text is at least 0.8. As an upper
bound, the sign textures themselves are read the same way.

Prints, per family and view size, the share of names read at each distance and angle,
day and night, and writes a contact sheet PNG (default
``docs/images/legibility_sheet.png``): a few sampled signs as each family sees them
(native pixels, enlarged without smoothing), green when read, red when not.

Goal: at least 90 % read at 8 m and 75 % at 15 m straight on, by day, at the
language-model defaults.

Run: ``python benchmarks/bench_legibility.py [--n 40] [--seed 0] [--sheet PATH]``.
Needs the ``tesseract`` command (Debian: ``apt-get install tesseract-ocr``).
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import cv2
import numpy as np
from PIL import Image

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from urban_gym.render import (  # noqa: E402
    FirstPersonRenderer,
    PanoramaRenderer,
    blades,  # noqa: E402
)
from urban_gym.render.camera import remap_maps  # noqa: E402
from urban_gym.render.conditions import Conditions  # noqa: E402
from urban_gym.render.ids import sign_id  # noqa: E402
from urban_gym.render.legibility import (  # noqa: E402
    READ_THRESHOLD,
    norm_text,
    ocr_similarity,
    read_sign,
    sign_patches,
)
from urban_gym.render.scene import scene_for  # noqa: E402
from urban_gym.world import load_city  # noqa: E402

DISTANCES_M = (8.0, 15.0)
ANGLES_DEG = (0.0, 30.0, 45.0, 60.0, 75.0)
TIMES = ("day", "night")
EYE_M = 1.6
GOAL = {8.0: 0.90, 15.0: 0.75}


# ---------------------------------------------------------------------- the views
@dataclass(frozen=True)
class ViewSpec:
    """How a family's language-model face renders a view."""

    family: str
    size: tuple[int, int]  # (width, height) pixels
    fov: float  # horizontal, degrees
    pitch: float  # degrees above the horizon
    pano_width: int | None  # None: cast directly (first person)
    pitchable: bool = True  # the agent can tilt the camera (StreetGraph's views are fixed)

    @property
    def label(self) -> str:
        w, h = self.size
        src = f"from a {self.pano_width}-px panorama" if self.pano_width else "cast directly"
        return f"{self.family} {w}x{h}, {self.fov:g}° fov, pitch {self.pitch:g} ({src})"


def _wh(v) -> tuple[int, int]:
    if isinstance(v, (int, np.integer)):
        return int(v), int(v)
    return int(v[0]), int(v[1])


def lmm_view_specs() -> list[ViewSpec]:
    """The view of each family's language-model face, read from the envs that
    :func:`~urban_gym.wrappers.make_lmm_env` builds by default."""
    from urban_gym.families.streetgraph import env as sg
    from urban_gym.wrappers import make_lmm_env

    specs = []
    env = make_lmm_env("UrbanGym/CityWalk-v0")
    u = env.unwrapped
    size = getattr(u, "view_wh", None) or _wh(u.view_size)
    specs.append(ViewSpec("CityWalk", _wh(size), float(u.fov), 0.0, None))
    env.close()
    env = make_lmm_env("UrbanGym/PoseGraph360-v0")
    u = env.unwrapped
    pano = int(u._world["pano_width"])
    specs.append(ViewSpec("PoseGraph360", _wh(u.view_wh), float(u.fov), 0.0, pano))
    env.close()
    env = make_lmm_env("UrbanGym/StreetGraph-v0")
    u = env.unwrapped
    specs.append(
        ViewSpec(
            "StreetGraph", _wh(u.image_wh), sg.VIEW_FOV, sg.VIEW_PITCH, int(u.pano_width), False
        )
    )
    env.close()
    return specs


class Viewer:
    """Renders ``spec`` views (RGB and instance ids); panoramas are shared between
    specs of the same panorama width."""

    def __init__(self, city, specs: list[ViewSpec]) -> None:
        self.city = city
        self.fp = {
            s: FirstPersonRenderer(city, s.size[0], s.size[1], fov=s.fov)
            for s in specs
            if s.pano_width is None
        }
        widths = {s.pano_width for s in specs if s.pano_width}
        self.pano = {w: PanoramaRenderer(city, w, w // 2) for w in widths}
        self._cache: dict = {}

    def view(self, spec: ViewSpec, x: float, y: float, yaw: float, tod: str, pitch: float):
        """``(rgb, ids)`` of ``spec``'s view from ``(x, y)`` along ``yaw``, tilted to
        ``pitch`` degrees."""
        cond = Conditions(time_of_day=tod)
        if spec.pano_width is None:
            r = self.fp[spec].render(x, y, yaw, pitch, conditions=cond, ids=True)
            return r.rgb, r.ids
        key = (spec.pano_width, x, y, tod)
        if key not in self._cache:
            self._cache.clear()
            self._cache[key] = self.pano[spec.pano_width].render(x, y, conditions=cond, ids=True)
        r = self._cache[key]
        m1, m2 = remap_maps(spec.size, spec.fov, pitch, yaw, r.rgb.shape[:2], 0.0)
        rgb = cv2.remap(r.rgb, m1, m2, cv2.INTER_LINEAR, borderMode=cv2.BORDER_WRAP)
        mx, my = cv2.convertMaps(m1, m2, cv2.CV_32FC1)
        halves = r.ids.view(np.uint16).reshape(r.ids.shape[0], r.ids.shape[1], 2)
        ids = cv2.remap(halves, mx, my, cv2.INTER_NEAREST, borderMode=cv2.BORDER_WRAP)
        ids = np.ascontiguousarray(ids).view(np.int32).reshape(spec.size[1], spec.size[0])
        return rgb, ids


def view_pitch(spec: ViewSpec, scene, smp, pose) -> float:
    """The pitch a viewer uses to look at the sign: the family's own (level, or
    StreetGraph's fixed tilt), or, where the camera tilts and the board would leave the
    view's top or bottom (a board stacked high, close by, in a wide view), the elevation of
    the board's middle."""
    if not spec.pitchable:
        return spec.pitch
    s = scene.poi_sign[smp.poi]
    (cx, cy), _, _ = _sign_geometry(scene, s)
    d = max(math.hypot(cx - pose.x, cy - pose.y), 0.5)
    w, h = spec.size
    half_v = math.degrees(math.atan(math.tan(math.radians(spec.fov) / 2) * h / w))
    top = math.degrees(math.atan2(s.z1 - EYE_M, d))
    bottom = math.degrees(math.atan2(s.z0 - EYE_M, d))
    if top < spec.pitch + half_v - 2.0 and bottom > spec.pitch - half_v + 2.0:
        return spec.pitch
    return round(math.degrees(math.atan2(0.5 * (s.z0 + s.z1) - EYE_M, d)), 1)


# ---------------------------------------------------------------------- the sample
@dataclass(frozen=True)
class Pose:
    """A viewpoint in front of a sign."""

    distance: float
    angle: float
    x: float
    y: float
    yaw: float


@dataclass(frozen=True)
class Sample:
    """A sampled place, its sign's instance id and the four viewpoints."""

    poi: int
    name: str
    sid: int
    poses: tuple[Pose, ...]


def _sign_geometry(scene, s):
    """Centre (x, y), unit direction along the wall, outward normal, mid height."""
    L = float(scene.length[s.seg])
    dx, dy = float(scene.dx[s.seg]) / L, float(scene.dy[s.seg]) / L
    um = 0.5 * (s.u0 + s.u1)
    cx, cy = float(scene.ax[s.seg]) + um * dx, float(scene.ay[s.seg]) + um * dy
    return (cx, cy), (dx, dy), (float(scene.nx[s.seg]), float(scene.ny[s.seg]))


def _poses(city, scene, s, side: float) -> tuple[Pose, ...] | None:
    (cx, cy), _, (nx, ny) = _sign_geometry(scene, s)
    out = []
    for d in DISTANCES_M:
        for a in ANGLES_DEG:
            t = math.radians(a * side)
            vx = nx * math.cos(t) - ny * math.sin(t)
            vy = nx * math.sin(t) + ny * math.cos(t)
            x, y = cx + d * vx, cy + d * vy
            if not city.contains(x, y) or city.building_at(x, y) is not None:
                return None
            yaw = math.degrees(math.atan2(cx - x, cy - y)) % 360.0
            out.append(Pose(d, a, x, y, yaw))
    return tuple(out)


def _sees_whole_sign(probe: FirstPersonRenderer, scene, s, pose: Pose) -> bool:
    """Whether five points across the board's middle show its id in a probe view."""
    (cx, cy), (dx, dy), _ = _sign_geometry(scene, s)
    r = probe.render(pose.x, pose.y, pose.yaw, ids=True)
    w, h = probe.width, probe.height
    f = (w / 2) / math.tan(math.radians(probe.fov) / 2)
    z = 0.5 * (s.z0 + s.z1)
    half = 0.5 * (s.u1 - s.u0)
    for k in (-0.8, -0.4, 0.0, 0.4, 0.8):
        px, py = cx + k * half * dx, cy + k * half * dy
        rel = math.radians(math.degrees(math.atan2(px - pose.x, py - pose.y)) - pose.yaw)
        depth = math.hypot(px - pose.x, py - pose.y) * math.cos(rel)
        if depth <= 0.5:
            return False
        col = int(w / 2 + f * math.tan(rel))
        row = int(h / 2 - f * (z - EYE_M) / depth)
        if not (0 <= col < w and 0 <= row < h) or r.ids[row, col] != sign_id(s.poi):
            return False
    return True


def sample_signs(city, n: int, seed: int) -> list[Sample]:
    """``n`` named places (seeded) whose sign every viewpoint sees whole."""
    scene = scene_for(city)
    scene.ensure_signs()
    probe = FirstPersonRenderer(city, 320, 320, fov=90.0)
    was = blades.enabled()
    blades.set_enabled(False)  # the same sample with blades or without
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(scene.signs))
    names = set()
    out: list[Sample] = []
    for i in order:
        s = scene.signs[int(i)]
        name = city.pois[s.poi].name
        if name in names or len(norm_text(name)) < 3:
            continue
        for side in (1.0, -1.0) if rng.random() < 0.5 else (-1.0, 1.0):
            poses = _poses(city, scene, s, side)
            if poses and all(_sees_whole_sign(probe, scene, s, p) for p in poses):
                out.append(Sample(s.poi, name, sign_id(s.poi), poses))
                names.add(name)
                break
        if len(out) >= n:
            break
    blades.set_enabled(was)
    return out


# ---------------------------------------------------------------------- reading
def sign_crop(rgb: np.ndarray, ids: np.ndarray, sid: int) -> np.ndarray | None:
    """The largest patch of the board's id (for the contact sheet), or None."""
    got = sign_patches(rgb, ids, sid)
    return got[0] if got else None


# ---------------------------------------------------------------------- the sheet
def _cell(img: np.ndarray | None, ok: bool, text: str, cw: int, ch: int) -> np.ndarray:
    cell = np.full((ch, cw, 3), 255, np.uint8)
    cv2.rectangle(cell, (0, 0), (cw - 1, ch - 1), (40, 160, 60) if ok else (200, 40, 40), 3)
    if img is not None and img.size:
        ih, iw = img.shape[:2]
        k = min((cw - 8) / iw, (ch - 24) / ih)
        big = cv2.resize(
            img, (max(1, int(iw * k)), max(1, int(ih * k))), interpolation=cv2.INTER_NEAREST
        )
        y0, x0 = 4 + (ch - 24 - big.shape[0]) // 2, (cw - big.shape[1]) // 2
        cell[y0 : y0 + big.shape[0], x0 : x0 + big.shape[1]] = big
    cv2.putText(cell, text[:34], (5, ch - 7), cv2.FONT_HERSHEY_SIMPLEX, 0.38, (0, 0, 0), 1)
    return cell


def contact_sheet(cells, specs, samples, path: Path, rows: int = 6) -> None:
    """Rows: sampled signs by day then night; columns: family x viewpoint."""
    cw, ch = 190, 96
    head_h = 40
    poses = [(d, a) for d in DISTANCES_M for a in ANGLES_DEG]
    cols = [(s, p) for s in specs for p in poses]
    chosen = samples[:rows]
    grid_rows = [(tod, smp) for tod in TIMES for smp in chosen]
    label_w = 200
    sheet = np.full((head_h + ch * len(grid_rows), label_w + cw * len(cols), 3), 255, np.uint8)
    for j, (spec, (d, a)) in enumerate(cols):
        x = label_w + j * cw
        w, h = spec.size
        cv2.putText(sheet, f"{spec.family} {w}x{h}", (x + 4, 16), 0, 0.42, (0, 0, 0), 1)
        cv2.putText(sheet, f"{d:g} m, {a:g} deg", (x + 4, 33), 0, 0.42, (0, 0, 0), 1)
    for i, (tod, smp) in enumerate(grid_rows):
        y = head_h + i * ch
        cv2.putText(sheet, f"{tod}: {smp.name[:22]}", (4, y + ch // 2), 0, 0.4, (0, 0, 0), 1)
        for j, (spec, (d, a)) in enumerate(cols):
            img, ok, sim = cells[(spec, smp.poi, d, a, tod)]
            sheet[y : y + ch, label_w + j * cw : label_w + (j + 1) * cw] = _cell(
                img, ok, f"similarity {sim:.2f}", cw, ch
            )
    path.parent.mkdir(parents=True, exist_ok=True)
    # a 256-colour palette keeps the sheet small enough to commit
    Image.fromarray(sheet).quantize(256, method=Image.Quantize.MEDIANCUT).save(path, optimize=True)


# ---------------------------------------------------------------------- main
def _texture_bound(city, scene, samples) -> float:
    from urban_gym.render.textures import render_sign, sign_colours

    read = 0
    for smp in samples:
        p = city.pois[smp.poi]
        s = scene.poi_sign[smp.poi]
        lines = 2 if (s.z1 - s.z0) > 1.5 else 1
        tex = render_sign(p.name, *sign_colours(p.id, p.category), lines)
        read += read_sign(tex.image, p.name)[0] >= READ_THRESHOLD
    return read / max(1, len(samples))


def text_height_px(spec: ViewSpec, distance: float) -> float:
    """Height in pixels of a capital letter of a sign seen straight on from ``distance``
    metres, near the middle of ``spec``'s view (a panorama-cut view is limited by its
    panorama's resolution)."""
    from urban_gym.render.textures import sign_cap_height_m

    f = (spec.size[0] / 2) / math.tan(math.radians(spec.fov) / 2)
    if spec.pano_width:
        f = min(f, spec.pano_width / (2 * math.pi))
    return f * sign_cap_height_m() / distance


def _pose_label(d: float, a: float) -> str:
    return f"{d:g} m {'straight' if a == 0 else f'{a:g}° oblique'}"


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark; returns 0 when the goal is met, 1 otherwise."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=40, help="signs in the sample (default 40)")
    ap.add_argument("--seed", type=int, default=0, help="sample seed (default 0)")
    ap.add_argument("--sheet", default="docs/images/legibility_sheet.png")
    ap.add_argument("--no-blades", action="store_true", help="no projecting signs (before)")
    ap.add_argument("--families", default="", help="comma-separated families (default all)")
    ap.add_argument("--times", default="day,night", help="day,night (default both)")
    args = ap.parse_args(argv)
    global TIMES
    TIMES = tuple(t for t in args.times.split(",") if t)
    blades.set_enabled(not args.no_blades)
    from tqdm import tqdm

    t0 = time.perf_counter()
    city = load_city("helsinki")
    scene = scene_for(city)
    specs = lmm_view_specs()
    if args.families:
        keep = set(args.families.split(","))
        specs = [s for s in specs if s.family in keep]
    samples = sample_signs(city, args.n, args.seed)
    print(f"{len(samples)} Helsinki signs (seed {args.seed}) seen whole from every viewpoint")
    viewer = Viewer(city, specs)
    cells = {}
    missed: dict[ViewSpec, list[str]] = {}
    counts: dict[tuple, list[int]] = {}
    jobs = [(smp, tod, p) for smp in samples for tod in TIMES for p in smp.poses]
    for smp, tod, p in tqdm(jobs, desc="views", unit="view", file=sys.stderr):
        for spec in specs:
            pitch = view_pitch(spec, scene, smp, p)
            rgb, ids = viewer.view(spec, p.x, p.y, p.yaw, tod, pitch)
            crop = sign_crop(rgb, ids, smp.sid)
            sim = ocr_similarity(rgb, ids, smp.sid, smp.name)
            ok = sim >= READ_THRESHOLD
            cells[(spec, smp.poi, p.distance, p.angle, tod)] = (crop, ok, sim)
            if not ok and tod == "day" and p.angle == 0:
                missed.setdefault(spec, []).append(f"{smp.name} ({p.distance:g} m)")
            c = counts.setdefault((spec, p.distance, p.angle, tod), [0, 0])
            c[0] += int(ok)
            c[1] += 1
    n = len(samples)
    poses = [(d, a) for d in DISTANCES_M for a in ANGLES_DEG]
    print("\n### Height of a sign's capital letters in each view (pixels, straight on)\n")
    print("| view | " + " | ".join(f"{d:g} m" for d in DISTANCES_M) + " |")
    print("|---|" + "---|" * len(DISTANCES_M))
    for spec in specs:
        hs = " | ".join(f"{text_height_px(spec, d):.1f}" for d in DISTANCES_M)
        print(f"| {spec.label} | {hs} |")
    print("\n### Names read by Tesseract (similarity >= 0.8)\n")
    print(
        "| view (language-model default) | light | "
        + " | ".join(_pose_label(*q) for q in poses)
        + " |"
    )
    print("|---|---|" + "---|" * len(poses))
    met = True
    for spec in specs:
        for tod in TIMES:
            row = []
            for d, a in poses:
                k, tot = counts.get((spec, d, a, tod), [0, 0])
                row.append(f"{k}/{tot} ({100 * k / max(1, tot):.0f} %)")
                if tod == "day" and a == 0 and k / max(1, tot) < GOAL[d]:
                    met = False
            print(f"| {spec.label} | {tod} | " + " | ".join(row) + " |")
    for spec in specs:
        names = missed.get(spec, [])
        more = f" ... ({len(names)} in all)" if len(names) > 8 else ""
        print(f"not read by day straight on, {spec.family}: {', '.join(names[:8]) or '-'}{more}")
    bound = _texture_bound(city, scene, samples)
    print(f"\nsign textures themselves (upper bound): {100 * bound:.0f} % of {n} read")
    print(
        "goal: >= 90 % at 8 m and >= 75 % at 15 m straight on, by day, every family: "
        + ("met" if met else "NOT met")
    )
    contact_sheet(cells, specs, samples, Path(args.sheet))
    print(f"contact sheet: {args.sheet}; {time.perf_counter() - t0:.0f} s")
    return 0 if met else 1


if __name__ == "__main__":
    raise SystemExit(main())
