"""The top-level `Spec` of a training run, its run-time sections and cross-field rules."""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import AfterValidator, Field, model_validator

from .base import Identifier, PositiveInt, StrictModel, check_not_reserved
from .controls import BestModel, EarlyStopping, Gradients, ReduceOnPlateau
from .data import Data
from .gan import GAN
from .layers import ActivationLayer, BatchNormalization, Custom, CustomLayerClass, Dropout, _Kernel
from .model import Imported, Model
from .performance import Performance
from .shapes import check_shapes
from .tasks import Task
from .training import BinaryAccuracy, Loss, Metric, Optimizer


class Loop(StrictModel):
    """How long to train and how often to log and validate."""

    epochs: PositiveInt | None = None
    """Passes over the training data (the script's `--epochs` overrides it)."""
    steps: PositiveInt | None = None
    """Total optimizer steps instead of epochs; training stops mid-epoch when reached."""
    log_every_steps: PositiveInt = 100
    """Update the progress bar and write training scalars every N steps."""
    validate_every_epochs: PositiveInt = 1
    """Run the validation pass every N epochs (and after the last one)."""

    @model_validator(mode="after")
    def _epochs_or_steps(self) -> Loop:
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
    def _one_cadence(self) -> Checkpoint:
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
    """A SavedModel (`model.export`) for serving; loads without the custom layer classes."""
    keras: bool = False
    """A `.keras` file (`model.save`) to continue in Keras; needs the custom classes to load."""


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


Strategy = Annotated[SingleDevice | Mirrored | MultiWorker | TPU, Field(discriminator="kind")]
"""Distribution strategy of the script."""

STRATEGY_KINDS = ("single_device", "mirrored", "multi_worker", "tpu")
"""The `kind` of each strategy: the script variants `loopgen render --variant` can write."""


_COUNTERPART = {
    "sparse_categorical_crossentropy": "categorical_crossentropy",
    "categorical_crossentropy": "sparse_categorical_crossentropy",
    "sparse_categorical_accuracy": "categorical_accuracy",
    "categorical_accuracy": "sparse_categorical_accuracy",
}
"""For a loss or metric that expects the other label format: the one that fits."""


class Spec(StrictModel):
    """A training run: everything `loopgen render` needs to write the script."""

    name: Identifier
    """Name of the run: the model's name and the default output directory `runs/<name>`."""
    description: str = ""
    """One or two sentences for the script's docstring."""
    seed: int = 0
    """Seed for Python, NumPy, TensorFlow and Keras (`keras.utils.set_random_seed`)."""
    data: Data
    """The input pipeline."""
    custom_layers: list[CustomLayerClass] = []
    """Custom layer classes, written into the script as `keras.layers.Layer` subclasses."""
    model: Model | None = None
    """The network (for a GAN, set `gan` instead)."""
    loss: Loss | None = None
    """The objective (for a multi-task model, set `tasks` instead)."""
    tasks: dict[Identifier, Task] = {}
    """Multi-task: a loss, weight and metrics per output head (`model.heads`), by name."""
    optimizer: Optimizer | None = None
    """The optimizer and its learning-rate schedule (for a GAN, in `gan`)."""
    gan: GAN | None = None
    """A generative adversarial network instead of `model`, `loss` and `optimizer`."""
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

    @model_validator(mode="after")
    def _cross_field(self) -> Spec:
        self._check_objective()
        self._check_custom_layers()
        self._check_shapes()
        self._check_labels()
        self._check_logits()
        self._check_schedule()
        self._check_thresholds()
        self._check_split()
        self._check_devices()
        self._check_performance()
        self._check_monitors()
        self._check_gradients()
        if self.logging.histograms and not self.logging.tensorboard:
            raise ValueError(
                "logging.histograms=True but logging.tensorboard=False: the histograms are "
                "TensorBoard summaries; set logging.tensorboard=True or drop the histograms"
            )
        names = self.log_names()[1:]  # after the loss
        if len(set(names)) != len(names) or "loss" in names:
            where = "tasks: the logged names" if self.tasks else "metrics: names"
            raise ValueError(
                f"{where} {names} repeat or use 'loss'; give each metric a unique name="
            )
        return self

    def _check_objective(self) -> None:
        if self.gan is not None:
            self._check_gan()
            return
        for field in ("model", "optimizer"):
            if getattr(self, field) is None:
                raise ValueError(
                    f"{field} is missing: set it (or gan, for a generative adversarial network)"
                )
        if self.loss is None and not self.tasks:
            raise ValueError(
                "loss is missing: set loss (the objective), or tasks for a multi-task model (one "
                "loss per head of model.heads)"
            )
        if self.loss is not None and self.tasks:
            raise ValueError(
                "loss and tasks are both set: a multi-task model has one loss per task; remove "
                "loss (or tasks, for a single output)"
            )
        heads = list(getattr(self.model, "heads", {}))
        if not self.tasks:
            if heads:
                raise ValueError(
                    f"model.heads has {heads} but tasks is empty: give each head its loss in "
                    "tasks (and drop loss)"
                )
            if self.data.label_names:
                raise ValueError(
                    f"data gives one label per task ({self.data.label_names}) but the model has "
                    "one output; add model.heads and tasks for them, or use single labels"
                )
            return
        if sorted(heads) != sorted(self.tasks):
            raise ValueError(
                f"tasks {sorted(self.tasks)} and model.heads {sorted(heads)} differ: a multi-task "
                "model (a Functional model) needs one head per task, with the same names"
            )
        if self.metrics:
            raise ValueError(
                "metrics is set for a multi-task model: put each metric in its task's "
                "tasks.<name>.metrics"
            )
        labels = self.data.label_names
        if labels is None or sorted(labels) != sorted(self.tasks):
            raise ValueError(
                f"tasks {sorted(self.tasks)} need one label each, but data.train gives "
                f"{sorted(labels) if labels else 'one label per example'}: use an Npz source "
                'with y_key={"<task>": "<array name>", ...} or Shapes(task="multitask")'
            )
        if self.data.labels == "one_hot":
            raise ValueError(
                'data.labels="one_hot" is for single labels; a multi-task model takes each '
                "task's labels as they are (sparse class ids)"
            )

    def _check_gan(self) -> None:
        gan = self.gan
        assert gan is not None
        taken = [f for f in ("model", "optimizer", "loss") if getattr(self, f) is not None]
        taken += [f for f in ("tasks", "metrics") if getattr(self, f)]
        if taken:
            raise ValueError(
                f"gan is set, and so is {taken[0]}: a GAN's networks, losses and optimizers are "
                f"all in gan (gan.generator, gan.discriminator, gan.*_optimizer); remove {taken[0]}"
            )
        if self.data.validation is not None:
            raise ValueError(
                "data.validation is set for a GAN: there are no labels to score it on, and the "
                "script writes sample images instead; remove data.validation"
            )
        unsupported = {
            "gradients": self.gradients.clipped or self.gradients.accumulate_steps > 1,
            "logging.histograms": self.logging.histograms,
            "performance.precision": self.performance.precision != "float32",
            "data.labels": self.data.labels != "sparse" or bool(self.data.label_names),
        }
        for field, used in unsupported.items():
            if used:
                raise ValueError(
                    f"{field} is set for a GAN, whose step loopgen writes without it (only the "
                    f"supervised step has it); remove {field} or hand-edit the GAN step"
                )
        if gan.generator.input_shape != (gan.latent_dim,):
            raise ValueError(
                f"gan.generator.input_shape={gan.generator.input_shape} but gan.latent_dim="
                f"{gan.latent_dim}: the generator takes the noise vector; set input_shape="
                f"({gan.latent_dim},)"
            )
        path, last = gan.generator.last_layer()
        if getattr(last, "activation", None) not in ("tanh", "sigmoid"):
            raise ValueError(
                f"gan.generator.{path} must end the generator in activation='tanh' (images in "
                "[-1, 1], the DCGAN choice) or 'sigmoid' ([0, 1]): the script scales the real "
                "images to the same range"
            )

    @property
    def image_range(self) -> str:
        """A GAN generator's output range: `tanh` ([-1, 1]) or `sigmoid` ([0, 1])."""
        assert self.gan is not None
        return self.gan.generator.last_layer()[1].activation

    def objectives(self) -> list[tuple[str, Loss, str, list[Metric], str, object]]:
        """(field path of the loss, the loss, field path of its metrics, the metrics, path of
        the output layer, that layer) for the one loss, or for each task (none for a GAN)."""
        if self.gan is not None:
            return []
        if isinstance(self.model, Imported):
            return [("loss", self.loss, "metrics", self.metrics, "", None)]
        if not self.tasks:
            path, last = self.model.last_layer()
            return [("loss", self.loss, "metrics", self.metrics, f"model.{path}", last)]
        outputs = {name: (path, layer) for name, path, layer in self.model.head_outputs()}
        return [
            (f"tasks.{name}.loss", task.loss, f"tasks.{name}.metrics", task.metrics,
             f"model.{outputs[name][0]}", outputs[name][1])
            for name, task in self.tasks.items()
        ]  # fmt: skip

    def log_names(self) -> list[str]:
        """The names of the logged losses and metrics (prefixed `val_` for validation)."""
        if self.gan is not None:
            return ["discriminator_loss", "generator_loss", "real_score", "fake_score"]
        if not self.tasks:
            return ["loss", *(m.metric_name for m in self.metrics)]
        return [
            "loss",
            *(f"{name}_loss" for name in self.tasks),
            *(f"{name}_{m.metric_name}" for name, task in self.tasks.items() for m in task.metrics),
        ]

    def _check_custom_layers(self) -> None:
        classes = {c.name: c for c in self.custom_layers}
        if len(classes) != len(self.custom_layers):
            raise ValueError("custom_layers: two classes share a name; rename one")
        for i, cls in enumerate(self.custom_layers):
            check_not_reserved(cls.name, f"custom_layers[{i}].name: class name")
        for path, item in self._layers_with_paths():
            if not isinstance(item, Custom):
                continue
            if item.cls not in classes:
                raise ValueError(
                    f"{path}.cls is {item.cls!r}, but custom_layers declares "
                    f"{sorted(classes) or 'no classes'}; declare it in custom_layers or fix the "
                    "name"
                )
            unknown = sorted(set(item.args) - set(classes[item.cls].params))
            if unknown:
                raise ValueError(
                    f"{path}.args passes {unknown[0]!r}, which is not a parameter of "
                    f"{item.cls} (its params: {sorted(classes[item.cls].params) or 'none'}); "
                    "fix the name or add the parameter to the class"
                )
        _check_no_cycle(classes)

    def _check_shapes(self) -> None:
        if self.gan is not None:
            self._check_gan_shapes()
        elif not isinstance(self.model, Imported):
            classes = {c.name: c for c in self.custom_layers}
            trunk = check_shapes(self.model.input_shape, self.model.layers, classes)
            for name, items in getattr(self.model, "heads", {}).items():
                check_shapes(trunk, items, classes, path=f"model.heads.{name}")

    def _check_gan_shapes(self) -> None:
        gan = self.gan
        assert gan is not None
        classes = {c.name: c for c in self.custom_layers}
        image = check_shapes(
            gan.generator.input_shape, gan.generator.layers, classes, path="gan.generator.layers"
        )
        if tuple(gan.discriminator.input_shape) != tuple(image):
            raise ValueError(
                f"gan.generator makes images of shape {image} but gan.discriminator.input_shape="
                f"{gan.discriminator.input_shape}; make them equal"
            )
        train = self.data.train
        if train.kind == "shapes" and tuple(image) != (train.image_size, train.image_size, 3):
            raise ValueError(
                f"gan.generator makes images of shape {image} but data.train has images of "
                f"({train.image_size}, {train.image_size}, 3); change the generator's layers or "
                "data.train.image_size"
            )
        logits = check_shapes(
            image, gan.discriminator.layers, classes, path="gan.discriminator.layers"
        )
        if tuple(logits) != (1,):
            raise ValueError(
                f"gan.discriminator outputs shape {logits}; it must output one logit per image "
                "(end it in Dense(units=1) without activation)"
            )

    def _check_labels(self) -> None:
        labels = self.data.labels
        checked = []
        for loss_path, loss, metrics_path, metrics, _, _ in self.objectives():
            checked += [(loss_path, loss)]
            checked += [(f"{metrics_path}[{i}]", m) for i, m in enumerate(metrics)]
        for where, obj in checked:
            wants = type(obj).labels
            if wants != "any" and wants != labels:
                alternative = _COUNTERPART.get(obj.kind)
                raise ValueError(
                    f"{where}.kind={obj.kind!r} expects {wants} labels, but data.labels="
                    f'{labels!r}; use data.labels="{wants}"'
                    + (f", or use {where}.kind={alternative!r}" if alternative else "")
                )

    def _check_logits(self) -> None:
        for where, loss, _, _, path, last in self.objectives():
            self._check_output(where, loss, path, last)

    def _check_output(self, where: str, loss: Loss, path: str, last: object) -> None:
        if not type(loss).probabilistic or not isinstance(last, _Kernel | ActivationLayer):
            return  # a custom layer, dropout, ...: the output activation is not visible here
        activation = last.activation
        squashed = activation in ("softmax", "sigmoid")
        if loss.from_logits and squashed:
            raise ValueError(
                f"{where}.from_logits=True but {path}.activation={activation!r}: the loss "
                f"would apply {activation} a second time. Remove the activation (recommended, "
                f"more stable) or set {where}.from_logits=False"
            )
        if not loss.from_logits and not squashed:
            raise ValueError(
                f"{where}.from_logits=False but {path} outputs "
                f"{'logits' if activation in (None, 'linear') else repr(activation) + ' values'}"
                f", not probabilities; set {where}.from_logits=True (recommended) or end the "
                "model in a softmax/sigmoid"
            )

    def _check_thresholds(self) -> None:
        for where, loss, metrics_path, metrics, _, _ in self.objectives():
            from_logits = getattr(loss, "from_logits", False)
            for i, metric in enumerate(metrics):
                if isinstance(metric, BinaryAccuracy) and from_logits and metric.threshold != 0.0:
                    raise ValueError(
                        f"{metrics_path}[{i}].threshold={metric.threshold} but {where}.from_logits"
                        "=True: the model outputs logits, where probability 0.5 is logit 0; set "
                        "threshold=0.0"
                    )

    def _check_split(self) -> None:
        validation = self.data.validation
        if validation is not None and validation.kind == "split":
            if self.data.train.kind == "image_directory":
                raise ValueError(
                    "data.validation is a split of data.train, an image_directory: its files "
                    "load class by class, so the split would hold out whole classes. Give "
                    "data.validation its own ImageDirectory (or Npz, ...) instead"
                )

    def _check_devices(self) -> None:
        if not isinstance(self.distribute, Mirrored) or not self.distribute.devices:
            return
        devices = [d.lower().lstrip("/").removeprefix("device:") for d in self.distribute.devices]
        if len(set(devices)) != len(devices):
            raise ValueError(
                f"distribute.devices={self.distribute.devices} names a device twice; list each "
                "device once"
            )
        replicas = len(devices)
        if self.data.batch_size % replicas:
            raise ValueError(
                f"data.batch_size={self.data.batch_size} (the global batch) does not split "
                f"evenly over the {replicas} replicas of distribute.devices; make "
                f"data.batch_size a multiple of {replicas}"
            )

    def _check_performance(self) -> None:
        xla, kind = self.performance.xla, self.distribute.kind
        if xla == "on" and self.gan is not None:
            raise ValueError(
                "performance.xla='on' for a GAN: loopgen compiles the supervised step only; set "
                "performance.xla='auto' or 'off'"
            )
        if xla == "on" and self.gradients.accumulate_steps > 1:
            raise ValueError(
                f"performance.xla='on' with gradients.accumulate_steps="
                f"{self.gradients.accumulate_steps}: a smaller last batch splits into "
                "micro-batches of different sizes, which XLA cannot compile; set "
                "performance.xla='auto' or 'off', or accumulate_steps=1"
            )
        if xla == "on" and kind in ("mirrored", "multi_worker"):
            raise ValueError(
                f"performance.xla='on' but distribute.kind={kind!r}: loopgen compiles the "
                "single-device step only (the distributed step all-reduces gradients, and a "
                "TPU compiles everything anyway); set performance.xla='auto' or 'off'"
            )

    def _check_monitors(self) -> None:
        known = [f"val_{name}" for name in self.log_names()]
        for field, monitored in self.monitors().items():
            if self.data.validation is None:
                raise ValueError(
                    f"{field} watches {monitored.monitor!r}, but data.validation is not set: "
                    f"there is nothing to watch; add data.validation or remove {field}"
                )
            if monitored.monitor not in known:
                raise ValueError(
                    f"{field}.monitor={monitored.monitor!r} is not a validation value of this run; "
                    f"choose one of {known}"
                )
        stop, plateau = self.early_stopping, self.reduce_on_plateau
        if (
            stop
            and plateau
            and stop.monitor == plateau.monitor
            and stop.patience <= plateau.patience
        ):
            raise ValueError(
                f"early_stopping.patience={stop.patience} is not above reduce_on_plateau.patience="
                f"{plateau.patience} on the same {stop.monitor}: the run would stop before the "
                "lower rate is ever tried; make early_stopping.patience the larger one"
            )
        if plateau and self.optimizer and self.optimizer.schedule is not None:
            raise ValueError(
                f"reduce_on_plateau is set and optimizer.learning_rate is a schedule "
                f"({self.optimizer.schedule.kind}): the plateau lowers a constant rate, which a "
                "schedule would override every step; use a constant optimizer.learning_rate or "
                "remove reduce_on_plateau"
            )

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

    def _check_gradients(self) -> None:
        steps = self.gradients.accumulate_steps
        replicas = len(getattr(self.distribute, "devices", [])) or 1
        if self.data.batch_size % (steps * replicas):
            per = f" per replica ({replicas} in distribute.devices)" if replicas > 1 else ""
            raise ValueError(
                f"gradients.accumulate_steps={steps} does not divide data.batch_size="
                f"{self.data.batch_size}{per} into equal micro-batches; make data.batch_size a "
                f"multiple of {steps * replicas}"
            )

    @property
    def uses_xla(self) -> bool:
        """Whether the script XLA-compiles its per-batch step (performance.xla, `auto`
        resolved: dense-only models on a single device; see `Performance.xla`)."""
        xla = self.performance.xla
        if self.gan is not None:
            return False
        if xla != "auto" or self.distribute.kind != "single_device":
            return xla == "on" and self.distribute.kind == "single_device"
        if isinstance(self.model, Imported) or self.gradients.accumulate_steps > 1:
            return False
        # Measured on CPU (bench/): XLA slows convolutions, and Dropout's random numbers.
        slower = ("conv2d", "conv2d_transpose", "max_pooling2d", "up_sampling2d", "dropout")
        return not self._any_layer(lambda layer: getattr(layer, "kind", "") in slower)

    def warnings(self) -> list[str]:
        """Combinations that render and run but are probably not what the user wants."""
        found = []
        multi_device = not isinstance(self.distribute, SingleDevice) and not (
            isinstance(self.distribute, Mirrored) and len(self.distribute.devices) == 1
        )
        if multi_device:
            for path, layer in self._layers_with_paths():
                if isinstance(layer, BatchNormalization) and not layer.synchronized:
                    found.append(
                        f"{path} is a BatchNormalization under distribute.kind="
                        f"{self.distribute.kind!r}: each replica normalizes with the statistics "
                        "of its own slice of the batch, so training differs from one device. Set "
                        f"{path}.synchronized=True to use the statistics of the global batch"
                    )
        return found

    def _check_schedule(self) -> None:
        for path, optimizer in self.optimizers().items():
            schedule = optimizer.schedule
            if schedule is not None and self.loop.steps is not None:
                problem = schedule.length_problem(f"{path}.learning_rate", self.loop.steps)
                if problem:
                    raise ValueError(problem)

    def optimizers(self) -> dict[str, Optimizer]:
        """Every optimizer of the run, by field path."""
        if self.gan is not None:
            return {f"gan.{name}_optimizer": o for name, o in self.gan.optimizers().items()}
        return {"optimizer": self.optimizer} if self.optimizer else {}

    @property
    def regularized(self) -> bool:
        """Whether the model has penalties in `model.losses` (assumed for imported models)."""
        return self._any_layer(lambda layer: getattr(layer, "regularized", False))

    @property
    def has_dropout(self) -> bool:
        """Whether the model has Dropout and so RNG state to checkpoint (assumed for imported
        models: code the spec cannot see may well have it)."""
        return self._any_layer(lambda layer: isinstance(layer, Dropout))

    def _layers_with_paths(self) -> list[tuple[str, object]]:
        """Every layer the spec declares, with its field path (none for imported models)."""
        found = []
        if self.gan is not None:
            for name, network in self.gan.networks().items():
                found += [(f"gan.{name}.{path}", item) for path, item in network.flat_items()]
        elif not isinstance(self.model, Imported):
            found = [(f"model.{path}", item) for path, item in self.model.flat_items()]
        for i, cls in enumerate(self.custom_layers):
            found += [(f"custom_layers[{i}].layers[{j}]", s) for j, s in enumerate(cls.layers)]
        return found

    def _any_layer(self, test) -> bool:
        """Whether a layer of the model, or of a custom layer class, passes `test`; True for
        imported models, whose layers the spec cannot see."""
        if isinstance(self.model, Imported):
            return True
        return any(test(layer) for _, layer in self._layers_with_paths())


def _check_no_cycle(classes: dict[str, CustomLayerClass]) -> None:
    """A custom layer class may use others, but never itself, directly or through others."""

    def visit(name: str, chain: tuple[str, ...]) -> None:
        if name in chain:
            cycle = " -> ".join((*chain[chain.index(name) :], name))
            raise ValueError(
                f"custom_layers: {cycle} contains itself; a layer class cannot be built from itself"
            )
        for layer in classes[name].layers:
            if isinstance(layer, Custom) and layer.cls in classes:
                visit(layer.cls, (*chain, name))

    for name in classes:
        visit(name, ())
