"""The Keras vocabulary as data: every layer, loss, metric, optimizer and application of the
installed Keras, with each constructor's arguments, defaults and the kinds of value they take.

`keras.json` is written by `generate.py` from the installed Keras (`python
dsl/catalog/generate.py`; a test regenerates it and fails when it drifts). Rendering reads the
JSON instead of importing Keras: a spec layer is one generic model (`dsl.layers.KerasLayer`)
checked against its entry here, not one hand-written class per Keras class. That keeps
`import loopgen.dsl` fast (one JSON file, read once, on first use) and the vocabulary complete.
"""

from __future__ import annotations

import difflib
import json
import math
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

PATH = Path(__file__).with_name("keras.json")


@cache
def data() -> dict[str, Any]:
    """The whole catalog, parsed once."""
    return json.loads(PATH.read_text(encoding="utf-8"))


@dataclass(frozen=True)
class Argument:
    """One constructor argument of a catalogued class."""

    name: str
    required: bool
    default: Any
    kinds: tuple[str, ...]
    choices: tuple[str, ...] | None


@dataclass(frozen=True)
class Entry:
    """A catalogued class (or application constructor)."""

    section: str
    class_name: str
    kind: str
    raw: dict[str, Any]

    @property
    def args(self) -> dict[str, Argument]:
        return _arguments(self.section, self.class_name)

    @property
    def required(self) -> list[str]:
        return [name for name, arg in self.args.items() if arg.required]

    @property
    def excluded(self) -> str | None:
        return self.raw.get("excluded")

    @property
    def call(self) -> dict[str, Any]:
        return self.raw.get("call") or {}

    @property
    def takes_training(self) -> bool:
        return bool(self.call.get("training"))

    def get(self, key: str, default: Any = None) -> Any:
        return self.raw.get(key, default)


@cache
def _arguments(section: str, class_name: str) -> dict[str, Argument]:
    raw = data()[section][class_name]
    return {
        a["name"]: Argument(
            name=a["name"],
            required=bool(a.get("required")),
            default=a.get("default"),
            kinds=tuple(a.get("kinds") or ("any",)),
            choices=tuple(a["choices"]) if a.get("choices") else None,
        )
        for a in raw.get("args", [])
    }


@cache
def _index(section: str) -> dict[str, Entry]:
    """Entries of a section by kind and by class name; aliases resolve to their class."""
    entries = data()[section]
    found: dict[str, Entry] = {}
    for name, raw in entries.items():
        target = raw.get("alias_of") or name
        entry = Entry(section, target, entries[target]["kind"], entries[target])
        found[raw["kind"]] = entry
        found[name] = entry
    return found


def lookup(section: str, key: str) -> Entry | None:
    """The entry whose kind (`conv1d`) or class name (`Conv1D`) is `key`, or None."""
    return _index(section).get(key)


def kinds(section: str) -> list[str]:
    """Every kind of a section that a spec may use (aliases included, exclusions left out)."""
    return sorted(
        raw["kind"]
        for name, raw in data()[section].items()
        if not data()[section][raw.get("alias_of") or name].get("excluded")
    )


def closest(word: str, options: list[str] | set[str]) -> str | None:
    """The option that `word` was most likely meant to be (a typo), or None."""
    matches = difflib.get_close_matches(word, sorted(options), n=1, cutoff=0.6)
    if not matches:
        lowered = {o.lower().replace("_", ""): o for o in options}
        return lowered.get(word.lower().replace("_", ""))
    return matches[0]


def did_you_mean(word: str, options: list[str] | set[str], fallback: str) -> str:
    """`did you mean 'a', 'b' or 'c'?` for the options closest to `word`, else `fallback`."""
    matches = difflib.get_close_matches(word, sorted(options), n=3, cutoff=0.6)
    if not matches:
        single = closest(word, options)
        matches = [single] if single else []
    if not matches:
        return fallback
    shown = [repr(m) for m in matches]
    listed = shown[0] if len(shown) == 1 else ", ".join(shown[:-1]) + " or " + shown[-1]
    return f"did you mean {listed}?"


def names(key: str) -> frozenset[str]:
    """A list section of the catalog as a set: activations, initializers, regularizers,
    constraints, dtypes."""
    return frozenset(data()[key])


def is_default(arg: Argument, value: Any) -> bool:
    """Whether `value` is the argument's default, as Keras would see it (2 and (2, 2) are the
    same pool size)."""
    if arg.required:
        return False
    default = arg.default
    if (value == default and type(value) is not bool) or value is default:
        return True
    if isinstance(default, list) and isinstance(value, tuple | list):
        return list(value) == default
    if isinstance(default, list) and isinstance(value, int) and not isinstance(value, bool):
        return all(d == value for d in default)
    return False


def value_problem(arg: Argument, value: Any) -> str | None:
    """Why `value` cannot be passed as `arg` (None when it can)."""
    for kind in arg.kinds:
        if _fits(kind, value, arg):
            return None
    if arg.choices and isinstance(value, str):
        hint = closest(value, arg.choices)
        fix = f"did you mean {hint!r}?" if hint else f"choose one of {list(arg.choices)}"
        return f"{value!r} is not one of its choices; {fix}"
    named = {
        "activation": "activations",
        "initializer": "initializers",
        "regularizer": "regularizers",
        "constraint": "constraints",
        "dtype": "dtypes",
    }
    for kind in arg.kinds:
        if kind in named and isinstance(value, str):
            hint = closest(value, names(named[kind]))
            fix = f"did you mean {hint!r}?" if hint else f"see keras.{named[kind]}"
            return f"{value!r} is not a Keras {kind} name; {fix}"
    return f"should be {_describe(arg.kinds)}, not {_shown(value)}"


def _fits(kind: str, value: Any, arg: Argument) -> bool:
    number = isinstance(value, int | float) and not isinstance(value, bool)
    if kind == "any":
        return True
    if kind == "none":
        return value is None
    if kind == "bool":
        return isinstance(value, bool)
    if kind == "int":
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == "float":
        return number and math.isfinite(value)
    if kind == "str":
        return isinstance(value, str) and (arg.choices is None or value in arg.choices)
    if kind in ("int_tuple", "float_tuple"):
        element = "int" if kind == "int_tuple" else "float"
        return isinstance(value, tuple | list) and all(_fits(element, v, arg) for v in value)
    if kind == "str_list":
        return isinstance(value, tuple | list) and all(isinstance(v, str) for v in value)
    if kind in ("activation", "constraint", "dtype"):
        return isinstance(value, str) and value in names(kind + "s")
    if kind == "initializer":
        return (isinstance(value, str) and value in names("initializers")) or _serialized(value)
    if kind == "regularizer":
        return getattr(value, "kind", None) in ("l1", "l2", "l1_l2") or (
            isinstance(value, str) and value in names("regularizers")
        )
    if kind == "layer":
        return getattr(value, "is_layer", False)
    if kind == "layer_list":
        return isinstance(value, tuple | list) and all(getattr(v, "is_layer", False) for v in value)
    return False


def _serialized(value: Any) -> bool:
    """Keras' own `{"class_name": ..., "config": {...}}` form."""
    return (
        isinstance(value, dict)
        and set(value) == {"class_name", "config"}
        and isinstance(value["class_name"], str)
        and isinstance(value["config"], dict)
    )


_KIND_WORDS = {
    "int": "an integer",
    "float": "a number",
    "bool": "True or False",
    "str": "a string",
    "none": "None",
    "int_tuple": "a tuple of integers",
    "float_tuple": "a tuple of numbers",
    "str_list": "a list of strings",
    "activation": "an activation name",
    "initializer": "an initializer name",
    "regularizer": "a regularizer (L1, L2, L1L2)",
    "constraint": "a constraint name",
    "dtype": "a dtype name",
    "layer": "a layer",
    "layer_list": "a list of layers",
}


def _describe(kinds: tuple[str, ...]) -> str:
    words = [_KIND_WORDS.get(k, k) for k in kinds]
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " or " + words[-1]


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."
