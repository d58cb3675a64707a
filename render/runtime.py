"""The runtime a script imports (runtime/loopgen_runtime.py, written beside it as
loopgen_runtime.py), and the script's link to it: the names it imports, and the standard
library modules that its own code still uses."""

from __future__ import annotations

import ast
import re
import types
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
    """The runtime's top-level functions, classes and constants a script may import (the
    module itself imports only the standard library: no TensorFlow)."""
    from ..runtime import loopgen_runtime

    return (
        frozenset(
            name
            for name, value in vars(loopgen_runtime).items()
            if not name.startswith("_")
            and not isinstance(value, types.ModuleType)
            and (getattr(value, "__module__", None) == loopgen_runtime.__name__ or name.isupper())
        )
        - NOT_IMPORTED
    )


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
