"""Spec → render context: everything the templates need, derived once, in plain Python."""

from __future__ import annotations

from collections import Counter
from pathlib import PurePath
from typing import Any

from .. import __version__
from ..dsl.base import Var
from ..dsl.layers import Concatenate, Custom, CustomLayerClass, Repeat, SaveSkip
from ..dsl.loader import spec_hash
from ..dsl.model import Imported
from ..dsl.spec import Spec
from . import code, stamp

IMAGE_SOURCES = {"keras_dataset", "image_directory", "shapes"}


def build_context(
    spec: Spec,
    *,
    spec_file: str,
    flags: list[str] = (),  # type: ignore[assignment]
) -> dict[str, Any]:
    items = [] if isinstance(spec.model, Imported) else [i for _, i in spec.model.flat_items()]
    sources = [spec.data.train, spec.data.validation]
    shapes = [s for s in sources if s is not None and s.kind == "shapes"]
    distributed = spec.distribute.kind != "single_device"
    return {
        "spec": spec,
        "variant": spec.distribute.kind,
        # Multi-device strategies: mirrored, multi_worker, tpu. Their steps run per replica.
        "distributed": distributed,
        "batch_size": "GLOBAL_BATCH_SIZE" if distributed else "BATCH_SIZE",
        "version": __version__,
        "spec_file": PurePath(spec_file).as_posix(),
        "spec_hash": spec_hash(spec),
        "script_placeholder": stamp.PLACEHOLDER,
        "flags": list(flags),
        "imports": imports(spec),
        "output_dir": spec.output_dir or f"runs/{spec.name}",
        "has_validation": spec.data.validation is not None,
        "x_name": "images" if _is_image_data(spec) else "features",
        "shapes_task": shapes[0].task if shapes else None,
        "custom_classes": [
            {"cls": cls, "sublayers": sublayer_attributes(cls)} for cls in spec.custom_layers
        ],
        "has_repeats": any(isinstance(i, Repeat) for i in items),
        "has_skips": any(isinstance(i, SaveSkip | Concatenate) for i in items),
        "stateful_rng": spec.has_dropout,
        "optimizer_expr": optimizer_expression(spec),
        "loss_expr": _loss(spec, distributed),
        "cpu_devices": getattr(spec.distribute, "cpu_devices", 0),
        # SIGTERM saves a checkpoint and exits (multi-worker: after the same step on every
        # worker, agreed on in the train step).
        "preemptible": preemptible(spec),
        "xla": spec.uses_xla,
        "precision": spec.performance.precision,
        # mixed_float16 only: bfloat16 has float32's exponent range and needs no loss scaling.
        "loss_scaling": spec.performance.precision == "mixed_float16",
        "train_log_names": [
            "loss",
            *(m.metric_name for m in spec.metrics),
            "learning_rate",
            "steps_per_second",
        ],
    }


def preemptible(spec: Spec) -> bool:
    return spec.checkpoint is not None


def imports(spec: Spec) -> dict[str, list[str]]:
    """The script's imports, computed from what the spec uses and sorted as isort would."""
    kinds = {spec.data.train.kind, spec.data.validation.kind if spec.data.validation else None}
    stdlib = {"import argparse", "import math", "import os", "import time"}
    if spec.logging.jsonl:
        stdlib.add("import json")
    if spec.distribute.kind == "multi_worker" and (spec.export.saved_model or spec.export.keras):
        stdlib.add("import shutil")
    if preemptible(spec):
        stdlib |= {"import signal", "import threading"}
    third_party = {"import keras", "import tensorflow as tf"}
    if kinds & {"npz", "shapes"}:
        third_party.add("import numpy as np")
    if "tfds" in kinds:
        third_party.add("import tensorflow_datasets as tfds")
    from_imports = set()
    if not isinstance(spec.model, Imported) or spec.custom_layers:
        from_imports.add("from keras import layers")
    user = [f"import {spec.model.module}"] if isinstance(spec.model, Imported) else []
    return {
        "stdlib": sorted(stdlib),
        "third_party": sorted(third_party) + sorted(from_imports),
        "user": user,
    }


def sublayer_attributes(cls: CustomLayerClass) -> list[tuple[str, Any]]:
    """Attribute names for a custom layer's sublayers: their names, or `<kind>_<n>`."""
    taken = {layer.name for layer in cls.layers if layer.name}
    seen: Counter[str] = Counter()
    named = []
    for layer in cls.layers:
        if layer.name:
            named.append((layer.name, layer))
            continue
        base = layer.cls.lower() if isinstance(layer, Custom) else layer.kind
        seen[base] += 1
        while f"{base}_{seen[base]}" in taken:  # a sublayer the user named like this
            seen[base] += 1
        named.append((f"{base}_{seen[base]}", layer))
    return named


def _is_image_data(spec: Spec) -> bool:
    train = spec.data.train
    return train.kind in IMAGE_SOURCES or (train.kind == "tfds" and train.image_size is not None)


def _loss(spec: Spec, distributed: bool) -> str:
    # Distributed steps average per-example losses over the global batch themselves.
    return code.keras_object("losses", spec.loss, [("reduction", None)] if distributed else [])


def optimizer_expression(spec: Spec) -> str:
    """The optimizer's constructor; a schedule is the variable `learning_rate`."""
    args = spec.optimizer.arguments()
    if spec.optimizer.schedule is not None:
        args = [("learning_rate", Var(var="learning_rate")), *args[1:]]
    return code.call(f"keras.optimizers.{spec.optimizer.keras_class}", args)
