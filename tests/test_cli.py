"""The `loopgen` command, driven in subprocesses the way a user runs it: help, rendering, --set,
clear messages (never a traceback) for every way a spec file can be wrong, safe output files,
byte-identical renders, and no TensorFlow import while rendering."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from helpers import EXAMPLES, ROOT, run_cli, tree
from loopgen.dsl.loader import load_spec

MNIST = EXAMPLES / "mnist_mlp.py"
EXAMPLE_FILES = sorted(EXAMPLES.glob("*.py"))


def failed(proc: subprocess.CompletedProcess[str], *phrases: str) -> str:
    """Asserts a clean failure: non-zero exit, a message with `phrases` on stderr, no traceback,
    nothing on stdout. Returns stderr."""
    assert proc.returncode != 0, proc.stdout[:2000]
    assert "Traceback" not in proc.stderr, proc.stderr
    assert proc.stderr.startswith("error: "), proc.stderr
    assert proc.stdout == ""
    for phrase in phrases:
        assert phrase in proc.stderr, f"{phrase!r} not in stderr:\n{proc.stderr}"
    return proc.stderr


def spec_file(tmp_path: Path, source: str, name: str = "spec.py") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(source))
    return path


MNIST_SOURCE = MNIST.read_text()


# --- help -------------------------------------------------------------------------------------


def test_app_help():
    proc = run_cli("--help")
    assert proc.returncode == 0, proc.stderr
    assert "Usage" in proc.stdout
    assert "render" in proc.stdout and "validate" in proc.stdout


@pytest.mark.parametrize("command", ["render", "validate"])
def test_command_help(command):
    proc = run_cli(command, "--help")
    assert proc.returncode == 0, proc.stderr
    assert "Usage" in proc.stdout and "SPEC_FILE" in proc.stdout
    assert "--set" in proc.stdout and "--name" in proc.stdout
    if command == "render":
        assert "--output" in proc.stdout and "--force" in proc.stdout


def test_the_help_lists_each_command_in_whole_sentences_and_flags_without_a_type():
    """A docstring's hard line breaks are not kept in the list of commands (it wrapped "Hand
    edits" / "do not count: ..." mid-sentence), and a flag shows no `<bool>` as if it took a
    value: in the app's help and in every command's."""
    import inspect

    from loopgen.cli import app
    from typer.testing import CliRunner

    wide = {"COLUMNS": "400"}  # every command's summary fits on a line of its own
    shown = CliRunner().invoke(app, ["--help"], env=wide).output
    for info in app.registered_commands:
        summary = " ".join(inspect.cleandoc(info.callback.__doc__).split("\n\n")[0].split())
        assert any(summary in line for line in shown.splitlines()), (summary, shown)
    for command in ["", *(info.callback.__name__ for info in app.registered_commands)]:
        text = CliRunner().invoke(app, [*command.split(), "--help"], env=wide).output
        assert "Usage" in text and "<bool>" not in text, text
        assert "--help " in text


def test_version():
    proc = run_cli("--version")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("loopgen ")


# --- rendering --------------------------------------------------------------------------------


def test_a_description_of_megabytes_leaves_the_scripts_help_quick(tmp_path):
    """The script's --help shows the first line of its docstring, which render wraps but for a
    paragraph of lines of the user's own (or a word longer than a line): a description whose
    first line is 1 MB (argparse wrapping it took seconds: 14 s for 10 MB) answers at once,
    that line whole."""
    data = load_spec(MNIST).model_dump(mode="json")
    first = "the gradient tape of each replica " * 30_000
    long = tmp_path / "long.json"
    long.write_text(json.dumps({**data, "description": f"{first}\nand a line of its own."}))
    script = tmp_path / "train.py"
    rendered = run_cli("render", str(long), "-o", str(script))
    assert rendered.returncode == 0, rendered.stderr
    start = time.monotonic()
    shown = subprocess.run(
        [sys.executable, str(script), "--help"], capture_output=True, text=True, timeout=120
    )
    seconds = time.monotonic() - start
    assert shown.returncode == 0 and first.strip() in shown.stdout, shown.stderr
    assert seconds < 2, seconds  # the interpreter's start included


def test_render_to_stdout():
    proc = run_cli("render", str(MNIST))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith('"""')
    assert "def main" in proc.stdout
    assert "Written by loopgen" in proc.stdout
    assert "BATCH_SIZE = 64" in proc.stdout
    compile(proc.stdout, "train.py", "exec")  # a Python script


def test_render_to_file(tmp_path):
    out = tmp_path / "train.py"
    proc = run_cli("render", str(MNIST), "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == ""
    assert f"wrote {out}" in proc.stderr
    assert out.read_text() == run_cli("render", str(MNIST)).stdout
    # The script and its runtime beside it, their merge bases, no temporary files left.
    assert list(tree(tmp_path)) == [
        ".loopgen/.gitignore", ".loopgen/loopgen_runtime.py.base", ".loopgen/train.py.base",
        "loopgen_runtime.py", "train.py",
    ]  # fmt: skip
    assert tree(tmp_path)[".loopgen/train.py.base"] == out.read_bytes()
    runtime = tmp_path / "loopgen_runtime.py"
    assert f"wrote {runtime}" in proc.stderr
    assert tree(tmp_path)[".loopgen/loopgen_runtime.py.base"] == runtime.read_bytes()


def test_render_into_a_new_directory(tmp_path):
    out = tmp_path / "new" / "dir" / "train.py"
    proc = run_cli("render", str(MNIST), "--output", str(out))
    assert proc.returncode == 0, proc.stderr
    assert out.read_text().startswith('"""')


def test_set_changes_the_script():
    proc = run_cli("render", str(MNIST), "--set", "data.batch_size=32")
    assert proc.returncode == 0, proc.stderr
    assert "BATCH_SIZE = 32" in proc.stdout
    assert "BATCH_SIZE = 64" not in proc.stdout


def test_several_sets(tmp_path):
    out = tmp_path / "train.py"
    proc = run_cli(
        "render", str(MNIST), "-o", str(out),
        "--set", "data.batch_size=32", "--set", "loop.epochs=7",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    source = out.read_text()
    assert "BATCH_SIZE = 32" in source and "EPOCHS = 7" in source


def test_validate_ok_and_with_set():
    proc = run_cli("validate", str(MNIST), "--set", "data.batch_size=32")
    assert proc.returncode == 0, proc.stderr
    assert "ok" in proc.stdout and "mnist_mlp" in proc.stdout


# --- bad --set --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("override", "phrases"),
    [
        ("data.batch_size", ["--set 'data.batch_size'", "FIELD.PATH=VALUE"]),
        ("data.bach_size=32", ["spec.data.bach_size:", "unknown field"]),
        ("daat.batch_size=32", ["spec.daat:", "unknown field"]),
        ("model.layers[9].units=3", ["model.layers[9]", "out of range"]),
        ("data.batch_size=big", ["spec.data.batch_size:", "valid integer"]),
        ("data.batch_size=0", ["spec.data.batch_size:", "greater than 0"]),
        ("loss.from_logits=false", ["loss.from_logits=False", "model.layers[3]"]),
    ],
)
@pytest.mark.parametrize("command", ["render", "validate"])
def test_bad_set(tmp_path, command, override, phrases):
    out = tmp_path / "train.py"
    args = ["-o", str(out)] if command == "render" else []
    proc = run_cli(command, str(MNIST), *args, "--set", override)
    failed(proc, *phrases)
    assert not out.exists()


def test_bad_set_message_names_the_override():
    stderr = failed(run_cli("validate", str(MNIST), "--set", "data.batch_size=big"))
    assert "after --set data.batch_size=big" in stderr


# --- spec files that fail --------------------------------------------------------------------


def render_fails(tmp_path: Path, spec: Path, *phrases: str, extra: tuple[str, ...] = ()) -> str:
    """`render spec -o out` fails cleanly, writes nothing; so does `validate`."""
    out = tmp_path / "out" / "train.py"
    stderr = failed(run_cli("render", str(spec), "-o", str(out), *extra), *phrases)
    assert not out.exists() and not out.parent.exists()
    failed(run_cli("validate", str(spec), *extra), *phrases)
    return stderr


def test_spec_file_missing(tmp_path):
    missing = tmp_path / "nope.py"
    render_fails(tmp_path, missing, "spec file not found", str(missing))


def test_spec_file_not_python(tmp_path):
    path = tmp_path / "spec.yaml"
    path.write_text("name: x\n")
    render_fails(tmp_path, path, str(path), ".py")


def test_spec_file_is_a_directory(tmp_path):
    render_fails(tmp_path, tmp_path, str(tmp_path))


def test_syntax_error(tmp_path):
    path = spec_file(
        tmp_path,
        """\
        from loopgen.dsl import Spec

        spec = Spec(name="x",
        """,
    )
    render_fails(tmp_path, path, f"{path}:3", "syntax error", 'spec = Spec(name="x",')


def test_syntax_error_in_a_module_the_spec_imports(tmp_path):
    (tmp_path / "my_layers.py").write_text("def broken(:\n    pass\n")
    path = spec_file(
        tmp_path,
        """\
        import sys
        sys.path.insert(0, __file__.rsplit("/", 1)[0])
        import my_layers
        """,
    )
    render_fails(tmp_path, path, f"{tmp_path / 'my_layers.py'}:1", "syntax error")


def test_spec_raises_at_import(tmp_path):
    path = spec_file(
        tmp_path,
        """\
        import math

        width = math.sqrt(16)
        raise RuntimeError("boom")
        """,
    )
    stderr = render_fails(tmp_path, path, f"{path}:4", "RuntimeError", "boom")
    assert 'raise RuntimeError("boom")' in stderr  # the offending line is shown


def test_spec_raises_in_a_helper_function(tmp_path):
    # The line reported is the user's, even when the error comes from deeper down.
    path = spec_file(
        tmp_path,
        """\
        def helper():
            return {}["missing"]


        spec = helper()
        """,
    )
    render_fails(tmp_path, path, f"{path}:2", "KeyError", "missing")


def test_relative_spec_path_in_messages(tmp_path):
    spec_file(tmp_path, 'raise ValueError("bad value")\n')
    proc = run_cli("validate", "spec.py", cwd=tmp_path)
    failed(proc, "spec.py:1", "ValueError", "bad value")


def test_no_object_named_spec(tmp_path):
    path = spec_file(tmp_path, "training = 1\n")
    render_fails(tmp_path, path, "no object named 'spec'", "spec = Spec(...)")


def test_spec_under_another_name(tmp_path):
    path = spec_file(tmp_path, MNIST_SOURCE.replace("\nspec = Spec(", "\nother = Spec("))
    # Without --name, the message points at the Spec that is there.
    render_fails(tmp_path, path, "no object named 'spec'", "other", "--name")
    out = tmp_path / "train.py"
    proc = run_cli("render", str(path), "--name", "other", "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    assert "def main" in out.read_text()
    proc = run_cli("validate", str(path), "--name", "other")
    assert proc.returncode == 0, proc.stderr


def test_name_option_pointing_at_nothing(tmp_path):
    render_fails(tmp_path, MNIST, "no object named 'nope'", extra=("--name", "nope"))


@pytest.mark.parametrize(
    ("value", "kind"), [("3", "int"), ("'mnist'", "str"), ("[1, 2]", "list"), ("None", "NoneType")]
)
def test_spec_of_the_wrong_type(tmp_path, value, kind):
    path = spec_file(tmp_path, f"spec = {value}\n")
    render_fails(tmp_path, path, f"type {kind}", "not a loopgen Spec", "Spec(...)")


def _dict_spec_source() -> str:
    data = json.loads(json.dumps(load_spec(MNIST).model_dump(mode="json")))
    return f"spec = {data!r}\n"


def test_dict_spec_renders_like_the_spec(tmp_path):
    path = spec_file(tmp_path, _dict_spec_source())
    from_dict = run_cli("render", str(path))
    from_spec = run_cli("render", str(MNIST))
    assert from_dict.returncode == 0, from_dict.stderr
    assert from_spec.returncode == 0, from_spec.stderr
    assert "BATCH_SIZE = 64" in from_dict.stdout

    # The same script: only the spec file's path in the header (and so the script's own
    # checksum) differs.
    def masked(text: str) -> str:
        text = re.sub(r"(Written by loopgen \S+ from ).*\n", r"\1SPEC\n", text)
        return re.sub(r"script sha256 [0-9a-f]+", "", text)

    assert masked(from_dict.stdout) == masked(from_spec.stdout)


def test_dict_spec_with_a_bad_value(tmp_path):
    source = _dict_spec_source().replace("'batch_size': 64", "'batch_size': 'big'")
    assert "'big'" in source
    path = spec_file(tmp_path, source)
    render_fails(tmp_path, path, f"{path}: the spec has 1 error", "spec.data.batch_size:")


def test_dict_spec_with_set(tmp_path):
    path = spec_file(tmp_path, _dict_spec_source())
    proc = run_cli("render", str(path), "--set", "data.batch_size=16")
    assert proc.returncode == 0, proc.stderr
    assert "BATCH_SIZE = 16" in proc.stdout


def test_spec_construction_error(tmp_path):
    # Spec(...) itself raises in the spec file: the user's line and `field.path: message`.
    source = MNIST_SOURCE.replace('name="mnist_mlp"', 'name="mnist-mlp"')
    source = source.replace("seed=0,", "seed='zero',")
    assert source != MNIST_SOURCE
    path = spec_file(tmp_path, source)
    line = source.splitlines().index("spec = Spec(") + 1
    stderr = render_fails(
        tmp_path,
        path,
        f"{path}:{line}",
        "the spec has 2 errors",
        "spec.name: 'mnist-mlp' is not a valid Python identifier",
        "spec.seed: Input should be a valid integer",
    )
    assert "spec = Spec(" in stderr


def test_spec_cross_field_error_at_construction(tmp_path):
    source = MNIST_SOURCE.replace("from_logits=True", "from_logits=False")
    assert source != MNIST_SOURCE
    path = spec_file(tmp_path, source)
    render_fails(tmp_path, path, "loss.from_logits=False", "model.layers[3]", "from_logits=True")


def test_a_mistake_is_named_by_its_path_in_the_spec_however_the_spec_is_written(tmp_path):
    """A section built on its own line of a .py spec (`data=Data(..., batch_size=0)`) fails
    naming the field by its path in the spec, as a JSON spec and a --set do, not by the
    section's class (`Data.batch_size`); the .py spec's message still points at its line."""
    source = MNIST_SOURCE.replace("batch_size=64", "batch_size=0")
    assert source != MNIST_SOURCE
    path = spec_file(tmp_path, source)
    line = next(i for i, text in enumerate(source.splitlines(), 1) if "data=Data(" in text)
    problem = "\n  spec.data.batch_size: Input should be greater than 0\n"
    stderr = render_fails(tmp_path, path, f"{path}:{line}: the spec has 1 error:{problem}")
    assert "Data.batch_size" not in stderr
    data = load_spec(MNIST).model_dump(mode="json")
    data["data"]["batch_size"] = 0
    as_json = tmp_path / "spec.json"
    as_json.write_text(json.dumps(data))
    render_fails(tmp_path, as_json, f"{as_json}: the spec has 1 error:{problem}")
    given = run_cli("render", str(MNIST), "--set", "data.batch_size=0")
    failed(given, f"after --set data.batch_size=0: the spec has 1 error:{problem}")


def test_a_part_the_spec_does_not_hold_is_named_by_its_class_at_its_line(tmp_path):
    """A model built with arguments that do not validate, but left out of the spec: no path
    in the spec names it, so its class does (`Dense.units`, not the vocabulary's generic
    model), at the line that built it; the spec file may read what it was given."""
    source = MNIST_SOURCE.replace(
        "spec = Spec(", "unused = Dense(units=0)\nassert unused.units == 0\n\nspec = Spec("
    )
    path = spec_file(tmp_path, source)
    line = source.splitlines().index("unused = Dense(units=0)") + 1
    render_fails(
        tmp_path, path, f"{path}:{line}: the spec has 1 error:\n  Dense.units: 0 is out of range"
    )


def test_validate_lists_every_problem(tmp_path):
    proc = run_cli(
        "validate", str(MNIST),
        "--set", "data.batch_size=0", "--set", "loop.log_every_steps=-1", "--set", "naem=x",
    )  # fmt: skip
    stderr = failed(proc, "the spec has 3 errors")
    assert "  spec.data.batch_size: " in stderr
    assert "  spec.loop.log_every_steps: " in stderr
    assert "  spec.naem: unknown field" in stderr


def test_validate_shows_field_errors_and_cross_field_rules_at_once_each_at_its_line(tmp_path):
    """A misspelt field does not hide a cross-field rule (softmax with from_logits=True): both
    in one pass, each at the line that built its part (the rule at the layer's, not at
    `spec = Spec(`). A wrong value, which the rules would need, still hides them."""
    source = (
        MNIST.read_text()
        .replace("Dense(units=10, name=", 'Dense(units=10, activation="softmax", name=')
        .replace("log_every_steps=200", "log_every_steps=200, epoch=3")
    )
    path = spec_file(tmp_path, source)
    lines = source.splitlines()
    layer = next(i for i, line in enumerate(lines, 1) if "softmax" in line)
    loop = next(i for i, line in enumerate(lines, 1) if "epoch=3" in line)
    stderr = failed(run_cli("validate", str(path)), "the spec has 2 errors")
    assert stderr.startswith(f"error: {path}: the spec has 2 errors:\n"), stderr
    assert "\n  spec.loop.epoch: unknown field" in stderr, stderr
    assert f"\n    {path}:{loop}: loop=Loop(" in stderr, stderr
    assert "\n  spec: loss.from_logits=True but model.layers[3].activation=" in stderr, stderr
    assert f'\n    {path}:{layer}: Dense(units=10, activation="softmax", name=' in stderr
    assert "spec = Spec(" not in stderr

    # A Keras argument misspelt (optional): the same.
    typo = source.replace("epoch=3", "").replace('activation="relu"', 'activaton="relu"', 1)
    stderr = failed(run_cli("validate", str(spec_file(tmp_path, typo))), "the spec has 2 errors")
    assert "has no argument 'activaton'" in stderr and "from_logits=True but" in stderr

    # Misspelt, the rules see it under the name suggested (a required one, filters, they need),
    # or, where that value does not validate either, without it.
    typo = source.replace("epoch=3", "").replace("units=64", "unit=64", 1)
    stderr = failed(run_cli("validate", str(spec_file(tmp_path, typo))), "the spec has 2 errors")
    assert "has no argument 'unit'; did you mean 'units'?" in stderr, stderr
    assert "from_logits=True but" in stderr, stderr
    typo = source.replace("epoch=3", "").replace('activation="relu"', "activaton=5", 1)
    stderr = failed(run_cli("validate", str(spec_file(tmp_path, typo))), "the spec has 2 errors")
    assert "has no argument 'activaton'" in stderr and "from_logits=True but" in stderr

    # A value that does not validate: the rules are not guessed without it.
    wrong = source.replace("epoch=3", "").replace("units=64", "units=0", 1)
    stderr = failed(run_cli("validate", str(spec_file(tmp_path, wrong))), "the spec has 1 error")
    assert "from_logits" not in stderr


# --- output safety ----------------------------------------------------------------------------


def test_refuses_to_overwrite_a_foreign_file(tmp_path):
    out = tmp_path / "train.py"
    out.write_text("# my own training script\nprint('precious')\n")
    before = tree(tmp_path)
    failed(
        run_cli("render", str(MNIST), "-o", str(out)), str(out), "not written by loopgen", "--force"
    )
    assert tree(tmp_path) == before

    proc = run_cli("render", str(MNIST), "-o", str(out), "--force")
    assert proc.returncode == 0, proc.stderr
    assert out.read_text() == run_cli("render", str(MNIST)).stdout
    backup = tmp_path / ".loopgen" / "train.py.orig"
    assert backup.read_bytes() == before["train.py"]  # --force kept the old file
    assert str(backup.relative_to(tmp_path)) in proc.stderr


def test_overwrites_a_rendered_file(tmp_path):
    out = tmp_path / "train.py"
    assert run_cli("render", str(MNIST), "-o", str(out)).returncode == 0
    out.chmod(0o755)
    proc = run_cli("render", str(MNIST), "-o", str(out), "--set", "data.batch_size=32")
    assert proc.returncode == 0, proc.stderr
    assert "BATCH_SIZE = 32" in out.read_text()
    assert out.stat().st_mode & 0o777 == 0o755  # the mode is kept
    assert list(tree(tmp_path)) == [
        ".loopgen/.gitignore", ".loopgen/loopgen_runtime.py.base", ".loopgen/train.py.base",
        "loopgen_runtime.py", "train.py",
    ]  # fmt: skip


@pytest.mark.parametrize(
    "breakage",
    [
        ("--set", "data.batch_size=big"),
        ("--set", "nonsense"),
        ("--name", "nope"),
        ("BROKEN_SPEC",),
        ("--set", "loss.kind=categorical_crossentropy"),
    ],
    ids=["bad-value", "bad-set", "bad-name", "broken-file", "cross-field"],
)
def test_failed_render_leaves_the_output_alone(tmp_path, breakage):
    out = tmp_path / "train.py"
    assert run_cli("render", str(MNIST), "-o", str(out)).returncode == 0
    spec = MNIST
    if breakage == ("BROKEN_SPEC",):
        spec, breakage = spec_file(tmp_path, "raise RuntimeError('boom')\n", "broken.py"), ()
    before = tree(tmp_path)
    failed(run_cli("render", str(spec), "-o", str(out), *breakage))
    assert tree(tmp_path) == before  # the script, its merge base: all as they were


def test_output_is_a_directory(tmp_path):
    failed(run_cli("render", str(MNIST), "-o", str(tmp_path)), "is a directory")


def test_output_below_a_file(tmp_path):
    (tmp_path / "afile").write_text("x")
    out = tmp_path / "afile" / "train.py"
    failed(run_cli("render", str(MNIST), "-o", str(out)), "cannot write", str(out))
    assert (tmp_path / "afile").read_text() == "x"


# --- determinism ------------------------------------------------------------------------------


def _render_with_hash_seed(example: Path, seed: str) -> str:
    proc = subprocess.run(
        [sys.executable, "-m", "loopgen", "render", str(example)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONHASHSEED": seed},
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_render_is_byte_identical(tmp_path):
    first, second = tmp_path / "a" / "train.py", tmp_path / "b" / "train.py"
    for out in (first, second):
        proc = run_cli("render", str(MNIST), "-o", str(out), "--set", "data.batch_size=8")
        assert proc.returncode == 0, proc.stderr
    assert first.read_bytes() == second.read_bytes()


@pytest.mark.parametrize("example", [MNIST, EXAMPLES / "shapes_unet.py"], ids=lambda p: p.stem)
def test_render_does_not_depend_on_the_hash_seed(example):
    renders = {seed: _render_with_hash_seed(example, seed) for seed in ("0", "1", "4242")}
    assert len(set(renders.values())) == 1, "renders differ between PYTHONHASHSEED values"


_RENDER_ALL = """\
import json, sys
from pathlib import Path
from loopgen.dsl.loader import load_spec
from loopgen.render import render_script
paths = sorted(Path(sys.argv[1]).glob("*.py"))
print(json.dumps({p.name: render_script(load_spec(p), spec_file=str(p)) for p in paths}))
"""


def test_every_example_renders_the_same_under_any_hash_seed():
    renders = []
    for seed in ("0", "1", "4242"):
        proc = subprocess.run(
            [sys.executable, "-c", _RENDER_ALL, str(EXAMPLES)],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=120,
            env={**os.environ, "PYTHONHASHSEED": seed},
        )
        assert proc.returncode == 0, proc.stderr
        renders.append(json.loads(proc.stdout))
    assert sorted(renders[0]) == sorted(p.name for p in EXAMPLE_FILES)
    for name in renders[0]:
        assert renders[0][name] == renders[1][name] == renders[2][name], name


# --- no TensorFlow while rendering ------------------------------------------------------------


def test_rendering_does_not_import_tensorflow(tmp_path):
    code = textwrap.dedent(
        f"""\
        import sys
        from pathlib import Path

        from typer.testing import CliRunner

        from loopgen.cli import app
        from loopgen.dsl.loader import load_spec
        from loopgen.render import render_script

        runner = CliRunner()
        for path in sorted(Path({str(EXAMPLES)!r}).glob("*.py")):
            for args in (["render", str(path)], ["validate", str(path)],
                         ["render", str(path), "-o", {str(tmp_path)!r} + "/" + path.name]):
                result = runner.invoke(app, args)
                assert result.exit_code == 0, (args, result.output, result.exception)
            assert "def main" in render_script(load_spec(path), spec_file=str(path))
        heavy = sorted(m for m in sys.modules
                       if m.split(".")[0] in ("tensorflow", "keras", "keras_hub", "pyarrow"))
        assert not heavy, heavy[:10]
        print("rendered without tensorflow")
        """
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "rendered without tensorflow" in proc.stdout
    assert len(list(tmp_path.glob("*.py"))) == len(EXAMPLE_FILES) + 1  # and loopgen_runtime.py


# --- pydantic plugins --------------------------------------------------------------------------

PLUGIN = """\
class Plugin:
    def new_schema_validator(self, schema, schema_type, *args, **kwargs):
        with open({marker!r}, "a") as f:
            f.write(getattr(schema_type, "__name__", str(schema_type)) + "\\n")
        return None, None, None


plugin = Plugin()
"""


def _render_in_a_new_process(tmp_path, plugins_env: str | None) -> subprocess.CompletedProcess:
    """`loopgen render` through its entry point, with a pydantic plugin installed the way a
    distribution installs one (an entry point in the `pydantic` group)."""
    site = tmp_path / "site"
    (site / "spy_plugin-1.0.dist-info").mkdir(parents=True)
    (site / "spy_plugin.py").write_text(PLUGIN.format(marker=str(tmp_path / "seen.txt")))
    dist = site / "spy_plugin-1.0.dist-info"
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: spy-plugin\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text("[pydantic]\nspy = spy_plugin:plugin\n")
    env = {**os.environ, "PYTHONPATH": str(site)}
    env.pop("PYDANTIC_DISABLE_PLUGINS", None)
    if plugins_env is not None:
        env["PYDANTIC_DISABLE_PLUGINS"] = plugins_env
    code = (
        "import sys\n"
        "from loopgen.__main__ import main\n"
        f"sys.argv = ['loopgen', 'render', {str(EXAMPLES / 'mnist_mlp.py')!r}]\n"
        "try:\n    main()\n"
        "finally:\n    print('importlib.metadata' in sys.modules, file=sys.stderr)\n"
    )
    return subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True
    )


def test_the_command_neither_loads_nor_looks_for_pydantic_plugins(tmp_path):
    """By default no plugin runs and none is searched for: the module that would search
    (pydantic.plugin._loader, which imports importlib.metadata) is never imported."""
    proc = _render_in_a_new_process(tmp_path, None)
    assert proc.returncode == 0, proc.stderr
    assert "def train_loop(" in proc.stdout
    assert proc.stderr.splitlines()[-1] == "False"  # importlib.metadata never imported
    assert not (tmp_path / "seen.txt").exists()


def test_an_empty_pydantic_disable_plugins_brings_plugins_back(tmp_path):
    """PYDANTIC_DISABLE_PLUGINS="" (pydantic_plugins.py): pydantic's own loader finds the
    plugin and calls it for the spec models, as in any other pydantic program."""
    proc = _render_in_a_new_process(tmp_path, "")
    assert proc.returncode == 0, proc.stderr
    seen = (tmp_path / "seen.txt").read_text().split()
    assert "Spec" in seen and "StrictModel" in seen
