"""A graph model as Keras functional-API code: `build_model()`'s statements and a function per
block, written the way the Keras guide and `keras.applications` write them. Every layer gets
the name of its node (a block's layers `<call>_<node>`), so `model.summary()` reads like the
spec and a Keras error names the node it came from."""

from __future__ import annotations

from itertools import groupby
from typing import Any

from ..dsl import conditions
from ..dsl.graph import Block, Graph, Node
from ..dsl.layers import Custom, KerasLayer
from ..dsl.rules.graph import topological
from . import code


def build_lines(
    graph: Graph,
    model_name: str,
    precision: str,
    augmentation: list[Any] = (),  # type: ignore[assignment]
    shapes: dict[str, Any] | None = None,
    named: bool = False,
) -> list[str]:
    """The body of `build_model()` (with `augmentation` layers on its one input first);
    `shapes` are the tensors' shapes, by name (a backbone is built for its input's). `named`:
    the model takes a dict of its inputs by name even when it has one (a Dict observation)."""
    lines = []
    for name, given in graph.inputs.items():
        dtype = f", dtype={code.literal(given.dtype)}" if given.dtype != "float32" else ""
        lines.append(
            f"{code.identifier(name)} = keras.Input(shape={code.literal(given.shape)}{dtype}, "
            f"name={code.literal(name)})"
        )
    renamed: dict[str, str] = {}
    if augmentation:
        source = next(iter(graph.inputs))
        lines.append(
            "# Augmentation (data.augmentation): random in training, nothing at inference."
        )
        tensor = source
        for layer in augmentation:
            lines.append(f"augmented = {code.layer(layer)}({tensor})")
            tensor = "augmented"
        renamed[source] = "augmented"
    if graph.shared:
        lines.append("# Layers applied at several nodes: one set of weights for all of them.")
        for name, layer in graph.shared.items():
            lines.append(f"{code.identifier(name)} = {layer_expression(layer, code.literal(name))}")
    lines += node_lines(
        graph, topological(graph.nodes), block=None, renamed=renamed, shapes=shapes or {}
    )
    outputs = graph.output_names
    if precision != "float32":
        lines.append("# Mixed precision: the outputs in float32, so the loss is computed in full")
        lines.append("# precision.")
        for name in outputs.values() if outputs else [graph.outputs]:
            lines.append(
                f'{name} = layers.Activation("linear", dtype="float32", '
                f"name={code.literal(name + '_float32')})({name})"
            )
    inputs = list(graph.inputs)
    given = (
        inputs[0]
        if len(inputs) == 1 and not named
        else "{" + ", ".join(f"{code.literal(n)}: {n}" for n in inputs) + "}"
    )
    if outputs:
        result = "{" + ", ".join(f"{code.literal(t)}: {n}" for t, n in outputs.items()) + "}"
    else:
        result = graph.outputs
    lines.append(
        f"return keras.Model(inputs={given}, outputs={result}, name={code.literal(model_name)})"
    )
    return lines


def block_function(graph: Graph, block: Block) -> list[str]:
    """The lines of the function of a block: its tensors, its parameters, then its layers'
    name prefix (keyword only, so that every call names its layers)."""
    params = [*block.inputs]
    params += [f"{p}={code.literal(v)}" for p, v in block.params.items()]
    params += ["*", "name"]
    doc = block.doc or (
        f"The {block.name} block; its layers are named after the calling node (`<name>_<node>`)."
    )
    body = node_lines(graph, topological(block.nodes), block=block)
    return [
        f"def {code.identifier(block.name)}({', '.join(params)}):",
        f"    {code.docstring(doc)}",
        *(f"    {line}" for line in body),
        f"    return {code.identifier(block.output)}",
    ]


def node_lines(
    graph: Graph,
    nodes: list[Node],
    block: Block | None,
    renamed: dict[str, str] | None = None,
    shapes: dict[str, Any] | None = None,
) -> list[str]:
    lines: list[str] = []
    # Consecutive nodes of a block with the same condition share one `if`.
    for when, run in groupby(nodes, key=lambda node: node.when):
        group = list(run)
        body = [
            line
            for node in group
            for line in _node_lines(graph, node, block, renamed or {}, shapes or {})
        ]
        if when is None or block is None:
            lines += body
        else:
            lines += _conditional(when, group, nodes, block, body)
    return lines


def _node_lines(
    graph: Graph, node: Node, block: Block | None, renamed: dict[str, str], shapes: dict
) -> list[str]:
    target = code.identifier(node.name)
    # Top-level layers take the node's name; a block's, the caller's name as a prefix.
    name = code.literal(node.name) if block is None else f'f"{{name}}_{node.name}"'
    call_inputs = _inputs(graph, node, renamed)
    if getattr(node.layer, "kind", None) == "backbone":
        return _backbone(graph, node, name, call_inputs, shapes.get(node.inputs[0]))
    if node.layer is not None:
        return [f"{target} = {layer_expression(node.layer, name)}({call_inputs})"]
    if node.shared is not None:
        return [f"{target} = {code.identifier(node.shared)}({call_inputs})"]
    return _block_call(node, name, call_inputs, block)


def _conditional(
    when: str, group: list[Node], nodes: list[Node], block: Block, body: list[str]
) -> list[str]:
    """`if <when>:` the group's nodes; `else:` the names used after the group stand for the
    tensor the absent nodes pass on, as keras.applications writes a ResNet shortcut
    (`shortcut = x`)."""
    members = {node.name for node in group}
    used_later = {name for n in nodes if n.name not in members for name in n.inputs}
    passed: dict[str, str] = {}
    for node in group:  # in build order: a node's input is resolved before the node
        passed[node.name] = passed.get(node.inputs[0], node.inputs[0])
    otherwise = [
        f"{code.identifier(node.name)} = {code.identifier(passed[node.name])}"
        for node in group
        if node.name in used_later or node.name == block.output
    ]
    return [
        f"if {conditions.code(when)}:",
        *(f"    {line}" for line in body),
        "else:",
        *(f"    {line}" for line in otherwise),
    ]


def _backbone(graph: Graph, node: Node, name: str, call_inputs: str, shape: Any) -> list[str]:
    """A keras.applications model without its classifier; frozen, its BatchNormalization
    layers normalize with their own statistics (a frozen BatchNormalization layer runs in
    inference mode)."""
    backbone = node.layer
    entry = backbone.entry
    variable = backbone_variable(graph, node)
    args: list[tuple[str | None, Any]] = [("include_top", False), ("weights", backbone.weights)]
    if shape is not None:
        args.append(("input_shape", tuple(shape)))
    if backbone.pooling is not None:
        args.append(("pooling", backbone.pooling))
    args += list(backbone.args.items())
    args.append(("name", code.Code(name)))
    state = "frozen" if backbone.trainable is False else "trainable"
    built = f"{variable} = keras.applications.{entry.class_name}({code.arguments(args)})"
    lines = [f"# {entry.class_name} without its classifier: a {state} feature extractor."]
    if backbone.weights == "imagenet":  # downloaded once into ~/.keras/models
        where = f"{code.literal(entry.class_name)}, node={code.literal(node.name)}"
        lines += [f"with downloading(*imagenet_weights({where})):", f"    {built}"]
    else:
        lines.append(built)
    if not backbone.trainable:
        lines.append(
            "# Frozen: its BatchNormalization layers normalize with their own statistics too."
        )
        lines.append(f"{variable}.trainable = False")
    tensor = call_inputs
    if backbone.preprocess and entry.get("preprocess_input"):
        lines.append(f"# The pixel scaling {entry.class_name} was trained with.")
        lines.append(
            f"{code.identifier(node.name)} = {entry.get('preprocess_input')}({call_inputs})"
        )
        tensor = code.identifier(node.name)
    lines.append(f"{code.identifier(node.name)} = {variable}({tensor})")
    return lines


def backbone_variable(graph: Graph, node: Node) -> str:
    """`backbone` when the graph has one, else `<node>_backbone`."""
    count = sum(getattr(n.layer, "kind", None) == "backbone" for n in graph.nodes)
    return "backbone" if count == 1 else f"{code.identifier(node.name)}_backbone"


def _inputs(graph: Graph, node: Node, renamed: dict[str, str]) -> str:
    names = [code.identifier(renamed.get(n, n)) for n in node.inputs]
    layer: Any = node.layer if node.layer is not None else graph.shared.get(node.shared or "")
    style = layer.entry.call.get("inputs", "single") if isinstance(layer, KerasLayer) else None
    if style == "list":
        return "[" + ", ".join(names) + "]"
    return ", ".join(names)


def _block_call(node: Node, name: str, call_inputs: str, block: Block | None) -> list[str]:
    target = code.identifier(node.name)
    function = code.identifier(node.block or "")
    args = "".join(f", {code.identifier(k)}={code.literal(v)}" for k, v in node.args.items())
    if node.repetitions == 1:
        return [f"{target} = {function}({call_inputs}{args}, name={name})"]
    # Repeated: each call on the previous one's output, named <node>_1, <node>_2, ...
    numbered = f'f"{node.name}_{{i}}"' if block is None else f'f"{{name}}_{node.name}_{{i}}"'
    lines = [f"{target} = {call_inputs}"]
    if node.over:
        loop_vars = [code.identifier(k) for k in node.over]
        values = [code.literal(tuple(v)) for v in node.over.values()]
        if len(loop_vars) == 1:
            header = f"for i, {loop_vars[0]} in enumerate({values[0]}, start=1):"
        else:
            header = (
                f"for i, ({', '.join(loop_vars)}) in enumerate(zip({', '.join(values)}), start=1):"
            )
        args += "".join(f", {v}={v}" for v in loop_vars)
    else:
        header = f"for i in range(1, {node.repetitions + 1}):"
    lines += [header, f"    {target} = {function}({target}{args}, name={numbered})"]
    return lines


def layer_expression(layer: KerasLayer | Custom, name: str) -> str:
    """`layers.Conv2D(16, 3, padding="same", name="stem")`, the name given as code."""
    args = [(k, v) for k, v in layer.arguments() if k != "name"]
    args.append(("name", code.Code(name)))
    if isinstance(layer, Custom):
        callee = code.identifier(layer.cls)
    elif layer.kind == "position_embedding":
        callee = "PositionEmbedding"  # the script's own class
    else:
        callee = f"layers.{layer.keras_class}"
    return code.call(callee, args)
