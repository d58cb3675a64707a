"""`loopgen check`: is a script out of date with its spec? Hand edits do not count, only what a
render would bring: the script's header records the checksum of the clean render it came from,
and a fresh render of the spec has the same checksum exactly when nothing changed."""

from __future__ import annotations

from pathlib import Path

from ..errors import OutputError
from ..render import stamp
from .files import read_text
from .merge import marker_lines


class StaleScript(OutputError):
    """The script is out of date with its spec, or cannot be checked."""


def check_script(script: Path, spec_file: Path, render: str, fix: str) -> str:
    """Returns the verdict for an up-to-date `script`; raises StaleScript otherwise. `render`
    is the spec's fresh render, `fix` the command that re-renders the script."""
    if not script.is_file():
        raise StaleScript(f"{script} does not exist; render it: {fix}")
    text = read_text(script)
    recorded = stamp.recorded(text)
    if recorded is None:
        raise StaleScript(
            f"{script} has no loopgen header (its `script sha256` line), so it cannot be "
            f"checked against {spec_file}; render it again: {fix}"
        )
    unresolved = marker_lines(text)
    if unresolved:
        raise StaleScript(
            f"{script} has unresolved conflict markers from a render (lines "
            f"{', '.join(map(str, unresolved))}): resolve them, then check again"
        )
    if recorded != stamp.recorded(render):
        why = _why(stamp.header(text), stamp.header(render))
        raise StaleScript(
            f"{script} is out of date with {spec_file}: {why}. Re-render it (hand edits are "
            f"merged): {fix}"
        )
    edited = "" if stamp.is_unedited(text) else " (with hand edits)"
    return f"{script} is up to date with {spec_file}{edited}"


def _why(then: stamp.Header, now: stamp.Header) -> str:
    reasons = []
    if then.flags != now.flags:
        reasons.append(
            f"it was rendered with {then.flags or 'no flags'}, this check uses "
            f"{now.flags or 'no flags'}"
        )
    if then.spec_hash != now.spec_hash:
        reasons.append(f"the spec changed since it was rendered from {then.spec_file}")
    elif then.spec_file != now.spec_file:
        reasons.append(f"it was rendered from {then.spec_file}, not {now.spec_file}")
    if then.version != now.version:
        reasons.append(f"it was rendered by loopgen {then.version}, this is {now.version}")
    return "; ".join(reasons) or "the templates of this loopgen render it differently"
