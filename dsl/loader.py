"""Loads a spec: imports `spec.py` by path, takes the named object, applies `--set` overrides."""

from __future__ import annotations

import contextlib
import hashlib
import importlib.machinery
import importlib.util
import json
import re
import sys
import traceback
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from ..errors import (
    SpecError,
    counted,
    format_validation_error,
    located_problems,
    path_parts,
    unknown_fields,
)
from .base import Unvalidated, built_at, deferring_errors, plain
from .spec import Spec


class FileData(dict):
    """The data of an object a Python spec (or sweep) file built with arguments that do not
    validate: validated whole, its errors are named by their paths. `where` (file:line) and
    `line` point at the innermost such construction in the file."""

    where: str = ""
    line: str = ""
    origins: dict[tuple[Any, ...], tuple[str, str]] = {}
    """Each part the file built (a model, valid or not) by its path in the data: the file:line
    that built it and that line's text; () the Spec itself."""


def load_spec(
    path: Path,
    name: str = "spec",
    overrides: list[str] | None = None,
    variant: str | None = None,
) -> Spec:
    """Returns the validated spec defined in the file at `path`: with `distribute` replaced by
    the default strategy of kind `variant` when that is another kind, then overrides applied."""
    path = Path(path)
    with importable(path.parent):
        return _load(path, name, overrides, variant)


@contextlib.contextmanager
def importable(folder: Path) -> Iterator[None]:
    """The spec's folder on Python's path while it is loaded and validated, as `python
    spec.py` would have it: a spec may import a module of yours beside it, and a target
    (e.g. an environment's, which validation makes to read its spaces) may be one."""
    entry = str(folder.resolve())
    sys.path.insert(0, entry)
    try:
        yield
    finally:
        with contextlib.suppress(ValueError):  # the spec's own code may have removed it
            sys.path.remove(entry)


def _load(path: Path, name: str, overrides: list[str] | None, variant: str | None) -> Spec:
    obj = _read_data(path) if path.suffix == ".json" else _import_object(path, name)
    if isinstance(obj, Spec):
        data: Any = obj.model_dump(mode="python")
    elif isinstance(obj, dict):
        data = obj
    else:
        raise SpecError(
            f"{path}: {name!r} is an object of type {type(obj).__name__}, not a loopgen Spec; "
            f"bind it to Spec(...) from loopgen.dsl (or a dict of spec fields)"
        )
    _check_depth(data, path)
    steps = []
    if variant is not None and _strategy_kind(data) != variant:
        # Another strategy's settings (devices, ...) do not carry over: start from defaults.
        # Applied before the overrides, so `--set distribute.devices=...` can follow.
        data = {**data, "distribute": {"kind": variant}}
        steps.append(f"--variant {variant}")
    for override in overrides or []:
        data = apply_override(data, override)
        steps.append(f"--set {override}")
        _check_depth(data, path, steps)
    if isinstance(obj, FileData) and not steps:
        return _validate(data, path, steps, obj.where, obj.line, obj.origins)
    return _validate(data, path, steps)


MAX_DEPTH = 100
"""How deeply lists and dicts may nest in a spec's data. The examples nest 8 levels at most;
Python's parser, pydantic's validators and the renderer recurse into each level, and a value
nested thousands of levels deep would exhaust Python's stack (a RecursionError)."""


def _check_depth(data: Any, path: Path, steps: list[str] | None = None) -> None:
    """Refuses data nested more than MAX_DEPTH levels deep, naming the field it is in (the
    first 8 steps of its path). Walks the data with a stack of its own: it may be far deeper
    than Python can recurse."""
    todo: list[tuple[Any, tuple[str | int, ...]]] = [(data, ())]
    while todo:
        value, parts = todo.pop()
        if isinstance(value, dict):
            children: Any = value.items()
        elif isinstance(value, list | tuple):
            children = enumerate(value)
        else:
            continue
        if len(parts) >= MAX_DEPTH:
            where = f" after {', '.join(steps)}" if steps else ""
            field = "spec" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in parts[:8])
            raise SpecError(
                f"{path}{where}: {field}{'...' if len(parts) > 8 else ''}: lists and dicts "
                f"nested more than {MAX_DEPTH} levels deep; a spec needs a few levels (the "
                "examples at most 8): look for a value that wraps itself, e.g. in a loop"
            )
        todo.extend((child, (*parts, key)) for key, child in children)


def _strategy_kind(data: dict) -> str:
    strategy = data.get("distribute") or {}
    kind = strategy.get("kind") if isinstance(strategy, dict) else getattr(strategy, "kind", None)
    return kind or "single_device"


def _validate(
    data: Any,
    path: Path,
    steps: list[str],
    where: str = "",
    line: str = "",
    origins: dict[tuple[Any, ...], tuple[str, str]] | None = None,
) -> Spec:
    """The spec, or a SpecError naming each problem by its path (`where` the file and line,
    and `line` its text, of the construction that did not validate in a spec file). Fields that
    do not exist (misspelt) do not hide the cross-field rules: those are checked on the data
    with them renamed as suggested, or else without them (_rules_without), and what they find
    is reported with the rest. With the `origins` of a spec file's parts, each problem is
    shown at the line that built its part."""
    try:
        return Spec.model_validate(data)
    except ValidationError as error:
        problems = located_problems(error, model=Spec) + _rules_without(error, data)
    after = f" after {', '.join(steps)}" if steps else ""
    lines = [(_origin(parts, text, origins) if origins else None, text) for parts, text in problems]
    if len({at for at, _ in lines}) > 1:  # at lines of their own: each under its own
        shown = "".join(f"\n  {text}\n    {at[0]}: {at[1]}".rstrip() for at, text in lines)
        raise SpecError(f"{path}{after}: {counted(len(lines))}:{shown}") from None
    if lines[0][0] is not None:
        where, line = lines[0][0]
    shown = f"\n    {line}" if line else ""
    message = f"{counted(len(lines))}:\n" + "\n".join(f"  {text}" for _, text in lines)
    raise SpecError(f"{where or path}{after}: {message}{shown}") from None


def _rules_without(error: ValidationError, data: Any) -> list[tuple[tuple[Any, ...], str]]:
    """What the cross-field rules say of the data without the fields `error` finds unknown
    (pydantic checks them only once every field validates): first with each misspelt field
    renamed to the one its message suggests (`Conv2D(filter=16)` as `filters=16`, a required
    argument the rules cannot do without), then, if that does not validate but for the rules,
    with them left out. Nothing when `error` has a problem of another kind, whose value the
    rules would need."""
    unknown = unknown_fields(error, Spec)
    if not unknown:
        return []
    renamed = any(meant for _, meant in unknown)
    for rename in (True, False) if renamed else (False,):
        fixed = data
        for parts, meant in unknown:
            fixed = _without(fixed, parts, meant if rename else None)
            if fixed is None:
                break
        else:
            try:
                Spec.model_validate(fixed)
                return []
            except ValidationError as rules:
                if all(not item["loc"] for item in rules.errors(include_url=False)):
                    return located_problems(rules, model=Spec)
    return []


def _without(data: Any, parts: list[Any], meant: str | None = None) -> Any:
    """`data` without the field at `parts` (the containers on its way copied), its value under
    the name `meant` instead if given (and not given already); None when it is not there in
    plain dicts and lists."""
    if not parts:
        return None
    head, rest = parts[0], parts[1:]
    if isinstance(data, dict) and head in data:
        copy = dict(data)
        if rest:
            copy[head] = _without(data[head], rest, meant)
            if copy[head] is None:
                return None
        else:
            value = copy.pop(head)
            if meant is not None and meant not in copy:
                copy[meant] = value
        return copy
    if isinstance(data, list | tuple) and isinstance(head, int) and -len(data) <= head < len(data):
        child = _without(data[head], rest, meant)
        if child is None:
            return None
        items = list(data)
        items[head] = child
        return type(data)(items) if isinstance(data, tuple) else items
    return None


FIELD_PATH = re.compile(r"(?<![\w.'\"/])[a-z_]\w*(?:\.[a-z_]\w*|\[\d+\])+")
"""A field path in a rule's message: `model.layers[2]`, `data.batch_size`."""


def _origin(
    parts: tuple[Any, ...], text: str, origins: dict[tuple[Any, ...], tuple[str, str]]
) -> tuple[str, str] | None:
    """The file:line (and its text) of the innermost part the file built on the way to
    `parts`. A rule's problem (at the whole spec) that names no part of its own is shown at
    the first part its message names (its subject, `gradients.accumulate_steps=5 does not
    divide ...`) that the file built, else at the Spec."""
    candidates = [parts]
    if not parts:
        candidates = [path_parts(found) for found in FIELD_PATH.findall(text)] + [()]
    for candidate in candidates:
        for end in range(len(candidate), 0 if candidate else -1, -1):
            if candidate[:end] in origins:
                return origins[candidate[:end]]
    return None


def _origins(obj: Any, path: Path) -> dict[tuple[Any, ...], tuple[str, str]]:
    """The file:line and text of each part of a spec file's object that the file built, by
    its path in the object's data (see FileData.origins). Walks with a stack of its own: a
    spec may nest deeper than Python recurses (refused later, by its path)."""
    import linecache

    found: dict[tuple[Any, ...], tuple[str, str]] = {}
    todo: list[tuple[Any, tuple[Any, ...]]] = [(obj, ())]
    while todo:
        value, parts = todo.pop()
        if len(parts) > MAX_DEPTH:
            continue
        at: tuple[str, int] | None = None
        children: Any = ()
        if isinstance(value, Unvalidated):
            at, children = (value.filename, value.lineno), value.items()
        elif isinstance(value, BaseModel):
            at = built_at(value)
            names = [*type(value).model_fields, *(value.model_extra or {})]
            children = [(name, getattr(value, name)) for name in names]
        elif isinstance(value, dict):
            children = value.items()
        elif isinstance(value, list | tuple):
            children = enumerate(value)
        if at is not None:
            same = Path(at[0]).resolve() == path.resolve()
            text = linecache.getline(at[0], at[1]).strip()
            found[parts] = (f"{path if same else at[0]}:{at[1]}", text)
        todo.extend((child, (*parts, key)) for key, child in children)
    return found


def spec_hash(spec: Spec) -> str:
    """A short, stable fingerprint of the validated spec (after overrides): of the values it
    sets, so that a new optional field in a later loopgen changes no spec's hash."""
    canonical = json.dumps(_set_values(spec), sort_keys=True, default=str)
    return hashlib.sha256(canonical.encode()).hexdigest()[:16]


def _set_values(value: Any) -> Any:
    """A model's fields that differ from their defaults (and always its `kind`), recursively."""
    if isinstance(value, BaseModel):
        fields = type(value).model_fields
        found = {
            name: _set_values(getattr(value, name))
            for name, info in fields.items()
            if name == "kind" or getattr(value, name) != info.default
        }
        found.update({k: _set_values(v) for k, v in (value.model_extra or {}).items()})
        return found
    if isinstance(value, dict):
        return {str(k): _set_values(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_set_values(v) for v in value]
    return value


def _read_data(path: Path) -> Any:
    """A spec written as JSON data (see `loopgen schema`)."""
    if not path.is_file():
        raise SpecError(f"spec file not found: {path}")
    try:
        text = path.read_text(encoding="utf-8")
        data = json.loads(text)
    except json.JSONDecodeError as error:
        where = f"{path}:{error.lineno}:{error.colno}"
        raise SpecError(f"{where}: not valid JSON: {error.msg}") from None
    except (OSError, UnicodeDecodeError) as error:
        raise SpecError(f"{path}: cannot be read: {error}") from None
    except RecursionError:
        # Python's JSON reader recurses into each level: it gives up near a thousand.
        line, column = _too_deep(text)
        raise SpecError(
            f"{path}:{line}:{column}: lists and objects nested more than {MAX_DEPTH} levels "
            "deep; a spec needs a few levels (the examples at most 8): remove the extra "
            "brackets"
        ) from None
    if not isinstance(data, dict):
        kind = type(data).__name__
        raise SpecError(f"{path}: a JSON spec is an object of spec fields, not a {kind}")
    data.pop("$schema", None)  # the editor's pointer to `loopgen schema`, not a spec field
    return data


def _too_deep(text: str) -> tuple[int, int]:
    """Line and column (from 1) of the bracket that opens level MAX_DEPTH + 1 of a JSON text
    (of its end, if none does)."""
    depth, in_string, escaped = 0, False, False
    index = len(text)
    for i, char in enumerate(text):
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            if depth > MAX_DEPTH:
                index = i
                break
        elif char in "]}":
            depth -= 1
    line = text.count("\n", 0, index) + 1
    return line, index - (text.rfind("\n", 0, index) + 1) + 1


def _import_object(path: Path, name: str, model: type[BaseModel] = Spec) -> Any:
    """The object named `name` in the Python file at `path` (a `model`, e.g. a Spec or a
    Sweep, or what the file binds instead), the file's own errors as messages."""
    what = model.__name__.lower()
    if not path.is_file():
        raise SpecError(f"{what} file not found: {path}")
    if path.suffix != ".py":
        raise SpecError(
            f"{path}: a {what} file is a Python file ending in .py"
            + (", or JSON data ending in .json" if model is Spec else "")
        )
    module_name = f"_loopgen_spec_{uuid.uuid4().hex}"
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or not isinstance(spec.loader, importlib.machinery.SourceFileLoader):
        raise SpecError(f"{path}: cannot be imported as a Python module")
    module = importlib.util.module_from_spec(spec)
    # What `spec.loader.exec_module(module)` does, in two steps: compiling is the file's
    # problem, running it the spec's.
    try:
        code = spec.loader.get_code(module_name)
    except SyntaxError as error:
        raise _syntax_error(error, path) from None
    except (RecursionError, MemoryError):
        # Python's parser and compiler recurse into each level of an expression: thousands of
        # levels exhaust the stack (the parser's overflow is a MemoryError, without a message).
        raise SpecError(
            f"{path}: an expression in it is nested too deeply for Python to compile; a spec "
            "needs a few levels: write it with fewer brackets, operators or calls inside "
            "each other"
        ) from None
    sys.modules[module_name] = module
    with deferring_errors() as deferred:
        try:
            exec(code, module.__dict__)
        except SyntaxError as error:  # in a module the spec imports, or code it compiles
            raise _syntax_error(error, path) from None
        except ValidationError as error:
            # Raised by a model constructed in the file outside what it defers (a validator
            # of the file's own): its fields are relative to that model, so the path starts
            # at the model's class name.
            raise _model_error(error, path, model) from None
        except (Exception, SystemExit) as error:
            where, line = _user_frame(error, path)
            hint = (
                " (a value nested too deeply, or a function that calls itself without end)"
                if isinstance(error, RecursionError)
                else ""
            )
            # What raised it: the spec, or the sweep file (which names the module it missed).
            raiser = "the spec" if model is Spec else f"the {what} file"
            raise SpecError(
                f"{where}: {raiser} raised {type(error).__name__}: {error}{hint}{line}"
            ) from None
        finally:
            sys.modules.pop(module_name, None)
        if not hasattr(module, name):
            kind = model.__name__
            candidates = [k for k, v in vars(module).items() if isinstance(v, model)]
            found = ", ".join(candidates)
            hint = f" ({kind} objects in it: {found}; pass --name)" if candidates else ""
            raise SpecError(
                f"{path}: no object named {name!r}{hint}; define `{name} = {kind}(...)`"
            )
        obj = getattr(module, name)
        if not deferred:
            return obj
        parts = _unvalidated_in(obj)
        if parts:
            # Built of parts that did not validate: validated whole by the caller, which names
            # each error by its path, at the line of the innermost part (the first built).
            first = next(part for part in deferred if id(part) in parts)
            data = FileData(plain(obj))
            same = Path(first.filename).resolve() == path.resolve()
            data.where = f"{path if same else first.filename}:{first.lineno}"
            data.line = first.line
            data.origins = _origins(obj, path)
            return data
        # A model that did not validate, outside the object the loader takes: its own error.
        raise _model_error(deferred[0].error, path, model, deferred[0]) from None


def _unvalidated_in(value: Any) -> set[int]:
    """The ids of the Unvalidated parts of a spec file's object (itself included)."""
    found, todo = set(), [value]
    while todo:
        value = todo.pop()
        if isinstance(value, Unvalidated):
            found.add(id(value))
        if isinstance(value, dict):
            todo.extend(value.values())
        elif isinstance(value, list | tuple):
            todo.extend(value)
    return found


def _model_error(
    error: ValidationError, path: Path, model: type[BaseModel], deferred: Any = None
) -> SpecError:
    """A model's own error, its fields relative to it (`Dense.units: ...`), at the line of the
    file that built it."""
    what = model.__name__.lower()
    named = model if error.title == model.__name__ else _model_named(error.title)
    root = what if named is model else error.title
    if deferred is not None:
        same = Path(deferred.filename).resolve() == path.resolve()
        where = f"{path if same else deferred.filename}:{deferred.lineno}"
        line = f"\n    {deferred.line}" if deferred.line else ""
    else:
        where, line = _user_frame(error, path)
    return SpecError(f"{where}: {format_validation_error(error, root, named)}{line}")


NESTING_LIMITS = ("too many nested parentheses", "too many levels of indentation")
"""Python's syntax errors for code nested past its parser's limits."""


def _syntax_error(error: SyntaxError, path: Path) -> SpecError:
    """`file:line: syntax error: ...` and the line (cut to about 100 characters around the
    error): in the spec file, or in the file it imports that has the error."""
    where: Any = path
    if error.filename and Path(error.filename).is_file():
        if Path(error.filename).resolve() != path.resolve():
            where = error.filename
    message = f"{where}:{error.lineno}: syntax error: {error.msg}"
    if error.msg in NESTING_LIMITS:  # the line is all brackets or indentation: not shown
        return SpecError(f"{message}; a spec needs a few levels: write it with fewer")
    text = (error.text or "").rstrip()
    if len(text) > 100:  # the 100 characters up to the error
        end = max(100, min(error.offset or 0, len(text)))
        cut = f"{'... ' if end > 100 else ''}{text[end - 100 : end]}"
        text = f"{cut}{' ...' if end < len(text) else ''}"
    return SpecError(f"{message}\n    {text}")


def _user_frame(error: BaseException, path: Path) -> tuple[str, str]:
    """`file:line` of the deepest frame in the user's spec file, and that line's text (on a
    line of its own, indented; empty when unknown)."""
    resolved = path.resolve()
    frames = [
        f
        for f in traceback.extract_tb(error.__traceback__)
        if Path(f.filename).resolve() == resolved
    ]
    if not frames:
        return str(path), ""
    frame = frames[-1]
    line = (frame.line or "").strip()
    return f"{path}:{frame.lineno}", f"\n    {line}" if line else ""


def _model_named(title: str) -> type[BaseModel] | None:
    """The spec-language model class a validation error's title names (None if unknown)."""
    from .. import dsl

    model = getattr(dsl, title, None)
    if isinstance(model, type) and issubclass(model, BaseModel):
        return model
    # A Keras class's name (`SGD`): the vocabulary function built the generic model of its kind.
    returned = getattr(model, "__annotations__", {}).get("return")
    generic = getattr(dsl, returned, None) if isinstance(returned, str) else None
    return generic if isinstance(generic, type) and issubclass(generic, BaseModel) else None


def apply_override(data: Any, override: str) -> Any:
    """Sets one field in the spec's data: `a.b[2].c=value`, the value parsed as JSON if it can
    be (numbers, true/false, null, lists, objects), else taken as a string."""
    if "=" not in override:
        raise SpecError(f"--set {override!r}: expected FIELD.PATH=VALUE, e.g. data.batch_size=32")
    key, raw = override.split("=", 1)
    try:
        value = json.loads(raw)
    except json.JSONDecodeError:
        value = raw
    except RecursionError:
        raise SpecError(
            f"--set {key}: the value is nested more than {MAX_DEPTH} levels deep; a spec needs "
            "a few levels: remove the extra brackets"
        ) from None
    parts = _split_path(key, override)
    data = json.loads(json.dumps(data, default=_jsonable))  # a deep, plain copy
    node = data
    for i, part in enumerate(parts):
        last = i == len(parts) - 1
        where = _join_path(parts[: i + 1])
        if isinstance(part, int):
            if not isinstance(node, list):
                raise SpecError(
                    f"--set {key}: {_join_path(parts[:i])} is not a list, so {where} is not an "
                    "index of a list in the spec"
                )
            if not -len(node) <= part < len(node):
                raise SpecError(
                    f"--set {key}: {where} is out of range: {_join_path(parts[:i])} has "
                    f"{len(node)} entries (indices 0 to {len(node) - 1})"
                )
        elif not isinstance(node, dict):
            raise SpecError(
                f"--set {key}: {where} is not a field of the spec: "
                f"{_join_path(parts[:i])} is {json.dumps(node)}, not an object with fields"
            )
        if last:
            node[part] = value
        else:
            if isinstance(part, str) and part not in node:
                node[part] = {}
            node = node[part]
    return data


def value_at(data: Any, key: str) -> tuple[list[str | int], Any] | None:
    """The path `key` (as --set writes it: `a.b[-1].c`) in the spec's data, a negative index
    counted from the end, and the value there; None where the data has no such path (a later
    --set replaced it)."""
    node, parts = data, []
    for part in _split_path(key, key):
        if isinstance(node, list):
            if not (isinstance(part, int) and -len(node) <= part < len(node)):
                return None
            part %= len(node)
        elif not (isinstance(node, dict) and part in node):
            return None
        node = node[part]
        parts.append(part)
    return parts, node


def _join_path(parts: list[str | int]) -> str:
    """`a.b[2].c`, the way the path is written in --set."""
    text = ""
    for part in parts:
        text += f"[{part}]" if isinstance(part, int) else f".{part}" if text else part
    return text or "the spec"


def _split_path(key: str, override: str) -> list[str | int]:
    parts: list[str | int] = []
    for segment in key.replace("]", "").replace("[", ".").split("."):
        if not segment:
            raise SpecError(f"--set {override!r}: empty field name in {key!r}")
        parts.append(int(segment) if segment.lstrip("-").isdigit() else segment)
    return parts


def _jsonable(value: Any) -> Any:
    if isinstance(value, tuple | set):
        return list(value)
    if isinstance(value, BaseModel):
        return value.model_dump(mode="python")
    raise TypeError(f"cannot copy {type(value).__name__}")
