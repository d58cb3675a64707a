"""Writing a rendered script without losing anyone's work.

`loopgen render spec.py -o train.py` when `train.py` exists:
- loopgen wrote it and nobody touched it (its header checksum still matches) → replaced;
- edited by hand → three-way merge of the last clean render (`.loopgen/train.py.base`), the
  user's file and the new render: the edits stay, the spec's changes arrive. Where both changed
  the same lines, git's conflict markers go into the file and the render fails;
- not written by loopgen → refused unless --force.
Before a render changes a hand-edited file, the file is kept as `.loopgen/train.py.orig`.

`plan()` decides without writing (what `loopgen diff` shows); `apply()` writes, each file
atomically, backups first."""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import OutputError
from ..render import stamp
from . import sidecar
from .files import make_parent, read_text, write_atomic
from .merge import Conflict, formatted, marker_lines, merge

MARKER = "Written by loopgen"
"""Every generated script carries this in its header."""

RUNTIME_FILE = "loopgen_runtime.py"
"""The runtime's name beside the scripts (the module they import)."""


class Outcome(enum.Enum):
    CREATED = "created"
    REPLACED = "replaced"  # untouched since loopgen wrote it, or --force
    UNCHANGED = "unchanged"  # nothing for the render to change
    MERGED = "merged"  # the new render merged into hand edits, cleanly
    CONFLICTS = "conflicts"  # merged, with conflict markers for the user to resolve


@dataclass(frozen=True)
class Update:
    """What a render does to `path`."""

    path: Path
    old: str | None
    """The file as it is (None: it does not exist yet)."""
    text: str
    """The file after the render."""
    render: str
    """The new clean render: the merge base of the next re-render."""
    outcome: Outcome
    conflicts: list[Conflict] = field(default_factory=list)
    backup: bool = False
    """Keep the old file in `.loopgen/` before replacing it."""
    old_base: str | None = None
    """The clean render the old file was edited from, kept with the backup."""
    broken: str | None = None
    """Why the merged script does not compile, when it does not."""

    @property
    def needs_attention(self) -> bool:
        return self.outcome is Outcome.CONFLICTS or self.broken is not None


def plan(path: Path, render: str, *, force: bool = False) -> Update:
    """Decides what rendering `render` to `path` does, without writing anything."""
    if path.is_dir():
        raise OutputError(f"{path} is a directory; pass a file name, e.g. {path / 'train.py'}")
    if not path.exists():
        return Update(path, None, render, render, Outcome.CREATED)
    old = read_text(path)
    if old == render:
        return Update(path, old, old, render, Outcome.UNCHANGED)
    checksum = stamp.recorded(old)
    if stamp.is_unedited(old):
        return Update(path, old, render, render, Outcome.REPLACED)
    if force:
        base = sidecar.find_base(path, checksum)
        return Update(path, old, render, render, Outcome.REPLACED, backup=True, old_base=base)
    if MARKER not in old[:2000]:
        raise OutputError(
            f"{path} exists and was not written by loopgen, so it was left as it is. Render to "
            f"another file (-o {path.with_suffix('.new.py').name}), or pass --force to replace "
            f"it (the current file is then kept as {sidecar.backup_path(path)})"
        )
    unresolved = marker_lines(old)
    if unresolved:
        raise OutputError(
            f"{path} still has conflict markers from the last render (lines "
            f"{', '.join(map(str, unresolved))}): resolve them and render again, or go back to "
            f"your version before that render: cp {sidecar.backup_path(path)} {path}"
        )
    base = sidecar.find_base(path, checksum)
    if base is None:
        if checksum == stamp.recorded(render):
            # The spec and loopgen are as they were: the new render is the clean render the
            # edits were made to. Nothing to merge; remember it as the base.
            return Update(path, old, old, render, Outcome.UNCHANGED)
        raise OutputError(_no_base(path, checksum))
    return _merge(path, old, base, render)


def _merge(path: Path, old: str, base: str, render: str) -> Update:
    base_name = sidecar.base_path(path).relative_to(path.parent)
    merged = merge(
        formatted(old),
        formatted(base),
        formatted(render),
        labels=(f"{path.name} (your edits)", f"last render ({base_name})", "new render"),
    )
    kept = {"backup": True, "old_base": base}
    if merged.conflicts:
        return Update(path, old, merged.text, render, Outcome.CONFLICTS, merged.conflicts, **kept)
    text = formatted(merged.text)
    if text == render:  # the edits were formatting only, or the spec now says the same
        return Update(path, old, render, render, Outcome.REPLACED, **kept)
    if text == old:
        return Update(path, old, old, render, Outcome.UNCHANGED)
    try:
        compile(text, str(path), "exec")
        broken = None
    except SyntaxError as error:  # e.g. the user's file did not compile before either
        broken = f"line {error.lineno}: {error.msg}"
    return Update(path, old, text, render, Outcome.MERGED, broken=broken, **kept)


def _no_base(path: Path, checksum: str | None) -> str:
    base = sidecar.base_path(path)
    return (
        f"{path} was edited by hand, and the clean render it was edited from (script sha256 "
        f"{checksum or 'unknown: its header was changed'}) is not in {base}, so loopgen cannot "
        "tell your edits from the spec's changes. Either check out the spec (and loopgen) as "
        f"they were when {path.name} was rendered and run this command once: it records that "
        "render and leaves your file alone; then render again. Or render to another file "
        f"(-o {path.with_suffix('.new.py').name}) and carry your edits over, or pass --force "
        f"(your file is then kept as {sidecar.backup_path(path)})"
    )


def apply(update: Update) -> None:
    """Writes what `plan()` decided: the backup, then the base, then the script, each
    atomically, so that at every moment the user's work exists somewhere whole."""
    path = update.path
    make_parent(path)
    if update.backup and update.old is not None:
        sidecar.keep_backup(path, update.old, update.old_base)
    sidecar.store_base(path, update.render)
    if update.text != update.old:
        write_atomic(path, update.text)


def write_script(path: Path, render: str, *, force: bool = False) -> Update:
    """Renders to `path`: plans, then applies. Returns what was done."""
    update = plan(path, render, force=force)
    apply(update)
    return update


def runtime_path(script: Path) -> Path:
    """Where a script's runtime goes: loopgen_runtime.py beside it."""
    return script.parent / RUNTIME_FILE


def write_rendered(path: Path, script: str, runtime: str, *, force: bool = False) -> list[Update]:
    """Renders a script to `path` and its runtime beside it, each merged into its hand edits as
    plan() decides: both planned before either is written (a file that cannot be merged stops
    the render with nothing written), then the runtime, then the script."""
    make_parent(path)  # a failure names the script asked for
    updates = [plan(runtime_path(path), runtime, force=force), plan(path, script, force=force)]
    for update in updates:
        apply(update)
    return updates


def stale_siblings(script: Path, runtime: str) -> list[Path]:
    """The other scripts beside `script` that loopgen rendered for another runtime than
    `runtime`: they stop at their start until they are rendered again."""
    wanted = re.search(r'\nRUNTIME = "([^"]+)"', runtime)
    stale = []
    for other in sorted(script.parent.glob("*.py")):
        if other.name in (script.name, RUNTIME_FILE) or not other.is_file():
            continue
        head = read_text(other)[:6000]
        found = re.search(r'\nRUNTIME = "([^"]+)"', head)
        if MARKER in head and found and wanted and found[1] != wanted[1]:
            stale.append(other)
    return stale
