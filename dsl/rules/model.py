"""Rules of the networks: custom layer classes, and the shapes flowing through the layers."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .. import shapes
from ..base import check_not_module_level
from ..layers import Custom, CustomLayerClass
from ..model import OPAQUE

if TYPE_CHECKING:
    from ..spec import Spec


def check_custom_layers(spec: Spec) -> None:
    classes = {c.name: c for c in spec.custom_layers}
    if len(classes) != len(spec.custom_layers):
        raise ValueError("custom_layers: two classes share a name; rename one")
    for i, cls in enumerate(spec.custom_layers):
        check_not_module_level(cls.name, f"custom_layers[{i}].name: class name")
    for path, item in spec.layers_with_paths():
        if not isinstance(item, Custom):
            continue
        if item.cls not in classes:
            raise ValueError(
                f"{path}.cls is {item.cls!r}, but custom_layers declares "
                f"{sorted(classes) or 'no classes'}; declare it in custom_layers or fix the "
                "name"
            )
        unknown = sorted(set(item.args) - set(classes[item.cls].params))
        if unknown:
            raise ValueError(
                f"{path}.args passes {unknown[0]!r}, which is not a parameter of "
                f"{item.cls} (its params: {sorted(classes[item.cls].params) or 'none'}); "
                "fix the name or add the parameter to the class"
            )
    _check_no_cycle(classes)


def check_keras_hub(spec: Spec) -> None:
    """A KerasHub text classifier reads strings, trains by the supervised step, and returns
    logits."""
    model = spec.model
    if model is None or model.kind != "keras_hub":
        return
    if model.task == "causal_lm":
        if spec.training.kind not in ("sft", "dpo", "grpo"):
            raise ValueError(
                f"model.task='causal_lm' with training.kind={spec.training.kind!r}: a causal "
                "language model trains by training=SFT(), DPO() or GRPO()"
            )
        return  # the way's own rules (rules/objective.py) check the rest
    if spec.training.kind not in ("supervised",):
        raise ValueError(
            f"model.kind='keras_hub' with training.kind={spec.training.kind!r}: a KerasHub "
            f"{model.task} trains by the supervised step; remove training"
        )
    for field, source in (
        ("data.train", spec.data.train),
        ("data.validation", spec.data.validation),
    ):
        if source is not None and source.kind not in ("text", "text_records", "split"):
            raise ValueError(
                f"{field}.kind={source.kind!r}, but model.kind='keras_hub' takes texts: the "
                "preset's preprocessor tokenizes strings; use data.train=Text(...) or "
                "TextRecords(...)"
            )
    loss = spec.loss
    if loss is not None and loss.probabilistic and not loss.from_logits:
        raise ValueError(
            f"loss.from_logits=False, but KerasHub's {model.task} outputs logits: set "
            "loss.from_logits=True"
        )


def check_shapes(spec: Spec) -> None:
    if spec.gan is not None:
        check_gan_shapes(spec)
    elif spec.model.kind == "graph":
        classes = {c.name: c for c in spec.custom_layers}
        shapes.check_graph_shapes(spec.model, classes)
    elif not isinstance(spec.model, OPAQUE):
        classes = {c.name: c for c in spec.custom_layers}
        trunk = shapes.check_shapes(spec.model.input_shape, spec.model.layers, classes)
        for name, items in getattr(spec.model, "heads", {}).items():
            shapes.check_shapes(trunk, items, classes, path=f"model.heads.{name}")


def check_gan_shapes(spec: Spec) -> None:
    gan = spec.gan
    assert gan is not None
    classes = {c.name: c for c in spec.custom_layers}
    image = shapes.check_shapes(
        gan.generator.input_shape, gan.generator.layers, classes, path="training.generator.layers"
    )
    if tuple(gan.discriminator.input_shape) != tuple(image):
        raise ValueError(
            f"training.generator makes images of shape {image} but "
            f"training.discriminator.input_shape={gan.discriminator.input_shape}; make them equal"
        )
    train = spec.data.train
    if train.kind == "shapes" and tuple(image) != (train.image_size, train.image_size, 3):
        raise ValueError(
            f"training.generator makes images of shape {image} but data.train has images of "
            f"({train.image_size}, {train.image_size}, 3); change the generator's layers or "
            "data.train.image_size"
        )
    logits = shapes.check_shapes(
        image, gan.discriminator.layers, classes, path="training.discriminator.layers"
    )
    if tuple(logits) != (1,):
        raise ValueError(
            f"training.discriminator outputs shape {logits}; it must output one logit per image "
            "(end it in Dense(units=1) without activation)"
        )


def _check_no_cycle(classes: dict[str, CustomLayerClass]) -> None:
    """A custom layer class may use others, but never itself, directly or through others."""

    def visit(name: str, chain: tuple[str, ...]) -> None:
        if name in chain:
            cycle = " -> ".join((*chain[chain.index(name) :], name))
            raise ValueError(
                f"custom_layers: {cycle} contains itself; a layer class cannot be built from itself"
            )
        for layer in classes[name].layers:
            if isinstance(layer, Custom) and layer.cls in classes:
                visit(layer.cls, (*chain, name))

    for name in classes:
        visit(name, ())


def check_backbones(spec: Spec) -> None:
    """A Backbone is a node of a graph model: it needs the graph's named tensors (its input's
    shape, the training flag of its call)."""
    if spec.model is None or spec.model.kind == "graph":
        return
    for path, layer in spec.layers_with_paths():
        if getattr(layer, "kind", None) == "backbone":
            raise ValueError(
                f"{path} is a Backbone in a {spec.model.kind} model; use a Graph model, with "
                "the backbone as a node on the image input"
            )
