"""A SavedModel's output shape, read from its saved_model.pb without TensorFlow or protobuf
(rendering never imports them): the teacher of a distillation exported as a SavedModel is checked
against the student at validate time, so the few fields that hold the shape of its signature's
output are read from the protocol buffer wire format by hand."""

from __future__ import annotations

from pathlib import Path

Fields = dict[int, list[int | bytes]]
"""A message's fields by number: varints as ints, length-delimited ones as bytes."""


def saved_model_output_shape(path: str) -> tuple | None:
    """The shape (without the batch dimension, None for a size left open) of the one output of a
    SavedModel's "serve" signature (what Keras's export writes, and the endpoint the script
    calls); None where the file is missing or is no SavedModel, has no "serve" signature (the
    script says so when it loads it), or the output is not one of known rank."""
    try:
        # SavedModel: meta_graphs = 2; MetaGraphDef: map<string, SignatureDef> signature_def = 5.
        signatures: dict[int | bytes, int | bytes] = {}
        for meta_graph in fields((Path(path) / "saved_model.pb").read_bytes()).get(2, []):
            signatures = {**entries(fields(meta_graph), 5), **signatures}  # the first one's wins
        signature = signatures.get(b"serve")
        outputs = list(entries(fields(signature), 2).values())  # SignatureDef: outputs = 2
        if len(outputs) != 1:
            return None
        # TensorInfo: tensor_shape = 3; TensorShapeProto: dim = 2, unknown_rank = 3; Dim: size = 1.
        shape = fields(fields(outputs[0]).get(3, [b""])[-1])
        sizes = [int64(fields(dim).get(1, [0])[-1]) for dim in shape.get(2, [])]
    except (OSError, ValueError):
        return None
    if shape.get(3, [0])[-1] or not sizes or min(sizes) < -1:
        return None  # unknown rank, no batch dimension, or a size no shape has
    return tuple(None if size == -1 else size for size in sizes[1:])


def fields(data: int | bytes | None) -> Fields:
    """The fields of a message's bytes (fixed-width ones skipped); ValueError if they are none."""
    if not isinstance(data, bytes):
        raise ValueError("not a message")
    found: Fields = {}
    position = 0
    while position < len(data):  # each field moves on at least one byte
        tag, position = varint(data, position)
        number, wire = tag >> 3, tag & 7
        if wire == 0:
            value, position = varint(data, position)
        elif wire == 2:
            length, position = varint(data, position)
            value, position = data[position : position + length], position + length
        elif wire in (1, 5):  # fixed64, fixed32
            value, position = b"", position + (8 if wire == 1 else 4)
        else:
            raise ValueError(f"wire type {wire}")  # groups: no field read here is one
        if number == 0 or position > len(data):
            raise ValueError("field number 0, or a field past the end")
        if wire in (0, 2):
            found.setdefault(number, []).append(value)
    return found


def varint(data: bytes, position: int) -> tuple[int, int]:
    """The varint at `position` (ten bytes at most) and the position after it."""
    value = 0
    for shift in range(0, 70, 7):
        if position >= len(data):
            raise ValueError("truncated varint")
        byte = data[position]
        value, position = value | (byte & 0x7F) << shift, position + 1
        if byte < 0x80:
            return value, position
    raise ValueError("varint of more than ten bytes")


def entries(found: Fields, number: int) -> dict[int | bytes, int | bytes]:
    """The map field `number` of a message: its entries' keys (field 1) and values (field 2)."""
    pairs = [fields(entry) for entry in found.get(number, [])]
    return {pair.get(1, [b""])[-1]: pair.get(2, [b""])[-1] for pair in pairs}


def int64(value: int | bytes) -> int:
    """An int64 field's value: a negative one is its two's complement in 64 bits."""
    if not isinstance(value, int):
        raise ValueError("not a varint")
    value &= (1 << 64) - 1
    return value - (1 << 64) if value >= 1 << 63 else value
