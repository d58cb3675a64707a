"""Shared building blocks of the spec language: the strict base model and identifier types."""

import builtins
import contextlib
import keyword
import os
import re
import sys
from collections.abc import Iterator
from contextvars import ContextVar
from typing import Annotated, Any, ClassVar

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError


class StrictModel(BaseModel):
    """Base of every spec model: unknown fields are errors. The docstrings under its fields
    become their descriptions on demand (docs.py).

    The modules that define spec models do not postpone their annotations (no `from
    __future__ import annotations`; a model's own name in a validator's return type is quoted):
    pydantic would otherwise evaluate every annotation's string at import, a seventh of the
    time it spends building the models on each `loopgen` run."""

    model_config = ConfigDict(
        extra="forbid",
        frozen=True,
        validate_default=True,
        # NaN and ±inf are never meant (a learning rate of 1e309 parses as inf): refused with the
        # field's path, before they could reach the script.
        allow_inf_nan=False,
        # Python's re for the few `pattern=` fields: the Rust engine's Unicode tables for \w
        # cost milliseconds of every import, for patterns matched once per spec.
        regex_engine="python-re",
    )

    elsewhere: ClassVar[dict[str, str]] = {}
    """Fields a user may write here that live elsewhere in a spec (Keras' names, mostly), each
    with where: its unknown-field error says so (errors.py; `{at}` is this model's path, as
    `data.`, and `{value}` the number given, else `...`)."""

    def __new__(cls, /, *args: Any, **kwargs: Any) -> Any:
        model = super().__new__(cls)
        if _DEFERRED.get() is None:
            return model
        # In a spec file: built here, so that arguments that do not validate can be kept.
        origin = _user_frame(sys._getframe(1))
        if origin is None:  # built by a validator of ours, which expects the error
            return model
        try:
            model.__init__(*args, **kwargs)
        except ValidationError as error:
            return _unvalidated(cls, _REJECTED.pop(id(model), {}), error, origin)
        # Where the file built it: a cross-field rule about it is shown at that line.
        _BUILT[id(model)] = (model, origin.f_code.co_filename, origin.f_lineno)
        return model

    def __init__(self, /, **data: Any) -> None:
        if hasattr(self, "__pydantic_fields_set__"):
            return  # __new__ has built it already
        try:
            super().__init__(**data)
        except ValidationError:
            if _DEFERRED.get() is not None:
                _REJECTED[id(self)] = data  # for __new__: what it was given
            raise


class Unvalidated(dict):
    """What a spec file built with arguments that do not validate, kept as those arguments:
    a model built of it fails too (and is kept so), up to the spec, which the loader then
    validates whole, naming each error by its path in the spec (`spec.model.layers[1].units:
    ...`), as for a JSON spec or a --set, instead of by class (`Dense.units: ...`). The file
    can still read a field of it."""

    model: type[BaseModel]
    error: ValidationError
    filename: str
    lineno: int
    line: str

    def __getattr__(self, name: str) -> Any:
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None


_DEFERRED: ContextVar[list[Unvalidated] | None] = ContextVar("_DEFERRED", default=None)
_REJECTED: dict[int, dict[str, Any]] = {}
_BUILT: dict[int, tuple[BaseModel, str, int]] = {}
"""The models a spec file built that validated, by id (each kept alive with it): the model,
the file and the line."""
_LANGUAGE = os.path.dirname(os.path.abspath(__file__))
"""The spec language's modules (dsl/): its constructors, and the validators that may build
models expecting their errors."""
_PYDANTIC = os.path.dirname(os.path.abspath(sys.modules["pydantic"].__file__ or ""))


@contextlib.contextmanager
def deferring_errors() -> Iterator[list[Unvalidated]]:
    """While a spec (or sweep) file runs, a model its code builds with arguments that do not
    validate is kept as an Unvalidated dict of them (the innermost first, in the list)."""
    token = _DEFERRED.set([])
    try:
        yield _DEFERRED.get()  # type: ignore[misc]
    finally:
        _DEFERRED.reset(token)
        _REJECTED.clear()
        _BUILT.clear()


def built_at(model: Any) -> tuple[str, int] | None:
    """The file and line where the spec file running now built `model` (None: not built by
    it, or it did not validate: an Unvalidated knows its own)."""
    found = _BUILT.get(id(model))
    return (found[1], found[2]) if found is not None and found[0] is model else None


def _user_frame(frame: Any) -> Any:
    """The frame of the user's code that builds a model (through a vocabulary function such
    as `Dense(...)`), or None when the spec language's own code builds it."""
    while frame is not None and (
        os.sep + "vocabulary" + os.sep in frame.f_code.co_filename
        or (frame.f_code.co_name == "__init__" and frame.f_code.co_filename.startswith(_LANGUAGE))
    ):
        frame = frame.f_back
    filename = frame.f_code.co_filename if frame is not None else ""
    if not filename or filename.startswith((_LANGUAGE + os.sep, _PYDANTIC + os.sep)):
        return None
    return frame


def _unvalidated(
    cls: type[BaseModel], data: dict[str, Any], error: ValidationError, frame: Any
) -> Unvalidated:
    import linecache

    kept = Unvalidated(data)
    kind = cls.model_fields.get("kind")
    if kind is not None and "kind" not in kept and isinstance(kind.default, str):
        kept["kind"] = kind.default  # what a tagged union reads to know what it is
    kept.model, kept.error = cls, error
    kept.filename, kept.lineno = frame.f_code.co_filename, frame.f_lineno
    kept.line = linecache.getline(kept.filename, kept.lineno).strip()
    _DEFERRED.get().append(kept)  # type: ignore[union-attr]
    return kept


def plain(value: Any) -> Any:
    """Spec data with each Unvalidated part as a plain dict of its arguments (a model that
    validated stays as it is: what it is tells, e.g., a loss from a metric of the same name)."""
    if isinstance(value, dict):
        return {key: plain(child) for key, child in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(plain(child) for child in value)
    return value


def _check_identifier(value: str) -> str:
    if not value.isidentifier() or not value.isascii() or keyword.iskeyword(value):
        raise ValueError(
            f"{value!r} is not a valid Python identifier: use ASCII letters, digits and "
            "underscores, not starting with a digit, and not a Python keyword"
        )
    if value.startswith("__"):
        raise ValueError(f"{value!r} starts with '__': names with dunder prefixes are reserved")
    return value


# Names the generated script already uses at module level or inside build_model() and custom
# layer classes: a spec name that becomes code (class, parameter, loop variable, imported
# package) must not shadow them, nor a Python builtin.
RESERVED_NAMES = frozenset(dir(builtins)) | {
    "argparse", "json", "math", "os", "keras", "tf", "np", "layers", "tfds",
    "draw_shapes", "load_examples", "preprocess", "build_model", "results", "append_jsonl",
    "parse_args", "main", "SEED", "BATCH_SIZE", "SHUFFLE_BUFFER", "RESCALE", "NUM_CLASSES",
    "EPOCHS", "TOTAL_STEPS", "LOG_EVERY_STEPS", "VALIDATE_EVERY_EPOCHS", "OUTPUT_DIR",
    "CHECKPOINT_EVERY_STEPS", "CHECKPOINT_EVERY_EPOCHS", "KEEP_CHECKPOINTS",
    "STEPS_PER_LOOP", "ACCUMULATE_STEPS", "CLIP_NORM", "CLIP_VALUE", "EARLY_STOPPING_PATIENCE",
    "PLATEAU_PATIENCE", "PLATEAU_FACTOR", "MIN_LEARNING_RATE", "CSV_COLUMNS", "csv", "comet_ml",
    "append_csv", "anneal", "ValidationMonitor", "CyclicalLearningRate", "OneCycle",
    "LinearWarmup", "COLUMNS", "COLUMN_DTYPES", "DELIMITER", "COLUMN_FIELDS",
    "COLUMN_DTYPES_FIELD", "FEATURES_FIELD", "GENERATOR_SIGNATURE", "IMAGE_SIZE", "Records",
    "PositionEmbedding", "ExampleSeed", "UNFREEZE_AT_EPOCH", "UNFREEZE_AT_STEP", "UNFREEZE_FROM",
    "FINE_TUNE_LEARNING_RATE", "backbone", "unfreeze", "augmented",
    "model", "inputs", "x", "skips", "self", "kwargs", "training", "config", "shape", "layer",
    "make_env", "make_envs",
}  # fmt: skip


MODULE_NAMES = frozenset({
    # The runtime beside the script (runtime/loopgen_runtime.py), what the script imports of it.
    "RUNTIME", "loopgen_runtime", "add_debugging_flags", "checksums", "fast_dev_stages",
    "run_and_record", "write_predictions", "COMMANDS", "parse_run_flags", "read_array_file",
    "read_array_inputs", "read_csv_inputs", "read_image_files", "read_text_inputs",
    "read_decoded_images", "decoded_image", "traced_call",
    # SAM's and EMA's (ways/tape.jinja, ways/supervised.jinja).
    "RHO", "set_weights", "EMA_DECAY", "ema_model",
    # Diffusion's and flow matching's (ways/diffusion.jinja).
    "TIMESTEPS", "BETA_START", "BETA_END", "COSINE_OFFSET", "NO_LABEL", "LABEL_DROPOUT",
    "GUIDANCE", "SAMPLE_STEPS", "noise_schedule", "noised", "squared_errors", "denoise",
    "sample_images", "samples", "grid", "write_samples",
    # A VAE's (ways/vae.jinja, model.jinja).
    "KL_WARMUP_STEPS", "build_decoder", "build_encoder", "code_noise", "decoded", "kl_weight",
    "pixels", "reconstructions", "vae_terms",
    "read_tfrecord_inputs", "reward_scores", "check_lengths", "generation_inputs", "importlib",
    "token_counts", "TFDS_GCS_HOST", "lookup_failures", "tfds_reachable",
    # A failed download's one message (runtime/loopgen_runtime.py).
    "DownloadFailed", "download_failure", "downloading", "imagenet_weights", "preset_download",
    # KerasHub models, TextRecords, SFT and DPO (model.jinja, data/, ways/sft.jinja, dpo.jinja).
    "keras_hub", "pyarrow", "PRESET", "SEQUENCE_LENGTH", "LORA_RANK", "preprocessor",
    "lora_merged", "read_records", "class_ids", "response_targets", "Perplexity", "BETA",
    "LABEL_SMOOTHING", "REFERENCE_PRESET", "DPO_LOGGED", "sequence_logps", "dpo_losses",
    "pair_logps", "pack_examples",
    # GRPO's (ways/grpo.jinja); your reward functions' package beside the spec.
    "EPSILON_HIGH", "EPSILON_LOW", "GRPO_LOGGED", "GroupSampler", "MAX_COMPLETION_LENGTH",
    "NUM_GENERATIONS", "NUM_ITERATIONS", "REWARD_WEIGHTS", "completion_keys", "completion_texts",
    "group_advantages", "grpo_token_losses", "sample_completions", "score", "token_logps",
    # SAC's and TD3's, and DQN's exploration (templates/partials/ways/offpolicy.jinja, dqn.jinja).
    "DRAW_STEPS", "EXPLORATION_NOISE", "Exploration", "GRADIENT_STEPS", "INITIAL_ALPHA", "LOGGED",
    "LOG_STD_MAX", "LOG_STD_MIN", "POLICY_DELAY", "TARGET_ENTROPY", "TARGET_NOISE",
    "TARGET_NOISE_CLIP", "build_critic", "critic_targets", "deterministic_actions", "follow",
    "smaller_value", "squashed_gaussian", "to_bounds", "update_noise",
    "ACTION_DIM", "ACTION_HIGH", "ACTION_LOW", "ALPHA", "ATTACK_STEPS", "BUFFER_SIZE", "CLASSES",
    "CLIP", "CRITIC_STEPS", "DEVICES", "END_EPSILON", "ENTROPY_COEF", "ENV_ID", "ENV_KWARGS",
    "Cluster", "EPSILON", "EVALUATION_TASKS", "EXPLORATION_STEPS", "EXTRA_NAMES", "Environments",
    "GAE_LAMBDA", "GAMMA", "GLOBAL_BATCH_SIZE", "IMAGE_FORMATS", "IMAGE_SIGNATURES",
    "INITIAL_LOG_STD", "INNER_LEARNING_RATE", "INNER_STEPS", "INPUT_RANGE", "LATENT_DIM",
    "LEARNING_RATE", "LEARNING_STARTS", "LOSS_NAMES", "LOSS_WEIGHTS", "MACHINE_FAULTS",
    "MLFLOW_TRACKER", "MAX_EPISODE_STEPS", "MAX_GRAD_NORM", "MINIBATCHES", "MINIBATCH_SIZE",
    "MLFLOW_PARAMS", "MLFLOW_PROCESS", "NUM_ACTIONS", "NUM_ENVS", "NUM_SAMPLES",
    "OBSERVATION_SHAPE",
    "OBSERVATION_SHAPES", "ObservationStatistics", "PENALTY_WEIGHT", "QUERIES", "REAL_LABEL",
    "RENDERED_FROM", "ROLLOUT_SIZE", "ROLLOUT_STEPS", "ReplayBuffer", "RunDirectory", "SETUP",
    "SHOTS", "SPEC_FILE", "START_EPSILON", "STEP_SIZE", "TARGET_UPDATE_EVERY", "TASKS_PER_STEP",
    "TAU", "TEACHER", "TEACHER_WEIGHTS", "TEMPERATURE", "TEST_CLASSES", "TPU", "TRAIN_EVERY",
    "TRAIN_FILES", "UNFREEZE_TOP_LAYERS", "UPDATE_EPOCHS", "VALUE_COEF", "WAYS",
    "actor_critic_loss", "adapt", "advantages_and_returns", "as_tensors", "augment",
    "build_discriminator", "build_generator", "build_projection", "build_teacher",
    "build_value_network", "check_image_files", "check_inputs", "checkpoint_damage",
    "checkpoint_paths", "class_members", "class_names", "collect", "contextlib",
    "contrastive_losses", "count_by_reading", "count_records", "csv_files", "csv_inputs",
    "csv_stream", "ctypes", "data_record", "decode_csv", "decode_images", "distillation_loss",
    "dqn_targets", "draw", "draw_tasks", "entropy", "epoch_order", "epsilon", "errno", "evaluate",
    "exchange", "export", "fcntl", "file_digest", "file_record", "file_stream", "files_of_steps",
    "fold", "functools", "generated_examples", "generator_stream", "glob", "glob_files",
    "gradient_penalty",
    "gym", "hashlib", "input_files", "is_chief", "label_names", "list_files_by_class",
    "load_teacher", "load_weights", "log_probability", "make_augmentation", "make_metrics",
    "make_train_loop", "now", "num_examples", "parse_csv_lines", "parse_tfrecords", "per_example",
    "perturb", "pickle", "ppo_loss", "predict", "prepare_inputs", "r1_penalty", "random_start",
    "re", "read", "read_arrays", "read_examples", "read_images", "read_inputs", "read_npz",
    "read_tasks", "read_text_files", "read_text_lines", "record_inputs", "replica_slices",
    "resize_images", "restore_whole", "script_checksums", "serving_function", "settle_whole",
    "shard_order", "shuffle_windows", "shutil", "signal", "socket", "split_by_class",
    "steps_in_call", "stop_at_damaged_image", "struct", "subprocess", "sys", "tfds_stream",
    "tflite", "tfrecord_files", "tfrecord_stream", "time", "traceback", "train", "training_batches",
    "training_inputs", "utc", "validation_batches", "weights_fingerprint", "with_digests",
    "write_export", "write_gif", "writing", "written_whole", "your_step", "zipfile",
    # The debugging flags and replay (runtime/loopgen_runtime.py, partials/debugging.jinja).
    "atexit", "batch_of_step", "check_debugging_flags", "dev_inputs", "dev_stage",
    "execution_modes", "fast_dev_run", "gradients_applied", "innermost_layer", "layers_of",
    "linecache", "native_stderr_silenced", "nonfinite_op", "overfit", "replay",
    "replayed", "serve_once", "tempfile", "warnings", "make_inspected_step", "SATURATED",
    "INSPECT_EVERY_STEPS", "learning_rates", "step_of_update", "update_of", "updates_at",
    "global_norm64", "running_sums", "step_values", "was_logged",
    # Reward normalization (templates/partials/ways/ppo.jinja).
    "REWARD_CLIP", "RewardScale",
    # The training data's directory listing (runtime/loopgen_runtime.py).
    "directory_files",
    # MLflow's process, started before TensorFlow loads (templates/partials/mlflow_process.jinja).
    "early", "mlflow_process", "start_mlflow_process",
})  # fmt: skip
"""The other names the scripts define at module level (functions, classes, constants, imports):
a name a spec makes module level too (a block, a custom layer class, an imported package) must
not replace one (test_golden checks every golden file and every template against both
sets)."""


def check_not_module_level(name: str, what: str) -> None:
    """Raises when a name the script defines at module level would replace one of its own."""
    check_not_reserved(name, what)
    if name in MODULE_NAMES:
        raise ValueError(
            f"{what} {name!r} would replace a function, class or constant of the generated "
            "script; rename it"
        )


def check_not_reserved(name: str, what: str) -> None:
    """Raises when a spec name would shadow a name the script uses."""
    if name in RESERVED_NAMES:
        raise ValueError(
            f"{what} {name!r} would shadow a name the generated script uses (a module, one of "
            "its functions or constants, or a Python builtin); rename it"
        )


Identifier = Annotated[str, AfterValidator(_check_identifier)]
"""A name that becomes a Python identifier in the generated script."""


class KerasObject(StrictModel):
    """Something rendered as `keras.<module>.<Class>(arg=value, ...)` with non-default args."""

    keras_class: ClassVar[str]

    def arguments(self) -> list[tuple[str, Any]]:
        return [
            (field, getattr(self, field))
            for field, info in type(self).model_fields.items()
            if field != "kind" and getattr(self, field) != info.default
        ]


PositiveInt = Annotated[int, Field(gt=0)]
PositiveFloat = Annotated[float, Field(gt=0)]
Probability = Annotated[float, Field(ge=0, lt=1)]

SEED_MAX = 2**32 - 1
"""The largest seed NumPy takes (`np.random.seed`, which `keras.utils.set_random_seed` calls;
`np.random.default_rng` takes no negative one)."""
BATCH_SIZE_MAX = 2**31 - 1
"""The script counts a batch's examples with `tf.shape`, an int32 (a global batch size is the
sum of its replicas' int32 counts, which would wrap around past this)."""
EPOCHS_MAX = 2**31 - 1
"""The script's step counter is a tf.int64 variable: epochs × steps per epoch must fit in it,
which this leaves room for up to 2**32 steps per epoch."""
STEPS_MAX = 2**63 - 1
"""The largest value of the script's step counter, a tf.int64 variable."""


def _in_range(low: int, high: int, what: str, why: str):
    """A validator of a value from `low` to `high` (a power of two less one), whose message
    says `why`."""
    power = f"2**{high.bit_length()} - 1"

    def check(value: int) -> int:
        if not low <= value <= high:
            raise ValueError(
                f"{value} is out of range: {what} from {low} to {high} ({power}), {why}"
            )
        return value

    return check


_check_seed = _in_range(0, SEED_MAX, "a seed is", "the seeds NumPy takes; pick one in that range")
_check_batch_size = _in_range(
    1, BATCH_SIZE_MAX, "a batch size is",
    "since the script counts a batch's examples in an int32 (tf.shape); use a smaller batch",
)  # fmt: skip
_check_epochs = _in_range(
    1, EPOCHS_MAX, "epochs are",
    "so that epochs × steps per epoch fits the script's step counter (an int64); train fewer "
    "epochs",
)  # fmt: skip
_check_steps = _in_range(
    1, STEPS_MAX, "steps are",
    "the most the script's step counter (an int64) holds; train fewer steps",
)  # fmt: skip


# The bounds are checked by the validators, whose messages say why; `json_schema_extra` tells
# editors the same bounds through `loopgen schema`.
Seed = Annotated[
    int,
    AfterValidator(_check_seed),
    Field(json_schema_extra={"minimum": 0, "maximum": SEED_MAX}),
]
"""A random seed: from 0 to 2**32 - 1."""
BatchSize = Annotated[
    int,
    Field(gt=0, json_schema_extra={"maximum": BATCH_SIZE_MAX}),
    AfterValidator(_check_batch_size),
]
"""Examples per batch: from 1 to 2**31 - 1."""
Epochs = Annotated[
    int, Field(gt=0, json_schema_extra={"maximum": EPOCHS_MAX}), AfterValidator(_check_epochs)
]
"""A number of epochs: from 1 to 2**31 - 1."""
Steps = Annotated[
    int, Field(gt=0, json_schema_extra={"maximum": STEPS_MAX}), AfterValidator(_check_steps)
]
"""A number of training steps: from 1 to 2**63 - 1."""


class Var(StrictModel):
    """A reference to a loop variable of an enclosing `Repeat` or a parameter of a custom layer.

    `Conv2D(filters=Var(name="filters"))` inside `Repeat(over={"filters": [32, 64]})` renders as
    `layers.Conv2D(filters, ...)` inside a Python `for filters in (32, 64):` loop.
    """

    var: Identifier
    """Name of the loop variable or layer parameter."""


def var(name: str) -> Var:
    """Shorthand for `Var(var=name)` in spec files."""
    return Var(var=name)


_TARGET = re.compile(r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)*:[A-Za-z_]\w*$")


def check_target(value: str, what: str = "function") -> str:
    """`package.module:name`, importable by the script, and not shadowing its own names."""
    if not _TARGET.match(value):
        raise ValueError(
            f"{value!r} is not of the form 'package.module:{what}' (dotted module path, a colon, "
            f"then the {what} name)"
        )
    package = value.split(".")[0].split(":")[0]
    # `import keras.applications` rebinds `keras` to the same module: harmless, as importing a
    # module of Python's that the script imports too.
    if package != "keras" and package not in sys.stdlib_module_names:
        check_not_module_level(package, "the imported package")
    return value
