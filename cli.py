"""The `loopgen` command: parse options, call one library function, turn errors into messages."""

import enum
import inspect
import re
import shlex
from pathlib import Path
from typing import Annotated

import typer

from . import __version__, pydantic_plugins  # noqa: F401 - before the spec language: see there
from .dsl import starters
from .dsl.spec import STRATEGY_KINDS
from .errors import LoopgenError

app = typer.Typer(
    help="Render a validated training spec into a standalone TensorFlow training script.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)


def command(function):
    """Registers a command whose help is its docstring, each paragraph on one line: typer keeps
    a docstring's line breaks in the list of commands, which then wraps mid-sentence."""
    text = inspect.cleandoc(function.__doc__ or "")
    return app.command(help=re.sub(r"(?<!\n)\n(?!\n)", " ", text))(function)


def _flags_take_no_value() -> None:
    """Shows no type beside a flag (`--force`, `--help`): typer writes `<bool>` there, as if
    the flag took a value."""
    option = getattr(typer.core, "TyperOption", None)
    shown = getattr(option, "display_type_rich", None)
    if shown is None or getattr(shown, "flags_take_no_value", False):
        return

    def display_type_rich(self, ctx):
        return None if self.is_flag else shown(self, ctx)

    display_type_rich.flags_take_no_value = True
    option.display_type_rich = display_type_rich


_flags_take_no_value()

Variant = enum.Enum("Variant", {kind: kind for kind in STRATEGY_KINDS}, type=str)
"""`--variant` choices: the strategy kinds."""

SpecArg = Annotated[Path, typer.Argument(help="The spec file, a Python file defining `spec`.")]
NameOpt = Annotated[str, typer.Option("--name", help="Name of the Spec object in the file.")]
SetOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--set",
        metavar="FIELD.PATH=VALUE",
        help="Override one spec field, FIELD.PATH=VALUE (VALUE parsed as JSON if it can be), "
        'e.g. --set data.batch_size=64 --set \'data.train={"kind": "npz", "path": "d.npz"}\'. '
        "Repeatable.",
    ),
]


VariantOpt = Annotated[
    Variant | None,
    typer.Option(
        "--variant",
        help="Write the script for this strategy instead of the spec's `distribute` "
        "(with that strategy's default settings): one spec, single-device and "
        "distributed twins.",
    ),
]
ScriptArg = Annotated[Path, typer.Argument(help="The rendered training script.")]
SingleFileOpt = Annotated[
    bool,
    typer.Option(
        "--single-file",
        help="Write one file: the run's machinery (loopgen_runtime.py) inlined in the script, "
        "for those who ship one file. A script keeps its form at each render.",
    ),
]


def _fail(error: Exception | str) -> typer.Exit:
    typer.secho(f"error: {error}", fg=typer.colors.RED, err=True)
    return typer.Exit(code=1)


def _render(
    spec_file: Path,
    name: str,
    overrides: list[str] | None,
    variant: Variant | None,
    single_file: bool = False,
):
    """Loads, validates and renders the spec; prints its warnings. Returns (source, flags)."""
    from .dsl.loader import load_spec
    from .render import flag_args, render_script

    kind = variant.value if variant else None
    spec = load_spec(spec_file, name, overrides, kind)
    _warn(spec)
    source = render_script(
        spec,
        spec_file=_shown(spec_file),
        overrides=overrides or [],
        variant=kind,
        single_file=single_file,
    )
    flags = (["--name", name] if name != "spec" else []) + flag_args(overrides or [], kind)
    return source, flags + ["--single-file"] * single_file


def _single_file(script: Path) -> bool:
    """Whether `script` was rendered with --single-file (its header says so)."""
    from .output import read_text
    from .render.runtime import SINGLE_FILE

    try:
        return SINGLE_FILE in read_text(script)[:4000]
    except (OSError, LoopgenError):
        return False


def _shown(path: Path) -> str:
    """The spec path as the script's header records it: relative to the working directory when
    it is inside it, so that `spec.py` and `$PWD/spec.py` render the same script."""
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def _command(*words: str | Path) -> str:
    return " ".join(shlex.quote(str(w)) for w in words)


@command
def render(
    spec_file: SpecArg,
    output: Annotated[
        Path | None, typer.Option("-o", "--output", help="Write here instead of stdout.")
    ] = None,
    name: NameOpt = "spec",
    overrides: SetOpt = None,
    force: Annotated[
        bool,
        typer.Option(
            "--force",
            help="Replace the output even if it was edited by hand or not written by loopgen, "
            "instead of merging (the old file is kept in .loopgen/ beside it).",
        ),
    ] = False,
    variant: VariantOpt = None,
    single_file: SingleFileOpt = False,
) -> None:
    """Render SPEC_FILE into a training script, and the run's machinery beside it
    (loopgen_runtime.py; with --single-file, inside it). If the script exists and was edited
    by hand, the new render is merged into the edits (three-way, like git)."""
    from .output import stale_siblings, write_rendered, write_script
    from .render import render_runtime

    if output is not None and not force and output.is_file():
        was = _single_file(output)
        if was != single_file:
            form = "one file, its runtime inlined" if was else "a script beside loopgen_runtime.py"
            again = "with --single-file" if was else "without --single-file"
            raise _fail(
                f"{output} is {form}: render it {again} to keep its form (your edits are "
                f"merged), or pass --force to replace it in the other form (the old file is "
                "kept in .loopgen/)"
            )
    try:
        source, flags = _render(spec_file, name, overrides, variant, single_file)
        if output is None:
            typer.echo(source, nl=False)
            return
        if single_file:
            update = write_script(output, source, force=force)
        else:
            runtime, update = write_rendered(output, source, render_runtime(), force=force)
    except LoopgenError as error:
        raise _fail(error) from None
    if not single_file:
        _report(runtime, "", stale_siblings(output, runtime.text))
    _report(update, _command("loopgen", "render", spec_file, "-o", output, *flags))


def _report(update, command: str, stale=()) -> None:
    """Says what a render did to a file (`stale`: the scripts beside a runtime it updated that
    need a render of their own)."""
    from .output import RUNTIME_FILE, Outcome, sidecar

    path, backup = update.path, sidecar.backup_path(update.path)
    kept = f"; your version before this render is kept as {backup}" if update.backup else ""
    if update.outcome is Outcome.CONFLICTS:
        where = "\n".join(f"  lines {c.start}-{c.end}" for c in update.conflicts)
        raise _fail(
            f"{path}: {len(update.conflicts)} conflict(s) between your edits and the new render, "
            f"marked in the file with <<<<<<< / ======= / >>>>>>>:\n{where}\n"
            "Keep what you want between each pair of markers and delete the markers, then run "
            f"the script. To undo this render: cp {backup} {path}"
        )
    if update.broken:
        raise _fail(
            f"{path}: merged the new render into your edits, but the result does not compile "
            f"({update.broken}); fix it by hand{kept}"
        )
    messages = {
        Outcome.CREATED: f"wrote {path}",
        Outcome.REPLACED: f"wrote {path}{kept}",
        Outcome.UNCHANGED: f"{path} is up to date: nothing to change",
        Outcome.MERGED: f"merged the new render into your edits in {path}{kept}",
    }
    if update.path.name == RUNTIME_FILE:  # the run's machinery, beside the script
        if update.outcome is Outcome.UNCHANGED:
            return
        if update.outcome is not Outcome.CREATED:
            messages[update.outcome] += " (the run's machinery the script imports: this loopgen's)"
        if stale:
            names = ", ".join(str(p) for p in stale)
            messages[update.outcome] += (
                f"; the scripts beside it rendered for its old version stop at their start "
                f"until each is rendered again with this loopgen: {names}"
            )
    typer.secho(messages[update.outcome], err=True)


def _warn(spec) -> None:
    for warning in spec.warnings():
        typer.secho(f"warning: {warning}", fg=typer.colors.YELLOW, err=True)


@command
def validate(
    spec_file: SpecArg,
    name: NameOpt = "spec",
    overrides: SetOpt = None,
    build: Annotated[
        bool,
        typer.Option(
            "--build",
            help="Also build the model with Keras (in a subprocess; takes seconds): a layer "
            "Keras refuses is reported at its path in the spec.",
        ),
    ] = False,
) -> None:
    """Check SPEC_FILE and report every problem, without rendering."""
    from .dsl.loader import load_spec

    try:
        spec = load_spec(spec_file, name, overrides)
    except LoopgenError as error:
        raise _fail(error) from None
    _warn(spec)
    built = ""
    if build:
        built = _build(spec, spec_file)
    typer.echo(f"{spec_file}: ok ({spec.name}: {spec.training.describe(spec)}){built}")


def _build(spec, spec_file: Path) -> str:
    """Builds the spec's model with Keras; exits 1 naming the spec path Keras refused."""
    from .dsl.build import build

    if spec.model is not None and spec.model.kind == "import":
        return "; an imported model is built by your code when the script runs"
    try:
        report = build(spec)
    except RuntimeError as error:
        raise _fail(f"{spec_file}: {error}") from None
    if not report.get("ok"):
        raise _fail(f"{spec_file}: {report['path']}: Keras cannot build it: {report['error']}")
    shapes = ", ".join(str(tuple(s)) for s in report["outputs"])
    return f"; Keras built it: {report['parameters']:,} parameters, output {shapes}"


@command
def check(
    spec_file: SpecArg,
    script: ScriptArg,
    name: NameOpt = "spec",
    overrides: SetOpt = None,
    variant: VariantOpt = None,
) -> None:
    """Fail when SCRIPT, or the loopgen_runtime.py beside it, is out of date with SPEC_FILE (a
    re-render would change it). Hand edits do not count: only what the spec, the flags and
    loopgen put in them."""
    from .output import runtime_path
    from .output.check import check_script
    from .render import render_runtime

    try:
        single_file = _single_file(script)  # --single-file's: no runtime beside it
        source, flags = _render(spec_file, name, overrides, variant, single_file)
        fix = _command("loopgen", "render", spec_file, "-o", script, *flags)
        typer.echo(check_script(script, spec_file, source, fix))
        if not single_file:
            typer.echo(check_script(runtime_path(script), spec_file, render_runtime(), fix))
    except LoopgenError as error:
        raise _fail(error) from None


@command
def diff(
    spec_file: SpecArg,
    script: ScriptArg,
    name: NameOpt = "spec",
    overrides: SetOpt = None,
    variant: VariantOpt = None,
) -> None:
    """Show what `loopgen render SPEC_FILE -o SCRIPT` would change in SCRIPT, as a unified
    diff (hand edits merged), without writing anything. Exits 1 when it shows a difference and
    0 when a re-render would change nothing, as `git diff --exit-code` does (an error exits 1
    too, with its message on stderr)."""
    import difflib

    from .output import Outcome, plan, runtime_path
    from .render import render_runtime

    try:
        single_file = _single_file(script)  # --single-file's: no runtime beside it
        source, _ = _render(spec_file, name, overrides, variant, single_file)
        # The script, and the runtime beside it: a render writes both.
        updates = [plan(script, source)]
        if not single_file:
            updates.append(plan(runtime_path(script), render_runtime()))
    except LoopgenError as error:
        raise _fail(error) from None
    for update in updates:
        path = update.path
        lines = difflib.unified_diff(
            (update.old or "").splitlines(keepends=True),
            update.text.splitlines(keepends=True),
            fromfile=f"{path}",
            tofile=f"{path} (re-rendered)",
        )
        typer.echo("".join(lines), nl=False)
        if update.text == update.old:
            typer.secho(f"a re-render would not change {path}", err=True)
        if update.outcome is Outcome.CONFLICTS:
            where = ", ".join(f"{c.start}-{c.end}" for c in update.conflicts)
            typer.secho(
                f"note: a re-render would leave {len(update.conflicts)} conflict(s) with your "
                f"edits in {path} (lines {where})",
                fg=typer.colors.YELLOW,
                err=True,
            )
    if any(update.text != update.old for update in updates):
        raise typer.Exit(code=1)  # a difference, as `git diff --exit-code` says one


@command
def schema(
    output: Annotated[
        Path | None, typer.Option("-o", "--output", help="Write here instead of stdout.")
    ] = None,
) -> None:
    """Print the JSON schema of specs: editor completion and validation for specs written as
    JSON data (`loopgen render spec.json` takes them; point "$schema" at this file)."""
    import json

    from .dsl.schema import spec_schema
    from .output.files import write_atomic

    text = json.dumps(spec_schema(), indent=2) + "\n"
    if output is None:
        typer.echo(text, nl=False)
        return
    try:
        write_atomic(output, text)
    except LoopgenError as error:
        raise _fail(error) from None
    typer.secho(f"wrote {output}", err=True)


Example = enum.Enum("Example", {name: name for name in starters.names()}, type=str)
"""`init --from` choices: the example specs."""


@command
def init(
    spec_file: Annotated[
        Path, typer.Argument(help="Where to write the new spec; its name becomes the run's name.")
    ] = Path("spec.py"),
    start: Annotated[
        Example, typer.Option("--from", help="The example spec to start from (see --list).")
    ] = Example.mnist_mlp,  # type: ignore[attr-defined]
    list_: Annotated[
        bool, typer.Option("--list", help="List the starting points, one line each, and exit.")
    ] = False,
) -> None:
    """Write a new spec file from one of the examples, ready to edit."""
    import tempfile

    from .dsl.loader import load_spec
    from .output.files import write_all

    if list_:
        for name in starters.names():
            typer.echo(f"{name:<20} {starters.summary(name)}")
        return
    if spec_file.suffix != ".py":
        raise _fail(f"{spec_file}: a spec file ends in .py, e.g. {spec_file.with_suffix('.py')}")
    if spec_file.exists():
        raise _fail(f"{spec_file} already exists; choose another name, e.g. my_{spec_file.name}")
    modules = starters.companions(start.value)  # e.g. corridor_ppo's environment, beside it
    try:
        files = {**modules, spec_file.name: starters.starter(start.value, spec_file.stem)}
        with tempfile.TemporaryDirectory(prefix="loopgen-init-") as tmp:
            write_all({Path(tmp) / name: text for name, text in files.items()})
            load_spec(Path(tmp) / spec_file.name)  # what init writes always validates
        write_all(
            {spec_file.parent / name: text for name, text in files.items()},
            fix="start the spec in another folder",
        )
    except LoopgenError as error:
        raise _fail(error) from None
    written = f" (and {', '.join(str(spec_file.parent / r) for r in modules)})" if modules else ""
    typer.secho(
        f"wrote {spec_file}{written} from the {start.value} example. Edit it, then:\n"
        f"  loopgen validate {spec_file}\n"
        f"  loopgen render {spec_file} -o train.py",
        err=True,
    )


@command
def sweep(
    words: Annotated[
        list[str],
        typer.Argument(
            metavar="[status] SWEEP_FILE",
            help="The sweep file, a Python file defining `sweep = Sweep(...)`; after `status`, "
            "print its trials instead of running them.",
        ),
    ],
    storage: Annotated[
        str | None,
        typer.Option(
            "--storage",
            help="The study's storage, shared by every process that runs the sweep: a "
            "database URL (postgresql://..., sqlite:///...) or a journal file's path on a "
            "shared file system. Default: the one the sweep ran on last (kept in its folder's "
            "`storage` file), else study.journal in the sweep's folder.",
        ),
    ] = None,
    name: Annotated[str, typer.Option("--name", help="Name of the Sweep object in the file.")] = (
        "sweep"
    ),
) -> None:
    """Run a hyperparameter sweep on Optuna: each trial renders the spec with sampled values
    and runs it in its own run directory. Run it again to resume; run it in several processes
    (or on several machines, with --storage) to share the trials."""
    from .sweep.space import load_sweep

    status = len(words) == 2 and words[0] == "status"
    if len(words) != 1 and not status:
        raise _fail("expected `loopgen sweep SWEEP_FILE` or `loopgen sweep status SWEEP_FILE`")
    try:
        loaded = load_sweep(Path(words[-1]), name)
        from .sweep.study import remembered_storage

        storage = remembered_storage(loaded, storage)  # the one it ran on, if not given
        if status:
            from .sweep.report import table
            from .sweep.study import open_study

            typer.echo(table(loaded, open_study(loaded, storage)))
            return
        from .sweep.run import Sweeper

        code = Sweeper(loaded, storage).run()
    except LoopgenError as error:
        raise _fail(error) from None
    raise typer.Exit(code=code)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"loopgen {__version__}")
        raise typer.Exit()


@app.callback()
def main(
    version: Annotated[
        bool,
        typer.Option("--version", callback=_version, is_eager=True, help="Show the version."),
    ] = False,
) -> None:
    """loopgen: a validated training spec in, a readable custom TensorFlow training loop out."""
