"""The top-level `Spec` of a training run, its run-time sections and cross-field rules."""

import re
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, Discriminator, Field, Tag, model_validator

from . import rules
from .base import Epochs, Identifier, PositiveInt, Seed, Steps, StrictModel
from .controls import EMA, BestModel, EarlyStopping, Gradients, ReduceOnPlateau
from .data import Data
from .environment import Environment
from .finetune import FineTune
from .layers import CustomLayerClass, KerasLayer
from .model import OPAQUE, Model
from .performance import Performance
from .training import Loss, Metric, Optimizer
from .ways import DRAWING_KINDS, GAN, LM_KINDS, RL_KINDS, Supervised, Task, Training
from .ways.lm import DPO_LOGGED, grpo_logged


class Loop(StrictModel):
    """How long to train and how often to log and validate."""

    epochs: Epochs | None = None
    """Passes over the training data (the script's `--epochs` overrides it)."""
    steps: Steps | None = None
    """Total optimizer steps instead of epochs; training stops mid-epoch when reached."""
    log_every_steps: PositiveInt = 100
    """Update the progress bar and write training scalars every N steps."""
    validate_every_epochs: PositiveInt = 1
    """Run the validation pass every N epochs (and after the last one)."""

    @model_validator(mode="after")
    def _epochs_or_steps(self) -> "Loop":
        if (self.epochs is None) == (self.steps is None):
            raise ValueError("set exactly one of loop.epochs and loop.steps")
        return self


class Checkpoint(StrictModel):
    """Periodic `tf.train.CheckpointManager` saves; the script resumes from the latest."""

    every_epochs: PositiveInt | None = None
    """Save at the end of every N-th epoch."""
    every_steps: PositiveInt | None = None
    """Save every N optimizer steps."""
    keep: PositiveInt = 3
    """How many recent checkpoints to keep."""

    @model_validator(mode="after")
    def _one_cadence(self) -> "Checkpoint":
        if self.every_epochs is not None and self.every_steps is not None:
            raise ValueError(
                "checkpoint.every_epochs and checkpoint.every_steps are both set; keep one"
            )
        if self.every_epochs is None and self.every_steps is None:
            raise ValueError("set checkpoint.every_epochs or checkpoint.every_steps")
        return self


class Export(StrictModel):
    """What the script writes when training ends."""

    saved_model: bool = True
    """SavedModels, which load without the custom layer classes: `export/network/`, the bare
    network (`model.export`), and for `Npz`, `KerasDataset`, `Shapes`, `ImageDirectory`, `Csv`,
    `TFRecord`, `Text` and `Tfds` training data `export/saved_model/1/` to serve (TF Serving's
    layout, version 1), whose `serving_default` takes raw examples (the source's arrays; image
    files' bytes; a CSV's columns by name; a record's features by name, images as their encoded
    bytes; texts; a TFDS feature as TFDS decodes it), prepares them with the training
    pipeline's own functions, and returns `scores` (and `probabilities`, `class_ids` for a
    classifier, `class_names` where the source names the classes: an image directory's
    sub-directories, a text file's labels, a TFDS ClassLabel's names); for a multi-task
    model each head's, as `<task>_scores`, `<task>_probabilities`, `<task>_class_ids`."""
    keras: bool = False
    """A `.keras` file (`model.save`) to continue in Keras; needs the custom classes to load."""
    tflite: bool = False
    """Also `export/model.tflite`: the model to serve (`export/saved_model/1`, raw examples in,
    the same named outputs; for a GAN its generator, noise in, images out) converted by
    `tf.lite.TFLiteConverter` with TFLite's builtin ops only, so that `tf.lite.Interpreter` of
    the tensorflow package (which cannot run TensorFlow's own ops) and TFLite on a phone run
    it. Refused at render time where it cannot be converted so: without `saved_model`;
    training data other than `Npz`, `KerasDataset` or `Shapes` arrays (an `ImageDirectory`
    model decodes image files, a TensorFlow op; a CSV, TFRecord or text model takes inputs by
    name or strings, which do not run as served; a TFDS model takes images of any size; a
    generator has no model to serve); mixed precision (float16 and bfloat16 ops); layers
    TFLite's builtins cannot run (recurrent layers not unrolled, integer lookups, hashing,
    category encoding, text vectorization, random augmentation in the model). An imported
    model's layers are not visible: the conversion tells at export."""


class Comet(StrictModel):
    """Log to Comet (comet.ml). The script imports `comet_ml` only when this is set: install it
    with `pip install comet_ml` and set `COMET_API_KEY`, or train offline."""

    project_name: str
    """Comet project of the run."""
    workspace: str | None = None
    """Comet workspace; None means the API key's default."""
    offline: bool = False
    """Write the experiment to `<output>/comet/` (upload it later with `comet upload`) instead
    of sending it while training."""


class MLflow(StrictModel):
    """Track the run in MLflow: the spec's fields as parameters, the logged values by step,
    the spec's sha256 and loopgen's version as tags, and at the end the export, the script
    and the spec file as artifacts. The script imports `mlflow` only when this is set
    (pip install -e ".[mlflow]"). The MLflow run's id is kept in the output directory
    (`mlflow_run_id`): a resumed run continues the same MLflow run; a new one continues the
    run MLFLOW_RUN_ID names if it is set (a sweep's trial), else starts one."""

    experiment: str = Field(min_length=1)
    """The MLflow experiment of the run (created if missing)."""
    tracking_uri: str | None = None
    """Where runs are tracked: a server's URL (http://host:5000), a database or a folder.
    None: MLflow's own choice, MLFLOW_TRACKING_URI if set, else a local store in the working
    directory (`mlflow ui` there shows it, from the full package: pip install mlflow)."""
    artifacts: bool = True
    """Upload the export, the script and the spec file when the run finishes."""


class Inspect(StrictModel):
    """Per-layer statistics of the networks, computed at every `every_steps`-th step only
    (that step runs apart, traced once more with what it computes kept), logged to TensorBoard
    (scalars and histograms under `inspect/<network>/<layer>/`) and to metrics.jsonl. Which
    networks: the model; a GAN's generator and discriminator; a contrastive run's encoder and
    projection; the student of a distillation. On one device (`distribute.kind='single_device'`;
    a run's checkpoints restore into that variant of its script)."""

    every_steps: PositiveInt
    """The steps inspected: every `every_steps`-th."""
    activations: bool = True
    """Each layer's output on the step's batch, in inference mode (no dropout drawn, no
    statistics updated, so the run trains as it would uninspected): mean, standard deviation,
    the fraction of zeros (dead ReLUs) and, after a sigmoid or tanh, the fraction saturated
    (within 0.01 of its bounds). Needs networks of the spec's layers (not `model.kind='import'`)."""
    gradients: bool = True
    """The norm of each layer's gradient in the step (before clipping; the summed gradient of
    accumulated micro-batches)."""
    weights: bool = True
    """Each layer's weight norm after the step, and the update-to-weight ratio ||Δw|| / ||w||
    of the step (around 1e-3 is healthy for most optimizers; far below, the layer barely
    learns; far above, it is unstable)."""


class Logging(StrictModel):
    """Where metrics go."""

    tensorboard: bool = True
    """Write `tf.summary` scalars for `tensorboard --logdir <output>/logs`."""
    jsonl: bool = True
    """Append one JSON line per log step and per epoch to `<output>/metrics.jsonl`."""
    csv: bool = False
    """Append one row per log step and per validation to `<output>/metrics.csv` (columns: step,
    epoch, every training value, every validation value)."""
    histograms: bool = False
    """At every log step, write a TensorBoard histogram of each weight and the norm of each
    weight's gradient (and their global norm), to see which layers learn, vanish or explode."""
    comet: Comet | None = None
    """Also log parameters and metrics to Comet."""
    mlflow: MLflow | None = None
    """Also track the run in MLflow."""
    inspect: Inspect | None = None
    """Per-layer statistics (activations, gradients, weights) at some steps: see `Inspect`.
    None: the script has no inspection code at all."""


DEVICE_PATTERN = r"(?i)^(/job:\w+(/replica:\d+)?(/task:\d+)?)?/?(device:)?(cpu|gpu):\d+$"
"""A TensorFlow device name such as `/gpu:0`, `GPU:1` or `/job:localhost/device:CPU:0`."""


def _check_device(name: str) -> str:
    if not re.match(DEVICE_PATTERN, name):
        raise ValueError(
            f"{name!r} is not a TensorFlow device name; write the type and index with a colon, "
            "e.g. '/gpu:0', 'GPU:1' or '/cpu:0'"
        )
    return name


Device = Annotated[str, AfterValidator(_check_device)]


class SingleDevice(StrictModel):
    """Train on the default device (one GPU if present, else the CPU)."""

    kind: Literal["single_device"] = "single_device"


class Mirrored(StrictModel):
    """`tf.distribute.MirroredStrategy`: one machine, a replica of the model per device,
    gradients summed across replicas every step."""

    kind: Literal["mirrored"] = "mirrored"
    devices: list[Device] = []
    """Devices to replicate on, e.g. `["/gpu:0", "/gpu:1"]`; empty means every GPU (or the CPU
    when there is none). Several CPU devices (`["/cpu:0", "/cpu:1"]`) split the CPU into
    logical devices: slow, but it runs the distributed script on a laptop."""

    @property
    def cpu_devices(self) -> int:
        """How many logical CPU devices the script must create."""
        return sum("cpu" in d.lower() for d in self.devices)


class MultiWorker(StrictModel):
    """`tf.distribute.MultiWorkerMirroredStrategy`: several machines, each with its devices,
    configured by the `TF_CONFIG` environment variable of each worker process."""

    kind: Literal["multi_worker"] = "multi_worker"
    communication: Literal["auto", "ring", "nccl"] = "auto"
    """Collective implementation: `ring` (gRPC, CPUs), `nccl` (GPUs), or `auto`."""


class TPU(StrictModel):
    """`tf.distribute.TPUStrategy` on a Cloud TPU."""

    kind: Literal["tpu"] = "tpu"
    tpu: str = ""
    """TPU name or `grpc://` address for `TPUClusterResolver`; empty means the TPU VM's own
    (or the one named by the `TPU_NAME` environment variable)."""


def _data_kind(value: Any) -> str:
    kind = value.get("kind") if isinstance(value, dict) else getattr(value, "kind", None)
    return "environment" if kind == "environment" else "data"


DataSection = Annotated[
    Annotated[Data, Tag("data")] | Annotated[Environment, Tag("environment")],
    Discriminator(_data_kind),
]
"""Examples to learn from (`Data`), or an environment to act in (`Environment`)."""


Strategy = Annotated[SingleDevice | Mirrored | MultiWorker | TPU, Field(discriminator="kind")]
"""Distribution strategy of the script."""

STRATEGY_KINDS = ("single_device", "mirrored", "multi_worker", "tpu")
"""The `kind` of each strategy: the script variants `loopgen render --variant` can write."""


XLA_GAINS = frozenset({
    "dense", "flatten", "reshape", "activation", "re_lu", "softmax", "batch_normalization",
    "layer_normalization", "add", "subtract", "multiply", "average", "concatenate",
})  # fmt: skip
"""Layers a single-device step compiles to a faster program with XLA on this CPU (measured in
bench/ on the MLPs); with any other layer `xla="auto"` stays off."""


class Spec(StrictModel):
    """A training run: everything `loopgen render` needs to write the script."""

    name: Identifier
    """Name of the run: the model's name and the default output directory `runs/<name>`."""
    description: str = ""
    """One or two sentences for the script's docstring."""
    seed: Seed = 0
    """Seed for Python, NumPy, TensorFlow and Keras (`keras.utils.set_random_seed`)."""
    data: DataSection
    """The input pipeline (`Data`), or for reinforcement learning the environment the model acts
    in (`Environment`)."""
    custom_layers: list[CustomLayerClass] = []
    """Custom layer classes, written into the script as `keras.layers.Layer` subclasses."""
    training: Training = Supervised()
    """How a step trains: `Supervised()` (the default), `MultiTask(tasks=...)`, `GAN(...)`, ..."""
    model: Model | None = None
    """The network (a GAN has its networks in `training`)."""
    loss: Loss | None = None
    """The objective (a multi-task model has one per task, in `training.tasks`)."""
    optimizer: Optimizer | None = None
    """The optimizer and its learning-rate schedule (a GAN has one per network, in
    `training`)."""
    gradients: Gradients = Gradients()
    """Gradient clipping and accumulation."""
    metrics: list[Metric] = []
    """Metrics reported for training and validation."""
    loop: Loop
    """Length of training and logging cadence."""
    checkpoint: Checkpoint | None = None
    """Checkpoint cadence; None disables checkpoints (and resuming)."""
    early_stopping: EarlyStopping | None = None
    """Stop when a validation value stops improving."""
    reduce_on_plateau: ReduceOnPlateau | None = None
    """Lower the learning rate when a validation value stops improving."""
    best_model: BestModel | None = None
    """Keep and export the weights of the best validation, not only the last ones."""
    ema: EMA | None = None
    """An exponential moving average of the weights, validated and exported."""
    logging: Logging = Logging()
    """TensorBoard and metrics file."""
    export: Export = Export()
    """Exported model formats."""
    distribute: Strategy = SingleDevice()
    """Distribution strategy."""
    output_dir: str = ""
    """Default output directory of checkpoints, logs and exports; empty means `runs/<name>`."""
    performance: Performance = Performance()
    """Steps per call, XLA and mixed precision."""
    fine_tune: FineTune | None = None
    """Unfreeze a frozen backbone part-way through training."""

    @model_validator(mode="before")
    @classmethod
    def _moved_sections(cls, data: Any) -> Any:
        # Earlier specs named these ways of training at the top level.
        moved = {"gan": "training=GAN(...)", "tasks": "training=MultiTask(tasks={...})"}
        for field, now in moved.items():
            if isinstance(data, dict) and field in data:
                raise ValueError(f"{field}= is now {now}: move it into the training section")
        return data

    @property
    def acts(self) -> bool:
        """Reinforcement learning: an environment to act in, or a way of training that acts."""
        return isinstance(self.data, Environment) or self.training.kind in RL_KINDS

    @property
    def gan(self) -> GAN | None:
        """The GAN, when that is the way of training."""
        return self.training if isinstance(self.training, GAN) else None

    @property
    def tasks(self) -> dict[str, Task]:
        """The tasks of a multi-task model, by name ({} for every other way of training)."""
        return getattr(self.training, "tasks", {})

    @model_validator(mode="after")
    def _cross_field(self) -> "Spec":
        # The rules that relate several sections live in dsl/rules/, one small function each.
        if self.acts:
            rules.rl.check(self)
        else:
            rules.check(self)
        return self

    @property
    def image_range(self) -> str:
        """A GAN generator's output range: `tanh` ([-1, 1]) or `sigmoid` ([0, 1])."""
        assert self.gan is not None
        return self.gan.generator.last_layer()[1].arg("activation")

    def objectives(self) -> list[tuple[str, Loss, str, list[Metric], str, object]]:
        """(field path of the loss, the loss, field path of its metrics, the metrics, path of
        the output layer, that layer) for the one loss, or for each task (none for a GAN)."""
        if self.gan is not None or self.training.kind in (
            "own_step",
            *RL_KINDS,
            *LM_KINDS,
            *DRAWING_KINDS,
        ):
            return []  # a GAN's losses are its own; an own step's are yours; an LM way's fixed
        if isinstance(self.model, OPAQUE):
            return [("loss", self.loss, "metrics", self.metrics, "", None)]
        if not self.tasks:
            path, last = self.model.last_layer()
            return [("loss", self.loss, "metrics", self.metrics, f"model.{path}", last)]
        outputs = {name: (path, layer) for name, path, layer in self.model.head_outputs()}
        return [
            (f"training.tasks.{name}.loss", task.loss, f"training.tasks.{name}.metrics",
             task.metrics, f"model.{outputs[name][0]}", outputs[name][1])
            for name, task in self.tasks.items()
        ]  # fmt: skip

    def log_names(self) -> list[str]:
        """The names of the logged losses and metrics (prefixed `val_` for validation)."""
        if self.gan is not None:
            return self.gan.log_names()
        if self.acts or self.training.kind in DRAWING_KINDS:
            return self.training.log_names()
        if self.training.kind == "sft":
            return ["loss", "mean_token_accuracy", "perplexity"]
        if self.training.kind == "dpo":
            return ["loss", *DPO_LOGGED]
        if self.training.kind == "grpo":
            return ["loss", *grpo_logged(self.training)]
        if self.training.kind == "own_step":
            parts = self.training.losses if len(self.training.losses) > 1 else []
            extras = self.training.extras
            return ["loss", *parts, *extras, *(m.metric_name for m in self.metrics)]
        if not self.tasks:
            return ["loss", *(m.metric_name for m in self.metrics), *self.validation_extras()]
        return [
            "loss",
            *(f"{name}_loss" for name in self.tasks),
            *(f"{name}_{m.metric_name}" for name, task in self.tasks.items() for m in task.metrics),
        ]

    def train_parts(self) -> list[str]:
        """The parts of the training loss that a way of training logs after `loss`, and that
        validation does not compute (a distillation's loss on the teacher)."""
        if self.training.kind == "distillation":
            return ["student_loss", "distillation_loss"]
        if self.training.kind == "adversarial" and self.training.train_on == "both":
            return ["clean_loss", "adversarial_loss"]
        if self.training.kind == "contrastive":
            return ["probe_loss"]
        return []

    def validation_extras(self) -> list[str]:
        """What validation logs beyond the training's values (the end of `log_names`): the
        loss and metrics on attacked examples, for adversarial training."""
        if self.training.kind == "adversarial":
            return ["robust_loss", *(f"robust_{m.metric_name}" for m in self.metrics)]
        if self.training.kind == "sft":
            return ["perplexity"]
        return []

    def monitors(self) -> dict[str, EarlyStopping | ReduceOnPlateau | BestModel]:
        """The decisions taken on validation values, by field name."""
        # In the order the script takes them: the best weights are saved and the rate lowered
        # before early stopping may end the run.
        found = {
            "best_model": self.best_model,
            "reduce_on_plateau": self.reduce_on_plateau,
            "early_stopping": self.early_stopping,
        }
        return {field: m for field, m in found.items() if m is not None}

    @property
    def uses_xla(self) -> bool:
        """Whether the script XLA-compiles its per-batch step (performance.xla, `auto`
        resolved: dense-only models on a single device; see `Performance.xla`)."""
        xla = self.performance.xla
        # Of the ways that act, DQN alone: its Q-network's call at every environment step is
        # a handful of small ops, which XLA runs as one on the calling thread.
        if self.gan is not None or (self.acts and self.training.kind != "dqn"):
            return False
        if xla != "auto" or self.distribute.kind != "single_device":
            return xla == "on" and self.distribute.kind == "single_device"
        if self.training.kind not in ("supervised", "multi_task", "dqn"):
            return False  # code of yours (an own step) XLA may not compile
        if isinstance(self.model, OPAQUE) or self.gradients.accumulate_steps > 1:
            return False
        # Measured on CPU (bench/): XLA speeds up dense layers, slows convolutions and Dropout's
        # random numbers, and cannot compile some layers at all (string lookups): on only for
        # models made of layers known to gain.
        return not self._any_layer(
            lambda layer: isinstance(layer, KerasLayer) and layer.kind not in XLA_GAINS
        )

    def warnings(self) -> list[str]:
        """Combinations that render and run but are probably not what the user wants."""
        found = []
        multi_device = not isinstance(self.distribute, SingleDevice) and not (
            isinstance(self.distribute, Mirrored) and len(self.distribute.devices) == 1
        )
        if multi_device:
            for path, layer in self.layers_with_paths():
                kind = getattr(layer, "kind", "")
                if kind == "batch_normalization" and not layer.arg("synchronized"):
                    found.append(
                        f"{path} is a BatchNormalization under distribute.kind="
                        f"{self.distribute.kind!r}: each replica normalizes with the statistics "
                        "of its own slice of the batch, so training differs from one device. Set "
                        f"{path}.synchronized=True to use the statistics of the global batch"
                    )
        return found

    def optimizers(self) -> dict[str, Optimizer]:
        """Every optimizer of the run, by field path."""
        if self.gan is not None:
            return {f"training.{name}_optimizer": o for name, o in self.gan.optimizers().items()}
        return {"optimizer": self.optimizer} if self.optimizer else {}

    @property
    def regularized(self) -> bool:
        """Whether the model has penalties in `model.losses` (assumed for imported models; a
        KerasHub task adds none)."""
        if self.model is not None and self.model.kind == "keras_hub":
            return False
        return self._any_layer(lambda layer: getattr(layer, "regularized", False))

    @property
    def has_dropout(self) -> bool:
        """Whether the model has random layers (Dropout, noise, augmentation, ...), whose random
        state must be checkpointed (assumed for imported models: code the spec cannot see may
        well have it). A layer that takes a `seed` draws random numbers."""
        return self._any_layer(
            lambda layer: isinstance(layer, KerasLayer) and "seed" in layer.entry.args
        )

    def layers_with_paths(self) -> list[tuple[str, object]]:
        """Every layer the spec declares, with its field path (none for imported models)."""
        found = []
        if self.gan is not None:
            for name, network in self.gan.networks().items():
                found += [(f"training.{name}.{path}", item) for path, item in network.flat_items()]
        elif not isinstance(self.model, OPAQUE):
            found = [(f"model.{path}", item) for path, item in self.model.flat_items()]
        if self.training.kind == "vae":
            found += [(f"training.encoder.{p}", x) for p, x in self.training.encoder.flat_items()]
        for i, cls in enumerate(self.custom_layers):
            found += [(f"custom_layers[{i}].layers[{j}]", s) for j, s in enumerate(cls.layers)]
        if not self.acts and self.data.augment_in == "model":
            found += [(f"data.augmentation[{i}]", x) for i, x in enumerate(self.data.augmentation)]
        return found

    def _any_layer(self, test) -> bool:
        """Whether a layer of the model, or of a custom layer class, passes `test`; True for
        imported models, whose layers the spec cannot see."""
        if isinstance(self.model, OPAQUE):
            return True
        return any(test(layer) for _, layer in self.layers_with_paths())
