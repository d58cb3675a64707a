"""A test double for TFDS: inside `served()` (TFDS's own `tfds.testing.mock_data`), a script's
`tfds.load("oxford_iiit_pet:4.*.*", split=...)` goes through TFDS as it does for a user (the
registered builder, its version and features, the split), finds the dataset prepared in its
data folder (so no download is tried) and reads the small examples made here from it. tests/data.py
`runnable` runs scripts inside it.

The examples are those of Oxford-IIIT Pet in shape and kind: RGB images of differing sizes, and
masks of the same size with 1 for the pet, 2 for the background and 3 for the border around the
pet, so a UNet can learn them. They depend only on the split: every process reads the same.
"""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import Iterator

import numpy as np
import tensorflow as tf
import tensorflow_datasets as tfds

NAME = "oxford_iiit_pet:4.*.*"
EXAMPLES_PER_SPLIT = {"train": 12, "test": 4}


def pet(rng: np.random.Generator, index: int) -> dict:
    height, width = (int(n) for n in rng.integers(40, 72, size=2))
    mask = np.full((height, width, 1), 2, np.uint8)  # background
    top, bottom = rng.integers(4, height // 3), rng.integers(2 * height // 3, height - 4)
    left, right = rng.integers(4, width // 3), rng.integers(2 * width // 3, width - 4)
    mask[top - 3 : bottom + 3, left - 3 : right + 3] = 3  # the border around the pet
    mask[top:bottom, left:right] = 1  # the pet
    image = (mask - 1) * 90 + rng.integers(0, 60, size=(height, width, 3))
    return {
        "image": image.astype(np.uint8),
        "label": index % 37,
        "species": index % 2,
        "file_name": f"pet_{index}.jpg",
        "segmentation_mask": mask,
        "head_bbox": np.array([0.1, 0.1, 0.5, 0.5], np.float32),
    }


def split_name(split) -> str:
    """'train' or 'test' from what TFDS passes (a name, or a read instruction naming it)."""
    names = [name for name in EXAMPLES_PER_SPLIT if name in str(split)]
    if len(names) != 1:
        raise ValueError(f"tfds_mock serves the splits {list(EXAMPLES_PER_SPLIT)}, not {split!r}")
    return names[0]


def as_dataset(builder, split, decoders=None, read_config=None, shuffle_files=False):
    """Stands for the builder's reading of its prepared files: the split's decoded examples."""
    name = split_name(split)
    count = EXAMPLES_PER_SPLIT[name]

    def generate():
        rng = np.random.default_rng(list(EXAMPLES_PER_SPLIT).index(name))
        for index in range(count):
            yield pet(rng, index)

    signature = builder.info.features.get_tensor_spec()
    dataset = tf.data.Dataset.from_generator(generate, output_signature=signature)
    return dataset.apply(tf.data.experimental.assert_cardinality(count))


@contextlib.contextmanager
def served() -> Iterator[None]:
    """Inside: TFDS serves the examples made here, the dataset prepared in its data folder as
    a download leaves it (its metadata, dataset_info.json and features.json, written from its
    builder): a script reads it without downloading, as where it was prepared."""
    with tempfile.TemporaryDirectory() as data_dir:
        builder = tfds.builder(NAME, data_dir=data_dir)
        builder.data_path.mkdir(parents=True)
        builder.info.write_to_directory(builder.data_path)
        with tfds.testing.mock_data(as_dataset_fn=as_dataset, data_dir=data_dir):
            yield
