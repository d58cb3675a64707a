"""The `data` section: where examples come from and how they are batched."""

from typing import Annotated, ClassVar, Literal

from pydantic import Field, model_validator

from .base import BatchSize, Identifier, PositiveFloat, PositiveInt, Seed, StrictModel
from .layers import KerasLayer
from .sources import Csv, Generator, Text, TextDirectory, TextRecords, TFRecord


class Npz(StrictModel):
    """Arrays in a NumPy `.npz` file (`np.savez(path, x=..., y=...)`)."""

    kind: Literal["npz"] = "npz"
    path: str
    """Path of the `.npz` file, relative to where the script runs."""
    x_key: Identifier | dict[Identifier, Identifier] = "x"
    """Array name of the inputs; for a model with several named inputs, one array per input:
    `{"tokens": "x_tokens", "numeric": "x_numeric"}` (model input name to array name)."""
    y_key: Identifier | dict[Identifier, Identifier] = "y"
    """Array name of the labels; for a multi-task model, one array name per task:
    `{"digit": "y", "parity": "y_parity"}`."""

    @property
    def label_names(self) -> list[str] | None:
        """The tasks the labels are for (None: one label per example)."""
        return list(self.y_key) if isinstance(self.y_key, dict) else None

    @property
    def feature_names(self) -> list[str] | None:
        """The named features it gives (None: one input tensor)."""
        return list(self.x_key) if isinstance(self.x_key, dict) else None


class KerasDataset(StrictModel):
    """A dataset from `keras.datasets` (downloaded once, then cached in `~/.keras/datasets`):
    images, or word-id sequences of reviews (imdb) and newswires (reuters)."""

    kind: Literal["keras_dataset"] = "keras_dataset"
    name: Literal["mnist", "fashion_mnist", "cifar10", "cifar100", "imdb", "reuters"]
    """Dataset module name in `keras.datasets`."""
    split: Literal["train", "test"] = "train"
    """Which half of `load_data()` to use."""
    num_words: PositiveInt | None = None
    """imdb, reuters: keep the most frequent words only (the others become the out-of-vocabulary
    id 2); None keeps them all."""
    maxlen: PositiveInt | None = None
    """imdb, reuters: the length every sequence is padded (with 0) or cut to (its start kept),
    the model's input length."""

    @model_validator(mode="after")
    def _sequences(self) -> "KerasDataset":
        text = self.name in ("imdb", "reuters")
        if text and self.maxlen is None:
            raise ValueError(
                f"name={self.name!r} gives word-id sequences of different lengths: set maxlen "
                "(e.g. 200), the length they are padded or cut to"
            )
        if not text and (self.maxlen is not None or self.num_words is not None):
            raise ValueError(
                f"maxlen and num_words are for the text datasets (imdb, reuters), not "
                f"{self.name!r}; remove them"
            )
        return self


class Tfds(StrictModel):
    """A TensorFlow Datasets dataset (needs `tensorflow-datasets` installed)."""

    kind: Literal["tfds"] = "tfds"
    name: str = Field(pattern=r"^[a-z0-9_]+(/[\w.]+)?(:[\d.*]+)?$")
    """TFDS name, optionally with config and version, e.g. `oxford_iiit_pet:4.*.*`."""
    split: str = Field(default="train", pattern=r"^[\w\[\]%:+.-]+$")
    """TFDS split expression, e.g. `train` or `train[:90%]`."""
    image_key: Identifier = "image"
    """Feature used as the input."""
    label_key: Identifier = "label"
    """Feature used as the label (e.g. `segmentation_mask`)."""
    image_size: tuple[PositiveInt, PositiveInt] | None = None
    """Resize images to (height, width); needed when the images differ in size."""
    label_is_mask: bool = False
    """The label is a per-pixel mask: resized with the image (nearest neighbour)."""
    label_offset: int = 0
    """Added to the labels, e.g. -1 for `oxford_iiit_pet` masks (1..3 → class ids 0..2)."""
    data_dir: str | None = None
    """Where TFDS keeps its data; None is its default (`~/tensorflow_datasets`)."""


class ImageDirectory(StrictModel):
    """Images in one sub-directory per class (`keras.utils.image_dataset_from_directory`)."""

    kind: Literal["image_directory"] = "image_directory"
    path: str
    """Directory with one sub-directory per class."""
    image_size: tuple[PositiveInt, PositiveInt]
    """Images are resized to (height, width)."""
    color_mode: Literal["rgb", "grayscale"] = "rgb"
    """Number of channels: 3 for rgb, 1 for grayscale."""


class Shapes(StrictModel):
    """Procedurally drawn circles, squares and triangles that the script makes itself.

    Deterministic, learnable, seconds to make, no download: the offline demo dataset. With
    `task="classification"` the label is the shape (0 circle, 1 square, 2 triangle); with
    `task="segmentation"` it is a per-pixel mask (0 background, 1 + the shape's class)."""

    kind: Literal["shapes"] = "shapes"
    count: PositiveInt = 2000
    """Number of images."""
    image_size: Annotated[int, Field(ge=8, le=512)] = 32
    """Height and width of the square RGB images."""
    task: Literal["classification", "segmentation", "multitask"] = "classification"
    """What the label is: the shape's class, or a per-pixel mask; `multitask` gives both, as
    the labels `shape` (the class) and `mask`."""

    @property
    def label_names(self) -> list[str] | None:
        """The tasks the labels are for (None: one label per example)."""
        return ["shape", "mask"] if self.task == "multitask" else None

    seed: Seed = 0
    """Seed of the drawing; use different seeds for training and validation data."""


class Split(StrictModel):
    """Validation data held out of the training data, like Keras' `validation_split`.

    Arrays (npz, keras.datasets, shapes, the lines of a text file) give their last examples,
    before any shuffling, like `model.fit(validation_split=...)`: `int(n * fraction)` of
    them, where Keras holds out `n - floor(n * (1 - fraction))`, one more when `n * fraction`
    is not whole. Image and text
    directories are listed class by class, so their last files would be whole classes: they
    give `fraction` of each class's files, picked by a permutation drawn from `seed` alone, as
    `image_dataset_from_directory(validation_split=..., seed=...)` does but class by class:
    every class is in both parts, and the parts are the same on every run. Streams (TFRecord,
    CSV, TFDS, a generator) cannot be split: give them their own validation files."""

    kind: Literal["split"] = "split"
    fraction: Annotated[float, Field(gt=0, lt=1)] = 0.1
    """Fraction of the training examples held out for validation (of each class's files, for
    a directory: rounded, at least one and never all of them)."""
    seed: Seed | None = None
    """Image and text directories: the seed of the permutation that picks each class's
    validation files (Keras' `seed`); None uses the spec's `seed`. Arrays are split at their
    end and take no seed."""


Source = Annotated[
    Npz
    | KerasDataset
    | Tfds
    | ImageDirectory
    | Shapes
    | TFRecord
    | Csv
    | Text
    | TextRecords
    | TextDirectory
    | Generator,
    Field(discriminator="kind"),
]
"""Where examples come from."""

ValidationSource = Annotated[
    Npz
    | KerasDataset
    | Tfds
    | ImageDirectory
    | Shapes
    | TFRecord
    | Csv
    | Text
    | TextRecords
    | Generator
    | Split,
    Field(discriminator="kind"),
]
"""Validation examples: their own source, or a split of the training data."""


class Data(StrictModel):
    """The input pipeline: sources, preprocessing, shuffling and batching."""

    elsewhere: ClassVar[dict[str, str]] = {
        "validation_split": "Keras' validation_split is {at}validation=Split(fraction={value}) "
        "in a spec",
    }

    train: Source
    """Training examples."""
    validation: ValidationSource | None = None
    """Validation examples; None disables validation."""
    batch_size: BatchSize = 32
    """Examples per training step (the global batch size under a distribution strategy)."""
    shuffle_buffer: Annotated[int, Field(ge=0)] = 1024
    """Shuffling; 0 keeps the examples in their order (e.g. for exact comparisons). Sources
    read by index (arrays, image and text directories, shapes) are shuffled whole every epoch,
    whatever the number; a stream of records (TFRecord, CSV, TFDS, a generator) is shuffled in
    windows of this many records, each record moving within its window. Either way the order is
    a function of (seed, epoch): nothing of it goes into checkpoints."""
    rescale: PositiveFloat | None = None
    """Multiply inputs by this after casting them to the model's input dtype (float32, or a
    graph input's float dtype), e.g. 1/255 for 8-bit images. Not for text or integer inputs."""
    labels: Literal["sparse", "one_hot"] = "sparse"
    """Label format the loss sees: integer class ids, or one-hot vectors (made with
    `tf.one_hot`, needs `num_classes`)."""
    num_classes: PositiveInt | None = None
    """Number of classes; needed for one-hot labels."""
    cache: bool = False
    """Keep decoded examples in memory: an image directory's images are decoded once, when the
    script loads them, and every epoch reads them from memory (worth it when they fit); the
    validation batches, of any source, are kept after the first validation pass. Training
    batches of other sources are read every epoch: arrays are in memory already, and streamed
    records (TFRecord, CSV, TFDS, a generator) are read again so that a resumed run can seek to
    its step. Nothing of it goes into checkpoints."""
    prefetch: bool = True
    """Prefetch batches (`tf.data.AUTOTUNE`) so input preparation overlaps training."""
    deterministic: bool = True
    """Keep the batches in order when preprocessing runs in parallel. False lets a batch that
    is ready overtake a slow one (faster when decoding times vary, e.g. JPEG files), but the
    order of the examples, and with it an exact resume, is no longer reproducible."""
    augmentation: list[KerasLayer] = []
    """Random changes of the training images, applied in order: Keras' augmentation layers
    (RandomFlip, RandomCrop, RandomRotation, RandomZoom, RandomContrast, RandomTranslation,
    MixUp, CutMix, RandAugment, ...), with resizing or padding layers between them if needed
    (ZeroPadding2D before RandomCrop: a random crop with padding). Validation images are not
    augmented. Each example's random choices are drawn from (seed, epoch, its position in the
    epoch): a run sees the same augmented batches on every run and after a resume."""
    augment_in: Literal["pipeline", "model"] = "pipeline"
    """Where the augmentation runs. `pipeline`: in the input pipeline, on the CPU, each image
    on its own (MixUp and CutMix: on each replica's slice of the batch), seeded per example, so
    that it is the same on any strategy. `model`: as the model's first layers, on the
    accelerator, random in training only; their random state is checkpointed with the model.
    Layers that ignore an explicit seed (RandAugment, AugMix, ... in Keras 3.15) can only go in
    the model."""

    @property
    def label_names(self) -> list[str] | None:
        """The tasks the training labels are for (None: one label per example)."""
        return getattr(self.train, "label_names", None)

    @property
    def feature_names(self) -> list[str] | None:
        """The named features of the training data (None: one input tensor per example)."""
        return getattr(self.train, "feature_names", None)

    @model_validator(mode="after")
    def _same_labels(self) -> "Data":
        validation = self.validation
        if validation is not None and validation.kind != "split":
            theirs = getattr(validation, "label_names", None)
            if theirs != self.label_names:
                raise ValueError(
                    f"data.validation gives the labels {theirs or 'one per example'} but "
                    f"data.train {self.label_names or 'one per example'}: give both the same"
                )
            theirs = getattr(validation, "feature_names", None)
            if sorted(theirs or []) != sorted(self.feature_names or []):
                raise ValueError(
                    f"data.validation gives the features {theirs or 'one input'} but data.train "
                    f"{self.feature_names or 'one input'}: give both the same"
                )
        return self

    @model_validator(mode="after")
    def _tfds_resize(self) -> "Data":
        for where, source in (("train", self.train), ("validation", self.validation)):
            if isinstance(source, Tfds) and source.label_is_mask and source.image_size is None:
                raise ValueError(
                    f"data.{where}.label_is_mask=True needs data.{where}.image_size: masks are "
                    "resized with their images; set image_size=(height, width)"
                )
        return self

    @model_validator(mode="after")
    def _one_hot_needs_classes(self) -> "Data":
        if self.labels == "one_hot" and self.num_classes is None:
            raise ValueError(
                'labels="one_hot" needs data.num_classes: set it to the number of classes'
            )
        if self.train.kind == "shapes" and self.validation and self.validation.kind == "shapes":
            if self.validation.task != self.train.task:
                raise ValueError(
                    f"data.validation.task={self.validation.task!r} but data.train.task="
                    f"{self.train.task!r}: validation labels must be of the kind the model "
                    "learns; use the same task for both"
                )
            if self.validation.seed == self.train.seed:
                raise ValueError(
                    "data.validation.seed equals data.train.seed: the validation images would "
                    "be the training images; give validation another seed"
                )
        return self
