"""What the generated vocabulary functions share: turning a call's arguments into the fields of
the spec model, without the arguments left at Keras' default."""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from .. import catalog
from ..base import Unvalidated


class _Required:
    """The default of a required argument in a vocabulary function's signature."""

    def __repr__(self) -> str:
        return "REQUIRED"


REQUIRED: Any = _Required()


def build(model: Any, kind: str, arguments: dict[str, Any]) -> Any:
    """`model(kind=kind, ...)` from a vocabulary function's `locals()`. A problem is reported
    under the Keras class's name (`Conv1D.filters: ...`), the name the spec file used (when
    the spec file's loader does not name it by its path in the spec)."""
    try:
        built = model(kind=kind, **given(model, kind, arguments))
    except ValidationError as error:
        raise _titled(error, model, kind) from None
    if isinstance(built, Unvalidated):
        built.error = _titled(built.error, model, kind)
    return built


def _titled(error: ValidationError, model: Any, kind: str) -> ValidationError:
    entry = catalog.lookup(model.section, kind)
    title = entry.class_name if entry is not None else model.__name__
    details = [
        {"type": e["type"], "loc": e["loc"], "input": e["input"], "ctx": e.get("ctx", {})}
        for e in error.errors()
    ]
    return ValidationError.from_exception_data(title, details)  # type: ignore[arg-type]


def given(model: Any, kind: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """The fields for `model(kind=kind, ...)` from a vocabulary function's `locals()`: the
    arguments that differ from Keras' defaults, and any extra keyword (checked by the model,
    which suggests the closest argument for a typo)."""
    arguments = dict(arguments)
    extra = arguments.pop("kwargs", {})
    entry = catalog.lookup(model.section, kind)
    fields: dict[str, Any] = {}
    for name, value in arguments.items():
        arg = entry.args.get(name) if entry is not None else None
        if value is REQUIRED or (name == "name" and value is None):
            continue  # not given (every function takes name=None: Keras names it)
        if arg is not None and catalog.is_default(arg, value):
            continue
        fields[name] = value
    return {**fields, **extra}
