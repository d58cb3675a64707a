"""The spec models' field docstrings as field descriptions, made when something asks for them:
the JSON schema (`loopgen schema`) and the documentation tests.

Pydantic reads attribute docstrings itself with `use_attribute_docstrings`, but it does so for
every model as the model is defined, parsing its source: a third of what `import loopgen.dsl`
cost, paid by every render, which never shows a description. Here the same docstrings are read
once, on demand.
"""

from __future__ import annotations

import ast
import inspect
import itertools
import textwrap
import typing
from functools import cache
from typing import Any

from pydantic import BaseModel


def reachable_models(root: type[BaseModel]) -> set[type[BaseModel]]:
    """`root` and every model its fields hold, at any depth."""
    seen: set[type[BaseModel]] = set()
    todo = [root]
    while todo:
        model = todo.pop()
        if model in seen:
            continue
        seen.add(model)
        for field in model.model_fields.values():
            todo.extend(_models_in(field.annotation))
    return seen


def _models_in(annotation: Any) -> list[type[BaseModel]]:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    return [m for arg in typing.get_args(annotation) for m in _models_in(arg)]


@cache
def attribute_docstrings(cls: type) -> dict[str, str]:
    """The string literal under each annotated attribute of the class body, by name (read once
    per class: base classes are asked for by every model derived from them)."""
    try:
        source = textwrap.dedent(inspect.getsource(cls))
    except (OSError, TypeError):  # defined where there is no source (an interpreter session)
        return {}
    body = ast.parse(source).body[0].body  # type: ignore[attr-defined]
    docs = {}
    for node, following in itertools.pairwise(body):
        if (
            isinstance(node, ast.AnnAssign)
            and isinstance(node.target, ast.Name)
            and isinstance(following, ast.Expr)
            and isinstance(following.value, ast.Constant)
            and isinstance(following.value.value, str)
        ):
            docs[node.target.id] = inspect.cleandoc(following.value.value)
    return docs


def subclasses(base: type[BaseModel]) -> set[type[BaseModel]]:
    """`base` and every model class derived from it, at any depth."""
    found = {base}
    for sub in base.__subclasses__():
        found |= subclasses(sub)
    return found


@cache
def document(base: type[BaseModel]) -> set[type[BaseModel]]:
    """Gives every field of `base` and its subclasses its description: its docstring
    (inherited ones included), and for the `kind` tag of a variant the same sentence for all,
    so that each variant's docstring stays about what it is. Returns those models."""
    models = subclasses(base)
    for model in models:
        document_fields(model)
    return models


def document_fields(model: type[BaseModel]) -> None:
    """Gives every field of `model` its docstring (inherited ones included) as description."""
    docs: dict[str, str] = {}
    for klass in reversed(model.__mro__):
        if issubclass(klass, BaseModel) and klass is not BaseModel:
            docs.update(attribute_docstrings(klass))
    for name, field in model.model_fields.items():
        if field.description:
            continue
        if name in docs:
            field.description = docs[name]
        elif name == "kind":
            field.description = f'Selects this variant: kind="{field.default}".'


def describe(schema: dict[str, Any], base: type[BaseModel]) -> dict[str, Any]:
    """A JSON schema of models derived from `base`, with the descriptions of `document` on
    every property that has none (pydantic built the schemas before they existed)."""
    by_title = {model.__name__: model for model in document(base)}
    for definition in [schema, *schema.get("$defs", {}).values()]:
        model = by_title.get(definition.get("title", ""))
        if model is None:
            continue
        for name, prop in definition.get("properties", {}).items():
            field = model.model_fields.get(name)
            if field is not None and field.description and "description" not in prop:
                prop["description"] = field.description
    return schema
