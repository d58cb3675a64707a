"""Atomic file writes: a temporary file in the same directory, then a rename. An interrupted
or failed write leaves the old file whole, never half a file."""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path

from ..errors import OutputError

RENDER_FIX = "choose another -o path"
"""What to do when a file cannot be written, said to most writes: renders."""


def write_atomic(path: Path, text: str, fix: str = RENDER_FIX) -> None:
    """Writes `text` to `path`, keeping the permissions of the file it replaces; `fix` ends the
    message when it cannot."""
    try:
        _write(path, text)
    except OSError as error:  # unwritable directory, a file where a directory should be, ...
        raise _cannot_write(path, error, fix) from None


def write_all(files: dict[Path, str], fix: str = RENDER_FIX) -> None:
    """Writes new files (none of them there yet) as write_atomic does, all or none: when one
    cannot be written, those written before it and the folders made for them are removed
    again. Nothing that was there before is touched."""
    for path in files:
        if os.path.lexists(path):
            raise OutputError(f"{path} already exists; {fix}")
    made: list[Path] = []
    try:
        for path, text in files.items():
            made += [p for p in reversed(path.parents) if not os.path.lexists(p)]
            write_atomic(path, text, fix)
            made.append(path)
    except OutputError:
        for path in reversed(made):
            with contextlib.suppress(OSError):
                path.rmdir() if path.is_dir() and not path.is_symlink() else path.unlink()
        raise


def make_parent(path: Path) -> None:
    """Creates the folder `path` goes in; the error names `path`, the file the user asked for."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise _cannot_write(path, error) from None


def _cannot_write(path: Path, error: OSError, fix: str = RENDER_FIX) -> OutputError:
    return OutputError(
        f"cannot write {path}: {error.strerror or error}"
        + (f" ({error.filename})" if error.filename else "")
        + f"; {fix}"
    )


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        mode = path.stat().st_mode & 0o777 if path.exists() else 0o644
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError as error:
        raise OutputError(f"cannot read {path}: {error.strerror or error}") from None
