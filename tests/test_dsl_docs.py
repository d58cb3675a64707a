"""Every spec field is documented: the docstrings are the reference docs and the JSON schema."""

from __future__ import annotations

from loopgen.dsl import Spec
from loopgen.dsl.base import StrictModel
from loopgen.dsl.docs import document, reachable_models
from loopgen.dsl.schema import spec_schema


def test_every_field_of_every_spec_model_has_a_description():
    document(StrictModel)
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
    schema = spec_schema()
    for definition in schema["$defs"].values():
        for name, prop in definition.get("properties", {}).items():
            assert prop.get("description"), (definition["title"], name)
