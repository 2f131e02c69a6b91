"""``load_city``: one entry point for every world, with an on-disk cache.

``load_city`` accepts

* a built-in city name (see :data:`BUILTIN_CITIES`: real OpenStreetMap extracts shipped
  in the package under ODbL 1.0, e.g. ``"helsinki"``, ``"london"``, ``"munich"``,
  ``"sao_paulo"``; their provenance is :mod:`urban_gym.world.builtin`);
* a path to an OpenStreetMap file (OSM XML, PBF, OPL or Overpass JSON, plain or
  compressed, told by its content: see :mod:`urban_gym.world.osm`);
* a path to a city bundle directory written by :meth:`City.save`;
* a procedural spec ``"procedural:seed=3,blocks=4x4"`` (see
  :func:`urban_gym.world.procedural.parse_spec`).

Imported OSM worlds are cached under ``$URBAN_GYM_CACHE`` (default
``~/.cache/urban_gym``; an empty or blank value counts as unset, so the cache never lands
in the current directory by accident; pass ``cache=False`` to skip the disk cache),
keyed by the SHA-256 of the source file, the bounding box and the importer version. A
cache file starts with a header holding the SHA-256 of its payload; a file that is
truncated, altered or unreadable is rebuilt, never trusted. A cache that cannot be
written (read-only or full disk, a file where the directory should be) costs only speed:
the city loads, a :class:`~urban_gym.errors.CityLoadWarning` says why it was not cached,
and no temporary file is left behind. Within one
process, loaded worlds are also kept in memory, so environments created one after another
(or by ``gymnasium.make_vec``) share one ``City``.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import tempfile
import warnings
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import Any

from urban_gym.caching import LRUCache
from urban_gym.errors import CityLoadError, CityLoadWarning, CityNotFoundError
from urban_gym.world.builtin import BUILTIN
from urban_gym.world.city import City
from urban_gym.world.names import DEFAULT_NAMES, check_names_mode, with_names
from urban_gym.world.osm import IMPORTER_VERSION, check_bbox, import_osm

#: Built-in cities: name -> data file inside the package.
BUILTIN_CITIES: dict[str, str] = {name: c.file for name, c in BUILTIN.items()}

_MAGIC = b"URBANGYM-CITY\x00"
#: The worlds loaded in this process (never evicted: a world is loaded once per process).
_MEMO: LRUCache[tuple, City] = LRUCache(lock=True, name="world.cities")


def cache_dir() -> Path:
    """The cache directory: ``$URBAN_GYM_CACHE`` (``~`` expanded) when it is set and not
    blank, else ``~/.cache/urban_gym``.
    """
    value = os.environ.get("URBAN_GYM_CACHE", "")
    if not value.strip():
        return Path.home() / ".cache" / "urban_gym"
    return Path(value).expanduser()


def builtin_path(name: str) -> Path:
    """Path of a built-in city's data file."""
    fname = BUILTIN_CITIES[name]
    return Path(str(resources.files("urban_gym") / "data" / fname))


def file_sha256(path: Path) -> str:
    """The SHA-256 hex digest of the file at ``path`` (read in 1 MiB chunks)."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def load_city(
    spec: str | os.PathLike,
    bbox: Sequence[float] | None = None,
    cache: bool = True,
    names: str = DEFAULT_NAMES,
) -> City:
    """Load a city by name, OSM file path, bundle directory or procedural spec.

    Args:
        spec: ``"helsinki"``, ``"path/to/file.osm.pbf"``, ``"path/to/bundle_dir"`` or
            ``"procedural:seed=3,blocks=4x4"``.
        bbox: optional ``(west, south, east, north)`` degrees, for OSM sources only.
        cache: use the on-disk and in-process caches (default True).
        names: which name of each POI tasks and signs use (:mod:`urban_gym.world.names`):
            ``"local"``, ``"english"`` or ``"both"`` (default: the local name, with a
            Latin one in brackets where the local one is not in Latin script).

    Raises:
        CityLoadError: unknown name, missing or unreadable file, bad bbox, ...
        ValueError: ``names`` not one of the modes.
    """
    check_names_mode(names)
    if not isinstance(spec, (str, os.PathLike)):
        raise CityLoadError(
            f"city {spec!r} is a {type(spec).__name__}: give a city name, a file or folder "
            "path, or a 'procedural:...' spec"
        )
    return with_names(_load_source(spec, bbox, cache), names)


def _load_source(spec: str | os.PathLike, bbox: Sequence[float] | None, cache: bool) -> City:
    """:func:`load_city` before its ``names`` are applied."""
    if isinstance(spec, str) and spec.startswith("procedural:"):
        return _load_procedural(spec, bbox, cache)
    spec_s = os.fspath(spec)
    if spec_s.lower() in BUILTIN_CITIES:
        name: str | None = spec_s.lower()
        path = builtin_path(spec_s.lower())
    else:
        path = Path(spec_s).expanduser()
        if not path.exists():
            known = ", ".join(sorted(BUILTIN_CITIES))
            raise CityNotFoundError(
                f"unknown city {spec_s!r}: not a built-in city ({known}), not an existing "
                "file or bundle directory, and not a 'procedural:...' spec"
            )
        if path.is_dir():
            if bbox is not None:
                raise CityLoadError(f"bbox={bbox!r} is not supported for bundle {path}")
            return City.load(path)
        name = None
    return _load_osm(path, name, None if bbox is None else check_bbox(bbox), cache)


def _load_procedural(spec: str, bbox, cache: bool) -> City:
    """The procedural city of ``spec``: from this process's memo, else the disk cache,
    else generated (and then cached), when ``cache``.
    """
    from urban_gym.world.procedural import generate_city, parse_spec

    if bbox is not None:
        raise CityLoadError(f"bbox={bbox!r} is not supported for procedural city {spec!r}")
    params = parse_spec(spec)
    if not cache:
        return generate_city(**params)
    key = ("procedural", tuple(sorted(params.items())))
    return _MEMO.get_or_create(key, lambda: _procedural_from_disk(params))


def _procedural_from_disk(params: dict[str, Any]) -> City:
    """The procedural city of ``params`` from the disk cache, else generated and cached
    there; the cache file is named by the parameters and a hash of the world code (a
    change to the generator makes new cities).
    """
    from urban_gym.world.procedural import generate_city

    fp = (
        "procedural:"
        + hashlib.sha256(repr((sorted(params.items()), world_code_digest())).encode()).hexdigest()[
            :24
        ]
    )
    cfile = cache_dir() / f"city-{fp.replace(':', '-')}.pkl"
    city = _read_cache(cfile)
    if city is None:
        city = generate_city(**params)
        _write_cache(cfile, city)
        city.meta["loaded_from"] = "generated"
    else:
        city.meta["loaded_from"] = "cache"
    city.fingerprint = fp
    return city


_WORLD_DIGEST: list[str] = []


def world_code_digest() -> str:
    """A hash of the source of :mod:`urban_gym.world` (every ``.py`` file under it), which
    decides what a generated city holds (computed once per process).
    """
    if not _WORLD_DIGEST:
        h = hashlib.sha256()
        root = Path(__file__).resolve().parent
        for f in sorted(root.rglob("*.py")):
            h.update(f.relative_to(root).as_posix().encode())
            h.update(f.read_bytes())
        _WORLD_DIGEST.append(h.hexdigest()[:16])
    return _WORLD_DIGEST[0]


def city_fingerprint(city: City) -> str | None:
    """A name for the content of ``city`` that tells caches of derived data (rendered
    ground, signs) apart: set by :func:`load_city` for OSM and procedural cities, None for
    a city built in code or loaded from a bundle.
    """
    fp = getattr(city, "fingerprint", None)
    return fp if isinstance(fp, str) and fp else None


def _load_osm(path: Path, name: str | None, bbox, cache: bool) -> City:
    """The city of the OSM file ``path`` (cut to the checked ``bbox``): from this process's
    memo, else the disk cache, else imported (and then cached), when ``cache``.
    """
    try:
        digest = file_sha256(path)
    except FileNotFoundError as exc:
        raise CityNotFoundError(f"{path}: no such file") from exc
    except OSError as exc:
        raise CityLoadError(f"{path}: cannot read ({exc.strerror or exc})") from exc
    key = ("osm", digest, tuple(bbox) if bbox else None, IMPORTER_VERSION, name)
    if cache and (hit := _MEMO.get(key)) is not None:
        return hit
    cfile = _cache_file(digest, bbox, name)
    city = _read_cache(cfile) if cache else None
    if city is None:
        city = import_osm(path, bbox=bbox, name=name)
        city.meta["source_sha256"] = digest
        if cache:
            _write_cache(cfile, city)
        city.meta["loaded_from"] = "import"
    else:
        city.meta["loaded_from"] = "cache"
    city.fingerprint = (
        "osm:"
        + hashlib.sha256(repr((digest, bbox, name, IMPORTER_VERSION)).encode()).hexdigest()[:24]
    )
    if cache:
        _MEMO.put(key, city)
    return city


def clear_memory_cache() -> None:
    """Forget the worlds kept in this process (the disk cache stays)."""
    _MEMO.clear()


def _cache_file(digest: str, bbox, name: str | None) -> Path:
    extra = hashlib.sha256(repr((bbox, name, IMPORTER_VERSION)).encode()).hexdigest()[:12]
    return cache_dir() / f"city-{digest[:24]}-{extra}.pkl"


def _read_cache(cfile: Path) -> City | None:
    try:
        data = cfile.read_bytes()
    except OSError:
        return None
    head = len(_MAGIC) + 32
    if len(data) < head or not data.startswith(_MAGIC):
        return None
    want = data[len(_MAGIC) : head]
    payload = data[head:]
    if hashlib.sha256(payload).digest() != want:
        return None
    try:
        city = pickle.loads(payload)
    except Exception:  # a corrupt entry is rebuilt, not trusted
        return None
    return city if isinstance(city, City) else None


def _write_cache(cfile: Path, city: City) -> None:
    """Write ``city`` to ``cfile`` atomically (a temporary file, then a rename). Any
    failure warns and leaves neither ``cfile`` changed nor a temporary file behind.
    """
    tmp: str | None = None
    try:
        payload = pickle.dumps(city, protocol=pickle.HIGHEST_PROTOCOL)
        cfile.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=cfile.parent, prefix=".tmp-", suffix=".pkl")
        with os.fdopen(fd, "wb") as f:
            f.write(_MAGIC + hashlib.sha256(payload).digest() + payload)
        os.replace(tmp, cfile)
        tmp = None
    except Exception as exc:  # a cache that cannot be written only costs speed
        warnings.warn(
            f"city not cached: cannot write {cfile} ({type(exc).__name__}: {exc}); "
            "set URBAN_GYM_CACHE to a writable directory to cache imported cities",
            CityLoadWarning,
            stacklevel=3,
        )
    finally:
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass
