"""The `loopgen` command: parse options, call one library function, turn errors into messages."""

from __future__ import annotations

import enum
from pathlib import Path
from typing import Annotated

import typer

from . import __version__
from .dsl.spec import STRATEGY_KINDS
from .errors import LoopgenError
from .output import write_script

app = typer.Typer(
    help="Render a validated training spec into a standalone TensorFlow training script.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)

Variant = enum.Enum("Variant", {kind: kind for kind in STRATEGY_KINDS}, type=str)
"""`--variant` choices: the strategy kinds."""

SpecArg = Annotated[Path, typer.Argument(help="The spec file, a Python file defining `spec`.")]
NameOpt = Annotated[str, typer.Option("--name", help="Name of the Spec object in the file.")]
SetOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--set",
        help="Override one spec field, FIELD.PATH=VALUE (VALUE parsed as JSON if it can be), "
        'e.g. --set data.batch_size=64 --set \'data.train={"kind": "npz", "path": "d.npz"}\'. '
        "Repeatable.",
    ),
]


def _fail(error: Exception) -> typer.Exit:
    typer.secho(f"error: {error}", fg=typer.colors.RED, err=True)
    return typer.Exit(code=1)


@app.command()
def render(
    spec_file: SpecArg,
    output: Annotated[
        Path | None, typer.Option("-o", "--output", help="Write here instead of stdout.")
    ] = None,
    name: NameOpt = "spec",
    overrides: SetOpt = None,
    force: Annotated[
        bool, typer.Option("--force", help="Overwrite a file that loopgen did not write.")
    ] = False,
    variant: Annotated[
        Variant | None,
        typer.Option(
            "--variant",
            help="Write the script for this strategy instead of the spec's `distribute` "
            "(with that strategy's default settings): one spec, single-device and "
            "distributed twins.",
        ),
    ] = None,
) -> None:
    """Render SPEC_FILE into a training script."""
    from .dsl.loader import load_spec
    from .render import render_script

    try:
        kind = variant.value if variant else None
        spec = load_spec(spec_file, name, overrides, kind)
        _warn(spec)
        source = render_script(
            spec,
            spec_file=str(spec_file),
            overrides=overrides or [],
            variant=kind,
        )
        if output is None:
            typer.echo(source, nl=False)
        else:
            write_script(output, source, force=force)
            typer.secho(f"wrote {output}", err=True)
    except LoopgenError as error:
        raise _fail(error) from None


def _warn(spec) -> None:
    for warning in spec.warnings():
        typer.secho(f"warning: {warning}", fg=typer.colors.YELLOW, err=True)


@app.command()
def validate(spec_file: SpecArg, name: NameOpt = "spec", overrides: SetOpt = None) -> None:
    """Check SPEC_FILE and report every problem, without rendering."""
    from .dsl.loader import load_spec

    try:
        spec = load_spec(spec_file, name, overrides)
    except LoopgenError as error:
        raise _fail(error) from None
    _warn(spec)
    typer.echo(f"{spec_file}: ok ({spec.name}: {spec.model.kind} model, {spec.loss.kind} loss)")


def _version(value: bool) -> None:
    if value:
        typer.echo(f"loopgen {__version__}")
        raise typer.Exit()


@app.callback()
def main(
    version: Annotated[
        bool | None,
        typer.Option("--version", callback=_version, is_eager=True, help="Show the version."),
    ] = None,
) -> None:
    """loopgen: a validated training spec in, a readable custom TensorFlow training loop out."""


if __name__ == "__main__":
    app()
