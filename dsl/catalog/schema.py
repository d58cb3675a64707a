"""The catalog as JSON schema: one definition per Keras class, with its arguments, their kinds
of value and their defaults, so that an editor completes and checks `{"kind": "conv1d",
"filters": 64, ...}` in a spec written as JSON as well as the spec language does."""

from __future__ import annotations

from typing import Any

from .. import catalog
from ..training import SET_BY_LOOPGEN

GENERIC = {
    "KerasLayer": "layers",
    "KerasLoss": "losses",
    "KerasMetric": "metrics",
    "KerasOptimizer": "optimizers",
}
"""The generic spec model of each catalog section."""


def expand(schema: dict[str, Any]) -> dict[str, Any]:
    """Replaces the generic models' definitions in a pydantic JSON schema by one definition
    per catalogued class (and keeps the generic model's own fields, e.g. a metric's name)."""
    defs = schema["$defs"]
    for model, section in GENERIC.items():
        if model not in defs:
            continue
        generic = defs[model]
        own = {k: v for k, v in generic.get("properties", {}).items() if k != "kind"}
        refs = []
        for name, raw in sorted(catalog.data()[section].items()):
            if raw.get("alias_of") or raw.get("excluded"):
                continue
            key = f"{section}.{name}"
            defs[key] = _class_schema(section, name, raw, own)
            refs.append({"$ref": f"#/$defs/{key}"})
        defs[model] = {"description": generic.get("description", ""), "oneOf": refs}
    return schema


def _class_schema(section: str, name: str, raw: dict, own: dict[str, Any]) -> dict[str, Any]:
    aliases = [
        (alias, entry["kind"])
        for alias, entry in catalog.data()[section].items()
        if entry.get("alias_of") == name
    ]
    kinds = [raw["kind"], name, *(k for _, k in aliases), *(a for a, _ in aliases)]
    properties: dict[str, Any] = {
        "kind": {
            "enum": kinds,
            "description": f"keras.{section}.{name}, by its snake_case name or its class name.",
        },
        **own,
    }
    required = ["kind"]
    for arg in catalog._arguments(section, name).values():
        if arg.name in properties or arg.name in SET_BY_LOOPGEN.get(section, {}):
            continue
        properties[arg.name] = {
            **_value_schema(arg),
            "description": f"`{arg.name}` of keras.{section}.{name}"
            + ("" if arg.required else f" (default {arg.default!r})"),
        }
        if arg.required:
            required.append(arg.name)
    if raw.get("base_kwargs"):
        properties.setdefault("dtype", {"type": ["string", "null"], "description": "dtype."})
        properties.setdefault(
            "trainable", {"type": "boolean", "description": "Whether the weights train."}
        )
    doc = (raw.get("doc") or "").strip()
    return {
        "type": "object",
        "description": f"keras.{section}.{name}" + (f": {doc}" if doc else ""),
        "properties": properties,
        "required": required,
        "additionalProperties": False,
    }


def _value_schema(arg: catalog.Argument) -> dict[str, Any]:
    options = [_kind_schema(kind, arg) for kind in arg.kinds]
    if any(not o for o in options):
        return {}
    options.append({"$ref": "#/$defs/Var"})
    return {"anyOf": options}


def _kind_schema(kind: str, arg: catalog.Argument) -> dict[str, Any]:
    named = {"activation": "activations", "constraint": "constraints", "dtype": "dtypes"}
    if kind == "int":
        return {"type": "integer"}
    if kind == "float":
        return {"type": "number"}
    if kind == "bool":
        return {"type": "boolean"}
    if kind == "none":
        return {"type": "null"}
    if kind == "str":
        return {"type": "string", **({"enum": list(arg.choices)} if arg.choices else {})}
    if kind == "int_tuple":
        return {"type": "array", "items": {"type": "integer"}}
    if kind == "float_tuple":
        return {"type": "array", "items": {"type": "number"}}
    if kind == "str_list":
        return {"type": "array", "items": {"type": "string"}}
    if kind in named:
        return {"enum": sorted(catalog.names(named[kind]))}
    if kind == "initializer":
        return {
            "anyOf": [
                {"enum": sorted(catalog.names("initializers"))},
                {
                    "type": "object",
                    "properties": {"class_name": {"type": "string"}, "config": {"type": "object"}},
                    "required": ["class_name", "config"],
                },
            ]
        }
    if kind == "regularizer":
        return {
            "anyOf": [
                {"$ref": "#/$defs/L1"},
                {"$ref": "#/$defs/L2"},
                {"$ref": "#/$defs/L1L2"},
                {"enum": sorted(catalog.names("regularizers"))},
            ]
        }
    if kind == "layer":
        return {"$ref": "#/$defs/KerasLayer"}
    if kind == "layer_list":
        return {"type": "array", "items": {"$ref": "#/$defs/KerasLayer"}}
    return {}
