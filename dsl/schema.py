"""The JSON schema of specs, for specs written as data: editors complete and check a
`spec.json` that names it in "$schema", and `loopgen render spec.json` takes the same file."""

from __future__ import annotations

from typing import Any

from .base import StrictModel
from .catalog import schema as catalog_schema
from .docs import describe
from .spec import Spec

DIALECT = "https://json-schema.org/draft/2020-12/schema"


def spec_schema() -> dict[str, Any]:
    """The schema of `Spec` as JSON data, the field docstrings as descriptions."""
    schema = describe(Spec.model_json_schema(mode="validation"), StrictModel)
    schema = catalog_schema.expand(schema)
    # A spec file may name its schema; the loader drops the key before validating.
    schema["properties"] = {
        "$schema": {"type": "string", "description": "Where this file's JSON schema is."},
        **schema["properties"],
    }
    return {"$schema": DIALECT, **schema, "title": "loopgen spec"}
