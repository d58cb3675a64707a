"""Rendering: spec → context → Jinja → black (blackcache.py). Never imports TensorFlow."""

from __future__ import annotations

from functools import cache
from pathlib import Path

import jinja2

from ..dsl import cache as disk_cache
from ..dsl.spec import Spec
from . import code, runtime, stamp
from .blackcache import format_source
from .context import build_context
from .rl import rl_context

TEMPLATES = Path(__file__).resolve().parent.parent / "templates"


def _bytecode_cache() -> jinja2.BytecodeCache | None:
    """Compiled templates kept between runs: compiling them costs more than the rest of a
    render but black. Jinja checks each entry against the template's source, and a cache it
    cannot write to is simply not used."""
    folder = disk_cache.folder("templates")
    if folder is None:
        return None
    return jinja2.FileSystemBytecodeCache(folder)


@cache
def environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES),
        bytecode_cache=_bytecode_cache(),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        autoescape=False,
    )
    env.filters.update(
        py=code.literal,
        ident=code.identifier,
        layer=code.layer,
        keras=lambda obj, module: code.keras_object(module, obj),
        docstring=code.docstring,
        ratio=code.ratio,
        kwargs=lambda mapping: code.arguments(list(mapping.items())),
        repeat_header=code.repeat_header,
        tuple=tuple,
    )
    return env


def flag_args(overrides: list[str], variant: str | None) -> list[str]:
    """The `--variant` and `--set` flags as command-line words, in the order they apply."""
    words = ["--variant", variant] if variant else []
    for override in overrides:
        words += ["--set", override]
    return words


def render_script(
    spec: Spec,
    *,
    spec_file: str,
    overrides: list[str] = (),  # type: ignore[assignment]
    variant: str | None = None,
    single_file: bool = False,
) -> str:
    """The formatted source of the training script for `spec` and its strategy (`single_file`:
    with its runtime inlined, loopgen render --single-file).

    `overrides` and `variant` are the `--set` and `--variant` flags the spec was loaded with
    (already applied to `spec`); the script's header repeats them."""
    flags = flag_args(overrides, variant)
    if spec.acts:  # reinforcement learning: a script of its own shape
        context = rl_context(spec, spec_file=spec_file, flags=flags)
        source = environment().get_template("rl.py.jinja").render(context)
    else:
        context = build_context(spec, spec_file=spec_file, flags=flags)
        source = environment().get_template("script.py.jinja").render(context)
    kind = spec.distribute.kind
    try:
        formatted = runtime.link(format_source(source, f"<{kind}.py>"))
        if single_file:
            formatted = format_source(runtime.inline(formatted), f"<{kind}, one file>")
    except SyntaxError as error:  # invalid Python: a loopgen bug
        raise code.TemplateBug(
            f"the {kind} script template produced invalid Python: {error}"
        ) from error
    return stamp.stamp(formatted)


def render_runtime() -> str:
    """The runtime every script of this loopgen imports, as written beside it
    (loopgen_runtime.py): the same for every spec."""
    return runtime.render_runtime()
