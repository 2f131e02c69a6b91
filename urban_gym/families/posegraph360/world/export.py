"""Writing a pose graph's trajectories as a capture, the way a 360° camera records them.

:func:`export_capture` writes a video (or an image folder) plus its pose CSV in the format
:mod:`~urban_gym.families.posegraph360.world.capture` reads, so a rendered city can stand in for a
real capture end to end.
"""

from __future__ import annotations

import csv
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from urban_gym.families.posegraph360.world.elements import PoseGraphError, State
from urban_gym.families.posegraph360.world.graph import PoseGraph
from urban_gym.world.geo import GeoFrame


def export_capture(
    graph: PoseGraph,
    out: str | Path,
    trajectories: Sequence[int] | None = None,
    kind: str = "video",
    geo: GeoFrame | None = None,
    fps: float = 10.0,
) -> tuple[Path, Path]:
    """Write trajectories of ``graph`` (default: all) as a capture, the way a 360° camera
    would record them: ``kind="video"`` writes ``<out>/capture.mp4`` (OpenCV, mp4v) plus
    ``<out>/capture.csv``; ``kind="folder"`` writes ``<out>/frames/*.png`` plus
    ``<out>/frames/poses.csv``. With ``geo`` the CSV has ``lat``/``lon`` columns, else
    ``x``/``y``. Returns ``(capture path, pose CSV path)``.
    """
    import cv2

    if graph.source is None:
        raise PoseGraphError("export_capture needs a graph with a frame source")
    if kind not in ("video", "folder"):
        raise PoseGraphError(f"export kind={kind!r} must be 'video' or 'folder'")
    out = Path(out)
    ids = list(range(len(graph.trajectories))) if trajectories is None else list(trajectories)
    rows: list[dict[str, Any]] = []
    writer = None
    if kind == "folder":
        target = out / "frames"
        target.mkdir(parents=True, exist_ok=True)
        csv_path = target / "poses.csv"
    else:
        out.mkdir(parents=True, exist_ok=True)
        target = out / "capture.mp4"
        csv_path = out / "capture.csv"
    n = 0
    try:
        for t_id in ids:
            t = graph.trajectories[t_id]
            for i in range(t.n_frames):
                img, ph = graph.panorama(State(t_id, i))
                row: dict[str, Any] = {"trajectory": str(t_id)}
                x, y = (float(v) for v in t.xy[i])
                if geo is not None:
                    lat, lon = geo.to_latlon(x, y)
                    row.update(lat=f"{lat:.8f}", lon=f"{lon:.8f}")
                else:
                    row.update(x=f"{x:.3f}", y=f"{y:.3f}")
                row.update(heading=f"{float(t.heading[i]):.2f}", pano_heading=f"{ph:.2f}")
                bgr = cv2.cvtColor(img, cv2.COLOR_RGB2BGR)
                if kind == "folder":
                    fname = f"t{t_id:05d}_{i:04d}.png"
                    cv2.imwrite(str(target / fname), bgr)
                    row["file"] = fname
                else:
                    if writer is None:
                        h, w = bgr.shape[:2]
                        writer = cv2.VideoWriter(
                            str(target), cv2.VideoWriter.fourcc(*"mp4v"), fps, (w, h)
                        )
                        if not writer.isOpened():
                            raise PoseGraphError(f"{target}: OpenCV cannot write an mp4 video")
                    writer.write(bgr)
                    row["frame"] = n
                rows.append(row)
                n += 1
    finally:
        if writer is not None:
            writer.release()
    cols = ["trajectory", "file" if kind == "folder" else "frame"]
    cols += ["lat", "lon"] if geo is not None else ["x", "y"]
    cols += ["heading", "pano_heading"]
    with open(csv_path, "w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=cols)
        w.writeheader()
        w.writerows(rows)
    return (target if kind == "video" else target), csv_path
