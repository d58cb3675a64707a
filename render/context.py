"""Spec → render context: everything the templates need, derived once, in plain Python (the
data partials' facts in data.py, the model to serve's in serving.py, the way of training's in
ways.py)."""

from __future__ import annotations

from collections import Counter
from pathlib import PurePath
from typing import Any

from .. import __version__
from ..dsl.base import Var
from ..dsl.hub import is_local
from ..dsl.layers import Custom, CustomLayerClass
from ..dsl.loader import spec_hash
from ..dsl.model import OPAQUE, Imported
from ..dsl.schedules import Warmup
from ..dsl.shapes import check_graph_shapes
from ..dsl.spec import Spec
from ..dsl.ways import DRAWING_KINDS, GENERATIVE_KINDS, LM_KINDS
from ..dsl.ways.lm import DPO_LOGGED, grpo_logged
from . import code, fingerprint, graph, runtime, stamp, tracking
from .data import data_context
from .predict import prediction_context
from .serving import serving_context
from .ways import way_context

MONITOR_NAMES = {
    "early_stopping": "early_stopping",
    "reduce_on_plateau": "plateau",
    "best_model": "best",
}


def build_context(
    spec: Spec,
    *,
    spec_file: str,
    flags: list[str] = (),  # type: ignore[assignment]
) -> dict[str, Any]:
    is_graph = spec.model is not None and spec.model.kind == "graph"
    data = data_context(spec)
    x_name = data["x_name"]
    distributed = spec.distribute.kind != "single_device"
    meta = spec.training.kind in ("reptile", "maml")
    batch_size = "GLOBAL_BATCH_SIZE" if distributed else "BATCH_SIZE"
    per_example = distributed or spec.gradients.accumulate_steps > 1
    # The global norm of the gradients, logged: wanted when clipping by it or histograms.
    gradient_norm = spec.gradients.clip_norm is not None or spec.logging.histograms
    validation_names = spec.log_names()
    logged = [name for name in validation_names if name not in spec.validation_extras()]
    # Every schedule of every optimizer, a Warmup's `after` included.
    schedules = [s for o in spec.optimizers().values() for s in schedule_chain(o.schedule)]
    rates = [f"{name}_learning_rate" for name in spec.gan.optimizers()] if spec.gan else []
    train_log_names = [
        logged[0],
        *spec.train_parts(),
        *logged[1:],
        *(["gradient_norm"] if gradient_norm else []),
        *(rates or ["learning_rate"]),
        "steps_per_second",
    ]
    evaluable = bool(spec.checkpoint) and (spec.data.validation is not None or meta)
    # Image files decoded by the steps, not all at the start (data.cache) nor into few-shot
    # tasks: a file damaged inside is traced to its name when a call fails.
    files_decoded = not spec.data.cache and not meta
    validation_source = data["validation_source"]
    serving = serving_context(spec)
    prediction = prediction_context(spec, serving)
    return {
        **way_context(spec, x_name),
        "steps_decode_files": files_decoded and spec.data.train.kind == "image_directory",
        "validation_decodes_files": files_decoded
        and getattr(validation_source, "kind", None) == "image_directory",
        "spec": spec,
        "variant": spec.distribute.kind,
        # Multi-device strategies: mirrored, multi_worker, tpu. Their steps run per replica.
        "distributed": distributed,
        # Reinforcement learning (rl.py.jinja) shares the run directory's machinery.
        "acts": False,
        # The running means in the checkpoint: not for multi-worker or TPU runs, whose restore
        # of sync-on-read variables is a collective that a worker without the checkpoint
        # would not join.
        "means_checkpointed": bool(spec.checkpoint)
        and spec.distribute.kind in ("single_device", "mirrored"),
        "batch_size": batch_size,
        "version": __version__,
        # What the script checks that loopgen_runtime.py beside it is.
        "runtime_identity": runtime.identity(),
        "spec_file": PurePath(spec_file).as_posix(),
        "spec_hash": spec_hash(spec),
        "script_placeholder": stamp.PLACEHOLDER,
        "flags": list(flags),
        "imports": imports(spec),
        # Whether the script downloads (keras.datasets, TFDS, a Backbone's imagenet weights):
        # a failed download is one message and leaves the output directory as it was.
        "downloads": downloads(spec),
        "output_dir": spec.output_dir or f"runs/{spec.name}",
        # (field, expression) of the script's SETUP: what its checkpoints mean.
        "setup": fingerprint.setup_entries(spec, batch_size),
        # Meta-learning validates on tasks of classes held out of data.train.
        "has_validation": spec.data.validation is not None or meta,
        # `python train.py evaluate`: a checkpoint scored on the validation data.
        "evaluable": evaluable,
        # evaluate --data PATH: another source of the validation data's kind (a test split).
        **data,
        "custom_classes": [
            {"cls": cls, "sublayers": sublayer_attributes(cls)} for cls in spec.custom_layers
        ],
        # Whether a network (the model, or a GAN's generator or discriminator) has Repeat
        # blocks ("repeats") or skip connections ("skips").
        "net_has": net_has,
        "metric_expression": metric_expression,
        # Layers with sparse (IndexedSlices) gradients.
        "sparse_gradients": isinstance(spec.model, OPAQUE)
        or any(
            getattr(layer, "kind", None) in ("embedding", "reversible_embedding")
            for _, layer in spec.layers_with_paths()
        ),
        # (node, the training inputs it adapts on) for every adapted layer: the model's input
        # as training batches feed it (data.jinja training_inputs), or one of its features.
        "adapted": [
            (
                node.name,
                "training_inputs(train_examples)"
                + (
                    f".map(lambda {x_name}: {x_name}[{code.literal(node.inputs[0])}])"
                    if spec.data.feature_names
                    else ""
                ),
            )
            for node in (spec.model.nodes if is_graph else [])
            if node.adapt
        ],
        "dpo_logged": DPO_LOGGED,
        "grpo_logged": grpo_logged(spec.training) if spec.training.kind == "grpo" else None,
        # A pretrained KerasHub model (model.kind="keras_hub"), or None.
        "hub": spec.model if spec.model is not None and spec.model.kind == "keras_hub" else None,
        # SFT's and DPO's preprocess() is a tf.function when two pipelines call it.
        "traced_preprocess": spec.training.kind in ("sft", "dpo")
        and spec.data.validation is not None,
        "position_embedding": any(
            getattr(layer, "kind", None) == "position_embedding"
            for _, layer in spec.layers_with_paths()
        ),
        # A graph model: its blocks' functions and build_model()'s statements.
        "graph_blocks": [graph.block_function(spec.model, block) for block in spec.model.blocks]
        if is_graph
        else [],
        "graph_build": graph.build_lines(
            spec.model,
            spec.name,
            spec.performance.precision,
            spec.data.augmentation if spec.data.augment_in == "model" else [],
            check_graph_shapes(spec.model, {c.name: c for c in spec.custom_layers}),
        )
        if is_graph
        else [],
        "model_augmentation": bool(spec.data.augmentation) and spec.data.augment_in == "model",
        "gan": spec.gan is not None,
        # Diffusion, flow matching: a denoiser of images, and the sampler that draws with it.
        "diffusion": spec.training.kind in GENERATIVE_KINDS,
        # A variational autoencoder: its encoder and decoder in one model, samples and
        # reconstructions.
        "vae": spec.training.kind == "vae",
        "serving": serving,
        # `python train.py predict PATH...`: the served model on raw inputs from files.
        "prediction": prediction,
        # The commands that read a run directory's checkpoints and write none.
        "readers": ["evaluate"] * evaluable
        + ["predict"] * bool(prediction)
        + ["sample"] * (bool(spec.checkpoint) and spec.training.kind in DRAWING_KINDS)
        + ["replay"] * (bool(spec.checkpoint) and spec.distribute.kind != "tpu"),
        # `python train.py replay --step N`: step N trained again from the checkpoint before it.
        "replayable": bool(spec.checkpoint) and spec.distribute.kind != "tpu",
        # --overfit-batches: a loss to drive towards 0 (a GAN's two losses are a game).
        # On one device: the check that a model can learn at all.
        # Nor a diffusion loss, whose noise differs at every step.
        "overfittable": spec.gan is None
        and spec.training.kind not in DRAWING_KINDS
        and spec.distribute.kind == "single_device",
        # Whether each network's layers have weight penalties (model.losses) to add.
        "regularized": {
            name: any(getattr(item, "regularized", False) for _, item in network.flat_items())
            for name, network in spec.gan.networks().items()
        }
        if spec.gan
        else {"model": spec.regularized},
        "stateful_rng": spec.has_dropout,
        "optimizer_expr": optimizer_expression(spec) if spec.optimizer else None,
        "gan_optimizers": {
            name: optimizer_expression(spec, optimizer, inline_schedule=True)
            for name, optimizer in (spec.gan.optimizers().items() if spec.gan else [])
        },
        "loss_expr": loss_expression(spec.loss, per_example) if spec.loss else None,
        "imported_loss": spec.loss is not None and spec.loss.kind == "import",
        "cpu_devices": getattr(spec.distribute, "cpu_devices", 0),
        # SIGTERM saves a checkpoint and exits (multi-worker: after the same step on every
        # worker, agreed on in the train step).
        "preemptible": preemptible(spec),
        "xla": spec.uses_xla,
        # optimizer=SAM: the step's second gradient, at the weights moved up the first one.
        "sam": getattr(spec.optimizer, "kind", None) == "sam",
        # ema=EMA: the average of the weights, validated and exported.
        "ema": spec.ema is not None,
        "precision": spec.performance.precision,
        # mixed_float16 only: bfloat16 has float32's exponent range and needs no loss scaling.
        "loss_scaling": spec.performance.precision == "mixed_float16",
        # The loss function gives one loss per example, which the step sums and divides by the
        # (global) batch size: across replicas, and across the micro-batches of accumulation.
        "per_example": per_example,
        # Clipping and per-weight gradient norms need the global batch's gradient: under a
        # strategy the step sums the replicas' gradients before, not in, apply_gradients.
        "reduce_first": distributed and (spec.gradients.clipped or spec.logging.histograms),
        "gradient_norm": gradient_norm,
        "schedule_expr": schedule_expression(spec.optimizer.schedule) if spec.optimizer else None,
        # The LearningRateSchedule subclasses the script defines, and how they are used.
        "schedule_classes": {s.script_class for s in schedules if s.script_class},
        "warmup_after_schedule": any(
            isinstance(s, Warmup) and not isinstance(s.after, float | int) for s in schedules
        ),
        "triangular2": any(getattr(s, "mode", None) == "triangular2" for s in schedules),
        "comet_parameters": comet_parameters(spec, batch_size) if spec.logging.comet else None,
        "mlflow_params": tracking.mlflow_params(spec, flags) if spec.logging.mlflow else None,
        "tasks": [
            {
                "name": name,
                "loss_expr": loss_expression(task.loss, per_example),
                "weight": task.weight,
                # Logged as <task>_<name>.
                "metrics": [
                    metric_expression(m.model_copy(update={"name": f"{name}_{m.metric_name}"}))
                    for m in task.metrics
                ],
            }
            for name, task in spec.tasks.items()
        ],
        "has_metrics": bool(spec.metrics) or any(t.metrics for t in spec.tasks.values()),
        "metric_lists": {
            "train": metric_list(spec, "train", ["train_gradient_norm"] if gradient_norm else []),
            "validation": metric_list(spec, "validation", []),
        },
        # The script's name for each monitor of a validation value.
        "monitors": {
            MONITOR_NAMES[field]: monitored for field, monitored in spec.monitors().items()
        },
        "train_log_names": train_log_names,
        "csv_columns": [
            "step",
            "epoch",
            *train_log_names,
            *(f"val_{name}" for name in validation_names if spec.data.validation is not None),
        ],
    }


def loss_expression(loss: Any, per_example: bool) -> str:
    """The loss function: a Keras loss (reduction=None when the step averages per example), or
    your function, which gives one loss per example (averaged here unless the step does)."""
    if loss.kind != "import":
        return code.keras_object("losses", loss, [("reduction", None)] if per_example else [])
    arguments = code.arguments([(None, Var(var="labels")), (None, Var(var="predictions")),
                                *loss.kwargs.items()])  # fmt: skip
    called = f"{loss.module}.{code.identifier(loss.attribute)}({arguments})"
    return f"lambda labels, predictions: {called if per_example else f'tf.reduce_mean({called})'}"


def metric_expression(metric: Any) -> str:
    """A metric's constructor: Keras's own, or your class with its name and arguments."""
    if metric.kind != "import":
        return code.keras_object("metrics", metric)
    arguments = code.arguments([("name", metric.metric_name), *metric.kwargs.items()])
    return f"{metric.module}.{code.identifier(metric.attribute)}({arguments})"


def comet_parameters(spec: Spec, batch_size: str) -> str:
    """The run's hyperparameters for Comet, as a dict expression of the script (`batch_size`:
    the script's constant for it)."""
    optimizer = spec.optimizer or spec.gan.generator_optimizer
    schedule = optimizer.schedule
    rate = code.literal(optimizer.learning_rate if schedule is None else schedule.kind)
    length = '"epochs": self.args.epochs' if spec.loop.epochs else '"steps": self.args.steps'
    items = [
        f'"optimizer": {code.literal(getattr(optimizer, "target", optimizer.kind))}',
        f'"learning_rate": {rate}',
        f'"loss": {code.literal(spec.loss.kind if spec.loss else "gan" if spec.gan else "tasks")}',
        f'"batch_size": {batch_size}',
        length,
        '"seed": SEED',
    ]
    return "{" + ", ".join(items) + "}"


def downloads(spec: Spec) -> set[str]:
    """What the script downloads: `keras_dataset` and `tfds` sources, `imagenet` for a
    Backbone's named weights (a path is a local file), and `keras_hub` for a KerasHub preset
    named by its name or a handle (a local preset directory is read from disk)."""
    kinds = {spec.data.train.kind, spec.data.validation.kind if spec.data.validation else None}
    found = kinds & {"keras_dataset", "tfds"}
    if any(
        getattr(layer, "kind", None) == "backbone" and layer.weights == "imagenet"
        for _, layer in spec.layers_with_paths()
    ):
        found.add("imagenet")
    hub = spec.model if spec.model is not None and spec.model.kind == "keras_hub" else None
    ref = getattr(spec.training, "ref_model", None)
    if getattr(spec.training, "beta", None) == 0 and spec.training.kind == "grpo":
        ref = None  # GRPO without its KL term loads no reference
    if any(preset and not is_local(preset) for preset in (hub and hub.preset, ref)):
        found.add("keras_hub")  # a preset's name or handle: KerasHub downloads it
    return found


def preemptible(spec: Spec) -> bool:
    return spec.checkpoint is not None


def imports(spec: Spec) -> dict[str, list[str]]:
    """The script's imports, computed from what the spec uses and sorted as isort would."""
    kinds = {spec.data.train.kind, spec.data.validation.kind if spec.data.validation else None}
    stdlib = {"import argparse", "import math", "import os", "import time"}
    stdlib.add("import functools")  # --fast-dev-run's stages (unused ones are dropped)

    # The output directory's lock, runs.jsonl and its tracebacks (run_dir.jinja).
    stdlib |= {"import fcntl", "import hashlib", "import json", "import re", "import socket"}
    stdlib |= {"import contextlib", "import errno", "import sys", "import traceback"}
    if spec.logging.csv:
        stdlib.add("import csv")
    if spec.checkpoint or spec.best_model:  # a checkpoint the disk could not hold is removed
        stdlib |= {"import glob", "import shutil"}
    if spec.export.saved_model or spec.export.keras:  # written whole or not at all
        stdlib |= {"import contextlib", "import ctypes", "import shutil"}
    if preemptible(spec):
        stdlib.add("import signal")
    if spec.logging.mlflow:  # MLflow's own process (RunDirectory.start_tracking)
        stdlib.add("import subprocess")
    third_party = {"import keras", "import tensorflow as tf"}
    if spec.checkpoint or spec.export.saved_model:  # debug/step-N/batch.npz; --fast-dev-run
        third_party.add("import numpy as np")
    if kinds & {"npz", "shapes", "image_directory"}:
        third_party.add("import numpy as np")
    if "npz" in kinds:  # a damaged .npz file is named
        stdlib.add("import zipfile")
    if "tfds" in kinds:
        third_party.add("import tensorflow_datasets as tfds")
    if "tfrecord" in kinds:
        stdlib |= {"import re", "import struct"}
    if "csv" in kinds:
        stdlib.add("import re")
    if kinds & {"text", "text_directory", "text_records"}:
        third_party.add("import numpy as np")
    if "text_records" in kinds:
        stdlib.add("import csv")
    from_imports = set()
    if not isinstance(spec.model, OPAQUE) or spec.custom_layers:
        from_imports.add("from keras import layers")
    user = [f"import {spec.model.module}"] if isinstance(spec.model, Imported) else []
    if spec.model is not None and spec.model.kind == "keras_hub":
        third_party.add("import keras_hub")
    objectives = [spec.loss, *spec.metrics, *spec.optimizers().values()]
    for task in spec.tasks.values():
        objectives += [task.loss, *task.metrics]
    user += [f"import {o.module}" for o in objectives if o is not None and o.kind == "import"]
    user += [f"import {spec.training.module}"] if spec.training.kind == "own_step" else []
    user += [f"import {m}" for m in spec.training.modules] if spec.training.kind == "grpo" else []
    user += [
        f"import {s.module}"
        for s in (spec.data.train, spec.data.validation)
        if s is not None and s.kind == "generator"
    ]
    user = sorted(set(user))
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


def metric_list(spec: Spec, split: str, extra: list[str]) -> str | None:
    """The script's list of the metric objects of `split` (train, validation), in the order of
    `Spec.log_names`; None where make_metrics() returns it (a multi-task model's)."""
    if spec.gan is not None:
        return "[" + ", ".join(f"{split}_{name}" for name in spec.log_names()) + "]"
    if spec.tasks and spec.data.validation is not None:
        # make_metrics() returns them.
        return "[" + ", ".join([f"*{split}_values", *extra]) + "]" if extra else None
    objects = [f"{split}_loss"]
    if split == "train" and spec.train_parts():
        objects.append(f"*{split}_losses.values()")
    if spec.training.kind in LM_KINDS:
        objects.append(f"*{split}_extras.values()")
    elif spec.training.kind == "own_step":
        if len(spec.training.losses) > 1:
            objects.append(f"*{split}_losses.values()")
        if spec.training.extras:
            objects.append(f"*{split}_extras.values()")
        if spec.metrics:
            objects.append(f"*{split}_metrics")
    elif spec.training.kind == "vae":
        objects.append(f"*{split}_terms.values()")
    elif spec.tasks:
        objects.append(f"*{split}_task_losses.values()")
        objects += [
            f"*{split}_metrics[{code.literal(n)}]" for n, t in spec.tasks.items() if t.metrics
        ]
    elif spec.metrics:
        objects.append(f"*{split}_metrics")
    if split == "validation" and spec.training.kind == "adversarial":
        objects += ["validation_robust_loss"]
        objects += ["*validation_robust_metrics"] if spec.metrics else []
    return "[" + ", ".join([*objects, *extra]) + "]"


def schedule_expression(schedule: Any) -> str | None:
    """The learning-rate schedule's constructor: Keras's own, or a class of the script."""
    if schedule is None:
        return None
    if schedule.script_class is None:
        return code.keras_object("optimizers.schedules", schedule)
    if isinstance(schedule, Warmup):
        rest = code.arguments([(k, v) for k, v in schedule.arguments() if k != "after"])
        after = schedule.after
        inner = (
            code.literal(after) if isinstance(after, float | int) else schedule_expression(after)
        )
        return f"{schedule.script_class}({rest}, after={inner})"
    return code.call(schedule.script_class, schedule.arguments())


def schedule_chain(schedule: Any) -> list[Any]:
    """A schedule and the one it wraps (a Warmup's `after`), outermost first; [] for none."""
    chain = []
    while schedule is not None and not isinstance(schedule, float | int):
        chain.append(schedule)
        schedule = getattr(schedule, "after", None)
    return chain


def optimizer_expression(spec: Spec, optimizer: Any = None, inline_schedule: bool = False) -> str:
    """The optimizer's constructor; a schedule is the variable `learning_rate` (or, inline, its
    constructor)."""
    optimizer = optimizer or spec.optimizer
    if optimizer.kind == "sam":  # its base applies the gradients; the step does the rest
        optimizer = optimizer.base
    args = optimizer.arguments()
    if optimizer.kind == "import":  # your class
        callee = f"{optimizer.module}.{code.identifier(optimizer.attribute)}"
    else:
        callee = f"keras.optimizers.{optimizer.keras_class}"
    if optimizer.schedule is None:
        return code.call(callee, args)
    if inline_schedule:
        rest = code.arguments(args[1:])
        rate = schedule_expression(optimizer.schedule)
        return f"{callee}(learning_rate={rate}{', ' + rest if rest else ''})"
    return code.call(callee, [("learning_rate", Var(var="learning_rate")), *args[1:]])


def net_has(net: Any, what: str) -> bool:
    """Whether a network has Repeat blocks (`repeats`) or skip connections (`skips`)."""
    if isinstance(net, OPAQUE):
        return False
    kinds = ("repeat",) if what == "repeats" else ("save_skip", "concatenate")
    return any(item.kind in kinds for _, item in net.flat_items())
