"""A response cache keyed by the request's hash (``--cache DIR``).

The key is the SHA-256 of the request body as sent (model, messages with their images,
sampling settings, ``extra_body``), written as canonical JSON; headers are not part of
it. A hit returns the stored completion without any HTTP request and counts *no* tokens:
the client's ``usage`` counts what the endpoint was asked for in this run, so a rerun from
a full cache costs nothing (its records show 0 tokens) and otherwise gives the same
records -- the same replies, so the same actions, steps and metrics. Hits and misses are
counted in :attr:`ResponseCache.hits` / ``misses``.

Each entry is one JSON file ``DIR/ab/abcdef....json`` written atomically (a temporary
file renamed into place), so several processes may share a cache folder.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any


def request_key(body: Mapping[str, Any]) -> str:
    """The SHA-256 (hex) of a request body as canonical JSON (sorted keys)."""
    blob = json.dumps(body, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


class ResponseCache:
    """Completions stored by request hash in a folder (see the module docstring).

    Args:
        root: the cache folder (created when missing).
    """

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        self.hits = 0
        self.misses = 0

    def _path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.json"

    def get(self, key: str) -> dict[str, Any] | None:
        """The stored entry of ``key`` (``text``, ``model``, ``usage``, ``finish_reason``),
        or None (a missing or unreadable entry is a miss).
        """
        try:
            data = json.loads(self._path(key).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            self.misses += 1
            return None
        if not isinstance(data, dict) or not isinstance(data.get("text"), str):
            self.misses += 1
            return None
        self.hits += 1
        return data

    def put(self, key: str, entry: Mapping[str, Any]) -> None:
        """Store ``entry`` under ``key`` (atomically)."""
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                json.dump(dict(entry), f, ensure_ascii=False)
            os.replace(tmp, path)
        except BaseException:
            if os.path.exists(tmp):
                os.unlink(tmp)
            raise
