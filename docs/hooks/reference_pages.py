"""The reference of the spec language, written from the spec models themselves at every build of
the site: every model and field with its type, default, constraints and docstring, the
discriminated unions as lists of their kinds, and the Keras vocabulary from the catalog.

Nothing here is hand-kept: a page per module that defines models (`loopgen.dsl.spec` becomes
`reference/spec.md`), its models in the module's order, each field's description the docstring
under it (what `loopgen schema` gives as descriptions). A field without a docstring stops the
build (`Undocumented`), so the reference cannot fall behind the models.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import re
import sys
import types
import typing
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import cache
from typing import Any

import annotated_types
from pydantic import BaseModel
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

ROOT = "reference"
"""The folder of the generated pages, in the site."""

TITLES = {
    "spec": "Spec and the run",
    "data": "Data",
    "sources": "File and code sources",
    "environment": "Environment",
    "model": "Models",
    "graph": "Graphs",
    "layers": "Layers",
    "training": "Losses, metrics, optimizers",
    "schedules": "Learning-rate schedules",
    "controls": "Gradients and validation decisions",
    "finetune": "Fine-tuning",
    "performance": "Performance",
    "base": "Values",
    "sweep": "Sweeps",
    "ways-supervised": "Ways: supervised, multi-task",
    "ways-gan": "Ways: GAN",
    "ways-distillation": "Ways: distillation",
    "ways-adversarial": "Ways: adversarial",
    "ways-contrastive": "Ways: contrastive",
    "ways-meta": "Ways: meta-learning",
    "ways-own_step": "Ways: your own step",
    "ways-rl": "Ways: reinforcement learning",
}
"""Short titles for the navigation, in its order; a page not listed here still gets one (from
its module's docstring) and comes after these."""


class Undocumented(Exception):
    """A spec model or field has no docstring: the reference would have a hole."""


# --- What is documented


@cache
def documented_models() -> tuple[type[BaseModel], ...]:
    """Every model a spec or a sweep can hold, at any depth, and the public models of
    `loopgen.dsl` that fields hold as untyped values (regularizers), in a stable order (read
    once: the navigation and the pages both ask)."""
    import loopgen.dsl as dsl
    from loopgen.dsl.base import StrictModel
    from loopgen.dsl.docs import document, reachable_models
    from loopgen.dsl.sweep import Sweep

    document(StrictModel)  # the docstrings under the fields become their descriptions
    found = reachable_models(dsl.Spec) | reachable_models(Sweep)
    found |= {
        v
        for v in vars(dsl).values()
        if isinstance(v, type) and issubclass(v, BaseModel) and v is not BaseModel
    }
    return tuple(sorted(found, key=lambda m: (m.__module__, _line(m), m.__name__)))


def _line(model: type) -> int:
    try:
        return inspect.getsourcelines(model)[1]
    except (OSError, TypeError):
        return 0


def page_of(model: type) -> str:
    """The page a model is documented on: its module's, `loopgen.dsl.ways.gan` -> `ways-gan`."""
    return model.__module__.removeprefix("loopgen.dsl.").replace(".", "-")


def anchor(model: type) -> str:
    return model.__name__.lower()


# --- Named types: the module-level aliases (unions, constrained values) and their docstrings


@dataclass(frozen=True)
class Alias:
    name: str
    module: str
    doc: str
    value: Any

    @property
    def anchor(self) -> str:
        return re.sub(r"[^a-z0-9]+", "-", self.name.lower()).strip("-")

    @property
    def title(self) -> str:
        return self.name


def module_docstrings(module: types.ModuleType) -> dict[str, str]:
    """The string literal under each module-level assignment, by name."""
    try:
        tree = ast.parse(inspect.getsource(module))
    except (OSError, TypeError):
        return {}
    docs = {}
    for node, following in zip(tree.body, tree.body[1:], strict=False):
        target = None
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
        elif isinstance(node, ast.AnnAssign):
            target = node.target
        if (
            isinstance(target, ast.Name)
            and isinstance(following, ast.Expr)
            and isinstance(following.value, ast.Constant)
            and isinstance(following.value.value, str)
        ):
            docs[target.id] = inspect.cleandoc(following.value.value)
    return docs


def aliases(models: Iterable[type]) -> list[Alias]:
    """The `Annotated` aliases defined at the top of the modules that define spec models (and
    of the packages above them), e.g. `Training`, `Strategy`, `Identifier`."""
    names = {m.__module__ for m in models}
    names |= {n.rsplit(".", 1)[0] for n in names if n.count(".") > 2}
    found = []
    for name in sorted(names):
        module = sys.modules.get(name) or importlib.import_module(name)
        docs = module_docstrings(module)
        for attr, value in vars(module).items():
            if attr.startswith("_") or typing.get_origin(value) is not typing.Annotated:
                continue
            if attr not in docs and not _is_discriminated(value):
                continue  # imported (pydantic's PositiveInt): shown as its type and rule
            found.append(Alias(attr, name, docs.get(attr, ""), value))
    # The same object imported into several modules: keep the one that defines it (documented).
    unique: dict[int, Alias] = {}
    for alias in found:
        kept = unique.get(id(alias.value))
        if kept is None or (alias.doc and not kept.doc):
            unique[id(alias.value)] = alias
    kept = sorted(unique.values(), key=lambda a: (a.name, a.module))
    names = [a.name for a in kept]
    return [
        Alias(f"{a.name} ({a.module.removeprefix('loopgen.dsl.')})", a.module, a.doc, a.value)
        if names.count(a.name) > 1
        else a
        for a in kept
    ]


def _union_members(tp: Any) -> tuple[Any, ...] | None:
    """The members of a union (each stripped of its `Tag`), or None."""
    if typing.get_origin(tp) is typing.Annotated:
        tp = typing.get_args(tp)[0]
    if typing.get_origin(tp) in (typing.Union, types.UnionType):
        return tuple(_strip(a) for a in typing.get_args(tp))
    return None


def _strip(tp: Any) -> Any:
    while typing.get_origin(tp) is typing.Annotated:
        tp = typing.get_args(tp)[0]
    return tp


def _is_discriminated(tp: Any) -> bool:
    members = _union_members(tp)
    return bool(members) and all(isinstance(m, type) and issubclass(m, BaseModel) for m in members)


def kind_of(model: type[BaseModel]) -> str | None:
    """The `kind` a variant is selected by, when it has a fixed one."""
    info = model.model_fields.get("kind")
    if info is None or not isinstance(info.default, str):
        return None
    return info.default


def kind_words(model: type[BaseModel]) -> str:
    """How a spec selects this member of a union."""
    kind = kind_of(model)
    if kind is not None:
        return f'`"{kind}"`'
    if "kind" in model.model_fields:
        return "a Keras class, by its snake_case name ([Keras vocabulary](keras.md))"
    return "no `kind` (the default)"


# --- Markdown


def escape(text: str) -> str:
    """Text for a table cell: one line, pipes outside code spans escaped."""
    paragraphs = [" ".join(p.split()) for p in re.split(r"\n\s*\n", text.strip())]
    out = []
    for i, part in enumerate("<br><br>".join(paragraphs).split("`")):
        out.append(part if i % 2 else part.replace("|", "\\|"))
    return "`".join(out)


def first_sentence(text: str) -> str:
    text = " ".join(text.split())
    match = re.match(r"(.+?(?<!e\.g)(?<!i\.e)\.)(\s|$)", text)
    return match.group(1) if match else text


@dataclass
class Writer:
    """Turns types and values into Markdown with links between the pages."""

    models: tuple[type[BaseModel], ...]
    named: list[Alias]
    here: str = ""
    used_by: dict[type, list[str]] = field(default_factory=dict)

    def link(self, model: type) -> str:
        if model not in self.models:
            return f"`{model.__name__}`"
        page = page_of(model)
        target = "" if page == self.here else f"{page}.md"
        return f"[{model.__name__}]({target}#{anchor(model)})"

    def alias_link(self, alias: Alias) -> str:
        target = "" if self.here == "types" else "types.md"
        return f"[{alias.name}]({target}#{alias.anchor})"

    def union_alias(self, tp: Any) -> Alias | None:
        members = _union_members(tp)
        if members is None:
            return None
        for alias in self.named:
            if _union_members(alias.value) == members and _is_discriminated(alias.value):
                return alias
        return None

    def value_alias(self, base: Any, metadata: list[Any]) -> Alias | None:
        """The named type of a value of type `base` with these constraints, if there is one."""
        wanted = [m for part in metadata for m in _flatten(part)]
        for alias in self.named:
            args = typing.get_args(alias.value)
            if _union_members(alias.value) is not None or args[0] is not base:
                continue
            if [m for part in args[1:] for m in _flatten(part)] == wanted:
                return alias
        return None

    def type(self, tp: Any, metadata: Iterable[Any] = ()) -> str:
        metadata = [m for m in metadata if not isinstance(m, FieldInfo) or m.metadata]
        named = self.value_alias(tp, metadata) if metadata else None
        if named is not None:
            return self.alias_link(named)
        text = self._type(tp)
        rules = constraints(metadata)
        return f"{text} ({', '.join(rules)})" if rules else text

    def _type(self, tp: Any) -> str:
        origin = typing.get_origin(tp)
        if origin is typing.Annotated:
            base, *metadata = typing.get_args(tp)
            if _union_members(base) is not None:
                return self._type(base)
            inner = [m for part in metadata for m in _flatten(part)]
            return self.type(base, inner)
        if _union_members(tp) is not None:
            named = self.union_alias(tp)
            if named is not None:
                return self.alias_link(named)
            return " \\| ".join(self._type(m) for m in typing.get_args(tp))
        if origin is typing.Literal:
            return " \\| ".join(f"`{_literal(v)}`" for v in typing.get_args(tp))
        if origin in (list, tuple, dict, set, frozenset):
            args = typing.get_args(tp)
            inner = ", ".join("..." if a is Ellipsis else self._type(a) for a in args)
            return f"{origin.__name__}[{inner}]" if args else origin.__name__
        if tp is type(None):
            return "`None`"
        if tp is typing.Any:
            return "any"
        if isinstance(tp, typing.ForwardRef):
            named = [m for m in self.models if m.__name__ == tp.__forward_arg__]
            return self.link(named[0]) if named else f"`{tp.__forward_arg__}`"
        if isinstance(tp, type) and issubclass(tp, BaseModel):
            return self.link(tp)
        return getattr(tp, "__name__", str(tp))

    def default(self, info: FieldInfo) -> str:
        if info.default is PydanticUndefined and info.default_factory is None:
            return "required"
        value = info.get_default(call_default_factory=True)
        return f"`{_value(value)}`"


def _flatten(part: Any) -> list[Any]:
    if isinstance(part, FieldInfo):
        return list(part.metadata)
    return [part]


def _literal(value: Any) -> str:
    return f'"{value}"' if isinstance(value, str) else repr(value)


def _value(value: Any) -> str:
    """A default as a spec writes it."""
    if isinstance(value, BaseModel):
        fields = type(value).model_fields
        given = {
            k: v
            for k, v in value
            if k != "kind" and v != fields[k].get_default(call_default_factory=True)
        }
        inner = ", ".join(f"{k}={_value(v)}" for k, v in given.items())
        return f"{type(value).__name__}({inner})"
    if isinstance(value, str):
        return f'"{value}"'
    if isinstance(value, list | tuple):
        items = ", ".join(_value(v) for v in value)
        return f"[{items}]" if isinstance(value, list) else f"({items})"
    return repr(value)


CONSTRAINTS: list[tuple[type, Callable[[Any], str]]] = [
    (annotated_types.Gt, lambda c: f"> {c.gt}"),
    (annotated_types.Ge, lambda c: f">= {c.ge}"),
    (annotated_types.Lt, lambda c: f"< {c.lt}"),
    (annotated_types.Le, lambda c: f"<= {c.le}"),
    (annotated_types.MultipleOf, lambda c: f"a multiple of {c.multiple_of}"),
    (annotated_types.MinLen, lambda c: f"at least {c.min_length} long"),
    (annotated_types.MaxLen, lambda c: f"at most {c.max_length} long"),
]


def constraints(metadata: Iterable[Any]) -> list[str]:
    """What the metadata of a field or type requires, in words."""
    rules = []
    for item in metadata:
        for kind, words in CONSTRAINTS:
            if isinstance(item, kind):
                rules.append(words(item))
        pattern = getattr(item, "pattern", None)
        if isinstance(pattern, str):
            rules.append(f"matches `{pattern}`")
        func = getattr(item, "func", None)
        if func is not None and (func.__doc__ or "").strip():
            rules.append(first_sentence(func.__doc__).rstrip("."))
    return rules


# --- Pages


def model_section(model: type[BaseModel], w: Writer) -> str:
    doc = inspect.cleandoc(model.__doc__ or "")
    lines = [f"## {model.__name__} {{ #{anchor(model)} }}", ""]
    kind = kind_of(model)
    if kind is not None:
        lines += [f'`kind="{kind}"`', ""]
    lines += [doc, ""]
    if model.model_config.get("extra") == "allow":
        section = getattr(model, "section", None)
        page, place, title = ELSEWHERE.get(section, ("keras", section, "Keras vocabulary"))
        target = "" if page == w.here else f"{page}.md"
        title = "the list below" if page == w.here else title
        target += f"#{place}" if place else ""
        lines += [
            "Every other field is an argument of the Keras class `kind` names, by its Keras "
            f"name and with its Keras default: see [{title}]({target}).",
            "",
        ]
    users = w.used_by.get(model, [])
    if users:
        lines += ["Used in: " + ", ".join(sorted(set(users))) + ".", ""]
    fields = model.model_fields
    if fields:
        lines += ["| Field | Type | Default | Description |", "|---|---|---|---|"]
        for name, info in fields.items():
            description = escape(info.description or "")
            type_text = w.type(info.annotation, info.metadata)
            lines.append(f"| `{name}` | {type_text} | {w.default(info)} | {description} |")
        lines.append("")
    return "\n".join(lines)


def used_by(models: list[type[BaseModel]], w: Writer) -> dict[type, list[str]]:
    """For each model, the fields (as links) that hold it."""
    found: dict[type, list[str]] = {}
    for model in models:
        for name, info in model.model_fields.items():
            for held in _models_in(info.annotation):
                found.setdefault(held, []).append(
                    f"[{model.__name__}.{name}]({page_of(model)}.md#{anchor(model)})"
                )
    return found


def _held_by(model: type[BaseModel]) -> set[type]:
    return {m for info in model.model_fields.values() for m in _models_in(info.annotation)}


def _models_in(tp: Any) -> set[type]:
    if isinstance(tp, type) and issubclass(tp, BaseModel):
        return {tp}
    return {m for arg in typing.get_args(tp) for m in _models_in(arg)}


def module_title(module: str) -> str:
    doc = (sys.modules[module].__doc__ or module).strip()
    return re.split(r"[:.](\s|$)", " ".join(doc.split()), maxsplit=1)[0]


def pages() -> dict[str, str]:
    """The reference's pages, by path in the site (`reference/spec.md`, ...)."""
    from loopgen.dsl.docs import document_fields

    models = documented_models()
    for model in models:
        document_fields(model)  # a model defined since the first call too
    missing = undocumented(models)
    if missing:
        raise Undocumented(
            "the reference describes every model and field by its docstring (the string under "
            "the class line or the field), and these have none: " + ", ".join(missing)
        )
    named = aliases(models)
    w = Writer(models, named)
    w.used_by = used_by(models, w)
    by_page: dict[str, list[type[BaseModel]]] = {}
    for model in models:
        by_page.setdefault(page_of(model), []).append(model)
    for members in by_page.values():
        # The page's roots first (Spec before its sections, Data before its sources).
        held = {m for owner in members for m in _held_by(owner) if m is not owner}
        members.sort(key=lambda m: m in held)

    out = {}
    for page, members in by_page.items():
        w.here = page
        module = members[0].__module__
        intro = inspect.cleandoc(sys.modules[module].__doc__ or "")
        head = [f"# {title(page, module)}", "", intro, "", _generated_note(module), ""]
        head += ["| Model | What it is |", "|---|---|"]
        head += [f"| {w.link(m)} | {escape(first_sentence(m.__doc__ or ''))} |" for m in members]
        head.append("")
        out[f"{ROOT}/{page}.md"] = "\n".join(head + [model_section(m, w) for m in members])
    out[f"{ROOT}/training.md"] += "\n" + optimizer_defaults()
    w.here = "types"
    out[f"{ROOT}/types.md"] = types_page(named, w)
    out[f"{ROOT}/keras.md"] = keras_page()
    out[f"{ROOT}/index.md"] = index_page(by_page, named, w)
    return out


def undocumented(models: Iterable[type[BaseModel]]) -> list[str]:
    """The models and fields without a docstring, as `module.Model` and `module.Model.field`."""
    missing = []
    for model in models:
        path = f"{model.__module__}.{model.__name__}"
        if not (model.__doc__ or "").strip():
            missing.append(path)
        missing += [
            f"{path}.{name}"
            for name, info in model.model_fields.items()
            if not (info.description or "").strip()
        ]
    return missing


def title(page: str, module: str) -> str:
    return TITLES.get(page) or module_title(module)


def _generated_note(module: str) -> str:
    path = module.removeprefix("loopgen.").replace(".", "/") + ".py"
    return (
        f"*Generated from the models in `{path}` when the site is built: the descriptions "
        "are the docstrings under the fields, as `loopgen schema` gives them.*"
    )


def types_page(named: list[Alias], w: Writer) -> str:
    lines = [
        "# Unions and named types",
        "",
        "A field whose type is a *union* takes one of several models; a spec names the one it "
        'means by its `kind` (`distribute={"kind": "mirrored"}` in JSON, `Mirrored()` in '
        "Python). The *named types* are values with a rule of their own.",
        "",
    ]
    unions = [a for a in named if _is_discriminated(a.value)]
    values = [a for a in named if a not in unions]
    for alias in unions:
        lines += [f"## {alias.name} {{ #{alias.anchor} }}", "", alias.doc, ""]
        lines += ["| kind | Model | What it is |", "|---|---|---|"]
        for member in _union_members(alias.value) or ():
            what = escape(first_sentence(member.__doc__ or ""))
            lines.append(f"| {kind_words(member)} | {w.link(member)} | {what} |")
        lines.append("")
    for alias in values:
        base, *metadata = typing.get_args(alias.value)
        rules = constraints(m for part in metadata for m in _flatten(part))
        lines += [f"## {alias.name} {{ #{alias.anchor} }}", "", alias.doc, ""]
        lines += [f"Type: {w._type(base)}" + (f"; {', '.join(rules)}." if rules else "."), ""]
    return "\n".join(lines)


def index_page(by_page: dict[str, list[type]], named: list[Alias], w: Writer) -> str:
    w.here = "index"
    lines = [
        "# Reference",
        "",
        "Every model of the spec language and of sweep files, every field with its type, "
        "default, constraints and description. These pages are written from the models "
        "(`loopgen/dsl/`) each time the site is built; the descriptions are the docstrings "
        "under the fields, the same as `loopgen schema` writes into the JSON schema. Start at "
        "[Spec](spec.md#spec), the top of every spec, or at [Sweep](sweep.md#sweep), the top "
        "of a sweep file.",
        "",
        "| Page | Models |",
        "|---|---|",
    ]
    for page in order(by_page):
        members = by_page[page]
        module = members[0].__module__
        links = ", ".join(f"[{m.__name__}]({page}.md#{anchor(m)})" for m in members)
        lines.append(f"| [{title(page, module)}]({page}.md) | {links} |")
    lines += [
        "| [Unions and named types](types.md) | "
        + ", ".join(f"[{a.name}](types.md#{a.anchor})" for a in named)
        + " |",
        "| [Keras vocabulary](keras.md) | every layer, loss, metric and application a spec "
        "can name (the optimizers: [on their page](training.md#optimizer-defaults)) |",
        "",
    ]
    return "\n".join(lines)


def order(by_page: Iterable[str]) -> list[str]:
    known = [p for p in TITLES if p in by_page]
    return known + sorted(p for p in by_page if p not in TITLES)


def nav() -> list[Any]:
    """The reference's part of the navigation."""
    models = documented_models()
    by_page: dict[str, str] = {}
    for model in models:
        by_page.setdefault(page_of(model), model.__module__)
    entries: list[Any] = [{"Overview": f"{ROOT}/index.md"}]
    entries += [{title(p, by_page[p]): f"{ROOT}/{p}.md"} for p in order(by_page)]
    entries += [
        {"Unions and named types": f"{ROOT}/types.md"},
        {"Keras vocabulary": f"{ROOT}/keras.md"},
    ]
    return entries


# --- The Keras vocabulary, from the catalog


SECTIONS = {
    "layers": "Layers",
    "losses": "Losses",
    "metrics": "Metrics",
    "optimizers": "Optimizers",
    "applications": "Applications (`Backbone`)",
}


def keras_page() -> str:
    from loopgen.dsl import catalog

    data = catalog.data()
    lines = [
        "# Keras vocabulary",
        "",
        f"What a spec can name from Keras {data['keras_version']}, from the catalog "
        "`dsl/catalog/keras.json` (written from the installed Keras by "
        "`python dsl/catalog/generate.py`; a test fails when it drifts). A spec names a class "
        "in Python by its Keras name (`Conv1D(filters=64, kernel_size=5)`), in JSON by its "
        'snake_case `kind` (`{"kind": "conv1d", "filters": 64, "kernel_size": 5}`), with its '
        "Keras arguments; a required argument is in **bold**. A spec layer is a "
        "[KerasLayer](layers.md#keraslayer), a loss a [KerasLoss](training.md#kerasloss), "
        "a metric a [KerasMetric](training.md#kerasmetric), an optimizer a "
        "[KerasOptimizer](training.md#kerasoptimizer), an application a "
        "[Backbone](layers.md#backbone).",
        "",
    ]
    for section, heading in SECTIONS.items():
        lines += [f"## {heading} {{ #{section} }}", ""]
        if section in ELSEWHERE:
            page, anchor, title = ELSEWHERE[section]
            count = len(data[section])
            lines += [
                f"{count} public classes: their arguments and defaults are on "
                f"[{title}]({page}.md#{anchor}).",
                "",
            ]
            continue
        lines += vocabulary_table(section)
    return "\n".join(lines)


ELSEWHERE = {"optimizers": ("training", "optimizer-defaults", "Losses, metrics, optimizers")}
"""Sections of the Keras vocabulary written on the reference page of the models that name them
(page, anchor, its title), where a reader of those models looks for them: the optimizers'
arguments and defaults beside `KerasOptimizer`."""


def vocabulary_table(section: str) -> list[str]:
    """A section of the Keras catalog: its classes, each with its `kind`, its arguments with
    their Keras defaults (a required one in bold) and its docstring's first line."""
    from loopgen.dsl import catalog
    from loopgen.dsl.training import SET_BY_LOOPGEN

    entries = catalog.data()[section]
    usable = [n for n, e in entries.items() if not e.get("excluded") and not e.get("alias_of")]
    lines = [f"{len(entries)} public classes, {len(usable)} usable in a spec."]
    set_here = SET_BY_LOOPGEN.get(section, {})
    if set_here:
        lines += [
            "",
            "Not set in a spec: "
            + "; ".join(f"`{a}` ({escape(why)})" for a, why in set_here.items())
            + ".",
        ]
    lines += ["", "| Class | kind | Arguments | |", "|---|---|---|---|"]
    for name in sorted(entries):
        raw = entries[name]
        if raw.get("alias_of"):
            note = f"alias of `{raw['alias_of']}`"
            args = ""
        elif raw.get("excluded"):
            note = "**not in a spec**: " + escape(raw["excluded"])
            args = ""
        else:
            note = escape(raw.get("doc") or "")
            args = ", ".join(_argument(a) for a in raw.get("args", []) if a["name"] not in set_here)
        lines.append(f"| `{name}` | `{raw.get('kind', '')}` | {args} | {note} |")
    lines.append("")
    return lines


def optimizer_defaults() -> str:
    """The section of the optimizers' page that lists every Keras optimizer with its defaults."""
    from loopgen.dsl import catalog

    version = catalog.data()["keras_version"]
    return "\n".join(
        [
            "## Optimizers and their defaults { #optimizer-defaults }",
            "",
            f"Every optimizer of Keras {version} a spec can name, from the catalog "
            "`dsl/catalog/keras.json`: in Python by its Keras name (`Adam(learning_rate=1e-3)`), "
            'in JSON by its snake_case `kind` (`{"kind": "adam", "learning_rate": 0.001}`), with '
            "the Keras arguments below; an argument left out takes the default shown. A spec "
            "optimizer is a [KerasOptimizer](#kerasoptimizer).",
            "",
            *vocabulary_table("optimizers"),
        ]
    )


def _argument(arg: dict[str, Any]) -> str:
    if arg.get("required"):
        return f"**`{arg['name']}`**"
    return escape(f"`{arg['name']}={arg.get('default')!r}`")
