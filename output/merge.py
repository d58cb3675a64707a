"""Three-way merge of a hand-edited script with a new render, by `git merge-file`.

Git's merge is the one users already know: its conflict markers, its way of choosing hunks. All
three versions go through black first, so that formatting is never a conflict."""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from ..errors import OutputError

_MARKERS = re.compile(r"^(<{7}|>{7}) ", re.MULTILINE)
_OPENING = "<" * 7


@dataclass(frozen=True)
class Conflict:
    """Lines `start`..`end` (1-based, inclusive, markers included) of the merged text."""

    start: int
    end: int


@dataclass(frozen=True)
class Merged:
    text: str
    conflicts: list[Conflict]


def formatted(source: str) -> str:
    """`source` formatted as loopgen formats what it renders; unchanged when black cannot parse
    it (a script in the middle of an edit still merges, line by line)."""
    import black  # here, not at the top: a render that merges nothing does without it

    try:
        return black.format_str(source, mode=black.Mode())
    except black.InvalidInput:
        return source


def merge(mine: str, base: str, new: str, *, labels: tuple[str, str, str]) -> Merged:
    """Merges the changes from `base` to `new` into `mine`; `labels` name (mine, base, new) in
    the conflict markers."""
    git = shutil.which("git")
    if git is None:
        raise OutputError(
            "merging your edits with the new render needs git (loopgen runs `git merge-file`); "
            "install git, or pass --force to replace the script (your version is kept as a backup)"
        )
    with tempfile.TemporaryDirectory(prefix="loopgen-merge-") as tmp:
        paths = []
        for name, text in zip(("mine", "base", "new"), (mine, base, new), strict=True):
            path = Path(tmp) / name
            path.write_text(text, encoding="utf-8")
            paths.append(str(path))
        proc = subprocess.run(
            [git, "merge-file", "-p", *(a for label in labels for a in ("-L", label)), *paths],
            capture_output=True,
            text=True,
            encoding="utf-8",
        )
    # Exit status: the number of conflicts (capped at 127), negative or >127 on an error.
    if proc.returncode < 0 or proc.returncode > 127:
        raise OutputError(f"git merge-file failed: {proc.stderr.strip()}")
    return Merged(proc.stdout, conflicts(proc.stdout))


def conflicts(text: str) -> list[Conflict]:
    """The conflict regions git left in `text`."""
    found, start = [], None
    for number, line in enumerate(text.splitlines(), 1):
        if line.startswith(_OPENING + " ") and start is None:
            start = number
        elif line.startswith(">" * 7) and start is not None:
            found.append(Conflict(start, number))
            start = None
    return found


def marker_lines(text: str) -> list[int]:
    """Line numbers of the `<<<<<<< ` and `>>>>>>> ` lines in `text`: a merge not yet resolved.
    (A bare `=======` may be a docstring underline, so it does not count.)"""
    return [text.count("\n", 0, m.start()) + 1 for m in _MARKERS.finditer(text)]
