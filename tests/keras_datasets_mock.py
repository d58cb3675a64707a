"""A test double for `keras.datasets` downloads: inside `served()`, a script's
`keras.datasets.imdb.load_data(...)` (and `mnist.load_data()`) runs as it does for a user
(Keras reads the file, shuffles, marks each review's start, shifts the word ranks, maps rare
words to the out-of-vocabulary id), and only the download (`get_file`) is replaced by a small
file of the real file's format.
tests/data.py `runnable` runs scripts inside it.

imdb.npz holds reviews as ragged lists of word ranks (1 the most frequent word), 64 for training
and 32 for testing, from 20 to 300 words long (so some are cut to an example's length and the
others padded), with ranks up to 30,000 (so a `num_words` limit changes some), and labels a
model can learn: positive reviews use ranks 10-19 often, negative ones 20-29. The file is the
same in every process. mnist.npz holds 96 training and 32 test images of mnist's format
(28x28 uint8 pixels, uint8 labels 0-9), each digit a brighter band at its own rows.
"""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import Iterator
from pathlib import Path
from unittest import mock

import numpy as np
from keras.src.datasets import imdb, mnist

REVIEWS = {"train": 64, "test": 32}


def reviews(rng: np.random.Generator, count: int) -> tuple[np.ndarray, np.ndarray]:
    labels = rng.integers(0, 2, count)
    words = np.empty(count, dtype=object)
    for index, label in enumerate(labels):
        length = int(rng.integers(20, 300))
        ranks = rng.integers(1, 30_000, length)
        telling = rng.random(length) < 0.3
        ranks[telling] = rng.integers(10, 20, telling.sum()) + 10 * (1 - label)
        words[index] = [int(rank) for rank in ranks]
    return words, labels


def imdb_file(folder: Path) -> str:
    rng = np.random.default_rng(0)
    x_train, y_train = reviews(rng, REVIEWS["train"])
    x_test, y_test = reviews(rng, REVIEWS["test"])
    path = folder / "imdb.npz"
    np.savez(path, x_train=x_train, y_train=y_train, x_test=x_test, y_test=y_test)
    return str(path)


def digits(rng: np.random.Generator, count: int) -> tuple[np.ndarray, np.ndarray]:
    labels = rng.integers(0, 10, count).astype(np.uint8)
    images = rng.integers(0, 96, (count, 28, 28)).astype(np.uint8)
    for image, label in zip(images, labels, strict=True):
        image[2 * label : 2 * label + 4] += 150
    return images, labels


def mnist_file(folder: Path) -> str:
    rng = np.random.default_rng(1)
    (x_train, y_train), (x_test, y_test) = digits(rng, 96), digits(rng, 32)
    path = folder / "mnist.npz"
    np.savez(path, x_train=x_train, y_train=y_train, x_test=x_test, y_test=y_test)
    return str(path)


@contextlib.contextmanager
def served() -> Iterator[str]:
    """Inside: `keras.datasets.imdb.load_data` reads imdb.npz (its path yielded) from here,
    and `keras.datasets.mnist.load_data` mnist.npz beside it."""
    with tempfile.TemporaryDirectory() as folder:
        files = {"imdb.npz": imdb_file(Path(folder)), "mnist.npz": mnist_file(Path(folder))}

        def get_file(fname=None, origin=None, **kwargs):
            name = (origin or "").rsplit("/", 1)[-1]
            if name not in files:
                raise AssertionError(f"keras_datasets_mock serves {list(files)}, not {origin}")
            return files[name]

        with mock.patch.object(imdb, "get_file", get_file):
            with mock.patch.object(mnist, "get_file", get_file):
                yield files["imdb.npz"]
