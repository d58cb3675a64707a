"""Data sources read from files or from your code: TFRecord shards, CSV tables, text, and a
Python generator. Their features are named: a source with several gives the model a dict of
them, matched to a Graph model's inputs of the same names."""

from typing import Annotated, Any, Literal

from pydantic import Field, field_validator, model_validator

from .base import Identifier, PositiveInt, StrictModel, check_target

NonNegativeInt = Annotated[int, Field(ge=0)]
Compression = Literal["GZIP", "ZLIB"] | None


class Feature(StrictModel):
    """One feature of a record: its type and shape; for an encoded image, how to decode it."""

    dtype: Literal["float32", "int64", "string"] = "float32"
    """Its type in the record: float32, int64 or string (bytes)."""
    shape: tuple[PositiveInt, ...] = ()
    """Its fixed shape, () for one value, e.g. (3,) for three numbers."""
    image: tuple[PositiveInt, PositiveInt] | None = None
    """The feature holds an encoded image (JPEG, PNG, BMP, GIF bytes, dtype string): the
    pipeline decodes it and resizes it to (height, width)."""
    channels: Literal[1, 3] = 3
    """Channels of a decoded image: 1 (grayscale) or 3 (RGB)."""

    @model_validator(mode="after")
    def _image_is_bytes(self) -> "Feature":
        if self.image is not None and (self.dtype != "string" or self.shape):
            raise ValueError(
                "image is set, so the feature holds encoded image bytes: give it dtype='string' "
                "and shape=() (the decoded image's shape comes from image and channels)"
            )
        return self

    @property
    def decoded(self) -> tuple[str, tuple[int, ...]]:
        """The dtype and shape of the feature as the model receives it."""
        if self.image is not None:
            return "float32", (*self.image, self.channels)
        return self.dtype, self.shape


def _labelled(features: dict[str, Any], label: str | dict[str, str], what: str) -> None:
    names = [label] if isinstance(label, str) else list(label.values())
    for name in names:
        if name not in features:
            raise ValueError(
                f"label names {name!r}, which is not one of the {what} ({sorted(features)}); "
                f"add it to {what.split()[0]} or fix the name"
            )
    if not set(features) - set(names):
        raise ValueError(f"every one of the {what} is a label: the model gets no input")


class TFRecord(StrictModel):
    """TFRecord files of `tf.train.Example` records, by glob (the shards of a dataset). They
    are streamed: each epoch reads the shards in an order drawn from (SEED, epoch),
    interleaved, through a shuffle buffer; a record is parsed and decoded only once picked."""

    kind: Literal["tfrecord"] = "tfrecord"
    files: str
    """Glob of the files, e.g. `data/train-*.tfrecord` (any storage tf.io.gfile reads)."""
    features: dict[Identifier, Feature]
    """Every feature to read from a record, by its key in the Example: the model's inputs and
    the label(s)."""
    label: Identifier | dict[Identifier, Identifier] = "label"
    """The feature that is the label; for a multi-task model, one per task: `{task: feature}`."""
    compression: Compression = None
    """How every file is compressed, as tf.data names it (`compression_type`): `GZIP` or
    `ZLIB`; None for plain files. A compressed file is counted by reading it through once at
    the start (a plain one from its record headers alone)."""

    @model_validator(mode="after")
    def _label_is_a_feature(self) -> "TFRecord":
        _labelled(self.features, self.label, "features of the records")
        return self

    @property
    def label_names(self) -> list[str] | None:
        return list(self.label) if isinstance(self.label, dict) else None

    @property
    def inputs(self) -> dict[str, Feature]:
        labels = {self.label} if isinstance(self.label, str) else set(self.label.values())
        return {name: f for name, f in self.features.items() if name not in labels}

    @property
    def feature_names(self) -> list[str] | None:
        return list(self.inputs) if len(self.inputs) > 1 else None


class Csv(StrictModel):
    """CSV files with a header row, by glob: columns become the model's named inputs and the
    label(s). Streamed like TFRecord files: an epoch reads the files in an order drawn from
    (SEED, epoch) through a shuffle buffer; a line is parsed only once picked."""

    kind: Literal["csv"] = "csv"
    files: str
    """Glob of the files, e.g. `data/houses-*.csv`; every file has the same header."""
    features: dict[Identifier, str | list[str]]
    """The model's inputs by name, each from a column, or from several numeric columns stacked
    into one vector: `{"numeric": ["age", "income"], "city": "city"}`."""
    label: str | dict[Identifier, str]
    """The label's column; for a multi-task model, one per task: `{task: column}`."""
    dtypes: dict[str, Literal["float32", "int64", "string"]] = {}
    """The type of a column where it is not float32: int64 for whole numbers (category ids),
    string for text (categories to look up)."""
    delimiter: Annotated[str, Field(min_length=1, max_length=1)] = ","
    """The character between fields."""
    compression: Compression = None
    """How every file is compressed, as tf.data names it (`compression_type`): `GZIP` (e.g.
    `houses-*.csv.gz`) or `ZLIB`; None for plain files."""

    @model_validator(mode="after")
    def _columns(self) -> "Csv":
        for name, columns in self.features.items():
            listed = [columns] if isinstance(columns, str) else columns
            if not listed:
                raise ValueError(f"features.{name} lists no column; give it one or more")
            if len(listed) > 1 and any(self.dtypes.get(c, "float32") != "float32" for c in listed):
                raise ValueError(
                    f"features.{name} stacks several columns into one vector: they must be "
                    "numbers (float32); give a string or int64 column a feature of its own"
                )
        named = [c for c in self.dtypes if c not in self.columns()]
        if named:
            raise ValueError(
                f"dtypes names {named[0]!r}, which no feature or label reads; remove it or fix "
                "the name"
            )
        return self

    def columns(self) -> list[str]:
        """Every column read, features first, in the order the spec lists them."""
        labels = [self.label] if isinstance(self.label, str) else list(self.label.values())
        return list(dict.fromkeys([*self.feature_columns(), *labels]))

    def feature_columns(self) -> list[str]:
        """The columns the model's inputs are made of, in the order the spec lists them."""
        found: list[str] = []
        for columns in self.features.values():
            found += [columns] if isinstance(columns, str) else columns
        return list(dict.fromkeys(found))

    def feature_dtype(self, name: str) -> str:
        columns = self.features[name]
        return self.dtypes.get(columns, "float32") if isinstance(columns, str) else "float32"

    @property
    def label_names(self) -> list[str] | None:
        return list(self.label) if isinstance(self.label, dict) else None

    @property
    def feature_names(self) -> list[str] | None:
        return list(self.features) if len(self.features) > 1 else None


class Text(StrictModel):
    """Text examples in a file, one per line, its text and its label in delimited columns.
    Held in memory and read by index, like arrays. The model gets the raw strings: tokenize
    them in the model (a TextVectorization layer)."""

    kind: Literal["text"] = "text"
    path: str
    """The file of lines (UTF-8)."""
    delimiter: str = "\t"
    """What separates the columns."""
    text_column: NonNegativeInt = 0
    """The column of the text."""
    label_column: NonNegativeInt = 1
    """The column of the label, a class id (0, 1, ...) or a class name (names are numbered in
    alphabetical order)."""

    @model_validator(mode="after")
    def _columns_differ(self) -> "Text":
        if self.text_column == self.label_column:
            raise ValueError(
                f"text_column and label_column are both {self.text_column}; the label needs a "
                "column of its own"
            )
        if not self.delimiter:
            raise ValueError("delimiter is empty; use the character between the columns")
        return self


class TextRecords(StrictModel):
    """Text examples as records of named fields, in the forms people keep them: JSON Lines
    (`.jsonl`, an object a line), CSV (`.csv`, a header row naming the columns), Parquet
    (`.parquet`), or a Hugging Face `datasets` folder (what `Dataset.save_to_disk` writes).
    Held in memory and read by index, like arrays: a resumed run reads only its own batches.
    The way of training says which fields it reads: `text` and `label` for a classifier,
    `prompt` and `response` for SFT, `prompt`, `chosen` and `rejected` for DPO, `prompt` for
    GRPO. Each names the field that holds it (TRL's column names by default)."""

    kind: Literal["text_records"] = "text_records"
    path: str
    """The file, or the `datasets` folder."""
    format: Literal["jsonl", "csv", "parquet", "datasets"] | None = None
    """How the records are kept; None: from the path (`.jsonl`/`.json`, `.csv`, `.parquet`, a
    folder)."""
    text: str = "text"
    """The field of a classifier's text."""
    label: str = "label"
    """The field of a classifier's label: a class id, or a class name (names are numbered in
    alphabetical order)."""
    prompt: str = "prompt"
    """The field of the prompt (SFT, DPO, GRPO)."""
    response: str = "completion"
    """The field of the response SFT learns to write after the prompt (TRL's `completion`)."""
    chosen: str = "chosen"
    """DPO: the field of the preferred response."""
    rejected: str = "rejected"
    """DPO: the field of the response not preferred."""

    @property
    def file_format(self) -> str:
        """The format, `format` or the one the path's suffix says."""
        if self.format is not None:
            return self.format
        for suffix, found in ((".jsonl", "jsonl"), (".json", "jsonl"), (".csv", "csv"),
                              (".parquet", "parquet")):  # fmt: skip
            if self.path.lower().endswith(suffix):
                return found
        return "datasets"


class TextDirectory(StrictModel):
    """Text examples as files: a directory with a sub-directory per class of `.txt` files, one
    example each (as `keras.utils.text_dataset_from_directory` reads them). Listed by name and
    read by index: a file is opened only when a batch picks it."""

    kind: Literal["text_directory"] = "text_directory"
    path: str
    """Directory with one sub-directory per class (classes numbered in alphabetical order)."""


class Generator(StrictModel):
    """Escape hatch: examples from a Python generator function of yours, imported by the script
    and called once per epoch as `function(**kwargs)`. It must yield `(features, label)`
    pairs matching the declared features and label (checked on the first example before
    training), and the same examples in the same order on every call: the script shuffles them
    (data.shuffle_buffer, seeded by (SEED, epoch)) and a resumed run skips within its epoch."""

    kind: Literal["generator"] = "generator"
    target: str
    """`package.module:function`, importable where the script runs."""
    kwargs: dict[Identifier, int | float | str | bool | None] = {}
    """Keyword arguments it is called with."""
    features: Feature | dict[Identifier, Feature]
    """What it yields as the model's input: one feature, or several by input name (a dict)."""
    label: Feature | dict[Identifier, Feature] = Feature(dtype="int64")
    """What it yields as the label; for a multi-task model, one per task (a dict)."""
    examples_per_epoch: PositiveInt | None = None
    """How many examples one call yields; None: the script counts them (one pass at start)."""

    @field_validator("target")
    @classmethod
    def _target_form(cls, value: str) -> str:
        return check_target(value, "function")

    @model_validator(mode="after")
    def _no_images(self) -> "Generator":
        features = self.features.values() if isinstance(self.features, dict) else [self.features]
        if any(f.image is not None for f in features):
            raise ValueError(
                "features: a generator yields its examples decoded; yield the image's pixels "
                "(dtype float32, its shape) instead of image=..."
            )
        return self

    @property
    def module(self) -> str:
        return self.target.split(":")[0]

    @property
    def function(self) -> str:
        return self.target.split(":")[1]

    @property
    def label_names(self) -> list[str] | None:
        return list(self.label) if isinstance(self.label, dict) else None

    @property
    def feature_names(self) -> list[str] | None:
        return list(self.features) if isinstance(self.features, dict) else None
