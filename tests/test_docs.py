"""The documentation site (docs/, mkdocs.yml) and the README, its landing page: the site builds
with `mkdocs build --strict` (broken links and anchors fail it); the reference, written from the
spec models at every build, lists every model and field with its docstring; every spec snippet
validates; every excerpt of a generated script is in that script; the names the pages cite
(flags, repository files, tests) exist."""

from __future__ import annotations

import functools
import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from helpers import ACTING, ROOT
from pydantic import BaseModel

HOOKS = ROOT / "docs" / "hooks"
PAGES = sorted((ROOT / "docs").rglob("*.md"))
README = ROOT / "README.md"


def hooks():
    """The site's page generators, imported as the MkDocs hook imports them."""
    if str(HOOKS) not in sys.path:
        sys.path.insert(0, str(HOOKS))
    import gallery_pages
    import reference_pages

    return reference_pages, gallery_pages


def cli_hook():
    """The command-line reference's generator (docs/hooks/cli_pages.py)."""
    hooks()
    import cli_pages

    return cli_pages


def code_blocks(text: str, language: str) -> list[tuple[str, str]]:
    """Each fenced block of `language` as (the nearest line of text above it, its code)."""
    found = []
    for match in re.finditer(rf"^```{language}[^\n]*\n(.*?)^```", text, re.S | re.M):
        above = [line for line in text[: match.start()].splitlines() if line.strip()]
        found.append((above[-1] if above else "", match.group(1)))
    return found


# --- The site builds -----------------------------------------------------------------------


@pytest.mark.slow
def test_the_site_builds_strictly(tmp_path):
    """`mkdocs build --strict` from the repository, as CI and a fresh clone run it: a broken link
    or anchor (the reference's cross-links included), a page missing from the navigation or a
    missing snippet file stops it."""
    site = tmp_path / "site"
    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
        cwd=ROOT, capture_output=True, text=True, timeout=600,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert (site / "reference" / "spec" / "index.html").is_file()
    gallery = (site / "gallery" / "shapes_unet" / "index.html").read_text()
    # The spec and its script, included whole by the snippets extension.
    assert "Offline demo: a small UNet" in gallery  # the spec's docstring
    assert "Written by loopgen" in gallery and "script sha256" in gallery  # the script's
    assert (site / "guides" / "ways" / "gan" / "index.html").is_file()
    assert "--fast-dev-run" in (site / "cli" / "index.html").read_text()
    # What the browser's search reads (checked by hand in Chromium: `learning_rate` finds the
    # optimizers' defaults first, `SparseCategoricalCrossentropy` the Keras vocabulary): a field
    # and a class name are in it, and the wrap marks of table code (<wbr>) are not.
    index = json.loads((site / "search" / "search_index.json").read_text())
    texts = {doc["location"]: doc["text"] for doc in index["docs"]}
    for word, page in (
        ("learning_rate", "reference/training/#optimizer-defaults"),
        ("SparseCategoricalCrossentropy", "reference/keras/#losses"),
        ("KerasFile", "guides/ways/"),
    ):
        assert word in texts.get(page, ""), (word, page)
    assert not any("wbr" in text for text in texts.values())


def test_code_in_a_table_may_wrap_after_punctuation_and_dots_never_inside_a_name():
    """The hook's break marks in table cells: after `(`, `=`, `,`, `/`, `|` and a dot before a
    name, so that the debugging guide's TensorFlow column (`tf.config.run_functions_eagerly(
    True)`) wraps within a 1,280-pixel window (seen in headless Chromium, with the stylesheet's
    narrower padding of five-column tables); never inside a name, a number or `()`, and
    never outside a table."""
    import importlib.util

    # docs/hooks/site.py, loaded from its file as MkDocs loads it (`site` is also the stdlib's).
    spec = importlib.util.spec_from_file_location("loopgen_site_hook", HOOKS / "site.py")
    hook = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hook)
    html = hook.on_page_content(
        "<p><code>tf.config.run_functions_eagerly(True)</code></p>"
        "<td><code>tf.config.run_functions_eagerly(True)</code> <code>breakpoint()</code></td>"
        "<td><code>Adam(learning_rate=0.001, beta_1=0.9)</code></td>"
    )
    assert html == (
        "<p><code>tf.config.run_functions_eagerly(True)</code></p>"
        "<td><code>tf.<wbr>config.<wbr>run_functions_eagerly(<wbr>True)</code> "
        "<code>breakpoint()</code></td>"
        "<td><code>Adam(<wbr>learning_rate=<wbr>0.001, beta_1=<wbr>0.9)</code></td>"
    )


# --- The reference is the models ------------------------------------------------------------


def models_a_spec_can_hold() -> set[type[BaseModel]]:
    """Computed here, apart from the generator: every model reachable from `Spec` and `Sweep`,
    and the public models of `loopgen.dsl` (the regularizers, held as argument values)."""
    import loopgen.dsl as dsl
    from loopgen.dsl.docs import reachable_models
    from loopgen.dsl.sweep import Sweep

    public = {v for v in vars(dsl).values() if isinstance(v, type) and issubclass(v, BaseModel)}
    return reachable_models(dsl.Spec) | reachable_models(Sweep) | public


def sections(page: str) -> dict[str, str]:
    """A reference page's model sections, by model name, each up to the next section (a model's
    or another, as the optimizers' defaults on theirs)."""
    found = {}
    for match in re.finditer(r"^## ([^\n]+)\n(.*?)(?=^## |\Z)", page, flags=re.M | re.S):
        model = re.fullmatch(r"(\w+) \{ #\w+ \}", match.group(1))
        if model:
            found[model.group(1)] = match.group(2)
    return found


@functools.cache
def reference_pages() -> dict[str, str]:
    """The reference as the site's build writes it (once per test process)."""
    reference, _ = hooks()
    return reference.pages()


def test_the_reference_lists_every_field_of_every_model_with_its_docstring():
    reference, _ = hooks()
    pages = reference_pages()
    models = models_a_spec_can_hold()
    assert len(models) > 80  # the spec's and the sweep's: sources, layers, ways, schedules, ...
    documented = {}
    for path, text in pages.items():
        for name, section in sections(text).items():
            documented[name] = (path, section)
    for model in models:
        assert model.__name__ in documented, f"{model.__name__} is missing from the reference"
        path, section = documented[model.__name__]
        assert path == f"reference/{reference.page_of(model)}.md"
        doc = " ".join((model.__doc__ or "").split())
        assert doc and doc[:60] in " ".join(section.split()), model.__name__
        rows = {
            row.split(" | ")[0].strip("| `"): row
            for row in section.splitlines()
            if row.startswith("| `")
        }
        assert set(rows) == set(model.model_fields), model.__name__
        for name, info in model.model_fields.items():
            description = " ".join((info.description or "").split())
            assert description, f"{model.__name__}.{name} has no docstring"
            assert reference.escape(description)[:80] in rows[name], (model.__name__, name)
    # Every union a field can take lists its kinds.
    unions = sections(pages["reference/types.md"])
    strategy = unions["Strategy"]
    for kind in ("single_device", "mirrored", "multi_worker", "tpu"):
        assert f'`"{kind}"`' in strategy
    assert "[PPO](ways-rl.md#ppo)" in unions["Training"]
    # Every Keras optimizer with its defaults, on the optimizers' page, not the vocabulary's.
    training = pages["reference/training.md"]
    assert "## Optimizers and their defaults { #optimizer-defaults }" in training
    assert "| `Adam` | `adam` | `learning_rate=0.001`, `beta_1=0.9`" in training
    assert "| `Adam` |" not in pages["reference/keras.md"]


def test_a_model_field_without_a_docstring_stops_the_reference(monkeypatch):
    """The generator refuses a hole: a field added to a model without the docstring under it
    stops the build, naming the field."""
    from loopgen.dsl.base import StrictModel

    reference, _ = hooks()
    known = reference.documented_models()  # the build has listed the models already

    class Scratch(StrictModel):
        """A model added to the spec language."""

        documented: int = 0
        """A field with its docstring."""
        forgotten: int = 0

    monkeypatch.setattr(reference, "documented_models", lambda: (*known, Scratch))
    with pytest.raises(reference.Undocumented, match=r"none: test_docs\.Scratch\.forgotten$"):
        reference.pages()


def test_the_reference_pages_are_in_the_navigation():
    reference, gallery = hooks()
    listed = {path for entry in reference.nav() for path in entry.values()}
    assert listed == set(reference_pages())
    listed = {path for entry in gallery.nav() for path in entry.values()}
    assert listed == set(gallery.pages())
    assert len(listed) == len(list((ROOT / "examples").glob("*.py"))) + 1


# --- The command-line reference is the code -------------------------------------------------


def table_rows(text: str) -> list[dict[str, str]]:
    """The rows of every Markdown table in `text`, each by its table's column headers."""
    rows, header = [], None
    for line in text.splitlines():
        if not line.startswith("|"):
            header = None
            continue
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", line)[1:-1]]
        if header is None:
            header = cells
        elif not set(line) <= set("|-"):
            rows.append(dict(zip(header, cells, strict=True)))
    return rows


def part(page: str, anchor: str) -> str:
    """A section of a page, from its heading (`{ #anchor }`) to the next heading of its level
    or above."""
    start = re.search(rf"^(#+) .*\{{ #{anchor} \}}$", page, re.M)
    assert start, f"no section #{anchor}"
    level = len(start.group(1))
    end = re.compile(rf"^#{{1,{level}}} ", re.M).search(page, start.end())
    return page[start.end() : end.start() if end else len(page)]


def test_the_cli_reference_lists_every_loopgen_command_and_option():
    """Walked here apart from the generator: every command of the `loopgen` group and each of
    its options and arguments is in the command's section of the page."""
    from loopgen import cli

    text = "\n".join(cli_hook().loopgen_section())
    group = cli.typer.main.get_command(cli.app)
    assert len(group.commands) >= 7  # render, validate, check, diff, schema, init, sweep
    for name, command in [("loopgen", group), *group.commands.items()]:
        section = part(text, "loopgen" if command is group else f"loopgen-{name}")
        if command is not group:
            assert f"[`{name}`](#loopgen-{name})" in text, name
        for param in command.params:
            if param.hidden:
                continue
            if param.param_type_name == "argument":
                assert (param.metavar or param.name) in section, (name, param.name)
            for opt in [*param.opts, *param.secondary_opts] if param.opts[0][0] == "-" else ():
                assert f"`{opt}`" in section or f"`{opt} " in section, (name, opt)
        if command is not group:
            assert "`--help`" in section, name


@functools.cache
def golden_scripts() -> list[tuple[str, str, str]]:
    """Every golden file as (its kind of script's anchor, its strategy, its path)."""
    from loopgen.dsl.loader import load_spec

    found = []
    for path in sorted((ROOT / "generated").rglob("*.py")):
        if path.name == "loopgen_runtime.py":  # the runtime the scripts import
            continue
        example = path.stem
        strategy = path.parent.name
        if strategy == "generated":
            strategy = load_spec(ROOT / "examples" / f"{example}.py").distribute.kind
        acting = example in ACTING
        kind = "reinforcement-learning-scripts" if acting else "supervised-scripts"
        found.append((kind, strategy, str(path.relative_to(ROOT))))
    return found


@pytest.mark.slow
def test_the_cli_reference_lists_every_flag_of_every_generated_script():
    """Every flag, positional argument and command of every golden script (all examples, all
    strategies: 118 scripts) is in the page's table for its kind of script, marked present for
    its strategy: the page's few renders cover every flag the templates can write."""
    cli = cli_hook()
    page = cli.page()
    scripts = golden_scripts()
    assert len(scripts) > 100
    for kind, strategy, path in scripts:
        rows = {}
        for row in table_rows(part(page, kind)):
            first = next(iter(row.values()))
            for name in re.findall(r"`([^`]+)`", first):
                rows[name] = row
        parser = cli.script_parser((ROOT / path).read_text())
        names = []
        for action in parser._actions:
            if action.dest == "command":
                names += list(action.choices)
            else:
                names += action.option_strings or [action.dest]
        shown = cli.STRATEGIES[strategy]  # "one device", "TPU", ...
        for name in names:
            assert name in rows, f"{path}: {name} is missing from the CLI reference"
            where = rows[name]["Strategies"]  # "all", "all but TPU", "one device, mirrored"
            listed = where == "all" or (
                where.removeprefix("all but ") != shown
                if where.startswith("all but ")
                else shown in where.split(", ")
            )
            assert listed, (path, name, strategy, where)


def test_a_flag_added_to_a_script_or_to_loopgen_is_in_the_cli_reference(monkeypatch):
    """The page is written from the code: a flag added to a script's parser and an option of a
    new `loopgen` command appear without a word of documentation written by hand."""
    from loopgen.cli import app, typer

    cli = cli_hook()
    rendered = cli.script_source

    def with_a_new_flag(example: str, strategy: str) -> str:
        return rendered(example, strategy).replace(
            "    parser.add_argument(",
            '    parser.add_argument("--brand-new-flag", help="added by the test")\n'
            "    parser.add_argument(",
            1,
        )

    monkeypatch.setattr(cli, "script_source", with_a_new_flag)
    reinforcement = cli.KINDS[-1]  # quick to render
    assert "| `--brand-new-flag` |" in "\n".join(cli.kind_section(reinforcement))

    scratch = typer.Typer()

    @scratch.command("scratch")
    def scratch_command(
        option: bool = typer.Option(False, "--scratch-option", help="added by the test"),
    ) -> None:
        """A command added to loopgen."""

    monkeypatch.setattr(
        app, "registered_commands", [*app.registered_commands, *scratch.registered_commands]
    )
    text = "\n".join(cli.loopgen_section())
    assert "### loopgen scratch { #loopgen-scratch }" in text
    assert "| `--scratch-option` | added by the test |" in text


# --- What the pages say ----------------------------------------------------------------------


def spec_snippets() -> list[tuple[str, str]]:
    found = []
    for path in [README, *PAGES]:
        for _, code in code_blocks(path.read_text(), "python"):
            if re.search(r"^spec = Spec\(", code, re.M):
                found.append((str(path.relative_to(ROOT)), code))
    return found


def test_the_docs_have_spec_snippets():
    files = {path for path, _ in spec_snippets()}
    assert {"README.md", "docs/getting-started.md", "docs/guides/rl/index.md"} <= files


@pytest.mark.parametrize(("page", "code"), spec_snippets())
def test_every_spec_snippet_validates(page, code, tmp_path):
    from loopgen.dsl.loader import load_spec

    spec_file = tmp_path / "spec.py"
    spec_file.write_text(code)
    spec = load_spec(spec_file)
    assert spec.name, page


def first_spec(path: Path) -> str:
    """The first spec a page shows (its first Python block that binds `spec = Spec(`)."""
    for _, code in code_blocks(path.read_text(), "python"):
        if re.search(r"^spec = Spec\(", code, re.M):
            return code
    raise AssertionError(f"{path.name} shows no spec")


SERVE_ZEROS = """
import json, sys
import numpy as np, tensorflow as tf
serve = tf.saved_model.load(sys.argv[1]).signatures["serving_default"]
((name, spec),) = serve.structured_input_signature[1].items()
images = np.zeros((2, 28, 28), np.uint8)  # raw mnist pixels, as the source holds them
outputs = serve(**{name: tf.constant(images)})
print(json.dumps({"dtype": spec.dtype.name, "scores": outputs["scores"].shape.as_list()}))
"""


@pytest.mark.slow
def test_the_first_spec_trains_with_its_validation_schedule_early_stop_and_export(tmp_path):
    """The README's spec is getting started's first spec, and it trains: rendered with two
    numbers changed so that its schedule and its early stop show within a few steps (the
    cosine over 6 steps, a `min_delta` no validation can beat), on a small file of mnist's
    format served in place of the download (96 images, 9 held out: 2 steps an epoch), it
    validates on its split every epoch, logs the cosine's rates, stops early after `patience`
    validations and serves raw images from its export."""
    import math

    import data
    from helpers import run_cli, run_preloaded, run_python

    code = first_spec(ROOT / "docs" / "getting-started.md")
    assert first_spec(README) == code, "the README's spec is not getting started's first"
    for field in ("validation=Split(fraction=", "learning_rate=CosineDecay(",
                  "early_stopping=EarlyStopping(", "export=Export("):  # fmt: skip
        assert field in code, field
    (tmp_path / "spec.py").write_text(code)
    script = tmp_path / "train.py"
    proc = run_cli("render", "spec.py", "-o", str(script),
                   "--set", "optimizer.learning_rate.decay_steps=6",
                   "--set", "early_stopping.min_delta=100", cwd=tmp_path)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    launcher = data.runnable("mnist_mlp", script, double="keras_datasets_mock")
    out = tmp_path / "run"
    proc = run_python(launcher, "--output-dir", str(out), cwd=tmp_path)
    assert "Stopping early: no better val_loss in 2 validations." in proc.stdout, proc.stdout
    records = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    # The first validation sets the best; two more that do not beat it by 100 stop the run,
    # of the spec's 10 epochs, at the third.
    assert [r["epoch"] for r in records if "val_loss" in r] == [1, 2, 3], records
    assert all("val_accuracy" in r for r in records if "val_loss" in r), records
    # Keras' CosineDecay from 1e-3 to 0 over 6 steps, computed here: the rate at each step.
    rates = {r["step"]: r["learning_rate"] for r in records if "learning_rate" in r}
    assert sorted(rates) == [2, 4, 6], rates
    for step, rate in rates.items():
        expected = 1e-3 * 0.5 * (1 + math.cos(math.pi * step / 6))
        assert abs(rate - expected) <= 1e-9, (step, rate, expected)
    served = run_preloaded("-c", SERVE_ZEROS, str(out / "export" / "saved_model" / "1"),
                           cwd=tmp_path)  # fmt: skip
    assert json.loads(served.stdout.strip().splitlines()[-1]) == {
        "dtype": "uint8",
        "scores": [2, 10],
    }


def excerpts() -> list[tuple[str, str, str]]:
    found = []
    for path in [README, *PAGES]:
        for above, code in code_blocks(path.read_text(), "python"):
            named = re.search(r"excerpt.*`(generated/[\w/]+\.py)`", above)
            if named:
                found.append((str(path.relative_to(ROOT)), named.group(1), code))
    return found


def test_every_excerpt_of_a_generated_script_is_in_that_script():
    found = excerpts()
    assert {page for page, _, _ in found} >= {"README.md", "docs/getting-started.md"}
    for page, script, code in found:
        text = (ROOT / script).read_text()
        assert code in text or textwrap.dedent(code) in textwrap.dedent(text), (page, script)


def test_no_list_runs_into_the_paragraph_above_it():
    """Python-Markdown starts a list only after a blank line: a `- ` line right under a
    paragraph's last line is shown as part of that paragraph."""
    for path in PAGES:
        lines, fence = path.read_text().splitlines(), False
        for number, line in enumerate(lines[1:], start=2):
            fence ^= line.startswith("```")
            above = lines[number - 2]
            if not fence and line.startswith("- ") and above.strip():
                assert above.startswith(("- ", "  ", "|", "#")), f"{path.name}:{number}"


def test_readme_is_the_landing_page():
    text = README.read_text()
    assert len(text.splitlines()) <= 250
    for target in re.findall(r"\]\(((?:docs/)[^)#]+)(?:#[^)]*)?\)", text):
        assert (ROOT / target).is_file(), f"README.md links to {target}, which is not there"
    # Every guide is linked from the README.
    for page in (ROOT / "docs" / "guides").glob("*.md"):
        assert f"docs/guides/{page.name}" in text, page.name


REPOSITORY_PATH = re.compile(
    r"`((?:tests|examples|generated|dsl|render|templates|output|sweep|bench|docs)/[\w./*-]*"
    r"|\.pre-commit-hooks\.yaml|cli\.py|__main__\.py|pydantic_plugins\.py)(?:::\w+)?`"
)


def test_every_repository_file_the_docs_name_exists():
    for path in [README, *PAGES]:
        for named in REPOSITORY_PATH.findall(path.read_text()):
            if "*" in named or "<" in named:
                continue
            assert (ROOT / named.rstrip("/")).exists(), f"{path.name} names {named}"


def test_every_test_the_docs_cite_exists():
    """A cited test name (`test_...`, with a `...` where the page shortens it) is a test; a
    cited test file (`tests/test_rl.py`, `test_rl`) is there."""
    files = {p.stem for p in (ROOT / "tests").glob("test_*.py")}
    fields = {name for model in models_a_spec_can_hold() for name in model.model_fields}
    defined = set()
    for test_file in (ROOT / "tests").glob("test_*.py"):
        defined |= set(re.findall(r"^def (test_\w+)\(", test_file.read_text(), re.M))
    cited = 0
    for path in [README, *PAGES]:
        text = path.read_text()
        for name in re.findall(r"(?<=[`:/])(test_[\w.]+?)(?:\.py)?(?:\[[^\]]*\])?`", text):
            if name in files or name in fields:  # `training.test_classes` is a field
                continue
            pattern = re.compile(re.escape(name).replace(re.escape("..."), r"\w*") + "$")
            assert any(pattern.match(test) for test in defined), f"{path.name} cites {name}"
            cited += 1
    assert cited > 100
