"""loopgen's cache on disk, `$XDG_CACHE_HOME/loopgen/<name>` (`~/.cache/...`): what renders
compute again and again (black's formatting, compiled templates, an environment's spaces).
A cache that cannot be written is not used."""

from __future__ import annotations

import os
import tempfile


def folder(name: str) -> str | None:
    """The cache's folder `name`, made if need be; None where it cannot be."""
    root = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    path = os.path.join(root, "loopgen", name)
    try:
        os.makedirs(path, exist_ok=True)
    except OSError:
        return None
    return path


def write(path: str, text: str) -> None:
    """Atomically: a concurrent render reads the whole entry or none."""
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path))
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except OSError:
        pass
