"""generated/ is a fresh render of every example in every variant, deterministic, lint-clean,
and reads in order."""

from __future__ import annotations

import ast
import difflib
import re
import subprocess
import sys

import helpers
import pytest
from helpers import EXAMPLES, ROOT, run_cli
from loopgen.dsl.loader import load_spec
from loopgen.dsl.spec import STRATEGY_KINDS
from loopgen.render.blackcache import TARGET_VERSIONS
from regen_generated import golden_files

GENERATED = ROOT / "generated"
RUNTIME = "loopgen_runtime.py"
REGEN = "python tests/regen_generated.py"
NAMES = sorted(p.stem for p in EXAMPLES.glob("*.py"))
GOLDEN = {str(out.relative_to("generated").with_suffix("")): (spec, variant)
          for spec, variant, out in golden_files()}  # fmt: skip
"""`mnist_mlp` (the spec as written) or `mirrored/mnist_mlp` -> (spec file, --variant)."""
ACTING = sorted(name for name in NAMES if load_spec(EXAMPLES / f"{name}.py").acts)
"""The examples that learn by acting in an environment (reinforcement learning)."""


def test_every_example_has_a_golden_file_per_variant_and_nothing_else():
    on_disk = sorted(str(p.relative_to(GENERATED).with_suffix("")) for p in GENERATED.rglob("*.py")
                     if p.name != RUNTIME)  # fmt: skip
    assert on_disk == sorted(GOLDEN), f"run: {REGEN}"
    # The runtime once: each variant's folder links to it.
    assert not (GENERATED / RUNTIME).is_symlink()
    for folder in {p.parent for p in GENERATED.rglob("*.py")} - {GENERATED}:
        assert (folder / RUNTIME).is_symlink(), f"run: {REGEN}"
        assert (folder / RUNTIME).resolve() == (GENERATED / RUNTIME).resolve()


def test_the_runtime_of_generated_is_a_fresh_render():
    """generated/loopgen_runtime.py is what a render writes beside every script."""
    from loopgen.render import render_runtime

    assert (GENERATED / RUNTIME).read_text() == render_runtime(), f"run: {REGEN}"
    # Reinforcement learning has no TPU variant; normalized observations (pendulum_ppo's) and
    # pixels (breakout_dqn's, breakout_ppo's) no multi-worker one.
    workers = ["cartpole_a2c", "cartpole_dqn", "cartpole_ppo", "corridor_ppo"]
    acting = 2 * len(ACTING) + len(workers)
    assert len(GOLDEN) == (len(NAMES) - len(ACTING)) * len(STRATEGY_KINDS) + acting
    assert sorted(g.partition("/")[2] for g in GOLDEN if g.startswith("multi_worker/")
                  and g.partition("/")[2] in ACTING) == workers  # fmt: skip
    assert ACTING == list(helpers.ACTING)


@pytest.mark.parametrize("golden", sorted(GOLDEN))
def test_golden_file_is_a_fresh_render(golden):
    spec, variant = GOLDEN[golden]
    proc = run_cli("render", str(spec), *(["--variant", variant] if variant else []))
    assert proc.returncode == 0, proc.stderr
    path = GENERATED / f"{golden}.py"
    if proc.stdout != path.read_text():
        diff = "".join(
            difflib.unified_diff(
                path.read_text().splitlines(True), proc.stdout.splitlines(True),
                f"generated/{golden}.py", "fresh render",
            )
        )  # fmt: skip
        pytest.fail(f"generated/{golden}.py is stale; regenerate with: {REGEN}\n{diff[:6000]}")


def test_generated_scripts_are_ruff_and_black_clean():
    ruff = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "--no-cache", "--select", "F401,F821,F841",
         "--isolated", str(GENERATED)],
        capture_output=True, text=True,
    )  # fmt: skip
    assert ruff.returncode == 0, ruff.stdout + ruff.stderr
    # The scripts are black's; the runtime beside them is ruff's, as the repository's source
    # it is written from (runtime/loopgen_runtime.py, test_packaging's ruff check).
    black = subprocess.run(
        [sys.executable, "-m", "black", "--check", "--quiet", "--force-exclude", RUNTIME,
         str(GENERATED)],
        capture_output=True, text=True,
    )  # fmt: skip
    assert black.returncode == 0, black.stderr


def test_black_formats_whole_scripts_with_the_features_of_their_pieces():
    """render/blackcache.py formats each definition for TARGET_VERSIONS; black infers the target
    versions of a whole script from what it uses. The five features black's output depends on
    (black/__init__.py: _format_str_once) must be the same for both, or the pieces would be
    formatted apart from what black makes of the whole."""
    import black
    from black.mode import VERSION_TO_FEATURES, Feature, TargetVersion, supports_feature

    shaping = [
        Feature.PARENTHESIZED_CONTEXT_MANAGERS,
        Feature.UNPARENTHESIZED_EXCEPT_TYPES,
        Feature.T_STRINGS,
        Feature.TRAILING_COMMA_IN_CALL,
        Feature.TRAILING_COMMA_IN_DEF,
    ]
    ours = {TargetVersion[name] for name in TARGET_VERSIONS}
    expected = [f for f in shaping if supports_feature(ours, f)]
    # The features a script uses are those its top-level statements use, each parsed once for
    # all the scripts that share it (most of them: 5 times fewer parses than whole scripts).
    used: dict[str, set] = {}
    for golden in sorted(GOLDEN):
        features = set()
        for statement in top_level_statements((GENERATED / f"{golden}.py").read_text()):
            if statement not in used:
                used[statement] = black.get_features_used(black.lib2to3_parse(statement))
            features |= used[statement]
        # black.detect_target_versions, from the features.
        inferred = {v for v in TargetVersion if features <= VERSION_TO_FEATURES[v]}
        assert [f for f in shaping if supports_feature(inferred, f)] == expected, golden
    # As black infers them from the whole script.
    whole = black.lib2to3_parse((GENERATED / "mnist_mlp.py").read_text())
    statements = top_level_statements((GENERATED / "mnist_mlp.py").read_text())
    assert black.get_features_used(whole) == set().union(*(used[s] for s in statements))


def top_level_statements(source: str) -> list[str]:
    """Each top-level statement's lines (a definition's with its decorators)."""
    lines = source.splitlines(keepends=True)
    statements = []
    for node in ast.parse(source).body:
        first = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", []))])
        statements.append("".join(lines[first - 1 : node.end_lineno]))
    return statements


@pytest.mark.parametrize("golden", sorted(GOLDEN))
def test_script_imports_only_what_it_needs(golden):
    name = golden.rsplit("/", 1)[-1]
    tree = ast.parse((GENERATED / f"{golden}.py").read_text())
    modules = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            modules |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            modules.add(node.module.split(".")[0])
    # time: the logged steps_per_second. fcntl, hashlib, re, socket, sys, traceback: the
    # output directory's lock and runs.jsonl. errno: the machine faults it names. glob,
    # shutil, contextlib: checkpoints and exports written whole or removed; ctypes: an export
    # exchanged with the old one in one step.
    allowed = {"argparse", "json", "math", "os", "time", "keras", "numpy", "tensorflow"}
    allowed.add("loopgen_runtime")  # the run's machinery, beside the script
    allowed |= {"fcntl", "hashlib", "re", "socket", "sys", "traceback", "errno"}
    allowed |= {"glob", "shutil", "contextlib", "ctypes"}
    allowed.add("signal")  # a checkpoint on SIGTERM (preemption)
    # The debugging flags: --dump-debug-info's dump written out at exit (atexit), --eager's
    # warning of tf.data kept quiet (warnings), --check-numerics's lines named (linecache),
    # --fast-dev-run's and replay's scratch directories (tempfile).
    allowed |= {"atexit", "linecache", "tempfile", "warnings"}
    allowed.add("functools")  # a reader mapped as a partial (AutoGraph parses a lambda's file)
    if name in ("reviews_bert_lora", "sums_sft", "sums_dpo", "sums_grpo"):  # a KerasHub preset
        allowed.add("keras_hub")
    if name == "sums_grpo":  # the spec's reward functions, from the user's module
        allowed.add("rewards")
    # TextRecords: CSV, or Parquet and datasets (Arrow).
    if name in ("sums_sft", "sums_dpo", "sums_grpo"):
        allowed |= {"csv", "pyarrow"}
    if name == "pets_unet":  # the spec asks for a TFDS dataset
        allowed.add("tensorflow_datasets")
    if name == "mnist_onecycle":  # the spec logs to Comet
        allowed.add("comet_ml")
    if name == "fashion_validation":  # the spec tracks the run in MLflow, from a process
        allowed.add("subprocess")
    if name == "shapes_plateau":  # the spec asks for a metrics.csv
        allowed.add("csv")
    if name == "flowers_finetune":  # TFRecord: record headers counted, parse errors cleaned
        allowed |= {"re", "struct"}
    if name == "houses_tabular":  # CSV: the row of a parse error
        allowed.add("re")
    if name == "mnist_own_step":  # your step and optimizer, from your module
        allowed.add("own_steps")
    if name == "signals_generator":  # the spec's generator, from the user's module
        allowed.add("signals")
    if name == "corridor_ppo":  # the spec's environment, from the user's module
        allowed.add("envs")
    if name.startswith("breakout_"):  # ALE's Atari games, registered with Gymnasium
        allowed.add("ale_py")
    if name in ACTING:  # the environments, pickled whole into the checkpoints; PIL: --record
        allowed |= {"gymnasium", "pickle", "PIL"}
    assert "loopgen" not in modules
    assert modules <= allowed, modules - allowed


@pytest.mark.parametrize("golden", sorted(GOLDEN))
def test_header_names_spec_hash_and_version_without_timestamp(golden):
    spec, variant = GOLDEN[golden]
    header = ast.get_docstring(ast.parse((GENERATED / f"{golden}.py").read_text()))
    assert f"from {spec.as_posix()}" in header
    if variant:
        assert f"Rendered with: --variant {variant}" in header
    assert re.search(r"spec sha256 [0-9a-f]{16}\b", header)
    assert re.search(r"loopgen \d+\.\d+\.\d+", header)
    assert not re.search(r"\d{4}-\d{2}-\d{2}|\d{2}:\d{2}", header)


LOSS_MARKERS = (" loss_fn = ", " loss_fns = ", " cross_entropy = ", " discriminator = build_")


LOSS_MARKERS = (" loss_fn = ", " loss_fns = ", " cross_entropy = ", " discriminator = build_")
AFTER_TRAINING = {"export", "evaluate", "serving_function", "tflite", "IMAGE_SIGNATURES",
                  "input_files",
                  "read_examples", "read_inputs", "predict"}  # fmt: skip
"""What runs after training (the export, the model to serve) or instead of it (predict): defined
below train(), before the run directory's machinery."""


def _defined(node: ast.stmt) -> str | None:
    """The name a top-level definition or assignment defines."""
    if isinstance(node, ast.FunctionDef | ast.ClassDef):
        return node.name
    if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
        return node.targets[0].id
    return None


def _train(source: str) -> ast.FunctionDef:
    (train,) = [
        node
        for node in ast.parse(source).body
        if isinstance(node, ast.FunctionDef) and node.name == "train"
    ]
    return train


@pytest.mark.parametrize("golden", sorted(GOLDEN))
def test_sections_come_in_reading_order(golden):
    source = (GENERATED / f"{golden}.py").read_text()
    if golden.rpartition("/")[2] in ACTING:
        return _check_order(source, ACTING_ORDER)
    distributed = "strategy = " in source
    gan = "def build_generator(" in source
    # What it trains (constants, flags: parsed before TensorFlow is imported), the data, the
    # model, then train(): the steps and the loop. After it what runs after training (the
    # export, serving, predict), then the run directory's machinery.
    order = [
        "\nimport ",
        "\nSEED = ",
        "\ndef parse_args(",
        "\nimport tensorflow as tf",
        "\ndef load_examples(",
        "\ndef build_generator(" if gan else "\ndef build_model(",
        "\ndef make_train_loop(",  # several steps per call (Orbit's create_loop_fn)
        "\ndef train(",
        *(["    strategy = ", "    with strategy.scope():"] if distributed else []),
        # One loss, one per task, or a GAN's cross-entropy (an own step has yours).
        next(
            # (A Wasserstein GAN has no loss object: its networks then.)
            (m for m in LOSS_MARKERS if m in source),
            "    model = build_model()",
        ),
        " generator_optimizer = " if gan else " optimizer = ",
        "    def replica_train_step(" if distributed else "    def train_step(",
        # (Meta-learning's tapes are in adapt(), a task's inner loop, above train().)
        *([] if "\ndef adapt(" in source else ["tf.GradientTape()"]),
        "    train_loop = make_train_loop(",
        "    checkpoint = tf.train.Checkpoint(",
        "    for epoch in range(",
        "        run.start_epoch(",
        '                run.log("train", ',
        "    export(",
        "\ndef export(",
        *(["\ndef serving_function("] if "\ndef serving_function(" in source else []),
        *(["\ndef predict("] if "\ndef predict(" in source else []),
        "\n# --- The run directory",
        "\nclass RunDirectory(loopgen_runtime.RunDirectory):",
        "\ndef main(",  # around train(): how the run ended, in runs.jsonl
    ]
    _check_order(source, order)
    classes = [m.start() for m in re.finditer(r"\nclass \w+\(layers\.Layer\)", source)]
    assert all(c < source.index("\ndef build_model(") for c in classes)
    # None of what runs after training is above train(), where it would lengthen the reading path.
    names = [_defined(node) for node in ast.parse(source).body]
    after = [i for i, name in enumerate(names) if name in AFTER_TRAINING]
    assert after, golden
    assert names.index("train") < min(after), [names[i] for i in after]
    assert max(after) < names.index("RENDERED_FROM"), [names[i] for i in after]


ACTING_ORDER = [
    "\nimport ",
    "\nSEED = ",
    "\ndef parse_args(",
    "\nimport tensorflow as tf",
    "\ndef make_envs(",  # the environment is the data source
    "\ndef build_model(",
    "\ndef train(",
    "    environments = Environments(",
    "    model = build_model()",
    " optimizer = ",
    "    def act(",
    "tf.GradientTape()",
    "    checkpoint = tf.train.Checkpoint(",
    "    while global_step < total_steps",
    '            run.log("train", ',
    "    export(",
    "\ndef evaluate(",
    "\ndef export(",
    "\n# --- The run directory",
    "\nclass RunDirectory(loopgen_runtime.RunDirectory):",
    "\ndef main(",
]
"""The reading order of a script that acts (reinforcement learning)."""


def _check_order(source: str, order: list[str]) -> None:
    # The tapes of train(); a helper above it may have its own (an attack's perturbation).
    positions = [
        source.index(marker, source.index("\ndef train(") if "Tape" in marker else 0)
        for marker in order
    ]
    assert positions == sorted(positions), list(zip(order, positions, strict=False))


def test_spec_change_changes_hash():
    a = run_cli("render", "examples/mnist_mlp.py")
    b = run_cli("render", "examples/mnist_mlp.py", "--set", "data.batch_size=32")
    hash_of = lambda text: re.search(r"spec sha256 ([0-9a-f]+)", text).group(1)  # noqa: E731
    assert hash_of(a.stdout) != hash_of(b.stdout)
    assert "Rendered with: --set data.batch_size=32" in b.stdout


FLAGS_WITHOUT_TENSORFLOW = """
import os, runpy, sys

class NoTensorFlow:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("tensorflow", "keras", "numpy"):
            raise ImportError(f"{name} was imported before the flags were answered")

sys.meta_path.insert(0, NoTensorFlow())
codes = {}
for script in sys.argv[2:]:
    sys.argv = [script, sys.argv[1]]
    sys.path[0] = os.path.dirname(script)  # as `python SCRIPT` has it: the runtime beside it
    try:
        runpy.run_path(script, run_name="__main__")
    except SystemExit as exit:
        codes[script] = exit.code
print(codes)
"""


@pytest.mark.parametrize(
    ("flag", "code", "said"), [("--help", 0, "usage: "), ("--epocs", 2, "unrecognized arguments")]
)
def test_flags_are_answered_before_tensorflow_is_imported(flag, code, said):
    """--help answers, and a mistyped flag is refused, without importing TensorFlow (which takes
    seconds): an import hook fails any import of it, in every golden script."""
    scripts = sorted(str(GENERATED / f"{golden}.py") for golden in GOLDEN)
    proc = subprocess.run([sys.executable, "-c", FLAGS_WITHOUT_TENSORFLOW, flag, *scripts],
                          capture_output=True, text=True, timeout=300)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    codes = ast.literal_eval(proc.stdout.strip().splitlines()[-1])
    assert codes == dict.fromkeys(scripts, code), proc.stderr[-3000:]
    assert proc.stdout.count("usage: ") + proc.stderr.count(said) >= len(scripts)


TRAIN_LINES = 163
"""At most this many lines of train() in a single-device script: the steps and the loop read
in one sitting (helpers, monitors and the run directory live beside it). 160 until a loop
whose monitors decide at an epoch's end checked SIGTERM twice, before its validation and
after its checkpoint (issue 63, item 1): shapes_plateau's (163) is the longest."""


@pytest.mark.parametrize("golden", [g for g in sorted(GOLDEN) if "/" not in g])
def test_train_reads_in_one_sitting(golden):
    source = (GENERATED / f"{golden}.py").read_text()
    train = _train(source)
    lines = train.end_lineno - train.lineno + 1
    # A strategy's script (pets_unet's own spec asks for one) adds its replica steps.
    limit = TRAIN_LINES + (15 if "strategy = " in source else 0)
    assert lines <= limit, f"{golden}: train() is {lines} lines, at most {limit}"


SINGLE_DEVICE = sorted(
    golden
    for golden in GOLDEN
    if golden.startswith("single_device/")
    or ("/" not in golden and f"single_device/{golden}" not in GOLDEN)
)
"""The single-device golden of each example: the spec as written, or its single_device/ twin
where the spec asks for a strategy (pets_unet)."""
READING_PATH_LINES = 700
"""At most this many lines in the reading path of a single-device script: from its top to the
end of train() (flags, data, model, steps, loop), what a reader reads to know how it trains.
The longest is sums_grpo's (about 560: GRPO's own functions, about 150 lines: the sampler
seeded by row, the reward functions called and checked, the group advantages, the clipped
objective and its KL); then flowers_finetune's (TFRecord files read and parsed, a backbone to
unfreeze, its imagenet weights' download in one line that says what to do offline). The
debugging flags' checks, the flags every script takes and the readers of records moved into
the runtime (issue 61)."""
MNIST_MLP_READING_PATH = 400
"""The plainest example's reading path (issue 61's bound; 421 with the debugging flags' checks
in the script; 334 when this was written)."""
MNIST_MLP_LINES = 500
"""The whole plainest script (issue 61's bound: 2,054 lines with the machinery inside)."""
SCRIPT_LINES = 800
"""No single-device script is longer (issue 61's bound: 1,861-2,266 with the machinery in)."""


def test_a_script_holds_its_loop_and_the_runtime_its_machinery():
    """The run's machinery is the runtime's, once: no script defines what the runtime does
    (the lock, checkpoints, replay), and the scripts are a third of what they were."""
    from loopgen.render import runtime

    lengths = {}
    for golden in SINGLE_DEVICE:
        source = (GENERATED / f"{golden}.py").read_text()
        lengths[golden] = source.count("\n")
        defined = {_defined(node) for node in ast.parse(source).body}
        assert not defined & runtime.public_names(), (golden, defined & runtime.public_names())
        assert "\nclass RunDirectory(loopgen_runtime.RunDirectory):" in source, golden
    assert lengths["mnist_mlp"] <= MNIST_MLP_LINES, lengths["mnist_mlp"]
    too_long = {golden: n for golden, n in lengths.items() if n > SCRIPT_LINES}
    assert not too_long, f"scripts of more than {SCRIPT_LINES} lines: {too_long}"
    everything = sum(
        p.read_text().count("\n") for p in GENERATED.rglob("*.py") if not p.is_symlink()
    )
    assert everything < 281_101 / 2, everything  # generated/ before issue 61: 281,101 lines


def test_reading_path_ends_with_train():
    lengths = {
        golden: _train((GENERATED / f"{golden}.py").read_text()).end_lineno
        for golden in SINGLE_DEVICE
    }
    assert len(lengths) == len(NAMES), sorted(lengths)
    assert lengths["mnist_mlp"] <= MNIST_MLP_READING_PATH, lengths["mnist_mlp"]
    too_long = {golden: n for golden, n in lengths.items() if n > READING_PATH_LINES}
    assert not too_long, f"reading paths of more than {READING_PATH_LINES} lines: {too_long}"


def test_every_name_a_script_defines_at_module_level_is_one_a_spec_may_not_take():
    """A block, custom layer class or imported package named like one of the script's
    functions, classes, constants or imports would replace it (a block named `train` is called
    as the training loop): RESERVED_NAMES and MODULE_NAMES hold every such name of every golden
    file (but the spec's own), every function, class and constant a template writes at column 0
    (options no example uses too; a few of those end up indented, in a function) and every
    module a render may import."""
    from loopgen.dsl.base import MODULE_NAMES, RESERVED_NAMES
    from loopgen.render import runtime

    missing, owned = {}, {}
    for golden, (spec_file, _) in sorted(GOLDEN.items()):
        if spec_file not in owned:
            spec = load_spec(ROOT / spec_file)
            nets = (spec.model, *(getattr(spec.training, n, None) for n in ("value", "teacher")))
            owned[spec_file] = {c.name for c in spec.custom_layers} | {
                block.name for net in nets for block in getattr(net, "blocks", [])
            }
        own = owned[spec_file]
        tree = ast.parse((GENERATED / f"{golden}.py").read_text())
        # What the script imports of its runtime, in the try that checks it is there.
        tried = [n for node in tree.body if isinstance(node, ast.Try) for n in node.body]
        for node in tree.body + tried:
            names = [_defined(node)]
            if isinstance(node, ast.Import):  # the user's own modules are the spec's
                names = [(alias.asname or alias.name).split(".")[0] for alias in node.names
                         if alias.name.split(".")[0] in LIBRARIES]  # fmt: skip
            elif isinstance(node, ast.ImportFrom):
                names = [alias.asname or alias.name for alias in node.names]
            for name in names:
                if name and name not in own and name not in RESERVED_NAMES | MODULE_NAMES:
                    missing.setdefault(name, golden)
    for template in (ROOT / "templates").rglob("*.jinja"):
        text = template.read_text()
        for name in re.findall(r"^(?:def|class) (\w+)|^([A-Z][A-Z0-9_]*) = ", text, re.M):
            name = name[0] or name[1]
            if name not in RESERVED_NAMES | MODULE_NAMES:
                missing.setdefault(name, str(template.relative_to(ROOT)))
    for name in runtime.public_names():  # what a script may import of its runtime
        if name not in RESERVED_NAMES | MODULE_NAMES:
            missing.setdefault(name, "runtime/loopgen_runtime.py")
    for module in (ROOT / "render").glob("*.py"):  # the imports a render picks
        text = module.read_text()
        for package, alias in re.findall(r'"import ([\w.]+)(?: as (\w+))?"', text):
            name = alias or package.split(".")[0]
            if name not in RESERVED_NAMES | MODULE_NAMES:
                missing.setdefault(name, str(module.relative_to(ROOT)))
    assert not missing, f"add to MODULE_NAMES (dsl/base.py): {sorted(missing)}"


LIBRARIES = sys.stdlib_module_names | {"keras", "numpy", "tensorflow", "gymnasium", "mlflow",
                                       "comet_ml", "tensorflow_datasets"}  # fmt: skip
