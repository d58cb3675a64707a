"""The rules that relate several sections of a spec, each a small function of its own that
raises `ValueError` with a message naming the fields involved and the fix.

A section's own rules (one field against another of the same model) stay in its model's
validators; what needs the whole spec is here, grouped by what it checks. `check` runs them in
this order: the first problem found is reported, the more basic ones first (what the run trains
before how, shapes before label formats)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from . import augmentation, data, export, logging, model, objective, rl, strategy, training, ways

if TYPE_CHECKING:
    from ..spec import Spec

RULES = [
    objective.check_objective,
    model.check_custom_layers,
    model.check_backbones,
    model.check_keras_hub,
    model.check_shapes,
    objective.check_labels,
    objective.check_logits,
    training.check_schedule,
    objective.check_thresholds,
    ways.check_way,
    data.check_split,
    data.check_sources_agree,
    data.check_features,
    data.check_input_types,
    augmentation.check_augmentation,
    strategy.check_devices,
    strategy.check_performance,
    training.check_monitors,
    training.check_gradients,
    training.check_sam,
    training.check_ema,
    training.check_fine_tune,
    logging.check_histograms,
    logging.check_inspect,
    logging.check_unique_names,
    export.check_tflite,
]


__all__ = ["RULES", "check", "rl"]  # rl.check: the rules of a spec that acts, instead


def check(spec: Spec) -> None:
    """Raises ValueError at the first rule the spec breaks."""
    for rule in RULES:
        rule(spec)
