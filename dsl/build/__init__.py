"""`loopgen validate --build`: the spec's model built by Keras, layer by layer, in a subprocess.

The render-time shape rules know the common layers; Keras knows them all. This turns the model
of a spec into a plan, a list of steps (make this layer, call it on these tensors), each
tagged with its path in the spec (`model.nodes[3]`, `model.blocks[0].nodes[2] (called by
model.nodes[1], repetition 2)`, `custom_layers[0].layers[1]`). runner.py carries the plan out
with Keras in a fresh process (rendering never imports TensorFlow) and reports the first error
at the path of the step that raised it.

The plan follows the spec, not the script: repeats unrolled, blocks expanded per call, custom
layer classes expanded into their sublayers, as the render-time shape check does."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from typing import Any

from ..base import Var
from ..layers import L1, L1L2, L2, Backbone, Custom, KerasLayer, PositionEmbedding
from ..shapes import block_calls


def plan(spec: Any) -> dict[str, Any]:
    """The steps that build `spec`'s model (a GAN: both networks, one after the other)."""
    planner = _Planner(spec)
    if spec.gan is not None:
        for name, network in spec.gan.networks().items():
            planner.chain(network, f"training.{name}", prefix=f"{name}_")
    elif spec.model.kind == "graph":
        planner.graph(spec.model)
    elif spec.model.kind not in ("import", "keras_hub"):
        planner.chain(spec.model, "model")
    if spec.training.kind == "vae":  # and its encoder
        planner.chain(spec.training.encoder, "training.encoder", prefix="encoder_")
    if spec.acts and spec.training.kind in ("sac", "td3"):  # and its critic
        planner.chain(spec.training.critic, "training.critic", prefix="critic_")
    elif spec.acts and spec.training.kind != "dqn":  # and its value network
        if spec.training.value.kind == "graph":  # of a Dict observation's parts
            planner.graph(spec.training.value, "training.value", prefix="value_")
        else:
            planner.chain(spec.training.value, "training.value", prefix="value_")
    return {"steps": planner.steps, "models": planner.models}


class _Planner:
    def __init__(self, spec: Any) -> None:
        self.spec = spec
        self.classes = {c.name: c for c in spec.custom_layers}
        self.steps: list[dict[str, Any]] = []
        self.models: list[dict[str, Any]] = []
        self.count = 0

    def tensor(self) -> str:
        self.count += 1
        return f"t{self.count}"

    def input(self, path: str, shape: Any, dtype: str = "float32") -> str:
        name = self.tensor()
        self.steps.append({"path": path, "input": {"shape": list(shape), "dtype": dtype},
                           "out": name})  # fmt: skip
        return name

    def layer(self, path: str, layer: Any, inputs: list[str], env: dict[str, Any],
              style: str | None = None) -> str:  # fmt: skip
        if isinstance(layer, Custom):
            cls = self.classes[layer.cls]
            params = {**cls.params, **{k: _value(v, env) for k, v in layer.args.items()}}
            tensor = inputs[0]
            for j, sublayer in enumerate(cls.layers):
                where = f"{path} ({cls.name}.layers[{j}])"
                tensor = self.layer(where, sublayer, [tensor], params)
            return tensor
        out = self.tensor()
        step = {"path": path, "layer": _layer(layer, env), "in": inputs, "out": out}
        if style is not None:
            step["style"] = style
        self.steps.append(step)
        return out

    def chain(self, net: Any, root: str, prefix: str = "") -> None:
        first = self.input(f"{root}.input_shape", net.input_shape)
        tensor = first
        if root == "model" and getattr(self.spec.data, "augmentation", None):
            for i, layer in enumerate(self.spec.data.augmentation):
                tensor = self.layer(f"data.augmentation[{i}]", layer, [tensor], {})
        skips: list[str] = []
        tensor = self.items(net.layers, f"{root}.layers", tensor, {}, skips)
        outputs = [tensor]
        for name, items in getattr(net, "heads", {}).items():
            outputs.append(self.items(items, f"{root}.heads.{name}", tensor, {}, []))
        self.models.append({"inputs": [first], "outputs": outputs[1:] or outputs,
                            "name": prefix + "model"})  # fmt: skip

    def items(self, items: list[Any], path: str, tensor: str, env: dict, skips: list) -> str:
        for i, item in enumerate(items):
            here = f"{path}[{i}]"
            if item.kind == "repeat":
                for values in zip(*item.over.values(), strict=True):
                    bound = {**env, **dict(zip(item.over, values, strict=True))}
                    tensor = self.items(item.layers, f"{here}.layers", tensor, bound, skips)
            elif item.kind == "save_skip":
                skips.append(tensor)
            elif item.kind == "concatenate":
                tensor = self.layer(here, item, [tensor, skips.pop()], env, style="list")
            else:
                tensor = self.layer(here, item, [tensor], env)
        return tensor

    def graph(self, graph: Any, root: str = "model", prefix: str = "") -> None:
        from ..rules.graph import topological

        tensors = {}
        for name, given in graph.inputs.items():
            tensors[name] = self.input(f"{root}.inputs.{name}", given.shape, given.dtype)
        inputs = dict(tensors)
        augmentation = getattr(self.spec.data, "augmentation", None) if root == "model" else None
        if augmentation and len(graph.inputs) == 1:
            name = next(iter(graph.inputs))
            for i, layer in enumerate(self.spec.data.augmentation):
                tensors[name] = self.layer(f"data.augmentation[{i}]", layer, [tensors[name]], {})
        for name, layer in graph.shared.items():
            self.steps.append({"path": f"{root}.shared.{name}", "shared": prefix + name,
                               "layer": _layer(layer, {})})  # fmt: skip
        index = {id(n): i for i, n in enumerate(graph.nodes)}
        for node in topological(graph.nodes):
            here = f"{root}.nodes[{index[id(node)]}]"
            tensors[node.name] = self.node(graph, node, here, tensors, {}, prefix)
        outputs = graph.output_names or {"output": graph.outputs}
        self.models.append({
            "inputs": list(inputs.values()),
            "outputs": [tensors[n] for n in outputs.values()],
            "name": prefix + "model",
        })  # fmt: skip

    def node(self, graph: Any, node: Any, here: str, tensors: dict, env: dict,
             prefix: str = "") -> str:  # fmt: skip
        """`prefix` keeps two graphs' shared layers apart in the runner."""
        inputs = [tensors[name] for name in node.inputs]
        if node.shared is not None:
            out = self.tensor()
            self.steps.append({"path": here, "use": prefix + node.shared,
                               "in": inputs, "out": out,
                               "style": _style(graph.shared[node.shared])})  # fmt: skip
            return out
        if node.layer is not None:
            return self.layer(here, node.layer, inputs, env, style=_style(node.layer))
        block = graph.block(node.block)
        args = {**block.params, **{k: _value(v, env) for k, v in node.args.items()}}
        tensor = inputs
        for bound, steps in block_calls(graph, node, here, args):
            local = dict(zip(block.inputs, tensor, strict=True))
            for inner, where in steps:
                if inner.exists(bound):
                    local[inner.name] = self.node(graph, inner, where, local, bound, prefix)
                else:  # this call leaves the node out: its name is its input
                    local[inner.name] = local[inner.inputs[0]]
            tensor = [local[block.output]]
        return tensor[0]


def _style(layer: Any) -> str:
    if isinstance(layer, KerasLayer):
        return layer.entry.call.get("inputs", "single")
    return "single"


def _value(value: Any, env: dict[str, Any]) -> Any:
    if isinstance(value, Var):
        return env.get(value.var, value.var)
    if isinstance(value, tuple | list):
        return [_value(v, env) for v in value]
    return value


def _layer(layer: Any, env: dict[str, Any]) -> dict[str, Any]:
    """A layer as data the runner makes it from: its class and its arguments."""
    if isinstance(layer, Backbone):
        return {"application": layer.keras_class, "weights": None, "pooling": layer.pooling,
                "args": dict(layer.args), "preprocess": layer.entry.get("preprocess_input")
                if layer.preprocess else None}  # fmt: skip
    if isinstance(layer, PositionEmbedding):
        return {"position_embedding": layer.sequence_length}
    args = {}
    for name, value in layer.given().items():
        args[name] = _argument(value, env)
    return {"class": layer.keras_class, "args": args}


def _argument(value: Any, env: dict[str, Any]) -> Any:
    if isinstance(value, KerasLayer):
        return {"__layer__": _layer(value, env)}
    if isinstance(value, L1):
        return {"__regularizer__": {"class_name": "L1", "config": {"l1": value.l1}}}
    if isinstance(value, L2):
        return {"__regularizer__": {"class_name": "L2", "config": {"l2": value.l2}}}
    if isinstance(value, L1L2):
        return {"__regularizer__": {"class_name": "L1L2",
                                    "config": {"l1": value.l1, "l2": value.l2}}}  # fmt: skip
    return _value(value, env)


def build(spec: Any, timeout: float = 600) -> dict[str, Any]:
    """Runs the plan of `spec` with Keras in a subprocess; returns the runner's report:
    `{"ok": True, ...}` or `{"path": ..., "error": ...}`."""
    return run_plans([plan(spec)], timeout)[0]


def run_plans(plans: list[dict[str, Any]], timeout: float = 1800) -> list[dict[str, Any]]:
    """Runs several plans in one subprocess (importing TensorFlow once)."""
    with tempfile.TemporaryDirectory(prefix="loopgen-build-") as folder:
        path = os.path.join(folder, "plans.json")
        with open(path, "w") as file:
            json.dump(plans, file)
        env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3", "CUDA_VISIBLE_DEVICES": ""}
        proc = subprocess.run(
            [sys.executable, "-m", "loopgen.dsl.build.runner", path],
            capture_output=True, text=True, timeout=timeout, env=env,
        )  # fmt: skip
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    if proc.returncode != 0 or not lines:
        detail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["no output"]
        raise RuntimeError(f"the Keras build failed to run: {detail[0]}")
    return json.loads(lines[-1])["reports"]
