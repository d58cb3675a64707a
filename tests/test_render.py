"""Rendering across the spec's options: every branch of the templates yields a script that is
lint-clean, black-stable and contains only what the spec asks for; user strings stay strings."""

from __future__ import annotations

import ast
import importlib.metadata
import json
import re
import subprocess
import sys
import textwrap

import black
import pytest
from helpers import EXAMPLES, ROOT, render_into, run_python, run_without_loopgen, write_rendered
from loopgen import render
from loopgen.dsl.loader import apply_override, load_spec
from loopgen.dsl.spec import Spec
from loopgen.render import blackcache, code, render_script


def base(example: str = "mnist_mlp") -> dict:
    return load_spec(EXAMPLES / f"{example}.py").model_dump(mode="json")


def with_overrides(data: dict, *overrides: str) -> Spec:
    for override in overrides:
        data = apply_override(data, override)
    return Spec.model_validate(data)


VARIANTS = {
    "steps_and_step_checkpoints": ("mnist_mlp", [
        "loop.epochs=null", "loop.steps=7", "checkpoint.every_epochs=null",
        "checkpoint.every_steps=3"]),
    "no_checkpoint_no_logs": ("mnist_mlp", [
        "checkpoint=null", 'logging={"tensorboard": false, "jsonl": false}',
        'export={"saved_model": false, "keras": false}']),
    "one_hot_categorical": ("mnist_mlp", [
        'data.labels="one_hot"', "data.num_classes=10",
        'loss={"kind": "categorical_crossentropy", "from_logits": true, "label_smoothing": 0.1}',
        'metrics=[{"kind": "categorical_accuracy"}]']),
    "split_validation_schedule": ("mnist_mlp", [
        'data.validation={"kind": "split", "fraction": 0.25}',
        'optimizer={"kind": "adamw", "learning_rate": {"kind": "exponential_decay",'
        ' "initial_learning_rate": 0.01, "decay_steps": 3, "decay_rate": 0.5}}']),
    "imported_model": ("mnist_mlp", [
        'model={"kind": "import", "target": "usermodels:build", "kwargs": {"units": 16}}']),
    "one_hot_masks": ("shapes_unet", [
        'data.labels="one_hot"', "data.num_classes=4",
        'loss={"kind": "categorical_crossentropy", "from_logits": true}',
        'metrics=[{"kind": "categorical_accuracy"}]',
        "data.train.count=48", "data.validation.count=16"]),
    "image_directory_cached": ("cifar10_vgg", [
        'data.train={"kind": "image_directory", "path": "imgs", "image_size": [32, 32]}',
        "data.cache=true", "data.shuffle_buffer=0"]),
    "image_directory_split": ("cifar10_vgg", [
        'data.train={"kind": "image_directory", "path": "imgs", "image_size": [32, 32]}',
        'data.validation={"kind": "split", "fraction": 0.2, "seed": 1337}']),
    "image_directory_split_cached": ("cifar10_vgg", [
        'data.train={"kind": "image_directory", "path": "imgs", "image_size": [32, 32]}',
        'data.validation={"kind": "split", "fraction": 0.2}', "data.cache=true"]),
    "fine_tune_top_layers": ("flowers_finetune", [
        "fine_tune.from_layer=null", "fine_tune.top_layers=20"]),
    "text_directory_split": ("reviews_text", [
        'data.train={"kind": "text_directory", "path": "texts"}',
        'data.validation={"kind": "split", "fraction": 0.25}']),
}  # fmt: skip


def rendered(name: str) -> str:
    example, overrides = VARIANTS[name]
    return render_script(with_overrides(base(example), *overrides), spec_file="spec.py")


@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_variant_is_lint_clean_and_black_stable(name, tmp_path):
    source = rendered(name)
    assert black.format_str(source, mode=black.Mode()) == source
    path = tmp_path / f"{name}.py"
    path.write_text(source)
    ruff = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "--isolated", "--no-cache", "--select",
         "F401,F821,F841", str(path)],
        capture_output=True, text=True,
    )  # fmt: skip
    assert ruff.returncode == 0, ruff.stdout


def test_only_the_code_the_spec_needs():
    bare = rendered("no_checkpoint_no_logs")
    # Without checkpoints nothing promises a resume.
    assert "resume" not in bare.lower() and "restore" not in bare.lower()
    # json only for runs.jsonl: no metrics log, and no setup.json without checkpoints.
    for absent in ("tf.train.Checkpoint", "tf.summary", "metrics.jsonl", "model.export",
                   "eval_step", "model.losses", "rng_states", "model.save(", "SETUP",
                   "--init-from"):  # fmt: skip
        assert absent not in bare, absent
    steps = rendered("steps_and_step_checkpoints")
    assert "CHECKPOINT_EVERY_STEPS = 3" in steps and "CHECKPOINT_EVERY_EPOCHS" not in steps
    assert "TOTAL_STEPS = 7" in steps and "EPOCHS =" not in steps
    assert '"--steps", type=int' in steps and "--epochs" not in steps
    one_hot = rendered("one_hot_categorical")
    assert "tf.one_hot(" in one_hot and "label_smoothing=0.1" in one_hot
    imported = rendered("imported_model")
    assert "import usermodels" in imported and "usermodels.build(units=16)" in imported
    assert "from keras import layers" not in imported
    assert "returned a model without weights yet" in imported  # no input_shape to build it
    assert "rng_states=" in imported  # unknown model: its dropout state is saved just in case


def test_a_split_of_a_directory_holds_out_files_of_every_class():
    """A class-by-class listing is split per class by a seeded permutation of each class's
    files, not at its end (its last files would be whole classes)."""
    seeded = rendered("image_directory_split")
    assert "def split_by_class(examples, fraction, seed):" in seeded
    assert "split_by_class(train_examples,fraction=0.2,seed=1337)" in re.sub(r"\s", "", seeded)
    assert "tf.random.experimental.index_shuffle(" in seeded
    assert "held_out = int(total" not in seeded  # not the arrays' split at the end
    # Validation reads the training files the way training does: decoded when picked.
    assert "functools.partial(read_images, examples)" in seeded
    cached = rendered("image_directory_split_cached")
    assert "split_by_class(train_examples,fraction=0.2,seed=SEED)" in re.sub(r"\s", "", cached)
    # Split first, then both parts decoded once.
    assert cached.index("= split_by_class(") < cached.index("validation_examples = read_images(")
    text = rendered("text_directory_split")
    assert "functools.partial(read_text_files, examples)" in text
    arrays = rendered("split_validation_schedule")
    assert "split_by_class" not in arrays and "held_out = int(total * 0.25)" in arrays


def test_fine_tune_top_layers_unfreezes_the_last_layers():
    """`FineTune(top_layers=20)`: the last 20 of the backbone's layers, counted from its top,
    are the ones that unfreeze; a layer name is not involved."""
    source = rendered("fine_tune_top_layers")
    assert "UNFREEZE_TOP_LAYERS = 20  # the last 20 layers train" in source
    assert "for layer in backbone.layers[:-UNFREEZE_TOP_LAYERS]:" in source
    assert "if isinstance(layer, layers.BatchNormalization):" in source
    assert "UNFREEZE_FROM" not in source
    by_name = render_script(load_spec(EXAMPLES / "flowers_finetune.py"), spec_file="spec.py")
    assert "UNFREEZE_FROM = " in by_name and "UNFREEZE_TOP_LAYERS" not in by_name


HOSTILE = [
    'He said """hi""" \\ and left',
    "line one\nline two\r\n\t# not a comment",
    '\'); __import__("os").system("echo pwned"); (\'',
    "ünïcødé ✓ \x00 \u2028 end\\",
]


@pytest.mark.parametrize("text", HOSTILE)
def test_user_strings_become_string_literals(text):
    data = apply_override(base(), f"description={json.dumps(text)}")
    data = apply_override(data, f"data.train={json.dumps({'kind': 'npz', 'path': text})}")
    source = render_script(Spec.model_validate(data), spec_file=text)
    tree = ast.parse(source)
    assert text in ast.get_docstring(tree, clean=False)
    constants = {n.value for n in ast.walk(tree) if isinstance(n, ast.Constant)}
    assert text in constants  # the npz path, intact
    assert "pwned" not in "".join(
        ast.unparse(n) for n in ast.walk(tree) if isinstance(n, ast.Call)
        and "system" in ast.unparse(n.func)
    )  # fmt: skip


def test_a_word_longer_than_a_line_stays_whole_in_the_docstring():
    """A long description is re-flowed, but a URL in it stays whole (textwrap cut such a word
    one line at a time, in time quadratic in its length: 13 s for an 8 MB word)."""
    url = "https://example.com/" + "a" * 200
    text = f"Follows {url} for the layers, and trains them longer than that page says to."
    data = apply_override(base(), f"description={json.dumps(text)}")
    source = render_script(Spec.model_validate(data), spec_file="spec.py")
    lines = ast.get_docstring(ast.parse(source), clean=False).splitlines()
    assert lines[:3] == [
        "Follows",
        url,
        "for the layers, and trains them longer than that page says to.",
    ]


def test_a_long_description_is_reflowed_in_one_pass_as_textwrap_would(monkeypatch):
    """A description of megabytes took minutes to render, most of it textwrap's regular
    expressions and chunk lists (14 s of 24 for 10 MB, linear, but slow): a paragraph without
    a hyphen is re-flowed in one pass over its words, to exactly textwrap's lines (a hyphen,
    where textwrap may break, still goes through textwrap)."""
    import random

    from loopgen.render import code

    rng = random.Random(0)
    samples = [
        [
            "".join(rng.choice("abcxyz.,;:!?()'\"éü_/") for _ in range(rng.choice([1, 3, 8, 95])))
            for _ in range(rng.randint(0, 60))
        ]
        for _ in range(300)
    ]
    expected = [textwrap.fill(" ".join(words), 40, break_long_words=False) for words in samples]
    calls = []
    fill = textwrap.fill
    monkeypatch.setattr(code.textwrap, "fill", lambda *a, **k: calls.append(a) or fill(*a, **k))
    assert [code._fill(words, 40) for words in samples] == expected
    assert calls == []  # the one-pass path
    text = "A single reflow of a paragraph as long as this one, " * 40
    data = apply_override(base(), f"description={json.dumps(text)}")
    source = render_script(Spec.model_validate(data), spec_file="spec.py")
    assert calls == []
    docstring = ast.get_docstring(ast.parse(source), clean=False)
    assert docstring.split("\n\n")[0] == fill(" ".join(text.split()), 88)
    assert code._fill(["a-b"] * 40, 20) == fill(" ".join(["a-b"] * 40), 20)
    assert len(calls) == 1  # a hyphen: textwrap's


@pytest.mark.slow
def test_step_based_variant_runs_and_checkpoints_on_its_cadence(tmp_path):
    """loop.steps (stops mid-epoch), checkpoints every 3 steps plus one where training ended,
    an imported model with no TensorBoard, validation split off the training data; runs, and a
    second run resumes at step 7."""
    np = pytest.importorskip("numpy")
    # A subclassed model: it has no weights until built, which the script does from the
    # spec's input_shape before building the optimizer and the checkpoint.
    (tmp_path / "usermodels.py").write_text(
        textwrap.dedent(
            """
            import keras


            class Net(keras.Model):
                def __init__(self, units):
                    super().__init__()
                    self.flatten = keras.layers.Flatten()
                    self.hidden = keras.layers.Dense(units, activation="relu")
                    self.dropout = keras.layers.Dropout(0.2)
                    self.out = keras.layers.Dense(10)

                def call(self, x, training=False):
                    x = self.dropout(self.hidden(self.flatten(x)), training=training)
                    return self.out(x)


            def build(units):
                return Net(units)
            """
        )
    )
    rng = np.random.default_rng(0)
    np.savez(tmp_path / "d.npz", x=rng.integers(0, 255, (40, 28, 28)), y=rng.integers(0, 10, 40))
    spec = with_overrides(
        base(), *VARIANTS["steps_and_step_checkpoints"][1],
        'model={"kind": "import", "target": "usermodels:build", "kwargs": {"units": 16},'
        ' "input_shape": [28, 28]}',
        'data.train={"kind": "npz", "path": "d.npz"}', "data.batch_size=8",
        'logging={"tensorboard": false, "jsonl": true}',
        'data.validation={"kind": "split", "fraction": 0.25}',
    )  # fmt: skip
    script = tmp_path / "train.py"
    write_rendered(script, render_script(spec, spec_file="spec.py"))
    out = tmp_path / "out"
    run_python(script, "--output-dir", str(out), cwd=tmp_path)
    saved = sorted(int(p.stem.split("-")[1]) for p in (out / "checkpoints").glob("ckpt-*.index"))
    assert saved == [3, 6, 7]
    assert not (out / "logs").exists()
    # 30 training examples at batch 8: 4 steps an epoch; validation after epoch 1 and at the end.
    records = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in records if "val_loss" in r] == [4, 7]
    again = run_python(script, "--output-dir", str(out), cwd=tmp_path)
    assert "at step 7" in again.stdout and "Epoch" not in again.stdout
    assert (out / "export" / "saved_model" / "1" / "saved_model.pb").is_file()
    assert (out / "export" / "network" / "saved_model.pb").is_file()


@pytest.mark.slow
def test_one_hot_masks_train(tmp_path):
    """One-hot labels work per pixel too (segmentation masks become (h, w, classes))."""
    script = tmp_path / "train.py"
    write_rendered(script, rendered("one_hot_masks"))
    out = tmp_path / "out"
    run_python(script, "--epochs", "1", "--output-dir", str(out), cwd=tmp_path)
    records = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert records[-1]["val_accuracy"] > 0


@pytest.mark.slow
def test_offline_demo_reaches_the_accuracy_the_readme_states(tmp_path):
    """The README's first command, at full length, in a fresh folder: the two files it renders
    (the script and its runtime) train with nothing of loopgen importable, and the stated
    validation numbers hold."""
    readme = " ".join((ROOT / "README.md").read_text().split())
    assert (
        "loopgen render examples/shapes_unet.py -o train.py && .venv/bin/python train.py" in readme
    )
    script = render_into(tmp_path / "train.py", "shapes_unet")
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        ".loopgen",
        "loopgen_runtime.py",
        "train.py",
    ]
    # `python train.py` in a new interpreter that cannot import loopgen.
    run_without_loopgen(script, cwd=tmp_path, timeout=900)
    records = [json.loads(line) for line in
               (tmp_path / "runs/shapes_unet/metrics.jsonl").read_text().splitlines()]  # fmt: skip
    final = [r for r in records if "val_pixel_accuracy" in r][-1]
    readme = " ".join((ROOT / "README.md").read_text().split())
    assert "validation pixel accuracy ≥ 0.99 and mean IoU ≥ 0.95" in readme
    assert final["epoch"] == 6
    assert final["val_pixel_accuracy"] >= 0.99 and final["val_mean_iou"] >= 0.95, final


def test_custom_sublayer_attributes_are_unique_when_a_name_looks_generated():
    from loopgen.dsl import CustomLayerClass, Dense
    from loopgen.render.context import sublayer_attributes

    cls = CustomLayerClass(
        name="Block", layers=[Dense(units=2), Dense(units=3, name="dense_1"), Dense(units=4)]
    )
    attributes = [name for name, _ in sublayer_attributes(cls)]
    assert len(set(attributes)) == 3 and attributes[1] == "dense_1"


@pytest.mark.parametrize(
    ("overrides", "preemptible"),
    [
        ((), True),
        (("checkpoint=null",), False),  # nothing to save: SIGTERM keeps its default
        (('distribute={"kind": "mirrored"}',), True),
        (('distribute={"kind": "multi_worker"}',), True),  # the workers vote in the step
    ],
    ids=["single", "no-checkpoint", "mirrored", "multi-worker"],
)
def test_fault_handling_follows_the_spec(overrides, preemptible):
    source = render_script(with_overrides(base(), *overrides), spec_file="spec.py")
    # The runtime's RunDirectory.start installs the handler where its script says so
    # (test_runtime.py: a SIGTERM then sets run.preempted).
    assert ("\n    preemptible = True\n" in source) == preemptible
    assert "import signal" not in source
    # Every script stops on a NaN loss; only a script with checkpoints can fall back.
    assert "if nonfinite_step < 0 and not tf.math.is_finite(loss):" in source
    assert ("run.restore(checkpoint," in source) == ("checkpoint=null" not in overrides)


PIECES = '''"""Doc\x0cwith\u2028odd\x1cbreaks."""
import os
X = f"{os.sep}"
if X:

    def indented(a):
        return a

Y = [x for x in X]

Z = lambda: 1

def first(a,b):
    "def not_a_piece(): \u2028 class Nor: pass"
    return a
@staticmethod

def second(self, alpha_argument_number_one, beta_argument_number_two, gamma_argument_number_three, delta, **kwargs):
    return (alpha_argument_number_one, beta_argument_number_two)

class Third:
  x=1
'''  # noqa: E501 (a signature black must split)


def test_black_piece_by_piece_is_black_of_the_whole(tmp_path, monkeypatch):
    """Pieces cut where Python's parser sees lines (str.splitlines also breaks at \\x0c or
    \\u2028 inside a string), formatted alone with the whole script's target versions, cached
    and joined: the same text as black of the whole file, cold and from the cache."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    # The decorated def stays with the one above; no cut inside the `if` or before the
    # comprehension and the lambda, though the compiler makes code objects of them too.
    assert len(blackcache.pieces(PIECES)) == 3
    whole = black.format_str(PIECES, mode=black.Mode())
    assert "**kwargs,\n" in whole  # what a piece without an f-string once lost
    assert blackcache.format_source(PIECES) == whole
    assert any(p.is_file() for p in tmp_path.rglob("*"))
    assert blackcache.format_source(PIECES) == whole  # from the cache


def test_the_black_cache_is_keyed_by_the_installed_black():
    """A black upgrade must not reuse pieces the old one formatted."""
    assert blackcache.BLACK_VERSION == importlib.metadata.version("black") == black.__version__


@pytest.mark.parametrize(
    "source", ["f(a=1, a=2)\n", "def f(a, a):\n    pass\n", "return 1\n", "def f(:\n"]
)
def test_a_template_writing_what_python_refuses_is_a_loopgen_bug(source, tmp_path, monkeypatch):
    """What the compiler refuses though black would format it (a repeated argument, a return
    outside a function) is a TemplateBug, from the cache or not, never a script."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    spec = load_spec(EXAMPLES / "mnist_mlp.py")
    template = render.environment().from_string(source)
    monkeypatch.setattr(render.environment(), "get_template", lambda name: template)
    for _ in range(2):
        with pytest.raises(code.TemplateBug, match="invalid Python"):
            render.render_script(spec, spec_file="spec.py")


DOCSTRINGS = [
    "Plain words.\n\nA second paragraph, wrapped.\n",
    "Trailing spaces   \nstay out of the lift.\n",  # black strips them: formatted by black
    "An indented\n    continuation, which black dedents.\n",
    'Quoted "words" inside.',
    "A tab\there.\n",
    "A backslash \\ here.\n",
    "One line",
]


@pytest.mark.parametrize("docstring", DOCSTRINGS, ids=range(len(DOCSTRINGS)))
def test_the_module_docstring_goes_around_black_only_where_black_keeps_it(
    docstring, tmp_path, monkeypatch
):
    """A description of megabytes spent most of its render in black (11 s of 17 for 10 MB):
    the module docstring goes around black where black would leave it as it is, and the script
    is still black's of the whole file, for docstrings black changes too."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    source = f'"""{docstring}"""\n\nimport os\n\nX = os.sep\n\n\ndef f( a ):\n    return a\n'
    given = []
    format_str = black.format_str
    monkeypatch.setattr(black, "format_str", lambda s, **k: given.append(s) or format_str(s, **k))
    assert blackcache.format_source(source) == format_str(source, mode=black.Mode())
    lifted = blackcache._lift_docstring(source)[1] is not None
    assert lifted == (docstring in (DOCSTRINGS[0], DOCSTRINGS[3], DOCSTRINGS[6]))
    assert any(docstring in piece for piece in given) != lifted


def test_dqn_acts_on_one_tensorflow_thread_through_the_traces_own_call():
    """DQN on one device (issue 55): TensorFlow set to one thread before any op runs (its other
    threads spun between the Q-network's small calls, twice the CPU), and the greedy action
    from the trace's own call (the concrete function's matching of arguments cost more than
    the network). Not on replicas, whose collectives take threads of their own."""
    spec = load_spec(EXAMPLES / "cartpole_dqn.py")
    source = render_script(spec, spec_file="examples/cartpole_dqn.py")
    train = next(
        node
        for node in ast.parse(source).body
        if isinstance(node, ast.FunctionDef) and node.name == "train"
    )
    calls = [ast.unparse(s) for s in train.body[1:] if isinstance(s, ast.Expr)][:3]
    assert calls == [
        "tf.config.threading.set_inter_op_parallelism_threads(1)",
        "tf.config.threading.set_intra_op_parallelism_threads(1)",
        "keras.utils.set_random_seed(SEED)",
    ], calls
    assert "greedy_flat(tf.constant(observations), *greedy_variables)" in source
    mirrored = (ROOT / "generated" / "mirrored" / "cartpole_dqn.py").read_text()
    assert "parallelism_threads" not in mirrored and "greedy_flat" not in mirrored


# --- loopgen render --single-file (issue 61) -------------------------------------------------


@pytest.mark.slow
def test_a_single_file_script_trains_to_the_weights_of_the_script_beside_its_runtime(
    shared, tmp_path
):
    """--single-file writes one file, the runtime inlined, nothing beside it; run with loopgen
    not importable, it trains to the very checkpoint of the two files (test_runs' run of
    mnist_mlp, on the same data and flags)."""
    from helpers import run_cli, tf_check
    from test_runs import trained_example, trained_overrides

    _, two_files, _ = trained_example(shared, "mnist_mlp")
    one = tmp_path / "one" / "train.py"
    sets = [word for value in trained_overrides(shared, "mnist_mlp") for word in ("--set", value)]
    proc = run_cli("render", str(EXAMPLES / "mnist_mlp.py"), "-o", str(one), "--single-file", *sets)
    assert proc.returncode == 0, proc.stderr
    assert sorted(p.name for p in one.parent.iterdir() if p.is_file()) == ["train.py"]
    text = one.read_text()
    assert "import loopgen_runtime" not in text and "\nclass RunDirectoryBase:\n" in text
    run_without_loopgen(one, "--epochs", "2", "--output-dir", str(tmp_path / "run"), cwd=one.parent)
    result = tf_check("compare_checkpoints", str(two_files / "checkpoints"),
                      str(tmp_path / "run" / "checkpoints"), cwd=tmp_path)  # fmt: skip
    assert result["same_keys"] and result["count"] > 8 and result["step"] == 4, result
    assert result["max_diff"] == 0.0 and result["values_diff"] == 0.0, result
    runs = [json.loads(line) for line in (tmp_path / "run" / "runs.jsonl").read_text().splitlines()]
    assert runs[0]["runtime"] == str(one) and runs[0]["runtime_sha256"] == runs[0]["script_sha256"]
    assert runs[0]["script_edited"] is False and runs[0]["runtime_edited"] is False


@pytest.mark.parametrize("example", ["mnist_mlp", "cartpole_dqn", "fashion_validation", "sums_sft"])
def test_a_single_file_render_is_black_and_pyflakes_clean_and_answers_help_before_tensorflow(
    example, tmp_path
):
    """One file: the runtime's imports among the script's, its flags above parse_args() (which
    runs before TensorFlow loads), the rest above the script's RunDirectory; no name defined
    twice, none undefined, none unused."""
    script = tmp_path / "train.py"
    source = render_script(
        load_spec(EXAMPLES / f"{example}.py"), spec_file=f"examples/{example}.py", single_file=True
    )
    assert black.format_str(source, mode=black.Mode()) == source
    script.write_text(source)
    ruff = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "--no-cache", "--isolated", "--select", "F,E9",
         str(script)], capture_output=True, text=True,
    )  # fmt: skip
    assert ruff.returncode == 0, ruff.stdout + ruff.stderr
    assert render.runtime.SINGLE_FILE in source[:2000] and "loopgen_runtime import" not in source
    help_ = subprocess.run(
        [sys.executable, "-c", "import runpy, sys; sys.argv = sys.argv[1:]; "
         "runpy.run_path(sys.argv[0], run_name='__main__'); ", str(script), "--help"],
        capture_output=True, text=True, cwd=tmp_path,
    )  # fmt: skip
    assert help_.returncode == 0 and "--fast-dev-run" in help_.stdout, help_.stderr
    assert "tensorflow" not in help_.stderr.lower()


def test_a_single_file_script_keeps_its_form_and_its_edits_at_each_render(tmp_path):
    """A re-render of a --single-file script merges the spec's change into the hand edits;
    check and diff read its form from it; a render in the other form is refused, nothing
    written."""
    from helpers import run_cli

    script = tmp_path / "train.py"
    spec = str(EXAMPLES / "mnist_mlp.py")
    assert run_cli("render", spec, "-o", str(script), "--single-file").returncode == 0
    assert sorted(p.name for p in tmp_path.iterdir() if p.is_file()) == ["train.py"]
    edited = script.read_text().replace(
        "    model.summary()\n", "    model.summary()\n    print('my edit')\n", 1
    )
    assert edited.count("print('my edit')") == 1
    script.write_text(edited)
    assert run_cli("check", spec, str(script)).returncode == 0
    other_form = run_cli("render", spec, "-o", str(script))
    assert other_form.returncode == 1 and script.read_text() == edited
    assert "is one file, its runtime inlined: render it with --single-file" in other_form.stderr
    assert not (tmp_path / "loopgen_runtime.py").exists()
    diff = run_cli("diff", spec, str(script), "--set", "data.batch_size=32")
    assert diff.returncode == 1 and "+BATCH_SIZE = 32" in diff.stdout, diff.stderr
    assert "loopgen_runtime.py" not in diff.stdout.split("\n")[0]
    merged = run_cli(
        "render", spec, "-o", str(script), "--single-file", "--set", "data.batch_size=32"
    )
    assert merged.returncode == 0, merged.stderr
    text = script.read_text()
    assert 'print("my edit")' in text and "BATCH_SIZE = 32" in text  # black's quotes
    stale = run_cli("check", spec, str(script))
    assert stale.returncode == 1 and "--single-file" in stale.stderr, stale.stderr
    two = tmp_path / "two" / "train.py"
    assert run_cli("render", spec, "-o", str(two)).returncode == 0
    refused = run_cli("render", spec, "-o", str(two), "--single-file")
    assert refused.returncode == 1 and "render it without --single-file" in refused.stderr
