"""Writes the Python names of the vocabulary, `dsl/vocabulary/*.py`, from the catalog.

    python -m loopgen.dsl.catalog.api          # rewrite the modules
    python -m loopgen.dsl.catalog.api --check  # exit 1 when they differ from the catalog

One function per Keras class (`Conv1D(filters, kernel_size, strides=1, ...)`), with Keras' own
signature, so that editors complete and check the arguments of a spec file. Each builds the one
generic spec model of its section (`KerasLayer`, `KerasLoss`, ...); arguments left at Keras'
default are dropped, so the script writes only what the spec changes. Plain source files rather
than functions made at import: an editor reads them, and importing them costs milliseconds.
Needs no Keras: it reads keras.json."""

from __future__ import annotations

import argparse
import keyword
import sys
from pathlib import Path

from .. import catalog
from ..training import SET_BY_LOOPGEN

FOLDER = Path(__file__).resolve().parent.parent / "vocabulary"

MODELS = {
    "layers": ("KerasLayer", "..layers"),
    "losses": ("KerasLoss", "..training"),
    "metrics": ("KerasMetric", "..training"),
    "optimizers": ("KerasOptimizer", "..training"),
}

DOCS = {
    "layers": "Every layer of `keras.layers` as a spec layer",
    "losses": "Every loss of `keras.losses` as a spec loss",
    "metrics": "Every metric of `keras.metrics` as a spec metric",
    "optimizers": "Every optimizer of `keras.optimizers` as a spec optimizer",
}


def module_source(section: str) -> str:
    model, where = MODELS[section]
    lines = [
        f'"""{DOCS[section]}: one function per class, with Keras\' signature (Keras '
        f"{catalog.data()['keras_version']}).",
        "",
        "Generated from dsl/catalog/keras.json by `python -m loopgen.dsl.catalog.api`; do not "
        'edit."""',
        "",
        "# ruff: noqa: E501",
        "from __future__ import annotations",
        "",
        "from typing import Any",
        "",
        f"from {where} import {model}",
        "from ._build import REQUIRED, build"
        if _takes_required(section)
        else "from ._build import build",
        "",
        "__all__ = [",
    ]
    entries = _entries(section)
    # `from loopgen.dsl import *` gives losses their plain names; a metric of the same name
    # (MeanSquaredError, ...) stays reachable as `metrics.MeanSquaredError`.
    shadowed = {n for n, _ in _entries("losses")} if section == "metrics" else set()
    exported = sorted((n for n, _ in entries if n not in shadowed), key=_isort)
    lines += [f'    "{name}",' for name in exported]
    lines += ["]", ""]
    for name, raw in entries:
        lines += ["", *_function(section, model, name, raw)]
    return "\n".join(lines) + "\n"


def _takes_required(section: str) -> bool:
    """Whether a class of the section has a required argument (its function uses REQUIRED)."""
    return any(a.get("required") for _, raw in _entries(section) for a in raw.get("args", []))


def _isort(name: str) -> tuple[int, str]:
    """isort's order of names (what ruff checks in `__all__`): CONSTANTS, Classes, functions."""
    return (0 if name.isupper() else 1 if name[0].isupper() else 2, name)


def _entries(section: str) -> list[tuple[str, dict]]:
    found = []
    for name, raw in sorted(catalog.data()[section].items()):
        target = catalog.data()[section][raw.get("alias_of") or name]
        if target.get("excluded"):
            continue
        found.append((name, target))
    return found


def _function(section: str, model: str, name: str, raw: dict) -> list[str]:
    args = [a for a in raw.get("args", []) if a["name"] not in SET_BY_LOOPGEN.get(section, {})]
    args = [a for a in args if a["name"] != "name" and not keyword.iskeyword(a["name"])]
    params = []
    for a in args:
        if a.get("required"):
            # Not a bare parameter: a missing or misspelt argument is then reported by the
            # spec's validation, which names the closest argument, not by Python.
            params.append(f"{a['name']}=REQUIRED")
        else:
            params.append(f"{a['name']}={_default(a)}")
    params.append("name=None")
    params.append("**kwargs: Any")
    body = [
        f"def {name}({', '.join(params)}) -> {model}:",
        f'    """`keras.{section}.{raw.get("class_name", name)}`{_summary(raw)}"""',
        f'    return build({model}, "{raw["kind"]}", locals())',
        "",
    ]
    return body


def _summary(raw: dict) -> str:
    doc = (raw.get("doc") or "").strip().replace('"""', "'''").replace("\\", "\\\\")
    return f": {doc}" if doc else "."


def _default(arg: dict) -> str:
    if "default_repr" in arg:
        return "None"
    value = arg.get("default")
    if isinstance(value, list):
        return repr(tuple(value))
    return repr(value)


def write(check: bool = False) -> int:
    import black

    differ = []
    for section in MODELS:
        path = FOLDER / f"{section}.py"
        text = black.format_str(module_source(section), mode=black.Mode(line_length=100))
        if check:
            if not path.is_file() or path.read_text() != text:
                differ.append(str(path))
        else:
            path.write_text(text)
    if differ:
        print("out of date with keras.json: " + ", ".join(differ), file=sys.stderr)
        print("run: python -m loopgen.dsl.catalog.api", file=sys.stderr)
        return 1
    return 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare instead of writing")
    raise SystemExit(write(parser.parse_args().check))


if __name__ == "__main__":
    main()
