"""The `.loopgen/` folder beside a rendered script: the merge base of its next re-render.

For `train.py` it holds
- `train.py.base`: the last clean render, as loopgen wrote it. Commit it with the spec: it is
  what a later `loopgen render` diffs against to tell your edits from the spec's changes.
- `train.py.orig`, `train.py.orig.base`: your file as it was before the last render that changed
  it, and the clean render it was edited from. Local backups, git-ignored.

A script's header records the checksum of the clean render it came from, so the base is found by
checksum, never guessed: after restoring `train.py.orig`, the next render merges against
`train.py.orig.base`."""

from __future__ import annotations

from pathlib import Path

from ..render import stamp
from .files import read_text, write_atomic

FOLDER = ".loopgen"

GITIGNORE = """\
# Written by loopgen. Commit the *.base files: each is the last clean render of a script, the
# merge base that lets `loopgen render` keep your edits. The *.orig files are local backups.
*.orig
*.orig.base
"""


def base_path(script: Path) -> Path:
    return script.parent / FOLDER / f"{script.name}.base"


def backup_path(script: Path) -> Path:
    return script.parent / FOLDER / f"{script.name}.orig"


def find_base(script: Path, checksum: str | None) -> str | None:
    """The clean render whose checksum the script's header records, if loopgen kept it."""
    if checksum is None:
        return None
    for path in (base_path(script), _backup_base_path(script)):
        if path.is_file():
            text = read_text(path)
            if stamp.recorded(text) == checksum and stamp.is_unedited(text):
                return text
    return None


def keep_backup(script: Path, text: str, base: str | None) -> Path:
    """Keeps the user's file (and the render it was edited from) before a render changes it;
    returns where the file went."""
    _ensure_folder(script)
    write_atomic(backup_path(script), text)
    if base is not None:
        write_atomic(_backup_base_path(script), base)
    else:
        _backup_base_path(script).unlink(missing_ok=True)
    return backup_path(script)


def store_base(script: Path, render: str) -> None:
    _ensure_folder(script)
    path = base_path(script)
    if not path.is_file() or read_text(path) != render:
        write_atomic(path, render)


def _backup_base_path(script: Path) -> Path:
    return script.parent / FOLDER / f"{script.name}.orig.base"


def _ensure_folder(script: Path) -> None:
    ignore = script.parent / FOLDER / ".gitignore"
    if not ignore.is_file():
        write_atomic(ignore, GITIGNORE)
