"""The commands around rendering: `schema` (and specs written as JSON data), `init`, shell
completion, and the pre-commit hook that runs `check`."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import data
import jsonschema
import pydantic
import pytest
import yaml
from helpers import EXAMPLES, ROOT, run_cli, tree
from loopgen.dsl import Data, KerasLoss, KerasOptimizer, Spec, catalog
from loopgen.dsl.base import StrictModel
from loopgen.dsl.docs import document
from loopgen.dsl.loader import load_spec
from loopgen.render import stamp
from test_cli import failed

EXAMPLE_FILES = sorted(EXAMPLES.glob("*.py"))
LOOPGEN = Path(sys.executable).parent / "loopgen"  # the installed command, as users call it


@pytest.fixture(scope="session")
def schema() -> dict:
    proc = run_cli("schema")
    assert proc.returncode == 0, proc.stderr
    schema = json.loads(proc.stdout)
    jsonschema.Draft202012Validator.check_schema(schema)
    return schema


@pytest.fixture(scope="session")
def validator(schema) -> jsonschema.Draft202012Validator:
    """One validator for every test (jsonschema.validate checks the schema again each call)."""
    return jsonschema.Draft202012Validator(schema)


def as_data(example: Path) -> dict:
    return load_spec(example).model_dump(mode="json")


# --- schema ------------------------------------------------------------------------------------


@pytest.mark.parametrize("example", EXAMPLE_FILES, ids=lambda p: p.stem)
def test_schema_validates_every_example_as_data(validator, example):
    validator.validate(as_data(example))


@pytest.mark.parametrize(
    "breakage",
    [
        ("naem", "mnist"),  # a typo in a field name
        ("data", {"train": {"kind": "keras_dataset", "name": "mnist"}, "batch_size": "big"}),
        ("optimizer", {"kind": "adamw_typo", "learning_rate": 0.001}),
        ("loop", {"epochs": 0}),
        ("model", {"kind": "sequential", "input_shape": [28, 28], "layers": [{"kind": "Dens"}]}),
    ],
    ids=["unknown-field", "wrong-type", "unknown-optimizer", "zero-epochs", "unknown-layer"],
)
def test_schema_rejects_a_broken_spec_like_the_loader_does(validator, breakage, tmp_path):
    field, value = breakage
    data = {**as_data(EXAMPLES / "mnist_mlp.py"), field: value}
    with pytest.raises(jsonschema.ValidationError):
        validator.validate(data)
    path = tmp_path / "spec.json"
    path.write_text(json.dumps(data))
    failed(run_cli("validate", str(path)), f"spec.{field}")


def test_schema_describes_every_field_with_its_docstring(schema):
    document(StrictModel)  # the descriptions this process's models get on demand
    for name, definition in schema["$defs"].items():
        assert definition.get("description"), name
        for field, prop in definition.get("properties", {}).items():
            assert prop.get("description"), f"{name}.{field}"
    assert schema["$defs"]["Data"]["properties"]["batch_size"]["description"] == (
        Data.model_fields["batch_size"].description
    )
    assert schema["properties"]["name"]["description"] == Spec.model_fields["name"].description


@pytest.mark.parametrize("section, model", [("losses", KerasLoss), ("optimizers", KerasOptimizer)])
def test_schema_offers_only_arguments_the_spec_accepts(schema, section, model):
    """Each argument the schema lets an editor complete, set to Keras' default, validates: the
    schema leaves out what the script sets itself (a loss's reduction, an optimizer's clipping
    and loss scale factor), as validation does."""
    for key, definition in schema["$defs"].items():
        if not key.startswith(f"{section}."):
            continue
        name = key.split(".", 1)[1]
        arguments = catalog._arguments(section, name)
        for prop in definition["properties"]:
            if prop in arguments and not arguments[prop].required:
                data = {"kind": name, prop: arguments[prop].default}
                try:
                    model.model_validate(data)
                except pydantic.ValidationError as error:
                    raise AssertionError(f"the schema offers {key}.{prop}: {error}") from None


def test_schema_to_a_file(tmp_path):
    out = tmp_path / "loopgen.schema.json"
    proc = run_cli("schema", "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    assert json.loads(out.read_text()) == json.loads(run_cli("schema").stdout)


@pytest.mark.parametrize("example", EXAMPLE_FILES, ids=lambda p: p.stem)
def test_json_spec_renders_the_same_script(example, tmp_path):
    """A spec written as data (pointing at its schema, as an editor wants) is the same spec."""
    path = tmp_path / f"{example.stem}.json"
    path.write_text(json.dumps({"$schema": "loopgen.schema.json", **as_data(example)}, indent=2))
    data.companions(example.stem, tmp_path)  # corridor_ppo's environment, beside the spec
    from_json = run_cli("render", str(path))
    from_python = run_cli("render", str(example))
    assert from_json.returncode == 0, from_json.stderr
    assert stamp.header(from_json.stdout).spec_hash == stamp.header(from_python.stdout).spec_hash

    def body(script: str) -> str:  # all but the header, which names the spec file
        return script[script.index("\nimport ") :]

    # An MLflow run uploads its spec file (its "spec_file"), which the script names too.
    json_body = body(from_json.stdout).replace(f'"spec_file": "{path}"', '"spec_file": ...')
    python_body = body(from_python.stdout).replace(
        f'"spec_file": "examples/{example.name}"', '"spec_file": ...'
    )
    assert json_body == python_body


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"name": "x",\n  "seed": }', ":2:11: not valid JSON"),
        ("[1, 2]", "a JSON spec is an object of spec fields, not a list"),
    ],
)
def test_json_spec_that_is_not_a_spec(tmp_path, text, message):
    path = tmp_path / "spec.json"
    path.write_text(text)
    failed(run_cli("render", str(path)), str(path), message)


# --- init --------------------------------------------------------------------------------------


def test_init_writes_a_spec_that_validates_and_renders(tmp_path):
    proc = run_cli("init", "segmenter.py", "--from", "shapes_unet", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "loopgen render segmenter.py -o train.py" in proc.stderr  # what to do next
    spec = load_spec(tmp_path / "segmenter.py")
    assert spec.name == "segmenter"  # the file's name is the run's name
    assert spec.model_dump(exclude={"name"}) == load_spec(EXAMPLES / "shapes_unet.py").model_dump(
        exclude={"name"}
    )
    proc = run_cli("render", "segmenter.py", "-o", "train.py", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert 'OUTPUT_DIR = "runs/segmenter"' in (tmp_path / "train.py").read_text()


def test_init_writes_the_environment_of_yours_an_example_imports_beside_its_spec(tmp_path):
    """corridor_ppo's environment is a package of the user's (`envs.corridor:make`): init
    writes it beside the spec, where validation (from any directory: the spec's folder is
    importable) and the rendered script (beside it) import it."""
    folder = tmp_path / "project"
    folder.mkdir()
    proc = run_cli("init", "walk.py", "--from", "corridor_ppo", cwd=folder)
    assert proc.returncode == 0, proc.stderr
    assert "wrote walk.py (and envs/__init__.py, envs/corridor.py)" in proc.stderr
    module = (EXAMPLES / "envs" / "corridor.py").read_text()
    assert (folder / "envs" / "corridor.py").read_text() == module
    proc = run_cli("render", "project/walk.py", "-o", "project/train.py", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "from envs.corridor import make as make_env" in (folder / "train.py").read_text()
    # A second spec started there would overwrite the user's environment: refused, untouched.
    (folder / "envs" / "corridor.py").write_text(module + "# edited\n")
    before = tree(folder)
    failed(run_cli("init", "again.py", "--from", "corridor_ppo", cwd=folder),
           "envs/__init__.py already exists")  # fmt: skip
    assert tree(folder) == before


def test_loading_a_spec_leaves_pythons_path_as_it_was(tmp_path, monkeypatch):
    """Validation imports an environment of yours from beside the spec, then from the
    current directory; Python's path is as before afterwards, the interpreter's own "" (as
    `python -c` and notebooks have it) still first."""
    from loopgen.dsl.environment import read_spaces

    data.companions("corridor_ppo", tmp_path)
    shutil.copy(EXAMPLES / "corridor_ppo.py", tmp_path / "spec.py")
    monkeypatch.setattr(sys, "path", ["", *sys.path])
    before = list(sys.path)
    read_spaces.cache_clear()  # made again, not taken from an earlier test's load
    spaces = load_spec(tmp_path / "spec.py").data.spaces()
    assert spaces.named == (("goal", (8,)), ("position", (8,)))
    assert sys.path == before


def test_a_render_reads_the_spaces_of_your_environment_from_the_cache_until_its_code_changes(
    tmp_path,
):
    """Issue 63, item 24: a render of corridor_ppo imported Gymnasium and the user's module to
    read the spaces each time (0.24 s of loopgen's own 0.1 s goal). They are kept in loopgen's
    cache by the source of the module's package: the second render imports neither, and an
    edit to a file of the package makes the environment again (here it fails, and says so)."""
    data.companions("corridor_ppo", tmp_path)
    shutil.copy(EXAMPLES / "corridor_ppo.py", tmp_path / "spec.py")
    module, imports = tmp_path / "envs" / "corridor.py", tmp_path / "imports.txt"
    # Each import of the module leaves a line (the environment's making silences stderr).
    module.write_text(module.read_text() + f"\nopen({str(imports)!r}, 'a').write('x\\n')\n")
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")}

    def render():
        command = [sys.executable, "-X", "importtime", "-m", "loopgen", "render", "spec.py",
                   "-o", "train.py", "--force"]  # fmt: skip
        proc = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True)
        imported = {line.rsplit("|", 1)[-1].strip() for line in proc.stderr.splitlines()
                    if line.startswith("import time:")}  # fmt: skip
        count = len(imports.read_text().splitlines()) if imports.exists() else 0
        return proc, "gymnasium" in imported, count

    first, gymnasium, count = render()
    assert first.returncode == 0 and gymnasium and count == 1, first.stderr[-2000:]
    (tmp_path / "train.py").unlink()
    second, gymnasium, count = render()
    assert second.returncode == 0 and not gymnasium and count == 1, second.stderr[-2000:]
    assert (tmp_path / "train.py").is_file()
    module.write_text(module.read_text() + "\nraise RuntimeError('edited')\n")
    third, gymnasium, count = render()
    assert third.returncode != 0 and count > 1  # imported again (once per check that asks)
    assert "making the environment failed (RuntimeError: edited)" in third.stderr


def test_files_written_together_are_all_written_or_none(tmp_path):
    """init writes an example's package and its spec with write_all: when one cannot be
    written (here its folder would be inside a file), the files and folders written before
    it are removed again, and what was there stays."""
    from loopgen.errors import OutputError
    from loopgen.output.files import write_all

    (tmp_path / "kept.txt").write_text("mine")
    (tmp_path / "blocker").write_text("a file, not a folder")
    before = tree(tmp_path)
    files = {tmp_path / "envs" / "deep" / "a.py": "a", tmp_path / "envs" / "b.py": "b",
             tmp_path / "blocker" / "spec.py": "spec"}  # fmt: skip
    with pytest.raises(OutputError, match=r"blocker.*; start somewhere else"):
        write_all(files, fix="start somewhere else")
    assert tree(tmp_path) == before and not (tmp_path / "envs").exists()
    write_all({p: text for p, text in files.items() if "blocker" not in p.parts}, fix="")
    assert (tmp_path / "envs" / "deep" / "a.py").read_text() == "a"
    # A file that is there already is never overwritten, nor removed by the rollback.
    with pytest.raises(OutputError, match=r"kept\.txt already exists"):
        write_all({tmp_path / "new.py": "new", tmp_path / "kept.txt": "theirs"}, fix="")
    assert (tmp_path / "kept.txt").read_text() == "mine" and not (tmp_path / "new.py").exists()


def test_init_defaults_and_names_that_cannot_be_run_names(tmp_path):
    assert run_cli("init", cwd=tmp_path).returncode == 0
    assert load_spec(tmp_path / "spec.py").name == "spec"
    assert run_cli("init", "my-run.py", "--from", "cifar10_vgg", cwd=tmp_path).returncode == 0
    assert load_spec(tmp_path / "my-run.py").name == "cifar10_vgg"  # kept: not an identifier


def test_init_never_overwrites(tmp_path):
    (tmp_path / "spec.py").write_text("precious = 1\n")
    before = tree(tmp_path)
    failed(run_cli("init", "spec.py", cwd=tmp_path), "already exists")
    failed(run_cli("init", "spec.txt", cwd=tmp_path), "ends in .py")
    proc = run_cli("init", "x.py", "--from", "nope", cwd=tmp_path)
    assert proc.returncode == 2 and "'nope' is not one of" in proc.stderr  # click's usage error
    assert tree(tmp_path) == before


def test_init_lists_its_starting_points():
    proc = run_cli("init", "--list")
    assert proc.returncode == 0, proc.stderr
    names = [line.split()[0] for line in proc.stdout.splitlines()]
    assert names == [p.stem for p in EXAMPLE_FILES]
    assert "Offline demo" in proc.stdout


# --- shell completion --------------------------------------------------------------------------


def complete(words: str) -> list[str]:
    """What bash completion offers for the last of `words`, through typer's real protocol."""
    env = {
        **os.environ,
        "_LOOPGEN_COMPLETE": "complete_bash",
        "COMP_WORDS": words,
        "COMP_CWORD": str(len(words.split()) - (0 if words.endswith(" ") else 1)),
    }
    proc = subprocess.run([str(LOOPGEN)], env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.split()


def test_shell_completion():
    assert set(complete("loopgen ")) >= {"render", "check", "diff", "schema", "init", "validate"}
    assert complete("loopgen ch") == ["check"]
    assert complete("loopgen render spec.py --variant m") == ["mirrored", "multi_worker"]
    assert complete("loopgen init x.py --from shapes_u") == ["shapes_unet"]
    # Typer finds the shell among the command's parent processes (a "bash" after the flag
    # is never read): run from bash, as a user runs it, whatever started pytest ("; exit $?"
    # keeps bash from replacing itself with the command).
    proc = subprocess.run(
        ["bash", "-c", f"{LOOPGEN} --show-completion; exit $?"], capture_output=True, text=True
    )
    assert proc.returncode == 0 and "_LOOPGEN_COMPLETE=complete_bash" in proc.stdout


# --- pre-commit --------------------------------------------------------------------------------


def test_pre_commit_manifest_is_valid():
    pre_commit = shutil.which("pre-commit", path=str(LOOPGEN.parent))
    proc = subprocess.run(
        [pre_commit, "validate-manifest", str(ROOT / ".pre-commit-hooks.yaml")],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_pre_commit_hook_blocks_a_commit_with_a_stale_script(tmp_path):
    """The hook as the manifest declares it, run by pre-commit in a real git repository. (The
    hook's `language: system` here only skips installing loopgen into pre-commit's own
    environment, which would need the network.)"""
    (hook,) = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())
    repo = tmp_path / "project"
    repo.mkdir()
    spec = repo / "spec.py"
    spec.write_text((EXAMPLES / "mnist_mlp.py").read_text())
    assert run_cli("render", "spec.py", "-o", "train.py", cwd=repo).returncode == 0
    local = {**hook, "language": "system", "args": ["spec.py", "train.py"]}
    config = {"repos": [{"repo": "local", "hooks": [local]}]}
    (repo / ".pre-commit-config.yaml").write_text(yaml.safe_dump(config))
    env = {
        **os.environ,
        "PRE_COMMIT_HOME": str(tmp_path / "cache"),
        "PATH": f"{LOOPGEN.parent}{os.pathsep}{os.environ['PATH']}",
        "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
        "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com",
    }  # fmt: skip

    def git(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["git", *args], cwd=repo, env=env, capture_output=True, text=True)

    def pre_commit() -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(LOOPGEN.parent / "pre-commit"), "run", "--all-files"],
            cwd=repo, env=env, capture_output=True, text=True, timeout=120,
        )  # fmt: skip

    assert git("init", "-q").returncode == 0
    assert git("add", "-A").returncode == 0
    assert pre_commit().returncode == 0
    spec.write_text(spec.read_text().replace("epochs=2", "epochs=5"))
    assert git("add", "-A").returncode == 0
    proc = pre_commit()
    assert proc.returncode == 1
    assert "out of date" in proc.stdout and "loopgen render spec.py -o train.py" in proc.stdout
    assert run_cli("render", "spec.py", "-o", "train.py", cwd=repo).returncode == 0
    assert pre_commit().returncode == 0
