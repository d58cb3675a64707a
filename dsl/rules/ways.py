"""Rules that tie a way of training (the `training` section) to the rest of the spec: what each
kind needs of the model, the loss, the data and the strategy."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .. import shapes
from ..model import Imported

if TYPE_CHECKING:
    from ..spec import Spec


def check_way(spec: Spec) -> None:
    check = CHECKS.get(spec.training.kind)
    if check is not None:
        check(spec)


def output_shape(network: Any, spec: Spec, root: str) -> tuple | None:
    """A network's output shape (without the batch dimension), None where it is not visible
    (an imported model, several outputs)."""
    classes = {c.name: c for c in spec.custom_layers}
    if isinstance(network, Imported) or getattr(network, "heads", None):
        return None
    if network.kind == "graph":
        if not isinstance(network.outputs, str):
            return None
        return shapes.check_graph_shapes(network, classes, root)[network.outputs]
    return shapes.check_shapes(network.input_shape, network.layers, classes, f"{root}.layers")


def check_distillation(spec: Spec) -> None:
    way = spec.training
    if getattr(spec.model, "heads", None) or (
        spec.model.kind == "graph" and not isinstance(spec.model.outputs, str)
    ):
        raise ValueError(
            "training is distillation, but the model has several outputs: distillation needs "
            "one output of logits, the teacher's shape"
        )
    if spec.loss.probabilistic and not spec.loss.from_logits:
        raise ValueError(
            "training is distillation and loss.from_logits=False: the student must output "
            "logits, which the distillation loss softens by the temperature; set "
            "loss.from_logits=True (and end the model without a softmax)"
        )
    if way.teacher.kind != "trained":
        return  # a saved teacher's shape is checked when the script loads it
    student = output_shape(spec.model, spec, "model")
    teacher = output_shape(way.teacher.model, spec, "training.teacher.model")
    if None not in (student, teacher) and tuple(student) != tuple(teacher):
        raise ValueError(
            f"training.teacher.model outputs shape {tuple(teacher)} but the model (the "
            f"student) outputs {tuple(student)}: the student learns the teacher's predictions "
            "class by class, so both need the same output shape"
        )


def reads_ids(spec: Spec) -> bool:
    """Whether the model reads text or integer ids (tokens) rather than float values."""
    sources = {spec.data.train.kind, getattr(spec.data.validation, "kind", None)}
    if sources & {"text", "text_directory"} or getattr(spec.data.train, "num_words", None):
        return True
    if spec.model.kind == "graph":
        return any(not i.dtype.startswith("float") for i in spec.model.inputs.values())
    if isinstance(spec.model, Imported):
        return False
    first = spec.model.flat_items()[0][1]
    return getattr(first, "kind", None) == "embedding"


def check_adversarial(spec: Spec) -> None:
    if reads_ids(spec):
        raise ValueError(
            "training is adversarial, but the model reads text or integer ids: the attack moves "
            "inputs along their gradient, which token ids do not have; train on float inputs "
            "(images, measurements)"
        )
    if spec.gradients.accumulate_steps > 1:
        raise ValueError(
            "gradients.accumulate_steps is set for adversarial training, whose step loopgen "
            "writes for whole batches (the attack's random start is drawn per batch); remove "
            "it, or lower data.batch_size"
        )
    if getattr(spec.model, "heads", None) or (
        spec.model.kind == "graph" and not isinstance(spec.model.outputs, str)
    ):
        raise ValueError(
            "training is adversarial, but the model has several outputs: the attack raises one "
            "loss; use a model with one output"
        )


def check_contrastive(spec: Spec) -> None:
    if not spec.data.augmentation:
        raise ValueError(
            "training is contrastive, but data.augmentation is empty: SimCLR learns what two "
            "augmented views of an image share, and two identical views teach nothing; set "
            "data.augmentation (e.g. RandomFlip, RandomTranslation, RandomContrast)"
        )
    if spec.data.augment_in != "pipeline":
        raise ValueError(
            "training is contrastive with data.augment_in='model': the two views are made in "
            "the input pipeline, each from (seed, epoch, position, view); set "
            "data.augment_in='pipeline'"
        )
    if any(layer.entry.get("batch_level") for layer in spec.data.augmentation):
        raise ValueError(
            "training is contrastive, and data.augmentation mixes images (MixUp, CutMix): a "
            "view must be of one image; remove those layers"
        )
    unsupported = {
        "gradients": spec.gradients.clipped or spec.gradients.accumulate_steps > 1,
        "performance.precision": spec.performance.precision != "float32",
        "logging.histograms": spec.logging.histograms,
    }
    for field, used in unsupported.items():
        if used:
            raise ValueError(
                f"{field} is set for contrastive training, whose step loopgen writes without "
                "it (the negatives are the whole global batch: micro-batches would have fewer); "
                f"remove {field}"
            )
    features = output_shape(spec.model, spec, "model")
    if features is not None and len(features) != 1:
        raise ValueError(
            f"training is contrastive, but the model (the encoder) outputs shape "
            f"{tuple(features)}: it must end in a feature vector, which the projection head "
            "and the probe take; end it in Flatten() or GlobalAveragePooling2D()"
        )
    if spec.loss is None or not spec.loss.probabilistic or spec.data.labels != "sparse":
        raise ValueError(
            "training is contrastive: loss is the linear probe's, on the labels; set "
            "loss=SparseCategoricalCrossentropy(from_logits=True) and data.labels='sparse'"
        )


CHECKS = {
    "distillation": check_distillation,
    "adversarial": check_adversarial,
    "contrastive": check_contrastive,
}
"""The rules of each kind that has some, by kind."""
