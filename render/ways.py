"""What the partial of the way of training (templates/partials/ways/) and the sections around
it need: the networks a checkpoint holds and a run restores."""

from __future__ import annotations

from typing import Any

from ..dsl.spec import Spec


def way_context(spec: Spec) -> dict[str, Any]:
    networks = ["generator", "discriminator"] if spec.training.kind == "gan" else ["model"]
    return {
        # The networks whose weights the checkpoint keeps, by name (--init-from loads them).
        "networks": networks,
        "network_args": ", ".join(f"{name}={name}" for name in networks),
    }
