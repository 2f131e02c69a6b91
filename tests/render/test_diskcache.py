"""Arrays kept on disk once per machine: built once, then read back memory-mapped and equal;
a corrupt file is rebuilt; an unwritable cache folder still gives the array."""

from __future__ import annotations

import numpy as np

from urban_gym.render import diskcache


def test_built_once_then_read_back(tmp_path, monkeypatch):
    monkeypatch.setenv("URBAN_GYM_CACHE", str(tmp_path))
    calls = []

    def build():
        calls.append(1)
        return np.arange(12, dtype=np.uint8).reshape(3, 4)

    a = diskcache.cached_array("probe", build, diskcache)
    b = diskcache.cached_array("probe", build, diskcache)
    assert len(calls) == 1
    np.testing.assert_array_equal(a, b)
    assert isinstance(b, np.memmap) and not b.flags.writeable
    # a truncated file is rebuilt, not trusted
    (path,) = (tmp_path / "render").glob("probe-*.npy")
    path.write_bytes(path.read_bytes()[:20])
    c = diskcache.cached_array("probe", build, diskcache)
    assert len(calls) == 2 and c.shape == (3, 4)


def test_unwritable_cache_still_builds(tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("URBAN_GYM_CACHE", str(blocker))
    a = diskcache.cached_array("probe", lambda: np.ones((2, 2), np.uint8), diskcache)
    assert a.sum() == 4
