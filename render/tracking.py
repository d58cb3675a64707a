"""What the script tells an experiment tracker about the run: MLflow's parameters."""

from __future__ import annotations

import hashlib
import json
import posixpath
import re
from collections.abc import Sequence
from typing import Any

from ..dsl.loader import _set_values, value_at
from ..dsl.spec import Spec

MAX_PARAM_LENGTH = 6000
"""MLflow's limit on a parameter's value (its text)."""
MAX_KEY_LENGTH = 250
"""MLflow's limit on a parameter's key."""


def mlflow_key(path: str) -> str:
    """A spec path as an MLflow parameter key, readable and valid. MLflow (its
    `validate_param_and_metric_name`) takes letters, digits, `_`, `-`, `.`, `/`, spaces (and
    `:` but on Windows), in a key that stays itself as a file path (no `//`, `/./`, `..`, no
    leading `/`), of at most 250 characters. A list index is a part of its own
    (`model.layers[1].units` is `model.layers.1.units`), any other character an `_`; a longer
    key keeps its start and a hash of the whole."""
    key = re.sub(r"\[(-?\d+)\]", r".\1", path)
    key = re.sub(r"[^\w.\- /]", "_", key)
    if posixpath.normpath(key) != key or key.startswith(("/", "..")) or key == ".":
        key = key.replace("/", "_")
    if len(key) > MAX_KEY_LENGTH:
        digest = hashlib.sha256(path.encode()).hexdigest()[:16]
        key = f"{key[: MAX_KEY_LENGTH - 17]}.{digest}"
    return key


def mlflow_params(spec: Spec, flags: Sequence[str] = ()) -> list[tuple[str, Any]]:
    """The fields the spec sets, flattened to MLflow parameter names: `optimizer.learning_rate`,
    `model.layers.1.units` (an MLflow name has no brackets: a list index is a part of its own;
    see mlflow_key).
    The seed and each field a `--set` in `flags` names are there even at their defaults: a
    sweep's trial that draws a field's default value still shows it beside the others'. The
    description is left out (the script's docstring), and so is a value longer than MLflow
    takes (a layer's source code)."""
    found: dict[str, Any] = {}

    def walk(value: Any, key: str) -> None:
        if isinstance(value, dict) and value:
            for name, child in value.items():
                walk(child, f"{key}.{name}" if key else str(name))
        elif isinstance(value, list) and any(isinstance(v, dict | list) for v in value):
            for i, child in enumerate(value):
                walk(child, f"{key}.{i}")
        elif len(json.dumps(value, default=str)) <= MAX_PARAM_LENGTH:
            found.setdefault(key, value)

    walk({k: v for k, v in _set_values(spec).items() if k != "description"}, "")
    dumped = spec.model_dump(mode="json")
    walk(dumped["seed"], "seed")
    for override in (flags[i + 1] for i, word in enumerate(flags) if word == "--set"):
        found_at = value_at(dumped, override.split("=", 1)[0])
        # A path a later --set replaced is not there: that --set is logged instead.
        if found_at and found_at[0][0] != "description":
            walk(found_at[1], ".".join(map(str, found_at[0])))
    return [(mlflow_key(key), value) for key, value in found.items()]
