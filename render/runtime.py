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


SINGLE_FILE = "Single file (loopgen render --single-file):"
"""The header's words that say a script holds its runtime (a render keeps a script's form)."""
HEAD_END = "# --- The run directory ---"
"""Where the runtime's part that the flags need (parse_args runs before TensorFlow loads, at
the top) ends: the rest goes before the script's own run-directory section, at the bottom."""


def inline(script: str) -> str:
    """The linked `script` with its runtime inlined (loopgen render --single-file): the
    runtime's imports among the script's, its flags and MLflow's process above parse_args(),
    the rest above the script's RunDirectory, which subclasses RunDirectoryBase (the runtime's
    RunDirectory). Not yet formatted nor stamped."""
    checked = "# What a script checks that it was rendered with: loopgen's version and this file's"
    runtime = source().replace(f"\n{checked} sha256.\nRUNTIME = None\n", "\n", 1)
    tree = ast.parse(runtime)
    first = next(n for n in tree.body if not isinstance(n, ast.Expr | ast.Import))
    lines = runtime.split("\n")
    imports = {line for line in lines[: first.lineno - 1] if line.startswith("import ")}
    body = "\n".join(lines[first.lineno - 1 :])
    # The modules the runtime imports when first used (tf, keras, np): the script's imports.
    lazy = body[body.index("class _Module:") : body.index("\n\n\n", body.index("tf, keras, np"))]
    body = body.replace(lazy, "", 1)
    imports.discard("import importlib")
    head, tail = body.split(HEAD_END, 1)
    tail = HEAD_END + tail
    if tail.count("\nclass RunDirectory:\n") != 1:
        raise RuntimeError("the runtime's RunDirectory class is not where --single-file looks")
    tail = tail.replace("\nclass RunDirectory:\n", "\nclass RunDirectoryBase:\n")

    lines = script.split("\n")
    nodes = ast.parse(script).body
    # The script's import of its runtime and the check that it is the render's: gone.
    start = next(n for n in nodes if isinstance(n, ast.Try) and _imports_runtime(n))
    check = next(n for n in nodes if isinstance(n, ast.If) and "loopgen_runtime" in
                 ast.unparse(n.test))  # fmt: skip
    parse_args = next(n for n in nodes if isinstance(n, ast.FunctionDef) and n.name ==
                      "parse_args")  # fmt: skip
    own = next(i for i, line in enumerate(lines) if line.startswith("# --- The run directory"))
    stdlib = [i for i, line in enumerate(lines[: start.lineno]) if line.startswith("import ")]
    out = lines[: stdlib[0]]
    out += sorted(imports | {lines[i] for i in stdlib}, key=lambda line: line.split()[1])
    out += lines[stdlib[-1] + 1 : start.lineno - 1]
    out += lines[check.end_lineno : parse_args.lineno - 1]
    out += [_SECTION.format("the flags every script takes, and MLflow's process"), head, ""]
    out += lines[parse_args.lineno - 1 : own]
    out += [_SECTION.format("the run directory, downloads, readers, debugging"), tail, ""]
    out += lines[own:]
    text = "\n".join(out)
    if "\nimport numpy as np\n" not in text:  # the runtime's, not the script's
        text = text.replace("\nimport keras\n", "\nimport keras\nimport numpy as np\n", 1)
    text = text.replace("(loopgen_runtime.RunDirectory)", "(RunDirectoryBase)")
    text = text.replace("loopgen_runtime.mlflow_process = ", "mlflow_process = ")
    text = text.replace(
        "\nA standalone TensorFlow script: edit it freely.",
        f"\n{SINGLE_FILE} the run's machinery,\nloopgen_runtime.py, is inlined "
        "in the sections marked '# === loopgen_runtime'.\nA standalone TensorFlow script: "
        "edit it freely.",
        1,
    )
    left = {n.id for n in ast.walk(ast.parse(text)) if isinstance(n, ast.Name)}
    if "loopgen_runtime" in left:
        raise RuntimeError("--single-file left a use of the loopgen_runtime module")
    return text


_SECTION = "# === loopgen_runtime (--single-file): {}"


def _imports_runtime(node: ast.Try) -> bool:
    return any(
        isinstance(n, ast.Import) and n.names[0].name == "loopgen_runtime" for n in node.body
    )
