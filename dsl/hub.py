"""Pretrained models from KerasHub: a task (a text classifier, ...) loaded by preset, with its
preprocessor in the input pipeline and LoRA on its backbone.

Checked without importing KerasHub: a built-in preset's name against the catalog
(catalog/keras_hub.json), a local preset directory by its own config.json."""

import json
import os
import re
from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from .base import PositiveInt, StrictModel
from .catalog import hub as catalog

HANDLE = re.compile(r"^(kaggle|hf|modelscope|gs)://\S+$")
"""A handle KerasHub downloads from (Kaggle, Hugging Face, ModelScope, Cloud Storage)."""


class KerasHub(StrictModel):
    """A pretrained KerasHub task loaded by `from_preset`, as KerasHub's guides do: its
    preprocessor (the preset's tokenizer, special tokens, padding and truncation to
    `sequence_length`) runs in the tf.data pipeline, so the script reads strings; the exported
    model takes strings too. `lora_rank` trains low-rank adapters on the backbone's attention
    (`backbone.enable_lora`) instead of its weights; exported, they are merged into the
    kernels."""

    kind: Literal["keras_hub"] = "keras_hub"
    preset: str = Field(min_length=1)
    """A built-in preset's name (`bert_tiny_en_uncased`), a handle (`kaggle://keras/bert/keras/
    bert_tiny_en_uncased/2`, `hf://google/gemma-2b`), or a local preset directory (a path with a
    `/`, e.g. `presets/my_bert` or `./my_bert`: the folder `save_to_preset` writes)."""
    task: Literal["text_classifier", "causal_lm"] = "text_classifier"
    """What the model does with the backbone: `text_classifier`, KerasHub's TextClassifier (the
    backbone's pooled output, dropout, a Dense of `num_classes` logits); `causal_lm`, KerasHub's
    CausalLM (next-token logits: training=SFT(), DPO())."""
    num_classes: PositiveInt = 2
    """The classifier's number of classes (its logits)."""
    sequence_length: PositiveInt = 128
    """Tokens per example, special tokens included: the preprocessor pads shorter texts and
    truncates longer ones to it (KerasHub's own default is 512)."""
    dropout: float | None = Field(default=None, ge=0, lt=1)
    """The classifier head's dropout rate (KerasHub's `dropout` argument of the task); None:
    KerasHub's default (0.1). The backbone's own dropout is in the preset's config."""
    lora_rank: PositiveInt | None = None
    """Train LoRA adapters of this rank (PEFT's `r`) on the backbone's query and value
    projections instead of the backbone's weights, which stay as loaded; the classifier's head
    trains in full. None: the whole model trains (or only the head, with freeze_backbone)."""
    freeze_backbone: bool = False
    """Train the head alone: the backbone's weights stay as loaded."""
    dtype: Literal["float32", "bfloat16", "float16"] | None = None
    """The weights' dtype as loaded (`from_preset(dtype=...)`); None: float32, or what the
    preset's config says."""

    @field_validator("preset")
    @classmethod
    def _known_preset(cls, value: str) -> str:
        return check_preset(value)

    @model_validator(mode="after")
    def _task_of_backbone(self) -> "KerasHub":
        backbone = backbone_class(self.preset)
        supported = catalog.task_backbones(self.task)
        if backbone is not None and backbone not in supported:
            raise ValueError(
                f"preset {self.preset!r} is a {backbone}, and KerasHub has no "
                f"{catalog.TASKS[self.task]} for it; use a preset of "
                f"{', '.join(s.removesuffix('Backbone') for s in supported)}"
            )
        return self

    @model_validator(mode="after")
    def _lora_or_frozen(self) -> "KerasHub":
        if self.lora_rank is not None and self.freeze_backbone:
            raise ValueError(
                f"lora_rank={self.lora_rank} trains adapters on the backbone, and "
                "freeze_backbone=True trains none of it; keep one"
            )
        return self


def check_preset(value: str) -> str:
    """A preset as KerasHub's from_preset takes it: a handle, a local preset directory (with
    its config.json), or a built-in preset's name."""
    if HANDLE.match(value):
        return value
    if is_local(value):
        config = os.path.join(value, "config.json")
        if not os.path.isdir(value):
            raise ValueError(
                f"{value!r} is no directory (a path is relative to where loopgen runs): a "
                "local preset is the folder that save_to_preset writes; fix the path, or give "
                "a built-in preset's name or a kaggle:// or hf:// handle"
            )
        if not os.path.isfile(config):
            raise ValueError(
                f"{value!r} has no config.json, so it is no KerasHub preset: save one with "
                "backbone.save_to_preset(DIR) and tokenizer.save_to_preset(DIR)"
            )
        return value
    if catalog.preset(value) is None:
        close = catalog.close_presets(value)
        hint = f" (did you mean {', '.join(map(repr, close))}?)" if close else ""
        raise ValueError(
            f"{value!r} is no KerasHub preset{hint}: give a built-in preset's name "
            f"(keras-hub {catalog.data()['keras_hub_version']} has "
            f"{len(catalog.data()['presets'])}), a kaggle:// or hf:// handle, or a local "
            "preset directory (a path with a '/')"
        )
    return value


def backbone_class(preset: str) -> str | None:
    """The backbone's class name: a local preset's config.json, a built-in preset's catalog
    entry; None for a handle (known once the script downloads it)."""
    if HANDLE.match(preset):
        return None
    if is_local(preset):
        return local_config(preset).get("class_name")
    entry = catalog.preset(preset)
    return entry["backbone"] if entry else None


def is_local(preset: str) -> bool:
    """Whether a preset names a local directory (KerasHub's own test: a path, not a name)."""
    return "/" in preset or "\\" in preset or preset.startswith(".") or os.path.isdir(preset)


def local_config(preset: str) -> dict[str, Any]:
    """A local preset's config.json (empty when it cannot be read: the field's own check says
    so first)."""
    try:
        with open(os.path.join(preset, "config.json"), encoding="utf-8") as file:
            config = json.load(file)
    except (OSError, ValueError):
        return {}
    return config if isinstance(config, dict) else {}
