"""Rendering: spec → context → Jinja → black. Never imports TensorFlow."""

from __future__ import annotations

from functools import cache
from pathlib import Path

import black
import jinja2

from ..dsl.spec import Spec
from . import code, stamp
from .context import VARIANTS, build_context

TEMPLATES = Path(__file__).resolve().parent.parent / "templates"


@cache
def environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES),
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
    )
    return env


def render_script(
    spec: Spec,
    *,
    spec_file: str,
    overrides: list[str] = (),  # type: ignore[assignment]
    variant: str = "single_device",
) -> str:
    """The formatted source of the generated training script."""
    if variant not in VARIANTS:
        raise ValueError(f"unknown variant {variant!r}; choose one of {', '.join(VARIANTS)}")
    context = build_context(
        spec, spec_file=spec_file, overrides=list(overrides),
        variant=variant,
    )  # fmt: skip
    source = environment().get_template(f"{variant}.py.jinja").render(context)
    try:
        formatted = black.format_str(source, mode=black.Mode())
        # black parses leniently (duplicate arguments pass): the compiler has the last word.
        compile(formatted, f"<{variant}.py>", "exec")
    except (black.InvalidInput, SyntaxError) as error:  # invalid Python: a loopgen bug
        raise code.TemplateBug(
            f"template {variant}.py.jinja produced invalid Python: {error}"
        ) from error
    return stamp.stamp(formatted)
