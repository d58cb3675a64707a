"""The training setup a run's checkpoints belong to, in spec terms: the script keeps it beside
its checkpoints (`checkpoints/setup.json`) and refuses to resume checkpoints of another setup.

It holds what changes what a checkpoint means or where the data stands: the network, the
objective and optimizer, the data sources and whatever changes the examples or their order, the
batch size and the seed. Not what a resumed run may change: the length of training, the
cadences, the performance options and the strategy (checkpoints move between strategies, so
every `--variant` of a spec has the same setup), nor words for people (descriptions, docs)."""

from __future__ import annotations

import json
from typing import Any

from ..dsl.spec import Spec
from . import code, stamp

DATA_PERFORMANCE = {"cache", "prefetch", "deterministic"}
"""Fields of `data` that change how fast batches come, not which."""

IGNORED = {
    "doc",  # a custom layer class's docstring
    "synchronized",  # BatchNormalization across replicas: the same variables on any strategy
    "metrics",  # computed beside training, never checkpointed
}
"""Keys dropped from every section before it is hashed."""


def setup_entries(spec: Spec, batch_size: str) -> list[tuple[str, str]]:
    """(spec field path, Python expression of its value) for the script's SETUP dict: a plain
    value as it is, a structured section as the sha256 of its JSON. Where the script has a
    constant for the value (SEED, the batch size: `batch_size` names it), the constant, so that
    a hand edit of it counts too."""
    entries: list[tuple[str, str]] = []
    if spec.gan is not None:
        entries += [
            ("gan.generator", _hash(spec.gan.generator)),
            ("gan.discriminator", _hash(spec.gan.discriminator)),
            ("gan.latent_dim", "LATENT_DIM"),
        ]
    else:
        entries.append(("model", _hash(spec.model)))
    if spec.custom_layers:
        entries.append(("custom_layers", _hash(spec.custom_layers)))
    data = spec.data
    for field in type(data).model_fields:
        value = getattr(data, field)
        if field in DATA_PERFORMANCE or value in (None, []):
            continue
        if field == "augment_in" and not data.augmentation:
            continue  # where no augmentation goes
        if field == "batch_size":
            expression = batch_size
        elif isinstance(value, float):
            expression = code.ratio(value)  # 1 / 255, as RESCALE is written
        elif isinstance(value, bool | int | str):
            expression = code.literal(value)
        else:
            expression = _hash(value)
        entries.append((f"data.{field}", expression))
    entries.append(("seed", "SEED"))
    if spec.gan is not None:
        entries += [
            ("gan.generator_optimizer", _hash(spec.gan.generator_optimizer)),
            ("gan.discriminator_optimizer", _hash(spec.gan.discriminator_optimizer)),
            ("gan.label_smoothing", code.literal(spec.gan.label_smoothing)),
        ]
    else:
        entries.append(("optimizer", _hash(spec.optimizer)))
        if spec.tasks:
            entries.append(("tasks", _hash(spec.tasks)))
        else:
            entries.append(("loss", _hash(spec.loss)))
    if spec.fine_tune is not None:  # which weights train when, and at which rate
        entries.append(("fine_tune", _hash(spec.fine_tune)))
    return entries


def _hash(section: Any) -> str:
    """The first 16 hex digits of the sha256 of a section's canonical JSON, as a literal."""
    canonical = json.dumps(_strip(_dump(section)), sort_keys=True)
    return code.literal(stamp.digest(canonical))


def _dump(value: Any) -> Any:
    if hasattr(value, "model_dump"):
        return value.model_dump(mode="json")
    if isinstance(value, dict):
        return {key: _dump(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_dump(item) for item in value]
    return value


def _strip(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _strip(v) for k, v in value.items() if k not in IGNORED}
    if isinstance(value, list):
        return [_strip(item) for item in value]
    return value
