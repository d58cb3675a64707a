"""One error hierarchy: what the CLI prints to the user, and what is a bug of ours."""

from __future__ import annotations

import re
import types
import typing
from typing import Annotated, Any, Union, get_args, get_origin

from pydantic import BaseModel, Discriminator, Tag, ValidationError
from pydantic.fields import FieldInfo


class LoopgenError(Exception):
    """A problem the user can fix; the CLI prints the message and exits non-zero, no traceback."""


class SpecError(LoopgenError):
    """The spec file cannot be loaded or does not validate."""


class OutputError(LoopgenError):
    """The output cannot be written."""


class RuleError(ValueError):
    """A cross-field rule's complaint (dsl/rules/), `at` the field path of the part it is
    about (`model.layers[2]`): `validate` shows it at the line of the spec file that built
    that part, not at `spec = Spec(`."""

    def __init__(self, message: str, at: str) -> None:
        super().__init__(message)
        self.at = at


def format_validation_error(
    error: ValidationError,
    root: str = "spec",
    model: type[BaseModel] | None = None,
    noun: str | None = None,
) -> str:
    """Turns a pydantic error into `field.path: message` lines, one per problem, under `the
    spec has N errors:` (`noun`: what has them, by default the spec, or the sweep for a root of
    `sweep`).

    With the validated `model` class, the path is the one the user writes: pydantic's union
    labels (a discriminator's tag like `sequential`, or `constrained-float`, `tagged-union[...]`)
    are left out, and of the alternatives of a union only the one that fits the input is
    reported."""
    lines = validation_problems(error, root, model)
    return f"{counted(len(lines), noun or ('sweep' if root == 'sweep' else 'spec'))}:\n" + (
        "\n".join(f"  {line}" for line in lines)
    )


def counted(count: int, noun: str = "spec") -> str:
    """`the spec has 2 errors`."""
    return f"the {noun} has {count} error{'s' if count > 1 else ''}"


def validation_problems(
    error: ValidationError,
    root: str = "spec",
    model: type[BaseModel] | None = None,
    keys: bool = False,
) -> list[str]:
    """The problems of a pydantic error, one `field.path: message` each (see
    format_validation_error); with `keys`, a dict's keys in brackets (`sweep.space['a.b']`),
    where they are paths themselves."""
    return [line for _, line in located_problems(error, root, model, keys)]


def located_problems(
    error: ValidationError,
    root: str = "spec",
    model: type[BaseModel] | None = None,
    keys: bool = False,
) -> list[tuple[tuple[Any, ...], str]]:
    """The problems of validation_problems, each with its location in the data: the fields,
    list indices and dict keys below `root` (() for the whole, where the cross-field rules
    complain; a RuleError's `at` is in the error's `ctx`)."""
    problems = []  # (path, message, union group or None, is a mere type mismatch, parts)
    for item in error.errors(include_url=False):
        parts, union_at, owner = (
            _user_loc(model, item["loc"]) if model else (list(item["loc"]), None, None)
        )
        path = root
        for part in parts:
            if isinstance(part, int):
                path += f"[{part}]"
            else:
                path += f"[{str(part)!r}]" if keys and isinstance(part, _Key) else f".{part}"
        message = item["msg"].removeprefix("Value error, ")
        if item["type"] == "extra_forbidden":
            message = "unknown field; " + _unknown_field(model, owner, parts, item.get("input"))
        elif item["type"] == "finite_number":
            message = "NaN and ±inf are not allowed here; give a finite number"
        elif item["type"] == "missing":
            message = "required field is missing; add it"
        elif item["type"] == "union_tag_invalid":
            message = message + "; pick one of those kinds"
        elif item["type"] == "union_tag_not_found":
            key = item.get("ctx", {}).get("discriminator", "kind").strip("'")
            message = (
                f"{key!r} is missing, so it is unknown what this is; add {key}=... or build it "
                "with its class, e.g. Dense(...) instead of a dict"
            )
        rule = item.get("ctx", {}).get("error")
        if not item["loc"] and isinstance(rule, RuleError):
            parts = path_parts(rule.at)  # the part the rule is about
        group = None if union_at is None else tuple(item["loc"][:union_at])
        mismatch = (
            union_at is not None
            and len(item["loc"]) == union_at + 1
            and item["type"].endswith(("_type", "_parsing"))
        )
        problems.append((path, message, group, mismatch, tuple(parts)))

    lines: list[tuple[tuple[Any, ...], str]] = []
    merged: dict[tuple[Any, ...], int] = {}
    for path, message, group, mismatch, parts in problems:
        if group is not None and mismatch:
            # The input is not of this alternative's type: only worth saying when no
            # alternative got further, and then as one line listing what would fit.
            if any(g == group and not m for _, _, g, m, _ in problems):
                continue
            if group in merged:
                index = merged[group]
                text = lines[index][1] + ", or " + message.removeprefix("Input should be ")
                lines[index] = (lines[index][0], text)
                continue
            merged[group] = len(lines)
        # A message that names its own subject (`Conv1D has no argument ...`) stands alone.
        same = path == root and message.startswith((f"{root} ", f"{root}."))
        lines.append((parts, message if same else f"{path}: {message}"))
    return lines


def _unknown_field(root: Any, owner: Any, parts: list[Any], value: Any) -> str:
    """The fix of a field that `owner` (a model class, None when unknown) does not have: where
    the field lives, when it is one of Keras' (`owner.elsewhere`) or a section of the `root`
    model's that was put inside another (`Loop(early_stopping=...)`), else the field it was
    most likely meant to be (a misspelling, as of a Keras argument: catalog.closest)."""
    fix = "remove it or check its spelling"
    name = parts[-1] if parts else None
    if not (isinstance(name, str) and isinstance(owner, type) and issubclass(owner, BaseModel)):
        return fix
    moved = getattr(owner, "elsewhere", {}).get(name)
    if moved is not None:
        at = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in parts[:-1])
        number = isinstance(value, int | float) and not isinstance(value, bool)
        return moved.format(at=f"{at[1:]}." if at else "", value=value if number else "...")
    hint = _meant(owner, name)
    if hint is not None:
        return f"did you mean {hint!r}?"
    field = root.model_fields.get(name) if owner is not root else None
    if field is not None and _holds_models(field.annotation):
        top, here = root.__name__, owner.__name__
        return f"it is {top}.{name}, not a field of {here}: move it into {top}({name}=...)"
    return fix


def _meant(owner: Any, name: Any) -> str | None:
    """The field of `owner` (a model class) that the unknown field `name` was most likely
    meant to be, a misspelling's (None for a field it lists as living elsewhere)."""
    if not (isinstance(name, str) and isinstance(owner, type) and issubclass(owner, BaseModel)):
        return None
    if name in getattr(owner, "elsewhere", {}):
        return None
    from .dsl.catalog import closest

    return closest(name, list(owner.model_fields))


def _holds_models(tp: Any) -> bool:
    """Whether a field's values are (or hold) spec models: a section, not a name or a number."""
    tp, _ = _strip(tp, False)
    if isinstance(tp, type):
        return issubclass(tp, BaseModel)
    return any(_holds_models(arg) for arg in get_args(tp))


def unknown_fields(
    error: ValidationError, model: type[BaseModel]
) -> list[tuple[list[Any], str | None]] | None:
    """Where each problem of `error` is, when every one is a field (or a Keras argument) that
    does not exist, a misspelling: without them, or with each renamed to the field it was
    likely meant to be (the one its message suggests, else None), the data says all it meant.
    None when any problem is of another kind (a value that does not validate)."""
    found = []
    for item in error.errors(include_url=False):
        ctx = item.get("ctx", {})
        unknown = item["type"] == "extra_forbidden" or ctx.get("unknown")
        if not unknown or not item["loc"]:
            return None
        parts, _, owner = _user_loc(model, item["loc"])
        meant = ctx.get("meant") if ctx.get("unknown") else _meant(owner, parts[-1])
        found.append((parts, meant))
    return found


def path_parts(path: str) -> tuple[Any, ...]:
    """`model.layers[2].units` as ("model", "layers", 2, "units")."""
    return tuple(int(p) if p.isdigit() else p for p in re.findall(r"[^.\[\]]+", path))


class _Key(str):
    """A dict's key in an error's location (not a field's name)."""


def _user_loc(model: type[BaseModel], loc: tuple[Any, ...]) -> tuple[list[Any], int | None, Any]:
    """The parts of a pydantic error location that are fields, list indices or dict keys, the
    index in `loc` of the last smart-union label (None if the error passed through none), and
    the type that has the last part (the model of a field; None when unknown)."""
    kept: list[Any] = []
    union_at = None
    tp: Any = model
    owner: Any = None
    discriminated = False
    for index, part in enumerate(loc):
        tp, discriminated = _strip(tp, discriminated)
        members = _union_members(tp)
        if members is not None:
            if discriminated:  # `part` is the tag, e.g. "sequential"
                tp = next((m for m in members if _tag(m) == part), None)
            else:  # `part` is pydantic's label of one alternative, e.g. "constrained-int"
                tp, union_at = _union_member(members, part), index
            discriminated = False
            continue
        dict_key = get_origin(tp) is dict and isinstance(part, str)
        kept.append(_Key(part) if dict_key else part)
        owner = tp
        tp, discriminated = _child(tp, part)
    return kept, union_at, owner


def _strip(tp: Any, discriminated: bool) -> tuple[Any, bool]:
    """Unwraps Annotated and Optional, noting a discriminator on the way."""
    while True:
        if get_origin(tp) is Annotated:
            tp, *metadata = get_args(tp)
            discriminated |= any(
                (isinstance(m, FieldInfo) and m.discriminator) or isinstance(m, Discriminator)
                for m in metadata
            )
        elif _is_union(tp) and len(_non_none(tp)) == 1:
            tp = _non_none(tp)[0]
        else:
            return tp, discriminated


def _is_union(tp: Any) -> bool:
    return get_origin(tp) in (Union, types.UnionType)


def _non_none(tp: Any) -> list[Any]:
    return [a for a in get_args(tp) if a is not type(None)]


def _union_members(tp: Any) -> list[Any] | None:
    return _non_none(tp) if _is_union(tp) else None


def _tag(member: Any) -> Any:
    if get_origin(member) is Annotated:
        tags = [m.tag for m in get_args(member)[1:] if isinstance(m, Tag)]
        if tags:
            return tags[0]
    member, _ = _strip(member, False)
    if isinstance(member, type) and issubclass(member, BaseModel) and "kind" in member.model_fields:
        return member.model_fields["kind"].default
    return None


def _union_member(members: list[Any], label: str) -> Any:
    for member in members:
        bare, discriminated = _strip(member, False)
        if isinstance(bare, type) and issubclass(bare, BaseModel):
            if label == bare.__name__ or label.endswith(f" {bare.__name__}]"):
                return bare
        elif discriminated and label.startswith("tagged-union["):
            return member
        elif get_origin(bare) in (tuple, list):
            if label.startswith(f"{get_origin(bare).__name__}["):
                return bare
    return None  # a scalar alternative: nothing below it


def _child(tp: Any, part: Any) -> tuple[Any, bool]:
    """The type at `part` below `tp` (None when unknown), and whether it is discriminated."""
    if isinstance(tp, type) and issubclass(tp, BaseModel):
        field = tp.model_fields.get(part) if isinstance(part, str) else None
        if field is None:
            # An extra field (a Keras layer's arguments): the type of every extra value.
            extra = tp.__annotations__.get("__pydantic_extra__") if isinstance(part, str) else None
            if extra is not None:
                hints = typing.get_type_hints(tp, include_extras=True)
                return get_args(hints["__pydantic_extra__"])[1], False
            return None, False
        # A tagged union of models (field.discriminator), or of Annotated[..., Tag(...)]
        # alternatives chosen by a function (a Discriminator in its metadata).
        tagged = any(isinstance(m, Discriminator) for m in field.metadata)
        return field.annotation, bool(field.discriminator) or tagged
    origin, args = get_origin(tp), get_args(tp)
    if origin is list and args:
        return args[0], False
    if origin is dict and len(args) == 2:
        return args[1], False
    if origin is tuple and args:
        if len(args) == 2 and args[1] is Ellipsis:
            return args[0], False
        return (args[part], False) if isinstance(part, int) and part < len(args) else (None, False)
    return None, False
