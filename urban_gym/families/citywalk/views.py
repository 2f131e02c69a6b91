"""CityWalk's view sizes (pixels), shared by its language-model defaults and its task
generator's checks of what a start view shows.
"""

from __future__ import annotations

#: ``(width, height)`` of the language-model view: a 16:9 first-person view cast at its own
#: resolution, as UrbanGround's screenshots.
LMM_VIEW_SIZE = (960, 540)
