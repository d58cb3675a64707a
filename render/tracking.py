"""What the script tells an experiment tracker about the run: MLflow's parameters."""

from __future__ import annotations

import json
from typing import Any

from ..dsl.loader import _set_values
from ..dsl.spec import Spec

MAX_PARAM_LENGTH = 6000
"""MLflow's limit on a parameter's value (its text)."""


def mlflow_params(spec: Spec) -> list[tuple[str, Any]]:
    """The fields the spec sets, flattened to MLflow parameter names: `optimizer.learning_rate`,
    `model.layers.1.units` (an MLflow name has no brackets: a list index is a part of its own).
    The description is left out (the script's docstring), and so is a value longer than MLflow
    takes (a layer's source code)."""
    found: list[tuple[str, Any]] = []

    def walk(value: Any, key: str) -> None:
        if isinstance(value, dict) and value:
            for name, child in value.items():
                walk(child, f"{key}.{name}" if key else str(name))
        elif isinstance(value, list) and any(isinstance(v, dict | list) for v in value):
            for i, child in enumerate(value):
                walk(child, f"{key}.{i}")
        elif len(json.dumps(value, default=str)) <= MAX_PARAM_LENGTH:
            found.append((key, value))

    walk({k: v for k, v in _set_values(spec).items() if k != "description"}, "")
    return found
