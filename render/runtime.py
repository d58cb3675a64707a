"""The runtime a script imports (runtime/loopgen_runtime.py, written beside it as
loopgen_runtime.py), and the script's link to it: the names it imports, and the standard
library modules that its own code still uses."""

from __future__ import annotations

import ast
import re
from functools import cache
from pathlib import Path

from .. import __version__
from . import stamp

SOURCE = Path(__file__).resolve().parent.parent / "runtime" / "loopgen_runtime.py"
FILE_NAME = "loopgen_runtime.py"
"""What the runtime is called beside the script (the module the script imports)."""

PLACEHOLDER = "    from loopgen_runtime import RUNTIME_NAMES"
"""The line of the templates (partials/imports.jinja) that becomes the script's import."""

NOT_IMPORTED = {"RUNTIME", "RunDirectory", "tf", "keras", "np", "mlflow_process"}
"""What a script reaches through the module (loopgen_runtime.RunDirectory, ...), not by name."""


@cache
def source() -> str:
    return SOURCE.read_text(encoding="utf-8")


@cache
def identity() -> str:
    """What a script checks that its runtime is: loopgen's version and the runtime's sha256."""
    return f"loopgen {__version__}, runtime {stamp.digest(source())}"


@cache
def render_runtime() -> str:
    """The runtime as written beside a script: the same bytes for every script of this loopgen,
    its header naming the version and the checksum of its clean text (edits are merged)."""
    text = source().replace("Written by loopgen (", f"Written by loopgen {__version__} (", 1)
    text = text.replace("\nRUNTIME = None\n", f'\nRUNTIME = "{identity()}"\n', 1)
    return stamp.stamp(text, "runtime")


@cache
def public_names() -> frozenset[str]:
    """The runtime's top-level functions, classes and constants a script may import, read from
    its source (importing it would compile 2,000 lines at every render): the `def`, `class` and
    CONSTANT lines at column 0 outside its triple-quoted strings (test_runtime.py holds them
    equal to the module's own names)."""
    names, inside = set(), False
    for line in source().split("\n"):
        if not inside:
            found = re.match(r"(?:def|class) ([A-Za-z]\w*)|([A-Z][A-Z_0-9]*) = ", line)
            if found:
                names.add(found[1] or found[2])
        inside ^= line.count('"""') % 2 == 1
    return frozenset(names) - NOT_IMPORTED


def link(script: str) -> str:
    """The formatted `script` with its import of the runtime's names that it uses, as black
    writes it, and without the standard library imports that only the runtime's code needed."""
    tree = ast.parse(script)
    used = {node.id for node in ast.walk(tree) if isinstance(node, ast.Name)}
    defined = {
        node.name
        for node in tree.body
        if isinstance(node, ast.FunctionDef | ast.ClassDef | ast.AsyncFunctionDef)
    }
    names = sorted((used & public_names()) - defined)
    kept = []
    for line in script.split("\n"):
        imported = re.fullmatch(r"import (\w+)", line)
        if imported and imported[1] not in used:
            continue  # the runtime's, now
        if line == PLACEHOLDER:
            line = f"    from loopgen_runtime import {', '.join(names)}"
            if len(line) > BLACK_LINE_LENGTH:  # one name a line, as black writes it
                listed = "".join(f"        {name},\n" for name in names)
                line = f"    from loopgen_runtime import (\n{listed}    )"
        kept.append(line)
    return "\n".join(kept)


BLACK_LINE_LENGTH = 88
