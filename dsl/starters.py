"""Starting points for `loopgen init`: the example specs, shipped with loopgen."""

from __future__ import annotations

import ast
from pathlib import Path

from ..errors import OutputError
from .base import _check_identifier

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def names() -> list[str]:
    return sorted(p.stem for p in EXAMPLES.glob("*.py") if not p.stem.startswith("_"))


def summary(name: str) -> str:
    """The first line of the example's docstring."""
    doc = ast.get_docstring(ast.parse((EXAMPLES / f"{name}.py").read_text())) or ""
    return " ".join(doc.split("\n\n")[0].split())


def starter(name: str, run_name: str | None) -> str:
    """The example `name` as the text of a new spec file, renamed to `run_name` (the run's
    name sets the model's name and the default output directory) when that is a valid one."""
    if name not in names():
        raise OutputError(f"no example named {name!r}; choose one of: {', '.join(names())}")
    text = (EXAMPLES / f"{name}.py").read_text()
    own = f'name="{name}"'
    if run_name and _is_identifier(run_name) and text.count(own) == 1:
        text = text.replace(own, f'name="{run_name}"')
    return f"# Started from loopgen's {name} example: loopgen init --from {name}\n" + text


def _is_identifier(name: str) -> bool:
    try:
        _check_identifier(name)
    except ValueError:
        return False
    return True


def companions(name: str) -> dict[str, str]:
    """The files of yours the example imports from beside it (a package named in a `target`,
    e.g. `envs.corridor:make`, shipped as a folder next to the examples), by path relative
    to the spec, with their text: `loopgen init` writes them beside the new spec."""
    tree = ast.parse((EXAMPLES / f"{name}.py").read_text())
    # `target=` (an environment, a model, ...) and GRPO's `reward_funcs=[...]`.
    values = [
        value
        for node in ast.walk(tree)
        if isinstance(node, ast.keyword) and node.arg in ("target", "reward_funcs")
        for value in (node.value.elts if isinstance(node.value, ast.List) else [node.value])
    ]
    targets = {v.value for v in values if isinstance(v, ast.Constant) and isinstance(v.value, str)}
    found = {}
    for package in sorted({target.split(":")[0].split(".")[0] for target in targets}):
        folder = EXAMPLES / package
        if folder.is_dir():
            for module in sorted(folder.rglob("*.py")):
                found[module.relative_to(EXAMPLES).as_posix()] = module.read_text()
    return found
