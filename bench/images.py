"""Writes the input benchmark's data: COUNT random 32x32 PNG images in 10 classes, as an image
directory (one sub-directory per class) and as SHARDS TFRecord files of the same encoded
images with their labels.

    python -m bench.images FOLDER [--count 2000] [--shards 8]
"""

from __future__ import annotations

import argparse
import os

import numpy as np
import tensorflow as tf

CLASSES = 10
SIZE = 32


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("folder")
    parser.add_argument("--count", type=int, default=2000)
    parser.add_argument("--shards", type=int, default=8)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    writers = [
        tf.io.TFRecordWriter(os.path.join(args.folder, f"images-{shard:02d}.tfrecord"))
        for shard in range(args.shards)
    ]
    for i in range(args.count):
        label = i % CLASSES
        pixels = rng.integers(0, 256, (SIZE, SIZE, 3), dtype=np.uint8)
        encoded = tf.io.encode_png(pixels).numpy()
        folder = os.path.join(args.folder, "images", f"class_{label}")
        os.makedirs(folder, exist_ok=True)
        with open(os.path.join(folder, f"{i:05d}.png"), "wb") as f:
            f.write(encoded)
        features = {
            "image": tf.train.Feature(bytes_list=tf.train.BytesList(value=[encoded])),
            "label": tf.train.Feature(int64_list=tf.train.Int64List(value=[label])),
        }
        example = tf.train.Example(features=tf.train.Features(feature=features))
        writers[i % args.shards].write(example.SerializeToString())
    for writer in writers:
        writer.close()


if __name__ == "__main__":
    main()
