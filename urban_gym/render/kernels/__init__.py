"""The compiled path of the ray caster and the switch between it and the numpy reference.

The column caster's hot passes -- the candidate walls of a view, wall hits per column,
the texture coordinates, depth and ids of every pixel and the boards (one call per
frame: :mod:`urban_gym.render.kernels.frame`), the sprite plan and blit, the blade
signs' band rows and blit -- and the map's
label layout have a numba version (:mod:`urban_gym.render.kernels.columns`,
:mod:`urban_gym.render.kernels.maps`, gathered in :mod:`urban_gym.render.kernels.jit`)
that gives what the numpy reference in :mod:`urban_gym.render.raycast`,
:mod:`urban_gym.render.sprites` and :mod:`urban_gym.render.map` gives (same walls, hits,
depth and ids; images equal but for rare one-level roundings), several times faster. It is the default. Where numba is not
installed, or a kernel fails to compile or to load its cache, a :class:`RuntimeWarning`
says so once and the numpy path draws instead; nothing else changes.

``URBAN_GYM_KERNELS=numpy`` in the environment (read at the first frame, and again after
:func:`set_backend`) or :func:`set_backend` selects the numpy path. Compiled kernels are
cached in the package's ``__pycache__`` (numba's ``cache=True``; numba checks the source's
timestamp, so a stale cache is recompiled, and uses a per-user folder when that one cannot
be written); ``NUMBA_CACHE_DIR`` moves it.
"""

from __future__ import annotations

import os
import threading
import warnings
from types import ModuleType

BACKENDS = ("numba", "numpy")

_lock = threading.Lock()
_state: dict[str, object] = {"backend": None, "module": None, "warned": False, "env": None}
#: the compiled module while it is the backend chosen and loaded (a frame asks a dozen times)
_ready: list[ModuleType | None] = [None]


def set_backend(name: str | None) -> None:
    """Choose ``"numba"`` (the default when it works), ``"numpy"`` (the reference), or
    None (back to the default: ``URBAN_GYM_KERNELS`` or ``"numba"``).

    Raises:
        ValueError: for another name.
    """
    if name is not None and name not in BACKENDS:
        raise ValueError(f"backend={name!r} must be one of {BACKENDS} or None")
    with _lock:
        _state["backend"] = name
        _state["env"] = None  # read URBAN_GYM_KERNELS again
        _ready[0] = None


def backend() -> str:
    """The backend drawing now: ``"numba"`` or ``"numpy"``."""
    return "numba" if compiled() is not None else "numpy"


def _wanted() -> str:
    # the environment is read once (a frame asks several times; os.environ is a slow
    # mapping) and again after set_backend
    env = _state["env"]
    if env is None:
        env = _state["env"] = os.environ.get("URBAN_GYM_KERNELS", "numba")
    name = _state["backend"] or env
    if name not in BACKENDS:
        raise ValueError(f"URBAN_GYM_KERNELS={name!r} must be one of {BACKENDS}")
    return str(name)


def compiled() -> ModuleType | None:
    """The module of compiled kernels, or None where the numpy path draws."""
    ready = _ready[0]
    if ready is not None:
        return ready
    if _wanted() == "numpy":
        return None
    mod = _state["module"]
    if mod is None and not _state["warned"]:
        with _lock:
            if _state["module"] is None and not _state["warned"]:
                try:
                    from urban_gym.render.kernels import jit

                    _state["module"] = jit
                except Exception as exc:  # noqa: BLE001 - any failure means the numpy path
                    disable(exc)
        mod = _state["module"]
    if mod is not None:
        with _lock:  # a set_backend meanwhile is not undone
            if _wanted() == "numba" and _state["module"] is mod:
                _ready[0] = mod if isinstance(mod, ModuleType) else None
    return mod  # type: ignore[return-value]


def call(name: str, *args):
    """The compiled kernel ``name`` applied to ``args``, or None where the numpy path must
    draw: no compiled module, or this kernel failed to compile or load (then the numpy
    path draws for the rest of the process, with one warning; see :func:`disable`). No
    kernel returns None.
    """
    k = _ready[0] or compiled()  # the loaded module without a call: a frame asks often
    if k is None:
        return None
    try:
        return getattr(k, name)(*args)
    except compile_errors() as exc:
        disable(exc)
        return None


def disable(exc: BaseException) -> None:
    """Fall back to the numpy path for the rest of the process, warning once why."""
    _state["module"] = None
    _ready[0] = None
    if not _state["warned"]:
        _state["warned"] = True
        warnings.warn(
            f"urban_gym: the compiled ray caster is not available ({type(exc).__name__}: "
            f"{exc}); drawing with the numpy path (same images, several times slower). "
            "Install numba to use it.",
            RuntimeWarning,
            stacklevel=3,
        )


def compile_errors() -> tuple[type[BaseException], ...]:
    """Exceptions that mean a kernel could not be compiled or loaded (numba's own)."""
    try:
        from numba.core.errors import NumbaError

        return (NumbaError, OSError, EOFError, ImportError)
    except ImportError:  # pragma: no cover - numba missing: nothing compiled to fail
        return (OSError,)
