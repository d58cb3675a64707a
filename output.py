"""Writing generated files: atomically, and never over a file loopgen did not write."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from .errors import OutputError

MARKER = "Written by loopgen"
"""Every generated script carries this in its header."""


def write_script(path: Path, source: str, *, force: bool = False) -> None:
    """Writes `source` to `path` via a temporary file and a rename: an interrupted write
    leaves the old file whole, never half a script."""
    try:
        _write(path, source, force=force)
    except OSError as error:  # unwritable directory, a file where a directory should be, ...
        raise OutputError(
            f"cannot write {path}: {error.strerror or error}"
            + (f" ({error.filename})" if error.filename else "")
            + "; choose another -o path"
        ) from None


def _write(path: Path, source: str, *, force: bool) -> None:
    if path.is_dir():
        raise OutputError(f"{path} is a directory; pass a file name, e.g. {path / 'train.py'}")
    if path.exists() and not force and MARKER not in path.read_text(errors="replace")[:2000]:
        raise OutputError(
            f"{path} exists and was not written by loopgen; refusing to overwrite it. "
            "Choose another -o path, or pass --force to replace it"
        )
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(source)
        if path.exists():
            os.chmod(tmp, path.stat().st_mode & 0o777)
        else:
            os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
