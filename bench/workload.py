"""What the benchmark trains: each example's model, optimizer, loss and metrics on synthetic
data of the real shapes, rendered to a script with the spec's own (or plain) speed settings."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
from loopgen.dsl.loader import load_spec
from loopgen.dsl.shapes import check_shapes
from loopgen.dsl.spec import Spec
from loopgen.render import code, context, render_runtime, render_script

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"

STEPS_PER_EPOCH = {
    "mnist_mlp": 1000,
    "fashion_validation": 400,
    "cifar10_vgg": 20,
    "shapes_unet": 20,
    "pets_unet": 3,
}
"""Steps per benchmark epoch: a few seconds each on a 2-core CPU, enough to swamp timer noise."""

PLAIN = ["performance.steps_per_loop=1", "performance.xla=off"]
"""Overrides for the loop at model.fit's defaults: one step per call, no XLA."""


@dataclass
class Workload:
    name: str
    spec: Spec
    steps_per_epoch: int
    data_path: Path

    @property
    def batch_size(self) -> int:
        return self.spec.data.batch_size

    def fit_settings(self) -> dict:
        """What the model.fit baseline needs to compile the same objective: Python
        expressions, written by the same code as the script's."""
        schedule = self.spec.optimizer.schedule
        return {
            "loss": code.keras_object("losses", self.spec.loss),
            "schedule": schedule and code.keras_object("optimizers.schedules", schedule),
            "optimizer": context.optimizer_expression(self.spec),
            "metrics": [code.keras_object("metrics", m) for m in self.spec.metrics],
            "precision": self.spec.performance.precision,
            "steps_per_loop": self.spec.performance.steps_per_loop,
            "xla": self.spec.uses_xla,
            "steps_per_epoch": self.steps_per_epoch,
        }


def bench_overrides(data_path: Path) -> list[str]:
    """Training throughput only, for both tools: synthetic arrays, no validation, no
    checkpoints, no export, no TensorBoard (the loop keeps its metrics.jsonl, which the
    benchmark reads its timings from)."""
    return [
        f'data.train={{"kind": "npz", "path": "{data_path.as_posix()}"}}',
        "data.validation=null",
        "checkpoint=null",
        "export.saved_model=false",
        "export.keras=false",
        "logging.tensorboard=false",
        "logging.jsonl=true",
        # The spec's mirrored strategy needs several devices; this machine has one CPU.
        'distribute={"kind": "single_device"}',
    ]


def workload(name: str, folder: Path, steps_per_epoch: int | None = None) -> Workload:
    """The example `name` with synthetic data of its shapes written into `folder`."""
    steps = steps_per_epoch or STEPS_PER_EPOCH[name]
    original = load_spec(EXAMPLES / f"{name}.py")
    data_path = folder / f"{name}.npz"
    write_synthetic(original, steps * original.data.batch_size, data_path)
    spec = load_spec(EXAMPLES / f"{name}.py", overrides=bench_overrides(data_path))
    return Workload(name, spec, steps, data_path)


def write_synthetic(spec: Spec, count: int, path: Path) -> None:
    """Random inputs of the model's input shape (8-bit when the spec rescales them) and labels
    of its output: class ids, or per-pixel class ids for a segmentation output."""
    rng = np.random.default_rng(0)
    classes = {c.name: c for c in spec.custom_layers}
    output = check_shapes(spec.model.input_shape, spec.model.layers, classes)
    shape = (count, *spec.model.input_shape)
    if spec.data.rescale:
        x = rng.integers(0, 256, size=shape, dtype=np.uint8)
    else:
        x = rng.random(shape, dtype=np.float32)
    label_shape = (count, *output[:-1], 1) if len(output) > 1 else (count,)
    y = rng.integers(0, output[-1], size=label_shape).astype(np.int64)
    np.savez(path, x=x, y=y)


def render(work: Workload, path: Path, overrides: list[str] = ()) -> Path:
    """Writes the loop script for the workload, with extra `--set` overrides."""
    spec = work.spec
    if overrides:
        spec = load_spec(
            EXAMPLES / f"{work.name}.py",
            overrides=[*bench_overrides(work.data_path), *overrides],
        )
    path.write_text(render_script(spec, spec_file=f"examples/{work.name}.py"))
    (path.parent / "loopgen_runtime.py").write_text(render_runtime())  # the runtime beside it
    return path
