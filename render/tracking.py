"""What the script tells an experiment tracker about the run: MLflow's parameters."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from ..dsl.loader import _set_values, value_at
from ..dsl.spec import Spec

MAX_PARAM_LENGTH = 6000
"""MLflow's limit on a parameter's value (its text)."""


def mlflow_params(spec: Spec, flags: Sequence[str] = ()) -> list[tuple[str, Any]]:
    """The fields the spec sets, flattened to MLflow parameter names: `optimizer.learning_rate`,
    `model.layers.1.units` (an MLflow name has no brackets: a list index is a part of its own).
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
    return list(found.items())
