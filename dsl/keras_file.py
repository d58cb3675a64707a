"""A `.keras` file's output shape, read from the config.json in its zip without TensorFlow
(rendering never imports it): the teacher of a distillation is checked against the student at
validate time. An exported teacher's is read from its SavedModel (saved_model_file.py)."""

from __future__ import annotations

import json
import zipfile
from typing import Any

# Layers whose output has the shape of their input: the output shape is their input's.
SAME_SHAPE = {
    "Activation", "Softmax", "ReLU", "LeakyReLU", "PReLU", "ELU", "Dropout", "GaussianNoise",
    "GaussianDropout", "AlphaDropout", "BatchNormalization", "LayerNormalization",
    "GroupNormalization", "UnitNormalization", "Identity", "Rescaling",
}  # fmt: skip


def keras_file_output_shape(path: str) -> tuple | None:
    """The shape (without the batch dimension) of a `.keras` file's one output, where its
    config shows it: a Sequential or functional model ending in a Dense layer, maybe followed
    by layers that keep the shape; else None (the script checks it when it loads the file)."""
    try:
        with zipfile.ZipFile(path) as archive:
            config = json.loads(archive.read("config.json"))
    except (OSError, KeyError, ValueError, zipfile.BadZipFile):
        return None  # not a .keras file: the script says so when it loads it
    layers: list[dict[str, Any]] = config.get("config", {}).get("layers", [])
    if config.get("class_name") == "Sequential":
        chain = list(reversed(layers))
    elif config.get("class_name") == "Functional":
        outputs = config["config"].get("output_layers")
        if isinstance(outputs, list) and len(outputs) == 1 and isinstance(outputs[0], list):
            outputs = outputs[0]  # [[name, node, index]]: one output
        if not (isinstance(outputs, list) and len(outputs) == 3 and isinstance(outputs[0], str)):
            return None  # several outputs
        by_name = {layer.get("name", layer["config"].get("name")): layer for layer in layers}
        chain, name = [], outputs[0]
        while name in by_name and len(chain) <= len(layers):
            chain.append(by_name[name])
            name = inbound_layer(by_name[name])
    else:
        return None
    for layer in chain:  # from the output back to the Dense layer that makes its shape
        if layer["class_name"] == "Dense":
            shape = (layer.get("build_config") or {}).get("input_shape")
            if not shape:
                return None
            return (*shape[1:-1], layer["config"]["units"])
        if layer["class_name"] not in SAME_SHAPE:
            return None
    return None


def inbound_layer(layer: dict[str, Any]) -> str | None:
    """The name of the layer whose output a functional model's layer takes (its one input)."""
    nodes = layer.get("inbound_nodes") or []
    if len(nodes) != 1 or len(nodes[0].get("args", [])) != 1:
        return None
    history = nodes[0]["args"][0].get("config", {}).get("keras_history")
    return history[0] if history else None
