"""Small datasets that the tests make: no download, nothing shipped."""

from __future__ import annotations

import json
import struct
import zlib
from pathlib import Path

import numpy as np
from helpers import npz


def classification_npz(
    path: Path, count: int, shape: tuple[int, ...], classes: int = 10, seed: int = 0
) -> str:
    """uint8 images whose mean brightness encodes the class, so a few steps learn something."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, classes, size=count).astype(np.int64)
    base = (y * (200 // classes)).reshape((count,) + (1,) * len(shape))
    x = np.clip(base + rng.integers(0, 40, size=(count, *shape)), 0, 255).astype(np.uint8)
    np.savez(path, x=x, y=y)
    return str(path)


def segmentation_npz(path: Path, count: int, size: int, classes: int = 3, seed: int = 0) -> str:
    """uint8 RGB images and (size, size, 1) masks with values in [0, classes)."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, classes, size=(count, size, size, 1)).astype(np.uint8)
    x = (y * 80 + rng.integers(0, 40, size=(count, size, size, 3))).astype(np.uint8)
    np.savez(path, x=x, y=y)
    return str(path)


def image_directory(root: Path, per_class: int, size: int, classes: int = 3) -> str:
    """One sub-directory per class with small PNG files, written without any image library."""
    rng = np.random.default_rng(1)
    for c in range(classes):
        folder = root / f"class_{c}"
        folder.mkdir(parents=True)
        for i in range(per_class):
            pixels = np.clip(c * 60 + rng.integers(0, 50, (size, size, 3)), 0, 255)
            _write_png(folder / f"{i}.png", pixels.astype(np.uint8))
    return str(root)


def _write_png(path: Path, rgb: np.ndarray) -> None:
    height, width, _ = rgb.shape
    raw = b"".join(b"\x00" + rgb[row].tobytes() for row in range(height))

    def chunk(tag: bytes, data: bytes) -> bytes:
        body = tag + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    path.write_bytes(
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(raw))
        + chunk(b"IEND", b"")
    )


def small_data_overrides(example: str, tmp: Path) -> list[str]:
    """Points an example at small data made here: its real source needs a download."""
    if example == "mnist_mlp":
        return [f"data.train={npz(classification_npz(tmp / 'train.npz', 96, (28, 28)))}"]
    if example == "fashion_validation":
        return [
            f"data.train={npz(classification_npz(tmp / 'train.npz', 96, (28, 28)))}",
            f"data.validation={npz(classification_npz(tmp / 'v.npz', 40, (28, 28), seed=1))}",
        ]
    if example == "cifar10_vgg":
        # The training images come from a real image directory (PNG files), validation from
        # arrays: both loading paths of image data run.
        directory = image_directory(tmp / "images", per_class=16, size=32)
        source = {"kind": "image_directory", "path": directory, "image_size": [32, 32]}
        return [
            f"data.train={json.dumps(source)}",
            f"data.validation={npz(classification_npz(tmp / 'val.npz', 24, (32, 32, 3)))}",
        ]
    if example == "pets_unet":
        return [
            f"data.train={npz(segmentation_npz(tmp / 'train.npz', 8, 128))}",
            f"data.validation={npz(segmentation_npz(tmp / 'val.npz', 4, 128, seed=1))}",
            "data.batch_size=4",
        ]
    if example == "shapes_dcgan":
        return ["data.train.count=96", "data.batch_size=32"]
    if example in ("shapes_unet", "shapes_plateau", "shapes_multitask"):
        # Its own generated data, made smaller.
        return ["data.train.count=96", "data.validation.count=32"]
    if example in ("mnist_onecycle", "fashion_cyclical"):
        return [
            f"data.train={npz(classification_npz(tmp / 'train.npz', 96, (28, 28)))}",
            f"data.validation={npz(classification_npz(tmp / 'v.npz', 40, (28, 28), seed=1))}",
            "data.batch_size=32",
        ]
    raise AssertionError(f"no small data for {example}")
