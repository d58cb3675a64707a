"""Writing generated files: atomically, and never over work loopgen did not write.

A script loopgen wrote and nobody touched is replaced; one edited by hand, or a file loopgen
did not write, is refused unless --force, which first keeps the old file as `<name>.bak`."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from .errors import OutputError
from .render.stamp import is_unedited

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
    if path.exists():
        _protect(path, force=force)
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


def _protect(path: Path, *, force: bool) -> None:
    """Refuses to overwrite someone's work without --force; with it, keeps a backup."""
    text = path.read_text(errors="replace")
    if is_unedited(text):
        return
    backup = path.with_name(path.name + ".bak")
    if not force:
        if MARKER in text[:2000]:
            problem = "was edited since loopgen wrote it; re-rendering would discard the edits"
        else:
            problem = "exists and was not written by loopgen"
        raise OutputError(
            f"{path} {problem}, so it was left as it is. Render to another file "
            f"(-o {path.with_suffix('.new.py').name}) and carry your changes over, or pass "
            f"--force to overwrite it (the current file is then kept as {backup.name})"
        )
    backup.write_bytes(path.read_bytes())
