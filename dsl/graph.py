"""Graph models: the Keras functional API as data. Named inputs (each with its shape and dtype),
nodes that apply a layer, a shared layer or a block to named tensors, blocks written once and
called from several nodes (or repeated with other arguments), and one output or several.

    Graph(
        inputs={"image": Input(shape=(32, 32, 3))},
        blocks=[Block(name="residual", params={"filters": 16}, nodes=[...], output="out")],
        nodes=[
            Node(name="stem", layer=Conv2D(16, 3, padding="same"), inputs="image"),
            Node(name="stages", block="residual", inputs="stem",
                 over={"filters": [16, 32, 64]}),
            Node(name="pool", layer=GlobalAveragePooling2D(), inputs="stages"),
            Node(name="logits", layer=Dense(10), inputs="pool"),
        ],
        outputs="logits",
    )

renders as the Keras guide would write it: `stem = layers.Conv2D(16, 3, padding="same",
name="stem")(image)`, a `def residual(x, filters=16, name=None):` function, and a `for` loop
over the filters."""

from typing import Annotated, Any, Literal

from pydantic import Field, field_validator, model_validator

from . import conditions
from .base import Identifier, PositiveInt, StrictModel
from .layers import Layer, Scalar, Var

DTYPES = ("float32", "float16", "bfloat16", "float64", "int32", "int64", "uint8", "bool", "string")


class Input(StrictModel):
    """A named input of a graph model, `keras.Input(shape, dtype, name)`: one feature of the
    data, matched by name (a source with several features gives a dict of them)."""

    shape: tuple[PositiveInt | None, ...]
    """Shape of one example, without the batch dimension; None for a size that varies (e.g.
    `(None,)` for token sequences of any length)."""
    dtype: Literal[DTYPES] = "float32"  # type: ignore[valid-type]
    """Element type: float32 for numbers and images, int32/int64 for token or category ids,
    string for raw text."""


class Node(StrictModel):
    """One step of a graph: a layer (or a shared layer, or a block) applied to named tensors.
    Its name is the name of its output, which later nodes and `outputs` refer to; it is also the
    Keras layer's name (and the prefix of the names of a block's layers)."""

    name: Identifier
    """The node's output tensor, and the name of its layer in the Keras model."""
    inputs: Annotated[list[Identifier], Field(min_length=1)]
    """The tensors it takes, by name: graph inputs or other nodes (of the block, inside a
    block). A merge (Add, Concatenate, Multiply, ...) takes several; MultiHeadAttention takes
    query and value (and key), in that order."""
    layer: Layer | None = None
    """The layer this node applies."""
    shared: Identifier | None = None
    """Instead of `layer`: a layer of the graph's `shared` layers, whose weights are shared
    by every node that applies it."""
    block: Identifier | None = None
    """Instead of `layer`: a block of the graph's `blocks`, called on the inputs."""
    args: dict[Identifier, Scalar | Var] = {}
    """Arguments of the block call (its `params`); the others keep the block's defaults. Inside
    a block, `Var` passes one of its own parameters on."""
    over: dict[Identifier, list[Scalar]] = {}
    """Repeat the block, one call per value, each call on the previous one's output (a `for`
    loop in the script): e.g. `{"filters": [64, 128, 256], "strides": [1, 2, 2]}`."""
    times: PositiveInt | None = None
    """Repeat the block this many times with the same arguments, each call on the previous one's
    output (e.g. a Transformer's N encoder blocks)."""
    when: str | None = None
    """Inside a block: the node exists only in the calls whose arguments make this condition
    on the block's parameters true, e.g. `"strides != 1"` (an `if` in the block's function);
    in the other calls it passes its one input on, as a ResNet block's shortcut is the
    identity where the shapes already match. The block's parameters and constants, compared
    (`==`, `!=`, `<`, `<=`, `>`, `>=`, `in`, `not in`) and joined with `and`, `or`, `not`."""
    adapt: bool = False
    """The layer learns its state from the training data before training (`layer.adapt`):
    TextVectorization's vocabulary, Normalization's mean and variance, a lookup's vocabulary.
    It must take one of the model's inputs; the script adapts it on that input of every
    training example, of any source, as the training batches feed it (read, preprocessed:
    `data.rescale` applied) but in the listed order and not augmented, the same way on every
    run and every worker."""

    @field_validator("inputs", mode="before")
    @classmethod
    def _one_input_as_a_list(cls, value: Any) -> Any:
        return [value] if isinstance(value, str) else value

    @field_validator("when")
    @classmethod
    def _a_condition(cls, value: str | None) -> str | None:
        if value is not None:
            conditions.parse(value)  # raises, saying what does not fit the grammar
        return value

    def exists(self, params: dict[str, Any]) -> bool:
        """Whether the node is built in a block call with these arguments."""
        return self.when is None or conditions.holds(self.when, params)

    @model_validator(mode="after")
    def _one_thing_to_apply(self) -> "Node":
        given = [f for f in ("layer", "shared", "block") if getattr(self, f) is not None]
        if len(given) != 1:
            raise ValueError(
                f"node {self.name!r} sets {' and '.join(given) or 'none of layer, shared, block'}"
                "; set exactly one of layer (a layer to apply), shared (a shared layer's name) or "
                "block (a block's name)"
            )
        if self.block is None:
            for field in ("args", "over", "times"):
                if getattr(self, field):
                    raise ValueError(
                        f"node {self.name!r} sets {field}, which only a block call takes; "
                        "remove it or call a block"
                    )
        if self.over and self.times:
            raise ValueError(
                f"node {self.name!r} sets both over and times; over repeats once per value, "
                "times with the same arguments: keep one"
            )
        if self.over:
            lengths = {name: len(values) for name, values in self.over.items()}
            if len(set(lengths.values())) != 1 or 0 in lengths.values():
                raise ValueError(
                    f"node {self.name!r}: over needs the same, non-zero number of values for "
                    f"every argument; got {lengths}. Make the lists equally long"
                )
            both = sorted(set(self.over) & set(self.args))
            if both:
                raise ValueError(
                    f"node {self.name!r} gives {both[0]!r} in both args and over; keep it in one"
                )
        return self

    @property
    def repetitions(self) -> int:
        """How many times the block is called (1 for everything else)."""
        if self.over:
            return len(next(iter(self.over.values())))
        return self.times or 1


class Block(StrictModel):
    """A block of nodes written once, as a Python function of the script (`def
    residual_block(x, filters=64, strides=1, name=None)`), and called from nodes of the graph:
    a ResNet stage, a Transformer encoder block. Its layers are named after the calling node
    (`stage2_conv1`), as in `keras.applications`."""

    name: Identifier
    """Name of the function in the script."""
    doc: str = ""
    """Docstring of the function: what the block computes."""
    params: dict[Identifier, Scalar] = {}
    """Its parameters and their defaults; the block's layers refer to them with `Var`."""
    inputs: Annotated[list[Identifier], Field(min_length=1)] = ["x"]
    """Names of the tensors it takes (the function's first arguments)."""
    nodes: Annotated[list[Node], Field(min_length=1)]
    """Its nodes, on its inputs and on each other."""
    output: Identifier
    """The node (or input) whose tensor the block returns."""


class Graph(StrictModel):
    """A model built with the functional API from named nodes: several named inputs, merges,
    shared layers, blocks written once and called or repeated, and one output or several (one
    per task). Any topology without a cycle; the script builds it in an order where every node
    comes after its inputs."""

    kind: Literal["graph"] = "graph"
    inputs: Annotated[dict[Identifier, Input], Field(min_length=1)]
    """The model's inputs by name: the data's features of the same names feed them."""
    shared: dict[Identifier, Layer] = {}
    """Layers applied at several nodes (`Node(shared=...)`) with one set of weights."""
    blocks: list[Block] = []
    """Blocks of nodes that nodes call (`Node(block=...)`)."""
    nodes: Annotated[list[Node], Field(min_length=1)]
    """The steps of the model."""
    outputs: Identifier | dict[Identifier, Identifier]
    """The node whose tensor the model outputs; or, for a multi-task model, a dict from each
    task's name to its node (the model then outputs a dict)."""

    @model_validator(mode="after")
    def _wiring(self) -> "Graph":
        from .rules.graph import check_graph

        check_graph(self, "")
        return self

    @property
    def output_names(self) -> dict[str, str]:
        """Task name to node for several outputs; {} for one."""
        return dict(self.outputs) if isinstance(self.outputs, dict) else {}

    @property
    def heads(self) -> dict[str, str]:
        """The model's named outputs (task name to node), like a Functional model's heads."""
        return self.output_names

    def node_path(self, name: str) -> tuple[str, Any]:
        """(path, layer) of the node named `name`; the layer is None for a block call."""
        for i, node in enumerate(self.nodes):
            if node.name == name:
                layer = node.layer if node.layer is not None else self.shared.get(node.shared)
                return f"nodes[{i}]", layer
        return f"inputs.{name}", None

    def last_layer(self) -> tuple[str, Any]:
        """The path and layer of the node the model outputs (one output)."""
        return self.node_path(self.outputs if isinstance(self.outputs, str) else "")

    def head_outputs(self) -> list[tuple[str, str, Any]]:
        """(task name, path of its node, that node's layer) for every named output."""
        return [(task, *self.node_path(node)) for task, node in self.output_names.items()]

    def block(self, name: str) -> Block:
        return next(b for b in self.blocks if b.name == name)

    def ordered_nodes(self) -> list[Node]:
        from .rules.graph import topological

        return topological(self.nodes)

    def flat_items(self) -> list[tuple[str, Any]]:
        """Every layer of the graph with its path (shared layers, nodes, blocks' nodes)."""
        found: list[tuple[str, Any]] = [(f"shared.{n}", layer) for n, layer in self.shared.items()]
        found += [(f"nodes[{i}].layer", n.layer) for i, n in enumerate(self.nodes) if n.layer]
        for b, block in enumerate(self.blocks):
            found += [
                (f"blocks[{b}].nodes[{i}].layer", n.layer)
                for i, n in enumerate(block.nodes)
                if n.layer
            ]
        return found


__all__ = ["Block", "Graph", "Input", "Node", "Var"]
