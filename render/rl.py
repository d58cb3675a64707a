"""Spec → render context of a script that acts (reinforcement learning, templates/rl.py.jinja):
the environment's spaces, the networks, the way of training's constants, and what the shared
sections (header, model builders, run directory) need."""

from __future__ import annotations

from pathlib import PurePath
from typing import Any

from .. import __version__
from ..dsl.loader import spec_hash
from ..dsl.rules.rl import SHARED_BATCH
from ..dsl.shapes import check_graph_shapes
from ..dsl.spec import Spec
from . import fingerprint, graph, runtime, stamp, tracking
from .context import net_has, optimizer_expression

STDLIB = [
    "argparse", "contextlib", "errno", "fcntl", "glob", "hashlib", "json", "os", "pickle", "re",
    "shutil", "signal", "socket", "sys", "time", "traceback",
]  # fmt: skip


def rl_context(spec: Spec, *, spec_file: str, flags: list[str]) -> dict[str, Any]:
    way = spec.training
    spaces = spec.data.spaces()
    networks = ["model", "target_network" if way.kind == "dqn" else "value_network"]
    if way.kind in ("sac", "td3"):
        networks = ["model", *critics(way)]
    # A Dict observation: the networks are Graphs, each part feeding the input of its name.
    graphs = {
        role: (name, net)
        for role, name, net in [("model", spec.name, spec.model),
                                ("value", "value", getattr(way, "value", None))]
        if getattr(net, "kind", None) == "graph"
    }  # fmt: skip
    classes = {c.name: c for c in spec.custom_layers}
    graph_build = {
        role: graph.build_lines(
            net, name, "float32", [], check_graph_shapes(net, classes), named=True
        )
        for role, (name, net) in graphs.items()
    }
    return {
        "spec": spec,
        "way": way,
        "spaces": spaces,
        "keyed": bool(spaces.named),  # a Dict observation: a dict of arrays, by name
        # uint8 observations (pixels): kept as bytes up to the networks, which rescale them.
        "pixels": spaces.pixels,
        "observation_dtype": "uint8" if spaces.pixels else "float32",
        "observation_shapes": dict(spaces.named),
        "variant": spec.distribute.kind,
        "distributed": spec.distribute.kind != "single_device",
        "cpu_devices": getattr(spec.distribute, "cpu_devices", 0),
        # The batch the replicas share, and the fields that make it.
        "way_batch": SHARED_BATCH[way.kind][0],
        "way_batch_field": SHARED_BATCH[way.kind][1],
        "acts": True,
        # DQN's greedy call and train step XLA-compiled (performance.xla; see Spec.uses_xla).
        "xla": spec.uses_xla,
        "downloads": set(),  # an environment, made by its own code
        "means_checkpointed": False,  # an epoch's: the way's own are in its checkpoint
        "version": __version__,
        # What the script checks that loopgen_runtime.py beside it is.
        "runtime_identity": runtime.identity(),
        "spec_file": PurePath(spec_file).as_posix(),
        "spec_hash": spec_hash(spec),
        "script_placeholder": stamp.PLACEHOLDER,
        "flags": list(flags),
        # An export is swapped into place in one step (ctypes: renameat2).
        "imports": {
            "stdlib": [
                f"import {name}"
                for name in sorted(
                    [
                        *STDLIB,
                        *(["ctypes"] if spec.export.saved_model else []),
                        # MLflow's own process (RunDirectory.start_tracking)
                        *(["subprocess"] if spec.logging.mlflow else []),
                    ]
                )
            ]
        },
        "output_dir": spec.output_dir or f"runs/{spec.name}",
        "setup": fingerprint.setup_entries(spec, "BATCH_SIZE"),
        "networks": networks,
        "network_args": ", ".join(f"{name}={name}" for name in networks),
        # A schedule inline (the supervised scripts name it `learning_rate`, built with
        # the other schedules; an RL script has no such section).
        "optimizer_expr": optimizer_expression(spec, inline_schedule=True),
        # SAC's and TD3's critics (and SAC's alpha): their own optimizer, or one like the
        # policy's.
        "critic_optimizer_expr": optimizer_expression(
            spec, getattr(way, "critic_optimizer", None) or spec.optimizer, inline_schedule=True
        ),
        # What the shared sections ask of a script that learns from data.
        "monitors": {},
        "readers": ["evaluate", "replay"] if spec.checkpoint else [],
        # `replay --step N`: update N trained again from the checkpoint before it.
        "replayable": bool(spec.checkpoint),
        "overfittable": False,
        # What replay reports of an update: the networks it trains, and their optimizers.
        "replayed_networks": [n for n in networks if n != "target_network"],
        "optimizers": {
            "sac": ["optimizer", "critic_optimizer", "alpha_optimizer"],
            "td3": ["optimizer", "critic_optimizer"],
        }.get(way.kind, ["optimizer"]),
        "evaluable": False,
        "has_validation": False,
        "hub": None,
        "traced_preprocess": False,
        "other_data": False,
        "preemptible": True,
        "gan": False,
        "net_has": net_has,
        "model_augmentation": False,
        "precision": "float32",
        "graph_build": graph_build.get("model", []),
        "value_graph_build": graph_build.get("value", []),
        # A block of the policy's and the value network's alike (validated) is written once.
        "graph_blocks": list(
            {
                block.name: graph.block_function(net, block)
                for _, net in graphs.values()
                for block in net.blocks
            }.values()
        ),
        "teacher_blocks": [],
        "custom_classes": [],
        "position_embedding": False,
        "teacher_build": None,
        "prediction": None,
        "csv_columns": [],
        "mlflow_params": tracking.mlflow_params(spec, flags) if spec.logging.mlflow else None,
    }


def critics(way: Any) -> list[str]:
    """The names of SAC's or TD3's critics in the script."""
    return ["critic_1", "critic_2"] if way.critics == 2 else ["critic"]
