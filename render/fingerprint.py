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

from pydantic import BaseModel
from pydantic_core import to_jsonable_python

from ..dsl import catalog
from ..dsl.spec import Spec
from ..dsl.training import LOOPGEN_DEFAULTS
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
            ("training.generator", _hash(spec.gan.generator)),
            ("training.discriminator", _hash(spec.gan.discriminator)),
            ("training.latent_dim", "LATENT_DIM"),
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
            ("training.generator_optimizer", _hash(spec.gan.generator_optimizer)),
            ("training.discriminator_optimizer", _hash(spec.gan.discriminator_optimizer)),
            ("training.label_smoothing", code.literal(spec.gan.label_smoothing)),
        ]
    else:
        entries.append(("optimizer", _hash(spec.optimizer)))
        if spec.tasks:
            entries.append(("training.tasks", _hash(spec.tasks)))
        elif spec.training.kind != "supervised":  # how the step trains: the whole section
            entries.append(("training", _hash(spec.training)))
        if spec.loss is not None:
            entries.append(("loss", _hash(spec.loss)))
    if spec.fine_tune is not None:  # which weights train when, and at which rate
        entries.append(("fine_tune", _hash(spec.fine_tune)))
    return entries


def _hash(section: Any) -> str:
    """The first 16 hex digits of the sha256 of a section's canonical JSON, as a literal."""
    canonical = json.dumps(_strip(_dump(section)), sort_keys=True)
    return code.literal(stamp.digest(canonical))


def _dump(value: Any) -> Any:
    """A section as JSON data without the fields left at their defaults (but `kind`, which
    tells the sources, layers and schedules apart): a later loopgen that adds an optional field
    leaves the setup of earlier runs as it was, and a spec that writes a default out has the
    setup of one that does not."""
    if isinstance(value, BaseModel):
        data = {}
        for name, field in type(value).model_fields.items():
            item = getattr(value, name)
            if (
                name == "kind"
                or field.is_required()
                or item != field.get_default(call_default_factory=True)
            ):
                data[name] = _dump(item)
        extra = value.__pydantic_extra__ or {}
        return {
            **data,
            **{k: _dump(v) for k, v in extra.items() if not _keras_default(value, k, v)},
        }
    if isinstance(value, dict):
        return {key: _dump(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_dump(item) for item in value]
    return to_jsonable_python(value)


def _keras_default(section: BaseModel, name: str, value: Any) -> bool:
    """Whether a Keras argument the spec writes out (`use_bias=True`) is the value the script
    would use without it: loopgen's default where it has its own, else Keras'."""
    entry = getattr(section, "entry", None)
    if not isinstance(entry, catalog.Entry) or name not in entry.args:
        return False
    ours = LOOPGEN_DEFAULTS.get((entry.section, entry.kind), {})
    if name in ours:
        return value == ours[name]
    return catalog.is_default(entry.args[name], value)


def _strip(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _strip(v) for k, v in value.items() if k not in IGNORED}
    if isinstance(value, list):
        return [_strip(item) for item in value]
    return value
