"""Rules of the optimization: schedule lengths, validation monitors, gradient accumulation."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..model import OPAQUE
from ..ways.vae import DRAWING_KINDS

if TYPE_CHECKING:
    from ..spec import Spec


def check_schedule(spec: Spec) -> None:
    for path, optimizer in spec.optimizers().items():
        schedule = optimizer.schedule
        if schedule is not None and spec.loop.steps is not None:
            problem = schedule.length_problem(f"{path}.learning_rate", spec.loop.steps)
            if problem:
                raise ValueError(problem)


def check_monitors(spec: Spec) -> None:
    known = [f"val_{name}" for name in spec.log_names()]
    for field, monitored in spec.monitors().items():
        if spec.data.validation is None:
            raise ValueError(
                f"{field} watches {monitored.monitor!r}, but data.validation is not set: "
                f"there is nothing to watch; add data.validation or remove {field}"
            )
        if monitored.monitor not in known:
            raise ValueError(
                f"{field}.monitor={monitored.monitor!r} is not a validation value of this run; "
                f"choose one of {known}"
            )
    stop, plateau = spec.early_stopping, spec.reduce_on_plateau
    if stop and plateau and stop.monitor == plateau.monitor and stop.patience <= plateau.patience:
        raise ValueError(
            f"early_stopping.patience={stop.patience} is not above reduce_on_plateau.patience="
            f"{plateau.patience} on the same {stop.monitor}: the run would stop before the "
            "lower rate is ever tried; make early_stopping.patience the larger one"
        )
    if plateau and spec.optimizer and spec.optimizer.schedule is not None:
        raise ValueError(
            f"reduce_on_plateau is set and optimizer.learning_rate is a schedule "
            f"({spec.optimizer.schedule.kind}): the plateau lowers a constant rate, which a "
            "schedule would override every step; use a constant optimizer.learning_rate or "
            "remove reduce_on_plateau"
        )


def check_gradients(spec: Spec) -> None:
    steps = spec.gradients.accumulate_steps
    replicas = len(getattr(spec.distribute, "devices", [])) or 1
    if spec.data.batch_size % (steps * replicas):
        per = f" per replica ({replicas} in distribute.devices)" if replicas > 1 else ""
        raise ValueError(
            f"gradients.accumulate_steps={steps} does not divide data.batch_size="
            f"{spec.data.batch_size}{per} into equal micro-batches; make data.batch_size a "
            f"multiple of {steps * replicas}"
        )


def check_fine_tune(spec: Spec) -> None:
    fine = spec.fine_tune
    if fine is None:
        return
    model = spec.model
    nodes = {n.name: n for n in model.nodes} if model is not None and model.kind == "graph" else {}
    node = nodes.get(fine.backbone)
    if node is None or getattr(node.layer, "kind", None) != "backbone":
        backbones = sorted(
            n for n, x in nodes.items() if getattr(x.layer, "kind", "") == "backbone"
        )
        raise ValueError(
            f"fine_tune.backbone={fine.backbone!r} is not a node of the model with a Backbone "
            f"(the model's backbone nodes: {backbones or 'none'}); name the node to unfreeze"
        )
    if node.layer.trainable:
        raise ValueError(
            f"fine_tune unfreezes {fine.backbone!r}, but its Backbone trains from the start "
            "(trainable=True); set trainable=False (the frozen phase) or remove fine_tune"
        )
    if (
        fine.at_epoch is not None
        and spec.loop.epochs is not None
        and fine.at_epoch > spec.loop.epochs
    ):
        raise ValueError(
            f"fine_tune.at_epoch={fine.at_epoch} is after the run ends (loop.epochs="
            f"{spec.loop.epochs}): the backbone would never train; unfreeze earlier or train "
            "longer"
        )
    if fine.at_step is not None and spec.loop.steps is not None and fine.at_step >= spec.loop.steps:
        raise ValueError(
            f"fine_tune.at_step={fine.at_step} is not before the run ends (loop.steps="
            f"{spec.loop.steps}); unfreeze earlier or train longer"
        )
    if fine.learning_rate is not None:
        if spec.optimizer is not None and spec.optimizer.schedule is not None:
            raise ValueError(
                "fine_tune.learning_rate is set and optimizer.learning_rate is a schedule: the "
                "new rate would be overridden every step; use a constant optimizer rate or "
                "remove fine_tune.learning_rate"
            )
        if spec.reduce_on_plateau is not None:
            raise ValueError(
                "fine_tune.learning_rate and reduce_on_plateau both set the learning rate; keep one"
            )


def check_sam(spec: Spec) -> None:
    """optimizer=SAM: a supervised step of one loss, its batch in one pass."""
    sam = spec.optimizer
    if getattr(sam, "kind", None) != "sam":
        return
    base = f"{type(sam.base).__name__}(...)"
    kind = spec.training.kind
    if spec.acts or kind != "supervised":
        raise ValueError(
            f"optimizer=SAM with training.kind={kind!r}: SAM perturbs the weights of a "
            f"supervised step of one loss (training=Supervised()) only; set optimizer={base} "
            "(its base) here"
        )
    if spec.gradients.accumulate_steps > 1:
        raise ValueError(
            f"optimizer=SAM with gradients.accumulate_steps={spec.gradients.accumulate_steps}: "
            "SAM's ascent needs the whole batch's gradient before its second pass; remove "
            "gradients.accumulate_steps or use a smaller data.batch_size"
        )
    if spec.performance.precision == "mixed_float16":
        raise ValueError(
            "optimizer=SAM with performance.precision='mixed_float16': SAM's two passes are "
            "not written for loss scaling; use 'mixed_bfloat16' (no scaling) or 'float32'"
        )


def check_ema(spec: Spec) -> None:
    """ema=EMA: a supervised network of loopgen's vocabulary; Keras's use_ema refused."""
    for path, optimizer in spec.optimizers().items():
        base = getattr(optimizer, "base", optimizer)
        if dict(base.arguments()).get("use_ema") if hasattr(base, "arguments") else False:
            raise ValueError(
                f"{path}: use_ema=True keeps Keras's average inside the optimizer, which this "
                "loop never swaps in: validation and the export would use the raw weights; "
                "remove use_ema and set Spec.ema=EMA(decay=...) instead"
            )
    if spec.ema is None:
        return
    kind = spec.training.kind
    if spec.acts or kind not in ("supervised", "multi_task", "gan", *DRAWING_KINDS):
        raise ValueError(
            f"ema is set, but training.kind={kind!r}: the average of the weights is written for "
            "a supervised, multi-task, VAE, diffusion or flow-matching network or a GAN's "
            "generator; remove ema"
        )
    if isinstance(spec.model, OPAQUE):
        raise ValueError(
            f"ema is set on a model of kind {spec.model.kind!r}: the average is a second copy "
            "made by build_model(), written for a Sequential, Functional or Graph model of the "
            "spec's layers; remove ema"
        )
    adapted = [node.name for node in getattr(spec.model, "nodes", []) if node.adapt]
    if adapted:
        raise ValueError(
            f"ema is set, and model.nodes {adapted} adapt to the data: a layer's adapted state "
            "(a vocabulary) is no weight, and the average's copy would lack it; remove ema"
        )
    if spec.best_model is not None:
        raise ValueError(
            "ema and best_model are both set: the best weights are not yet kept of the "
            "average; remove best_model (the monitors and the export use the average)"
        )
