"""Light and weather under which a scene is rendered.

:class:`Conditions` is a small frozen value object. Renderers read it; the same conditions
(including ``seed``) always give the same pixels, so randomness such as rain streaks, lit
windows at night or stars is drawn from ``numpy.random.default_rng(seed)`` only.
"""

from __future__ import annotations

from dataclasses import dataclass

from urban_gym.errors import RenderError

#: Valid values of :attr:`Conditions.time_of_day`.
TIMES_OF_DAY: tuple[str, ...] = ("day", "dusk", "night")
#: Valid values of :attr:`Conditions.weather`.
WEATHERS: tuple[str, ...] = ("clear", "fog", "rain")


@dataclass(frozen=True)
class Conditions:
    """Time of day and weather of a rendering.

    Attributes:
        time_of_day: ``"day"``, ``"dusk"`` or ``"night"`` (dark sky, lit signs and windows).
        weather: ``"clear"``, ``"fog"`` (contrast fades with distance; visibility about
            60 m) or ``"rain"`` (grey sky, light haze, rain streaks).
        seed: integer seed of every random detail (rain streaks, stars, which windows are
            lit at night). Same seed, same image.
    """

    time_of_day: str = "day"
    weather: str = "clear"
    seed: int = 0

    def __post_init__(self) -> None:
        if self.time_of_day not in TIMES_OF_DAY:
            raise RenderError(
                f"Conditions time_of_day={self.time_of_day!r} is not one of {TIMES_OF_DAY}"
            )
        if self.weather not in WEATHERS:
            raise RenderError(f"Conditions weather={self.weather!r} is not one of {WEATHERS}")
        if isinstance(self.seed, bool) or not isinstance(self.seed, int):
            raise RenderError(f"Conditions seed={self.seed!r} must be an int")

    @property
    def label(self) -> str:
        """Short text such as ``"night, rain"``."""
        return f"{self.time_of_day}, {self.weather}"

    @classmethod
    def from_dict(cls, d: dict) -> Conditions:
        """Build from a dict with the keys ``time_of_day``, ``weather``, ``seed`` (all
        optional); an unknown key raises :class:`RenderError` listing the valid ones.
        """
        valid = ("time_of_day", "weather", "seed")
        bad = sorted(set(d) - set(valid))
        if bad:
            raise RenderError(f"Conditions: unknown key(s) {bad}; valid keys: {list(valid)}")
        return cls(**d)

    def to_dict(self) -> dict:
        """The fields as a JSON-serialisable dict."""
        return {"time_of_day": self.time_of_day, "weather": self.weather, "seed": self.seed}
