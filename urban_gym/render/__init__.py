"""Pixels from a world: panorama ray caster, equirect -> perspective camera, first-person
views, top-down maps, light and weather conditions; the frames a person watches
(:mod:`urban_gym.render.frame`: panels, text panels, the font loader) and the marks drawn
into observations (:mod:`urban_gym.render.overlays`: the branch arrows at a junction).

Conventions: metres, x east, y north; yaw is a compass bearing in degrees clockwise from
north (0 north, 90 east); pitch is degrees above the horizon (positive up); images are
``uint8`` RGB indexed ``[row, col]`` with row 0 at the top. Rendered panoramas are
equirectangular with their centre column facing north (``pano_heading`` 0). See
:mod:`urban_gym.render.camera` for the panorama layout and :mod:`urban_gym.render.ids`
for instance ids.
"""

from urban_gym.errors import RenderError
from urban_gym.render.camera import (
    camera_cache_info,
    check_equirect,
    clear_camera_cache,
    perspective,
    perspective_batch,
)
from urban_gym.render.conditions import TIMES_OF_DAY, WEATHERS, Conditions
from urban_gym.render.firstperson import FirstPersonRenderer
from urban_gym.render.ids import (
    KINDS,
    building_id,
    decode_id,
    decode_ids,
    encode_id,
    instance_boxes,
    object_id,
    pedestrian_id,
    sign_id,
)
from urban_gym.render.map import MapMarkers, MapRenderer
from urban_gym.render.panorama import PanoramaRenderer, RenderResult

__all__ = [
    "KINDS",
    "FirstPersonRenderer",
    "MapMarkers",
    "MapRenderer",
    "PanoramaRenderer",
    "TIMES_OF_DAY",
    "WEATHERS",
    "Conditions",
    "RenderError",
    "RenderResult",
    "building_id",
    "camera_cache_info",
    "check_equirect",
    "clear_camera_cache",
    "decode_id",
    "decode_ids",
    "encode_id",
    "instance_boxes",
    "object_id",
    "pedestrian_id",
    "perspective",
    "perspective_batch",
    "sign_id",
]
