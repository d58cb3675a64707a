"""Rules of the strategy and the speed options: devices, and what XLA can compile."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..spec import Spec


def check_device_names(spec: Spec) -> None:
    if not spec.distribute.kind == "mirrored" or not spec.distribute.devices:
        return
    devices = [d.lower().lstrip("/").removeprefix("device:") for d in spec.distribute.devices]
    if len(set(devices)) != len(devices):
        raise ValueError(
            f"distribute.devices={spec.distribute.devices} names a device twice; list each "
            "device once"
        )


def check_devices(spec: Spec) -> None:
    check_device_names(spec)
    if not spec.distribute.kind == "mirrored" or not spec.distribute.devices:
        return
    replicas = len(spec.distribute.devices)
    if spec.data.batch_size % replicas:
        raise ValueError(
            f"data.batch_size={spec.data.batch_size} (the global batch) does not split "
            f"evenly over the {replicas} replicas of distribute.devices; make "
            f"data.batch_size a multiple of {replicas}"
        )


def check_performance(spec: Spec) -> None:
    xla, kind = spec.performance.xla, spec.distribute.kind
    if xla == "on" and spec.gan is not None:
        raise ValueError(
            "performance.xla='on' for a GAN: loopgen compiles the supervised step only; set "
            "performance.xla='auto' or 'off'"
        )
    if xla == "on" and spec.gradients.accumulate_steps > 1:
        raise ValueError(
            f"performance.xla='on' with gradients.accumulate_steps="
            f"{spec.gradients.accumulate_steps}: a smaller last batch splits into "
            "micro-batches of different sizes, which XLA cannot compile; set "
            "performance.xla='auto' or 'off', or accumulate_steps=1"
        )
    if xla == "on" and kind in ("mirrored", "multi_worker"):
        raise ValueError(
            f"performance.xla='on' but distribute.kind={kind!r}: loopgen compiles the "
            "single-device step only (the distributed step all-reduces gradients, and a "
            "TPU compiles everything anyway); set performance.xla='auto' or 'off'"
        )
