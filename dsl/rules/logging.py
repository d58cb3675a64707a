"""Rules of what the run logs: histograms need TensorBoard, logged names are unique."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..ways.vae import DRAWING_KINDS

if TYPE_CHECKING:
    from ..spec import Spec


def check_histograms(spec: Spec) -> None:
    if spec.logging.histograms and not spec.logging.tensorboard:
        raise ValueError(
            "logging.histograms=True but logging.tensorboard=False: the histograms are "
            "TensorBoard summaries; set logging.tensorboard=True or drop the histograms"
        )


def check_inspect(spec: Spec) -> None:
    inspect = spec.logging.inspect
    if inspect is None:
        return
    if not (inspect.activations or inspect.gradients or inspect.weights):
        raise ValueError(
            "logging.inspect has activations, gradients and weights all False: set one, or "
            "remove logging.inspect"
        )
    if not (spec.logging.tensorboard or spec.logging.jsonl):
        raise ValueError(
            "logging.inspect is set but logging.tensorboard and logging.jsonl are False: the "
            "statistics go to them; set one"
        )
    if spec.distribute.kind != "single_device":
        raise ValueError(
            f"logging.inspect under distribute.kind={spec.distribute.kind!r}: a step's gradients "
            "are summed across replicas inside apply_gradients, and each replica sees a slice "
            "of the batch; inspect on one device (distribute.kind='single_device', or loopgen "
            "render --variant single_device: the checkpoints restore there)"
        )
    if inspect.activations and spec.training.kind in DRAWING_KINDS:
        drawn = (
            "the VAE takes the batch and the noise of its codes, which the step draws inside it"
            if spec.training.kind == "vae"
            else "the denoiser's input is the noised batch the step draws inside it, not the "
            "batch itself"
        )
        raise ValueError(
            f"logging.inspect.activations with training.kind={spec.training.kind!r}: {drawn}; "
            "set logging.inspect.activations=False (gradients and weights are kept)"
        )
    if inspect.activations and spec.training.kind in ("reptile", "maml"):
        raise ValueError(
            f"logging.inspect.activations with training.kind={spec.training.kind!r}: the "
            "model's outputs are those of the weights each task adapts, not the ones it learns; "
            "set logging.inspect.activations=False"
        )
    opaque = spec.model is not None and spec.model.kind in ("import", "keras_hub")
    if inspect.activations and opaque:
        raise ValueError(
            f"logging.inspect.activations with model.kind={spec.model.kind!r}: the layers of "
            "that model are not the spec's, and their outputs may not be reachable; set "
            "logging.inspect.activations=False"
        )


def check_unique_names(spec: Spec) -> None:
    names = spec.log_names()[1:]  # after the loss
    if len(set(names)) != len(names) or "loss" in names:
        where = "tasks: the logged names" if spec.tasks else "metrics: names"
        raise ValueError(f"{where} {names} repeat or use 'loss'; give each metric a unique name=")
