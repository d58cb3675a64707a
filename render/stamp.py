"""A checksum of the generated script, written into its own header, so that loopgen can tell a
script it wrote and nobody touched from one that was edited by hand."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

PLACEHOLDER = "0" * 16
"""Stands in the header while the checksum is computed."""

_STAMP = re.compile(r"(?:script|runtime) sha256 ([0-9a-f]{16})\b")
"""The field: `script sha256` in a script's header, `runtime sha256` in the runtime's."""


def stamp(source: str, field: str = "script") -> str:
    """Fills the header's `script sha256` (or `runtime sha256`) with the checksum of the file
    around it."""
    if _STAMP.search(source) is None:
        raise ValueError(f"the rendered file has no `{field} sha256` field in its header")
    return source.replace(f"{field} sha256 {PLACEHOLDER}", f"{field} sha256 {digest(source)}", 1)


def is_unedited(text: str) -> bool:
    """Whether `text` is exactly what loopgen wrote (its checksum still matches)."""
    found = _STAMP.search(text)
    if found is None:
        return False
    blank = text[: found.start(1)] + PLACEHOLDER + text[found.end(1) :]
    return found.group(1) == digest(blank)


def recorded(text: str) -> str | None:
    """The checksum a script's header records: that of the clean render it started from (None
    when the header no longer has one)."""
    found = _STAMP.search(text)
    return found.group(1) if found else None


@dataclass(frozen=True)
class Header:
    """What a script's header says about the render it came from."""

    version: str | None
    spec_file: str | None
    spec_hash: str | None
    flags: str
    """The `--variant`/`--set` flags it was rendered with, as one string ("" for none)."""


def header(text: str) -> Header:
    head = text[:4000]

    def field(pattern: str) -> str | None:
        found = re.search(pattern, head)
        return found.group(1) if found else None

    return Header(
        version=field(r"Written by loopgen (\S+) from"),
        spec_file=field(r"Written by loopgen \S+ from (.+)\n"),
        spec_hash=field(r"spec sha256 ([0-9a-f]{16})\b"),
        flags=field(r"\nRendered with: (.*)\n") or "",
    )


def digest(text: str) -> str:
    """The first 16 hex digits of the sha256 of `text`: loopgen's checksums."""
    return hashlib.sha256(text.encode()).hexdigest()[:16]
