"""The output shape of a SavedModel, read from its saved_model.pb without TensorFlow: the shape
TensorFlow itself loads from what Keras exports, None for anything that is not one output of
known rank, and None (no exception) for bytes that are no SavedModel."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import run_preloaded
from hypothesis import given
from hypothesis import strategies as st
from loopgen.dsl.saved_model_file import saved_model_output_shape

# Exports small Keras models into sys.argv[1] and prints, for each, the signatures TensorFlow
# loads and the shapes (batch dimension dropped) of the outputs of "serve", else
# "serving_default" (what the reader must not take: the script calls "serve").
EXPORT = """
import json, sys

import keras
import tensorflow as tf

folder = sys.argv[1]
inputs = keras.Input((6,))
two = [keras.layers.Dense(2)(inputs), keras.layers.Dense(3)(inputs)]
models = {
    "dense": keras.Sequential([keras.Input((4,)), keras.layers.Dense(3)]),
    "image": keras.Sequential([keras.Input((8, 8, 3)), keras.layers.Conv2D(2, 3, padding="same")]),
    "open": keras.Sequential([keras.Input((None, 5)), keras.layers.Dense(2)]),
    "two_outputs": keras.Model(inputs, two),
}
for name, model in models.items():
    model.export(f"{folder}/{name}", verbose=False)
# An ExportArchive whose one endpoint is "serving_default": no "serve" signature.
model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(7)])
archive = keras.export.ExportArchive()
archive.track(model)
archive.add_endpoint("serving_default", model.call, [tf.TensorSpec((None, 4), tf.float32)])
archive.write_out(f"{folder}/archive", verbose=False)
found = {}
for name in [*models, "archive"]:
    signatures = tf.saved_model.load(f"{folder}/{name}").signatures
    outputs = signatures["serve" if "serve" in signatures else "serving_default"].structured_outputs
    shapes = [tensor.shape.as_list()[1:] for tensor in outputs.values()]
    found[name] = {"signatures": sorted(signatures), "shapes": shapes}
print(json.dumps(found))
"""

EXPECTED = {
    "dense": (3,),
    "image": (8, 8, 2),
    "open": (None, 2),
    "two_outputs": None,
    "archive": None,  # no "serve" endpoint, which the script calls
}


@pytest.fixture(scope="module")
def exported(tmp_path_factory) -> tuple[Path, dict]:
    """The folder the models were exported into, and what TensorFlow loads from each. The
    tests that read them are slow: the quick tier runs no TensorFlow."""
    folder = tmp_path_factory.mktemp("saved_models")
    proc = run_preloaded("-c", EXPORT, str(folder), cwd=folder)
    return folder, json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_the_shape_tensorflow_loads(exported, name):
    folder, loaded = exported
    shape = saved_model_output_shape(str(folder / name))
    assert shape == EXPECTED[name]
    shapes = loaded[name]["shapes"]
    serve = "serving_default" if name == "archive" else "serve"
    assert serve in loaded[name]["signatures"], loaded[name]
    if serve == "serve":
        assert shape == (tuple(shapes[0]) if len(shapes) == 1 else None), loaded[name]


def saved_model_file(folder: Path, data: bytes) -> str:
    """A SavedModel directory in `folder` whose saved_model.pb holds `data`."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "saved_model.pb").write_bytes(data)
    return str(folder)


@pytest.mark.slow
def test_bytes_that_are_no_saved_model(exported, tmp_path):
    data = (exported[0] / "dense" / "saved_model.pb").read_bytes()
    for cut in (len(data) // 2, len(data) - 1, 1):
        path = saved_model_file(tmp_path / f"cut{cut}", data[:cut])
        assert saved_model_output_shape(path) is None, cut
    noise = random.Random(0).randbytes(4096)
    assert saved_model_output_shape(saved_model_file(tmp_path / "noise", noise)) is None
    assert saved_model_output_shape(str(tmp_path / "missing")) is None
    assert saved_model_output_shape(str(tmp_path / "noise" / "saved_model.pb")) is None  # a file


def encode(number: int, value: int | bytes) -> bytes:
    """One field of a message: a varint (an int, negative ones in ten bytes) or bytes."""

    def varint(value: int) -> bytes:
        value &= (1 << 64) - 1
        out = b""
        while value >= 0x80:
            out, value = out + bytes([value & 0x7F | 0x80]), value >> 7
        return out + bytes([value])

    if isinstance(value, int):
        return varint(number << 3) + varint(value)
    return varint(number << 3 | 2) + varint(len(value)) + value


# Fields the reader does not know, one of each wire type (varint, fixed64, bytes, fixed32).
UNKNOWN = encode(14, 7) + bytes([13 << 3 | 1]) + bytes(8) + encode(12, b"x") + b"\x5d" + bytes(4)


def saved_model(signatures: dict[str, list[list[int] | None]], extra: bytes = b"") -> bytes:
    """A saved_model.pb of one meta graph with these signatures, each with outputs of these shapes
    (None: of unknown rank); `extra` goes into every message."""

    def tensor_info(shape: list[int] | None) -> bytes:
        dims = [encode(2, extra + encode(1, size)) for size in shape or []]
        tensor_shape = b"".join(dims) + (encode(3, 1) if shape is None else b"")
        return extra + encode(1, b"out:0") + encode(2, 1) + encode(3, extra + tensor_shape)

    def signature(shapes: list[list[int] | None]) -> bytes:
        inputs = encode(1, encode(1, b"x") + encode(2, tensor_info([-1, 4])))
        outputs = [
            encode(2, encode(1, f"output_{i}".encode()) + encode(2, tensor_info(shape)))
            for i, shape in enumerate(shapes)
        ]
        return extra + inputs + b"".join(outputs)

    entries = [encode(5, encode(1, name.encode()) + encode(2, signature(shapes)))
               for name, shapes in signatures.items()]  # fmt: skip
    return extra + encode(1, 1) + encode(2, extra + b"".join(entries))


@pytest.mark.parametrize("extra", [b"", UNKNOWN], ids=["plain", "unknown_fields"])
@pytest.mark.parametrize(
    ("signatures", "expected"),
    [
        ({"serving_default": [[-1, 5]], "serve": [[-1, 3]]}, (3,)),
        ({"serving_default": [[-1, 5]]}, None),  # the script calls "serve"
        ({"serve": [[-1, 2, -1, 6]], "__saved_model_init_op": [None]}, (2, None, 6)),
        ({"serve": [[7, 3]]}, (3,)),  # a batch of fixed size
        ({"serve": [[-1]]}, ()),  # a scalar for each example
        ({"serve": [[]]}, None),  # no batch dimension
        ({"serve": [None]}, None),  # unknown rank
        ({"serve": []}, None),
        ({"serve": [[-1, 3], [-1, 3]]}, None),
        ({"serve": [[-1, -2]]}, None),
        ({"predict": [[-1, 3]]}, None),
        ({}, None),
    ],
)
def test_signatures(tmp_path, signatures, expected, extra):
    path = saved_model_file(tmp_path, saved_model(signatures, extra))
    assert saved_model_output_shape(path) == expected


# A shape of unknown rank that lists sizes all the same (TensorFlow writes no such shape).
SIZES_OF_UNKNOWN_RANK_SHAPE = encode(2, encode(1, -1)) + encode(2, encode(1, 3)) + encode(3, 1)
SIZES_OF_UNKNOWN_RANK_OUTPUT = encode(1, b"y") + encode(2, encode(3, SIZES_OF_UNKNOWN_RANK_SHAPE))
SIZES_OF_UNKNOWN_RANK = encode(
    2, encode(5, encode(1, b"serve") + encode(2, encode(2, SIZES_OF_UNKNOWN_RANK_OUTPUT)))
)


@pytest.mark.parametrize(
    "data",
    [
        b"",  # no meta graph
        b"\x12",  # a length missing
        b"\x12\xff",  # a varint cut short
        b"\x12" + b"\xff" * 10 + b"\x01",  # a varint of eleven bytes
        b"\x12\x05abc",  # a length past the end
        b"\x11" + bytes(4),  # a fixed64 past the end
        b"\x13\x14",  # a group
        b"\x02\x00",  # field number 0
        encode(2, encode(5, encode(1, b"serve") + encode(2, encode(2, b"\x0a\x09")))),
        encode(2, encode(5, encode(1, b"serve") + encode(2, 3))),  # a varint for a message
        SIZES_OF_UNKNOWN_RANK,
    ],
)
def test_malformed_bytes(tmp_path, data):
    assert saved_model_output_shape(saved_model_file(tmp_path, data)) is None


@pytest.mark.slow
@given(st.lists(st.tuples(st.integers(min_value=0), st.integers(0, 255)), min_size=1, max_size=4))
def test_corrupted_exports_never_raise(exported, changes):
    """Bytes of a real export changed here and there: a shape or None, never an exception."""
    data = bytearray((exported[0] / "dense" / "saved_model.pb").read_bytes())
    for position, byte in changes:
        data[position % len(data)] = byte
    shape = saved_model_output_shape(saved_model_file(exported[0] / "corrupted", bytes(data)))
    assert shape is None or isinstance(shape, tuple)


@pytest.mark.slow
def test_reading_imports_neither_tensorflow_nor_protobuf(exported):
    probe = (
        "import sys\n"
        "from loopgen.dsl.saved_model_file import saved_model_output_shape\n"
        "print(saved_model_output_shape(sys.argv[1]))\n"
        "heavy = {'tensorflow', 'google', 'keras'}\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in heavy))"
    )
    command = [sys.executable, "-c", probe, str(exported[0] / "dense")]
    proc = subprocess.run(command, capture_output=True, text=True, check=True, timeout=60)
    assert proc.stdout.splitlines() == ["(3,)", "[]"], proc.stdout
