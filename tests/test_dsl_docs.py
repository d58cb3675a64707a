"""Every spec field is documented: the docstrings are the reference docs and the JSON schema."""

from __future__ import annotations

import typing

from loopgen.dsl import Spec
from pydantic import BaseModel


def reachable_models(root: type[BaseModel]) -> set[type[BaseModel]]:
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


def _models_in(annotation) -> list[type[BaseModel]]:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    return [m for arg in typing.get_args(annotation) for m in _models_in(arg)]


def test_every_field_of_every_spec_model_has_a_description():
    models = reachable_models(Spec)
    assert len(models) > 40  # layers, sources, losses, optimizers, schedules, metrics, ...
    undocumented = [
        f"{model.__name__}.{name}"
        for model in models
        for name, field in model.model_fields.items()
        if not (field.description or "").strip()
    ]
    assert undocumented == []
    assert all((model.__doc__ or "").strip() for model in models)


def test_json_schema_carries_the_descriptions():
    schema = Spec.model_json_schema()
    for definition in schema["$defs"].values():
        for name, prop in definition.get("properties", {}).items():
            assert prop.get("description"), (definition["title"], name)
