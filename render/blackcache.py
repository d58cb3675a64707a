"""black, one top-level definition at a time, each formatted once.

Formatting a whole script with black takes most of a render (about 0.2 s of it for 800 lines
on a 2-core machine), yet most of a script is the same text from one render to the next: the
helpers (`restore_newest`, `RunLog`, ...) do not depend on the spec, and re-rendering a spec
changes a few of its definitions. So the script is cut before each top-level `def` and
`class` (found with `ast`, never inside a string), each piece is formatted on its own, and the
result is kept under the sha256 of the piece and black's version, the way black's own cache
skips files it has seen. Black separates top-level definitions by exactly two blank lines,
which is how the pieces are joined again: the golden-file tests compare every example and
strategy with black's formatting of the whole file.

The cache lives in `$XDG_CACHE_HOME/loopgen/black` (`~/.cache/...`); a cache that cannot be
written is not used, and black itself is imported only when a piece is new.
"""

from __future__ import annotations

import hashlib
import itertools
import os
import re
import types

from ..dsl import cache

try:  # the module black reads its own version from, without scanning every distribution
    from _black_version import version as BLACK_VERSION
except ImportError:  # pragma: no cover - a black built without it
    from importlib.metadata import version

    BLACK_VERSION = version("black")

TARGET_VERSIONS = ("PY36", "PY37", "PY38", "PY39", "PY310", "PY311", "PY312", "PY313", "PY314",
                   "PY315")  # fmt: skip
"""The versions black infers for a script that uses f-strings: given to every piece, since a
piece without an f-string would be inferred to run on Python 3.3 too, and lose the trailing
comma black puts after `**kwargs`. A script using a newer feature narrows what black infers,
but not the features its output depends on (a test checks this on every golden file)."""

_LINES = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$")
"""Lines as Python's parser counts them: str.splitlines() also splits at \\v, \\f, \\x1c-\\x1e,
\\x85, \\u2028 and \\u2029, which a docstring may hold."""


def format_source(source: str, filename: str = "<script>") -> str:
    """`black.format_str(source, mode=black.Mode())`, piece by piece, from the cache. Raises
    SyntaxError for what the parser or the compiler refuses (black parses leniently: duplicate
    arguments pass), which black's output, the same syntax tree, would have too."""
    script = compile(source, filename, "exec")
    folder = cache.folder("black")
    first, *rest = pieces(source, script)
    # The module docstring (the spec's description, any size) goes around black when black
    # would leave it as it is: black's time grows with it (a 10 MB description took 11 s).
    first, docstring = _lift_docstring(first)
    formatted = [_format_piece(first, folder), *(_format_piece(piece, folder) for piece in rest)]
    if docstring is not None:
        formatted[0] = formatted[0].replace(DOCSTRING_PLACEHOLDER, docstring, 1)
    return "\n\n".join(formatted)


DOCSTRING_PLACEHOLDER = "loopgen-docstring-placeholder"
"""What stands for the module docstring while black formats the script's first piece."""


def _lift_docstring(piece: str) -> tuple[str, str | None]:
    """The piece with its opening docstring's text replaced by DOCSTRING_PLACEHOLDER, and that
    text, when black would leave the text unchanged: lines without tabs or trailing
    whitespace, none indented (black strips a common indentation), not ending in a quote or a
    backslash, without carriage returns. Else the piece as it is and None."""
    if not piece.startswith('"""') or DOCSTRING_PLACEHOLDER in piece:
        return piece, None
    end = piece.find('"""', 3)
    if end < 0:
        return piece, None
    text = piece[3:end]
    lines = text.split("\n")
    stable = (
        text
        and not text[0].isspace()
        and text[-1] not in '"\\ \t'
        and "\t" not in text
        and "\r" not in text
        and "\\" not in text
        and all(line == line.rstrip() for line in lines)
        and all(not line[:1].isspace() for line in lines[1:])
        and all(
            not any(c in line for c in "\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029") for line in lines
        )
    )
    if not stable:
        return piece, None
    return piece[:3] + DOCSTRING_PLACEHOLDER + piece[end:], text


def pieces(source: str, script: types.CodeType | None = None) -> list[str]:
    """`source` cut before each top-level def and class (its decorators included) that a blank
    line separates from what precedes it; a comment right above one keeps them together.

    The definitions are read off the compiled module, which the compiler check builds anyway
    (a second parse, to a syntax tree, cost a few percent of a render): each def and class of
    the module is a code object among its constants, starting at its first decorator, and one
    starting in column 0 is a top-level statement (a def inside a top-level `if` is indented;
    lambdas and comprehensions, named `<...>`, are no definitions)."""
    lines = _LINES.findall(source)
    starts = {0}
    for const in (script or compile(source, "<script>", "exec")).co_consts:
        if isinstance(const, types.CodeType) and not const.co_name.startswith("<"):
            first = const.co_firstlineno - 1
            if first > 0 and not lines[first][:1].isspace() and not lines[first - 1].strip():
                starts.add(first)
    bounds = [*sorted(starts), len(lines)]
    return ["".join(lines[a:b]) for a, b in itertools.pairwise(bounds) if b > a]


def _format_piece(piece: str, folder: str | None) -> str:
    mode = f"black {BLACK_VERSION} {','.join(TARGET_VERSIONS)}"
    key = hashlib.sha256(f"{mode}\0{piece}".encode()).hexdigest()
    path = folder and os.path.join(folder, key[:2], key)
    if path:
        try:
            with open(path, encoding="utf-8") as f:
                return f.read()
        except OSError:
            pass
    import black  # only for a piece not seen before

    try:
        targets = {black.TargetVersion[name] for name in TARGET_VERSIONS}
        formatted = black.format_str(piece, mode=black.Mode(target_versions=targets))
    except black.InvalidInput as error:  # what ast parsed, black did not: report it alike
        raise SyntaxError(f"black: {error}") from error
    if path:
        cache.write(path, formatted)
    return formatted
