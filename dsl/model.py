"""The `model` section: a Sequential stack, a functional chain with skips, or imported code."""

import re
from typing import Annotated, Any, Literal

from pydantic import Field, field_validator, model_validator

from .base import Identifier, PositiveInt, StrictModel, check_target
from .graph import Graph
from .hub import KerasHub
from .layers import Item, Repeat, referenced_vars


def _walk(items: list[Any], path: str, bound: frozenset[str] = frozenset()):
    """Yields (path, item, loop variables in scope) for every item, depth first."""
    for i, item in enumerate(items):
        here = f"{path}[{i}]"
        yield here, item, bound
        if isinstance(item, Repeat):
            yield from _walk(item.layers, f"{here}.layers", bound | set(item.over))


class _Stack(StrictModel):
    input_shape: tuple[PositiveInt, ...]
    """Shape of one example, without the batch dimension, e.g. (28, 28) or (32, 32, 3)."""
    layers: list[Item]
    """Layers applied in order; `Repeat` blocks become `for` loops in the script."""

    @model_validator(mode="after")
    def _check_vars_in_scope(self) -> "_Stack":
        if not self.layers:
            raise ValueError("layers is empty: a model needs at least one layer")
        for path, item, bound in _walk(self.layers, "layers"):
            if isinstance(item, Repeat):
                reused = set(item.over) & bound
                if reused:
                    raise ValueError(
                        f"{path}.over reuses the loop variable {sorted(reused)[0]!r} of an "
                        "enclosing Repeat, which would change it for the layers after the inner "
                        "loop; use another name"
                    )
                continue
            missing = referenced_vars(item) - bound
            if missing:
                raise ValueError(
                    f"{path} refers to Var {sorted(missing)[0]!r}, but no enclosing Repeat "
                    f"defines it (in scope: {sorted(bound) or 'none'}); add it to that "
                    "Repeat's `over`"
                )
        return self

    @model_validator(mode="after")
    def _unique_layer_names(self) -> "_Stack":
        seen: dict[str, str] = {}
        for path, item, _ in _walk(self.layers, "layers"):
            name = getattr(item, "name", None)
            if name is None:
                continue
            if name in seen or _inside_repeat(self.layers, path):
                where = f"{seen[name]} and {path}" if name in seen else f"{path} (in a Repeat)"
                raise ValueError(
                    f"layer name {name!r} is used more than once ({where}); Keras needs unique "
                    "layer names in a model: rename one, or drop name= inside a Repeat"
                )
            seen[name] = path
        return self

    def flat_items(self) -> list[tuple[str, Any]]:
        return [(path, item) for path, item, _ in _walk(self.layers, "layers")]

    def last_layer(self) -> tuple[str, Any]:
        """The layer that produces the model's output (the last one, also inside a repeat)."""
        path, item = f"layers[{len(self.layers) - 1}]", self.layers[-1]
        while isinstance(item, Repeat):
            path, item = f"{path}.layers[{len(item.layers) - 1}]", item.layers[-1]
        return path, item


class Sequential(_Stack):
    """A plain stack of layers: `keras.Sequential`."""

    kind: Literal["sequential"] = "sequential"

    @model_validator(mode="after")
    def _no_skips(self) -> "Sequential":
        for path, item in self.flat_items():
            if item.kind in ("save_skip", "concatenate"):
                raise ValueError(
                    f"{path}: skip connections need a functional model; "
                    'use Functional(...) (kind="functional") instead of Sequential'
                )
        return self


class Functional(_Stack):
    """A chain of layers built with the functional API, with skip connections (UNet), and
    optionally several output heads (a multi-task model)."""

    kind: Literal["functional"] = "functional"
    heads: dict[Identifier, list[Item]] = {}
    """Output heads, by name: each a list of layers applied to the output of `layers`, giving
    the model one output per head (a dict). Each needs a task of the same name in
    `training.tasks`. Empty: the model has the single output of `layers`."""

    @model_validator(mode="after")
    def _plain_heads(self) -> "Functional":
        for name, items in self.heads.items():
            if not items:
                raise ValueError(f"heads.{name} is empty: a head needs at least one layer")
            for path, item, _ in _walk(items, f"heads.{name}"):
                if item.kind in ("save_skip", "concatenate", "repeat"):
                    raise ValueError(
                        f"{path}: a head is a plain list of layers (no skips, no Repeat); move "
                        "it into `layers`, the part the heads share"
                    )
        return self

    def flat_items(self) -> list[tuple[str, Any]]:
        heads = [
            (path, item)
            for name, items in self.heads.items()
            for path, item, _ in _walk(items, f"heads.{name}")
        ]
        return [*super().flat_items(), *heads]

    def head_outputs(self) -> list[tuple[str, str, Any]]:
        """(head name, path of its last layer, that layer) for every head."""
        return [
            (name, f"heads.{name}[{len(items) - 1}]", items[-1])
            for name, items in self.heads.items()
        ]

    @model_validator(mode="after")
    def _skips_balance(self) -> "Functional":
        # Count pushes and pops per unrolled repetition: every Concatenate needs a saved skip.
        depth = 0

        def visit(items: list[Any], path: str) -> None:
            nonlocal depth
            for i, item in enumerate(items):
                if item.kind == "save_skip":
                    depth += 1
                elif item.kind == "concatenate":
                    if depth == 0:
                        raise ValueError(
                            f"{path}[{i}]: Concatenate has no saved skip to join; put a "
                            "SaveSkip() earlier in the encoder"
                        )
                    depth -= 1
                elif isinstance(item, Repeat):
                    for _ in range(item.times):
                        visit(item.layers, f"{path}[{i}].layers")

        visit(self.layers, "layers")
        if depth:
            raise ValueError(
                f"layers: {depth} SaveSkip() never joined by a Concatenate; remove them or add "
                "the matching Concatenate() in the decoder"
            )
        return self


def _inside_repeat(items: list[Any], path: str) -> bool:
    """Whether the item at `path` repeats (it sits in a Repeat of more than one pass)."""
    node: Any = None
    for index in re.findall(r"\[(\d+)\]", path)[:-1]:
        node = items[int(index)] if node is None else node.layers[int(index)]
        if isinstance(node, Repeat) and node.times > 1:
            return True
    return False


class Imported(StrictModel):
    """Escape hatch: a function of yours that builds the model, imported by the script.

    For models the DSL cannot express. The function takes the keyword arguments in `kwargs` and
    returns a `keras.Model`; when that model has no weights yet (a subclassed model), give
    `input_shape` and the script creates them."""

    kind: Literal["import"] = "import"
    target: str
    """`package.module:function`, importable where the script runs."""
    kwargs: dict[Identifier, int | float | str | bool | None] = {}
    """Keyword arguments passed to the function."""
    input_shape: tuple[PositiveInt, ...] | None = None
    """Shape of one example; when given, the script builds the model with it (needed when the
    function returns a model without weights yet, e.g. a subclassed `keras.Model`)."""

    @field_validator("target")
    @classmethod
    def _target_shape(cls, value: str) -> str:
        return check_target(value, "function")

    @property
    def module(self) -> str:
        return self.target.split(":")[0]

    @property
    def function(self) -> str:
        return self.target.split(":")[1]


Model = Annotated[
    Sequential | Functional | Graph | Imported | KerasHub, Field(discriminator="kind")
]
"""The network to train."""


OPAQUE = (Imported, KerasHub)
"""Models whose layers the spec does not see: your own code's, and KerasHub's."""
