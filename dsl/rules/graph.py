"""Rules of a graph model's wiring: names, references, cycles, unused tensors, how many inputs
each layer or block takes, and the arguments of block calls. Each names the nodes involved."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .. import catalog, conditions
from ..base import MODULE_NAMES, RESERVED_NAMES
from ..layers import KerasLayer, referenced_vars

if TYPE_CHECKING:
    from ..graph import Block, Graph, Node

GRAPH_NAMES = RESERVED_NAMES | {"name", "outputs", "i"}
"""Names a node may not take: they are variables of the script (a node's name is one too)."""


def check_graph(graph: Graph, root: str) -> None:
    """`root` prefixes the paths in messages ("" inside the Graph's own validator, whose errors
    pydantic places at the graph's path)."""
    root = f"{root}." if root else ""
    check_block_names(graph)
    for name in graph.inputs:
        if name in GRAPH_NAMES:
            raise ValueError(
                f"{root}inputs[{name!r}] would shadow a name the generated script uses (its "
                "inputs are variables of build_model); rename the input and what feeds it"
            )
    check_names(graph.nodes, [*graph.inputs], f"{root}nodes", what="the graph's inputs")
    shared_clash = sorted(set(graph.shared) & ({n.name for n in graph.nodes} | set(graph.inputs)))
    if shared_clash:
        raise ValueError(
            f"shared.{shared_clash[0]}: a shared layer has the name of an input or node; the "
            "script names both, so rename one"
        )
    for b, block in enumerate(graph.blocks):
        path = f"{root}blocks[{b}]"
        check_names(block.nodes, block.inputs, f"{path}.nodes", what=f"{block.name}'s inputs")
        check_references(graph, block.nodes, block.inputs, f"{path}.nodes", block)
        check_cycles(block.nodes, f"{path}.nodes")
        check_used(block.nodes, block.inputs, [block.output], f"{path}.nodes", f"{path}.inputs")
        check_block_vars(block, path)
        check_conditions(block, path)
    check_no_conditions(graph, root)
    check_references(graph, graph.nodes, [*graph.inputs], f"{root}nodes", None)
    check_python_names(graph, root)
    outputs = list(graph.output_names.values()) or [graph.outputs]
    known = {n.name for n in graph.nodes} | set(graph.inputs)
    for output in outputs:
        if output not in known:
            raise ValueError(
                f"{root}outputs names {output!r}, which is not a node" + _suggestion(output, known)
            )
    check_cycles(graph.nodes, f"{root}nodes")
    check_used(graph.nodes, [*graph.inputs], outputs, f"{root}nodes", f"{root}inputs")
    check_block_recursion(graph, root)
    check_adapt(graph, root)


def check_python_names(graph: Graph, root: str) -> None:
    """Nodes, blocks, shared layers and loop variables are names of one Python scope: none may
    hide another, and a node's layer takes the node's name (not one of its own)."""
    functions = {b.name: f"blocks[{i}]" for i, b in enumerate(graph.blocks)}
    scopes = [(f"{root}nodes", graph.nodes, graph)]
    scopes += [
        (f"{root}blocks[{b}].nodes", block.nodes, block) for b, block in enumerate(graph.blocks)
    ]
    for path, nodes, scope in scopes:
        for i, node in enumerate(nodes):
            here = f"{path}[{i}]"
            if node.name in functions:
                raise ValueError(
                    f"{here}.name={node.name!r} is also the name of {functions[node.name]}, the "
                    "block's function in the script; rename the node or the block"
                )
            layer = node.layer
            if layer is not None and getattr(layer, "name", None) is not None:
                raise ValueError(
                    f"{here}.layer.name={layer.name!r}: a node's layer takes the node's name "
                    f"({node.name!r}); remove layer.name (rename the node instead)"
                )
            for variable in node.over:
                taken = {n.name for n in nodes} | set(getattr(scope, "inputs", []))
                if variable in taken:
                    raise ValueError(
                        f"{here}.over loops over {variable!r}, which is also a node or input "
                        "of the same scope; the loop would overwrite it. Rename the node"
                    )
    for path, layer in [(f"{root}shared.{n}", x) for n, x in graph.shared.items()]:
        if getattr(layer, "name", None) is not None:
            raise ValueError(
                f"{path}.name is set: a shared layer takes its key as its name; remove it"
            )


ADAPTABLE = frozenset(
    {"text_vectorization", "normalization", "string_lookup", "integer_lookup", "discretization"}
)
"""Layers with an `adapt` method: they learn a vocabulary or statistics from data."""


def check_adapt(graph: Graph, root: str) -> None:
    for b, block in enumerate(graph.blocks):
        for i, node in enumerate(block.nodes):
            if node.adapt:
                raise ValueError(
                    f"{root}blocks[{b}].nodes[{i}].adapt: a block's layers cannot be adapted "
                    "(they are made once per call); adapt a node on a model input instead"
                )
    for i, node in enumerate(graph.nodes):
        if not node.adapt:
            continue
        kind = getattr(node.layer, "kind", None)
        if kind not in ADAPTABLE:
            raise ValueError(
                f"{root}nodes[{i}].adapt: {getattr(node.layer, 'keras_class', 'this node')} "
                f"learns nothing from data; adapt is for {sorted(ADAPTABLE)}"
            )
        if node.inputs[0] not in graph.inputs:
            raise ValueError(
                f"{root}nodes[{i}].adapt: it takes {node.inputs[0]!r}, not one of the model's "
                "inputs; an adapted layer learns from an input feature of the training data"
            )


def check_block_names(graph: Graph) -> None:
    names = [b.name for b in graph.blocks]
    for b, name in enumerate(names):
        if names.count(name) > 1:
            raise ValueError(f"blocks[{b}].name={name!r} is used by two blocks; rename one")
        if name in RESERVED_NAMES | MODULE_NAMES:
            raise ValueError(
                f"blocks[{b}].name={name!r} would shadow a name the generated script uses; "
                "rename the block"
            )


def check_names(nodes: list[Node], inputs: list[str], path: str, what: str) -> None:
    """Two nodes with one name, a node named like an input, a name the script uses."""
    seen: dict[str, str] = {name: what for name in inputs}
    for i, node in enumerate(nodes):
        here = f"{path}[{i}]"
        if node.name in GRAPH_NAMES:
            raise ValueError(
                f"{here}.name={node.name!r} would shadow a name the generated script uses (its "
                "nodes are variables of build_model); rename the node"
            )
        if node.name in seen:
            raise ValueError(
                f"{here}.name={node.name!r} is taken by {seen[node.name]}: every node needs a "
                "name of its own (it names its output and its Keras layer); rename one"
            )
        seen[node.name] = here


def check_references(
    graph: Graph, nodes: list[Node], inputs: list[str], path: str, block: Block | None
) -> None:
    """Every input a node names exists; shared layers and blocks exist; layers, blocks and
    repeated blocks get as many inputs as they take."""
    known = {n.name for n in nodes} | set(inputs)
    for i, node in enumerate(nodes):
        here = f"{path}[{i}]"
        for name in node.inputs:
            if name not in known:
                scope = f"{block.name}'s inputs or nodes" if block else "an input or a node"
                raise ValueError(
                    f"{here} ({node.name!r}) takes {name!r}, which is not {scope}"
                    + _suggestion(name, known)
                )
        if node.shared is not None and node.shared not in graph.shared:
            raise ValueError(
                f"{here}.shared={node.shared!r} is not one of the graph's shared layers "
                f"({sorted(graph.shared) or 'none declared'}); declare it in shared"
                + _suggestion(node.shared, set(graph.shared))
            )
        if node.block is not None:
            check_block_call(graph, node, here)
        layer = node.layer if node.layer is not None else graph.shared.get(node.shared or "")
        if isinstance(layer, KerasLayer):
            check_arity(layer, node, here)
        elif layer is not None and len(node.inputs) != 1:
            raise ValueError(
                f"{here} ({node.name!r}) gives {len(node.inputs)} inputs to a custom layer, "
                "which takes one tensor"
            )
        missing = node.layer and sorted(
            referenced_vars(node.layer) - set(block.params if block else ())
        )
        if missing:
            where = f"a parameter of {block.name}" if block else "defined outside a block"
            raise ValueError(
                f"{here}.layer refers to Var {missing[0]!r}, which is not {where}; "
                + (f"add it to {block.name}'s params" if block else "use a constant, or a block")
            )


def check_arity(layer: KerasLayer, node: Node, here: str) -> None:
    call = layer.entry.call
    style = call.get("inputs", "single")
    count = len(node.inputs)
    if style == "single" and count != 1:
        raise ValueError(
            f"{here} ({node.name!r}) gives {count} inputs to {layer.keras_class}, which takes "
            "one tensor; merge them first (Add, Concatenate, ...) or give one input"
        )
    if style == "list" and count < 2:
        raise ValueError(
            f"{here} ({node.name!r}): {layer.keras_class} merges several tensors but gets "
            f"{count}; give it two or more inputs"
        )
    if style == "positional":
        names = list(call.get("args") or [])
        required = call.get("required", 2 if len(names) >= 2 else 1)
        if not required <= count <= max(len(names), required):
            shown = ", ".join(names) or "its tensors"
            raise ValueError(
                f"{here} ({node.name!r}) gives {count} inputs to {layer.keras_class}, which takes "
                f"{shown} (at least {required}); list them in that order"
            )


def check_block_call(graph: Graph, node: Node, here: str) -> None:
    names = [b.name for b in graph.blocks]
    if node.block not in names:
        raise ValueError(
            f"{here}.block={node.block!r} is not one of the graph's blocks "
            f"({names or 'none declared'})" + _suggestion(node.block or "", set(names))
        )
    block = graph.block(node.block)
    if len(node.inputs) != len(block.inputs):
        raise ValueError(
            f"{here} ({node.name!r}) gives {len(node.inputs)} inputs to block {block.name}, "
            f"which takes {len(block.inputs)} ({', '.join(block.inputs)})"
        )
    if node.repetitions > 1 and len(block.inputs) != 1:
        raise ValueError(
            f"{here} ({node.name!r}) repeats block {block.name}, whose {len(block.inputs)} "
            "inputs cannot be chained: a repeated block takes one tensor and gives one"
        )
    for field in ("args", "over"):
        for name in getattr(node, field):
            if name not in block.params:
                raise ValueError(
                    f"{here}.{field} gives {name!r}, which is not a parameter of block "
                    f"{block.name} (its params: {sorted(block.params) or 'none'})"
                    + _suggestion(name, set(block.params))
                )


def check_block_vars(block: Block, path: str) -> None:
    nodes = {n.name for n in block.nodes}
    for name in block.params:
        if name in nodes:
            raise ValueError(
                f"{path}.params: {name!r} is also a node of the block; rename one (both are "
                "names in the block's function)"
            )
        if name in GRAPH_NAMES or name in block.inputs:
            raise ValueError(
                f"{path}.params: {name!r} would shadow "
                + (
                    "one of the block's inputs"
                    if name in block.inputs
                    else "a name the script uses"
                )
                + "; rename the parameter"
            )
    names = {n.name for n in block.nodes} | set(block.inputs)
    if block.output not in names:
        raise ValueError(
            f"{path}.output={block.output!r} is not a node or input of block {block.name}"
            + _suggestion(block.output, names)
        )


def check_conditions(block: Block, path: str) -> None:
    """A conditional node reads only the block's parameters, and takes one input: the tensor
    its name stands for in the calls where it does not exist."""
    for i, node in enumerate(block.nodes):
        if node.when is None:
            continue
        here = f"{path}.nodes[{i}]"
        for name in conditions.names(node.when):
            if name not in block.params:
                raise ValueError(
                    f"{here}.when={node.when!r} reads {name!r}, which is not a parameter of "
                    f"block {block.name} (its params: {sorted(block.params) or 'none'})"
                    + _suggestion(name, set(block.params))
                )
        if len(node.inputs) != 1:
            raise ValueError(
                f"{here} ({node.name!r}) has a condition and {len(node.inputs)} inputs: where "
                "the condition is false the node passes its input on, so it takes exactly one"
            )


def check_no_conditions(graph: Graph, root: str) -> None:
    """The graph's own nodes have no parameters to test: each is built once."""
    for i, node in enumerate(graph.nodes):
        if node.when is not None:
            raise ValueError(
                f"{root}nodes[{i}].when is set, but a condition reads a block's parameters and "
                f"{node.name!r} is a node of the graph itself; put it in a block, or remove when"
            )


def check_block_recursion(graph: Graph, root: str) -> None:
    """A block may call other blocks, but never itself, directly or through others."""
    calls = {b.name: {n.block for n in b.nodes if n.block} for b in graph.blocks}

    def visit(name: str, chain: tuple[str, ...]) -> None:
        if name in chain:
            cycle = " -> ".join((*chain[chain.index(name) :], name))
            raise ValueError(f"{root}blocks: {cycle} calls itself; a block cannot contain itself")
        for callee in calls.get(name, ()):
            visit(callee, (*chain, name))

    for name in calls:
        visit(name, ())


def check_cycles(nodes: list[Node], path: str) -> None:
    """Nodes may come in any order, but no node may depend on itself."""
    index = {n.name: i for i, n in enumerate(nodes)}
    state: dict[str, int] = {}  # 1: on the current path, 2: done

    def visit(name: str, chain: list[str]) -> None:
        if state.get(name) == 2 or name not in index:
            return
        if state.get(name) == 1:
            cycle = [*chain[chain.index(name) :], name]
            where = ", ".join(f"{path}[{index[n]}]" for n in cycle[:-1])
            raise ValueError(
                f"nodes {' -> '.join(repr(n) for n in cycle)} form a cycle ({where}): each "
                "takes the next one's output; a model's nodes must not depend on themselves"
            )
        state[name] = 1
        for dependency in nodes[index[name]].inputs:
            visit(dependency, [*chain, name])
        state[name] = 2

    for node in nodes:
        visit(node.name, [])


def check_used(
    nodes: list[Node], inputs: list[str], outputs: list[str], path: str, inputs_path: str
) -> None:
    """Every input and node feeds another node or an output: an unused one is a mistake."""
    used = {name for n in nodes for name in n.inputs} | set(outputs)
    for name in inputs:
        if name not in used:
            raise ValueError(
                f"{inputs_path}: {name!r} is not used by any node; remove it or feed it to one"
            )
    for i, node in enumerate(nodes):
        if node.name not in used:
            raise ValueError(
                f"{path}[{i}] ({node.name!r}) is not used by any node nor an output; remove it, "
                "or use its output"
            )


def topological(nodes: list[Node]) -> list[Node]:
    """The nodes in an order where each comes after its inputs: the spec's order where it
    already is one (the usual case), else the earliest node whose inputs are ready first."""
    done: set[str] = set()
    names = {n.name for n in nodes}
    order: list[Node] = []
    left = list(nodes)
    while left:
        ready = next(
            (n for n in left if all(i in done or i not in names for i in n.inputs)), left[0]
        )
        order.append(ready)
        done.add(ready.name)
        left.remove(ready)
    return order


def _suggestion(word: str, options: set[str] | Any) -> str:
    hint = catalog.closest(word, set(options))
    return f"; did you mean {hint!r}?" if hint else ""
