"""What the partial of the way of training (templates/partials/ways/) and the sections around
it need, one small builder per kind that needs more than the spec: the networks a checkpoint
holds and a run restores, and a teacher's network."""

from __future__ import annotations

from typing import Any

from ..dsl.shapes import check_graph_shapes
from ..dsl.spec import Spec
from . import graph


def way_context(spec: Spec, x_name: str) -> dict[str, Any]:
    networks = {
        "gan": ["generator", "discriminator"],
        "contrastive": ["model", "projection", "probe"],
    }.get(spec.training.kind, ["model"])
    batch_names = {
        "gan": [x_name],
        "contrastive": ["first", "second", "labels"],
        "reptile": ["support_images", "support_labels"],
        "maml": ["support_images", "support_labels", "query_images", "query_labels"],
    }.get(spec.training.kind, [x_name, "labels"])
    # logging.inspect: the networks inspected, each with the input its layers' outputs are of
    # (`batch`: the train step's arguments).
    inspected = {
        "gan": {
            "generator": "tf.random.stateless_normal("
            "(tf.shape(batch[0])[0], LATENT_DIM), seed=[SEED, -1])",
            "discriminator": "batch[0]",
        },
        "contrastive": {
            "model": "batch[0]",
            "projection": 'networks["model"](batch[0], training=False)',
        },
    }.get(spec.training.kind, {"model": "batch[0]"})
    context = {
        "inspected": inspected,
        # replay: the networks whose layers it reports (run_dir.jinja names "networks" else).
        "replayed_networks": networks,
        # The networks whose weights the checkpoint keeps, by name (--init-from loads them).
        "networks": networks,
        # The optimizers that update them.
        "optimizers": ["generator_optimizer", "discriminator_optimizer"]
        if spec.training.kind == "gan"
        else ["optimizer"],
        # The parts of a training batch, as train_step takes them (replay, debug/step-N/).
        "batch_names": batch_names,
        "network_args": ", ".join(f"{name}={name}" for name in networks),
        "teacher_build": None,
        "teacher_blocks": [],
        # Few-shot tasks instead of batches (Reptile, MAML).
        "meta": spec.training.kind in ("reptile", "maml"),
    }
    builder = BUILDERS.get(spec.training.kind)
    return {**context, **(builder(spec) if builder else {})}


def distillation(spec: Spec) -> dict[str, Any]:
    """A teacher whose network the spec describes is built by the script (build_teacher)."""
    teacher = spec.training.teacher
    if teacher.kind != "trained":
        return {}
    network = teacher.model
    if network.kind != "graph":
        return {"teacher_build": []}
    classes = {c.name: c for c in spec.custom_layers}
    shapes = check_graph_shapes(network, classes, "training.teacher.model")
    return {
        "teacher_build": graph.build_lines(
            network, "teacher", spec.performance.precision, [], shapes
        ),
        "teacher_blocks": [graph.block_function(network, block) for block in network.blocks],
    }


BUILDERS = {"distillation": distillation}
