"""The wheel ships the templates under the `loopgen` name and works from any directory; the
README's test command is what CI runs."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import zipfile

from helpers import ROOT


def _source_tree(tmp_path) -> str:
    """A copy of the files git tracks (or would: new, not ignored), so that the wheel is built
    from what a fresh clone has, never from a stale build/ folder in the working tree."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT, check=True, capture_output=True, text=True,
    ).stdout.split("\0")  # fmt: skip
    tree = tmp_path / "src"
    for name in filter(None, listed):
        if (ROOT / name).is_file():
            (tree / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, tree / name)
    return str(tree)


def test_wheel_ships_package_and_templates_and_renders_elsewhere(tmp_path):
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
         _source_tree(tmp_path), "-w", str(tmp_path / "wheel")],
        check=True, capture_output=True,
    )  # fmt: skip
    (wheel,) = (tmp_path / "wheel").glob("loopgen-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert "loopgen/templates/script.py.jinja" in names
    assert "loopgen/templates/partials/steps.jinja" in names
    assert "loopgen/templates/partials/data/csv.jinja" in names
    assert "loopgen/output/merge.py" in names
    assert "loopgen/runtime/loopgen_runtime.py" in names  # what a render writes beside a script
    assert "loopgen/examples/shapes_unet.py" in names  # `loopgen init --from` needs them
    assert "loopgen/examples/envs/corridor.py" in names  # and corridor_ppo its environment
    # No generic top-level modules squatting in site-packages.
    assert {n.split("/")[0] for n in names} == {
        "loopgen",
        wheel.name.split("-py3")[0] + ".dist-info",
    }

    target = tmp_path / "site"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(target),
         str(wheel)],
        check=True, capture_output=True,
    )  # fmt: skip
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    spec = elsewhere / "spec.py"
    spec.write_text((ROOT / "examples" / "mnist_mlp.py").read_text())
    proc = subprocess.run(
        [sys.executable, "-c",
         "import loopgen, sys; assert loopgen.__file__.startswith(sys.argv[1]), loopgen.__file__;"
         "from loopgen.__main__ import main;"
         "sys.argv = ['loopgen', 'render', 'spec.py', '-o', 'train.py'];"
         "main()", str(target)],
        cwd=elsewhere, capture_output=True, text=True,
        env={**os.environ, "PYTHONPATH": str(target)},
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "def train_loop(iterator, num_steps):" in (elsewhere / "train.py").read_text()
    shipped = (target / "loopgen" / "runtime" / "loopgen_runtime.py").read_text()
    written = (elsewhere / "loopgen_runtime.py").read_text()
    assert written.split("runtime sha256")[1:] and written.count("\n") == shipped.count("\n")
    assert (elsewhere / ".loopgen" / "train.py.base").read_text() == (
        elsewhere / "train.py"
    ).read_text()

    proc = subprocess.run(
        [sys.executable, "-c",
         "from loopgen.__main__ import main; import sys;"
         "sys.argv = ['loopgen', 'init', 'demo.py', '--from', 'corridor_ppo']; main()"],
        cwd=elsewhere, capture_output=True, text=True,
        env={**os.environ, "PYTHONPATH": str(target)},
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert 'name="demo"' in (elsewhere / "demo.py").read_text()
    shipped = (ROOT / "examples" / "envs" / "corridor.py").read_text()
    assert (elsewhere / "envs" / "corridor.py").read_text() == shipped


def test_readme_opens_with_the_two_commands_and_ci_runs_the_test_command():
    readme = (ROOT / "README.md").read_text()
    blocks = [b.split("```", 1)[0] for b in readme.split("```bash\n")[1:3]]
    demo, tests = (b.strip() for b in blocks)
    assert "loopgen render examples/shapes_unet.py" in demo and "python train.py" in demo
    assert tests.endswith("pytest -n 2")  # the whole suite, two processes (pytest-xdist)
    assert tests in (ROOT / ".ci" / "run").read_text()


def test_project_code_passes_ruff():
    """The project's own code (not only what it generates) is linted and formatted."""
    for args in (["check"], ["format", "--check"]):
        proc = subprocess.run(
            [sys.executable, "-m", "ruff", *args, "--no-cache", str(ROOT)],
            capture_output=True, text=True, cwd=ROOT,
        )  # fmt: skip
        assert proc.returncode == 0, proc.stdout + proc.stderr


def test_the_docs_claims_that_a_test_can_check():
    """The flags the README and the site's pages name exist (the generated scripts', loopgen's,
    the bench's or a tool's the pages show: tensorboard, srun, pytest, mkdocs), the files they
    say a run directory holds are written by the scripts, and their count of broken specs is
    the folder's."""
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    docs = "".join(page.read_text() for page in pages)
    # mnist_mlp has no validation data: the others' scripts evaluate (houses_tabular's on
    # other CSV files too; cartpole_ppo's by playing episodes); shapes_flow's sample.
    names = ("mnist_mlp", "shapes_plateau", "houses_tabular", "cartpole_ppo", "shapes_flow")
    script = "".join((ROOT / "generated" / f"{name}.py").read_text() for name in names)
    script += (ROOT / "generated" / "loopgen_runtime.py").read_text()  # the debugging flags
    sources = "".join(
        (ROOT / name).read_text()
        for name in (
            "cli.py",
            "bench/__main__.py",
            "__main__.py",
            "tests/mutants.py",
            "docs/figures/make.py",
        )
    )
    tools = {"--logdir", "--nodes", "--ntasks-per-node", "--help"}
    tools |= {"--dir", "--all", "--rest", "--model"}  # saved_model_cli, tensorflow_model_server
    tools |= {"--strict", "--durations", "--junitxml", "--snapshot-update"}  # mkdocs, pytest
    tools.add("--exit-code")  # git diff's, which loopgen diff's exit status follows
    typer = {"--install-completion", "--show-completion"}
    for flag in sorted(set(re.findall(r"(?<![\w-])--[a-z][a-z0-9-]*", docs)) - tools - typer):
        assert f'"{flag}"' in script + sources, f"the docs name {flag}"
    for name in ("runs.jsonl", "setup.json", "metrics.jsonl", "checkpoints", "export"):
        assert name in docs and name in script, name
    (count,) = re.findall(r"`tests/bad_specs/` holds (\d+) such mistakes", docs)
    specs = [p for p in (ROOT / "tests" / "bad_specs").iterdir() if p.suffix in (".py", ".json")]
    assert int(count) == len(specs)
