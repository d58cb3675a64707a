"""Rules of what the run logs: histograms need TensorBoard, logged names are unique."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..spec import Spec


def check_histograms(spec: Spec) -> None:
    if spec.logging.histograms and not spec.logging.tensorboard:
        raise ValueError(
            "logging.histograms=True but logging.tensorboard=False: the histograms are "
            "TensorBoard summaries; set logging.tensorboard=True or drop the histograms"
        )


def check_unique_names(spec: Spec) -> None:
    names = spec.log_names()[1:]  # after the loss
    if len(set(names)) != len(names) or "loss" in names:
        where = "tasks: the logged names" if spec.tasks else "metrics: names"
        raise ValueError(f"{where} {names} repeat or use 'loss'; give each metric a unique name=")
