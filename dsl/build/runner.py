"""Carries out build plans (see __init__.py) with Keras: `python -m loopgen.dsl.build.runner
plans.json`. Prints one JSON line: `{"reports": [...]}`, a report per plan, either
`{"ok": true, "parameters": N, "outputs": [shapes]}` or the path and the error of the first step
Keras refused. Imports TensorFlow: run only in a subprocess."""

from __future__ import annotations

import json
import re
import sys
from typing import Any

import keras


class PositionEmbedding(keras.layers.Layer):
    """The layer the scripts define for PositionEmbedding (the same computation)."""

    def __init__(self, sequence_length: int, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.sequence_length = sequence_length

    def build(self, input_shape: Any) -> None:
        self.embeddings = self.add_weight(
            shape=(self.sequence_length, input_shape[-1]), initializer="glorot_uniform"
        )

    def call(self, inputs: Any) -> Any:
        length = keras.ops.shape(inputs)[1]
        return inputs + keras.ops.cast(self.embeddings[None, :length, :], inputs.dtype)


def make(layer: dict[str, Any]) -> Any:
    if "application" in layer:
        application = getattr(keras.applications, layer["application"])

        def backbone(tensor: Any) -> Any:
            model = application(include_top=False, weights=None, pooling=layer["pooling"],
                                input_shape=tuple(tensor.shape[1:]), **layer["args"])  # fmt: skip
            if layer["preprocess"]:
                module = layer["preprocess"].split(".")[2]
                tensor = getattr(keras.applications, module).preprocess_input(tensor)
            return model(tensor, training=False)

        return backbone
    if "position_embedding" in layer:
        return PositionEmbedding(layer["position_embedding"])
    args = {name: argument(value) for name, value in layer["args"].items()}
    return getattr(keras.layers, layer["class"])(**args)


def argument(value: Any) -> Any:
    if isinstance(value, dict) and "__layer__" in value:
        return make(value["__layer__"])
    if isinstance(value, dict) and "__regularizer__" in value:
        return keras.regularizers.deserialize(value["__regularizer__"])
    return value


def call(layer: Any, inputs: list[Any], step: dict[str, Any]) -> Any:
    if step.get("style") == "list":
        return layer(inputs)
    return layer(*inputs)


def message(error: Exception) -> str:
    """Keras's error, without the call-site boilerplate it wraps it in."""
    text = str(error)
    text = re.sub(r"Exception encountered when calling .*?\n+", "", text)
    text = text.split("\n\nArguments received by")[0]
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return f"{type(error).__name__}: {' '.join(lines)[:600]}"


def run(plan: dict[str, Any]) -> dict[str, Any]:
    tensors: dict[str, Any] = {}
    made_by: dict[str, str] = {}  # tensor -> the path of the step that made it
    shared: dict[str, Any] = {}
    for step in plan["steps"]:
        try:
            if "input" in step:
                given = step["input"]
                tensors[step["out"]] = keras.Input(shape=tuple(given["shape"]),
                                                   dtype=given["dtype"])  # fmt: skip
            elif "shared" in step:
                shared[step["shared"]] = make(step["layer"])
            else:
                layer = shared[step["use"]] if "use" in step else make(step["layer"])
                tensors[step["out"]] = call(layer, [tensors[n] for n in step["in"]], step)
                made_by[step["out"]] = step["path"]
        except Exception as error:  # Keras refuses the layer or its input: report where
            return {"path": step["path"], "error": message(error)}
    parameters = 0
    outputs = []
    for model in plan["models"]:
        try:
            built = keras.Model([tensors[n] for n in model["inputs"]],
                                [tensors[n] for n in model["outputs"]])  # fmt: skip
        except Exception as error:  # e.g. an output that is an input: the node that made it
            return {"path": made_by.get(model["outputs"][-1], "model"), "error": message(error)}
        parameters += built.count_params()
        outputs += [list(t.shape[1:]) for t in built.outputs]
    return {"ok": True, "parameters": parameters, "outputs": outputs}


def main() -> None:
    with open(sys.argv[1]) as file:
        plans = json.load(file)
    reports = []
    for plan in plans:
        keras.backend.clear_session()
        reports.append(run(plan))
    print(json.dumps({"reports": reports}))


if __name__ == "__main__":
    main()
