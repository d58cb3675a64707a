"""The output directory of a run: one writer at a time (a lock that dies with its process), a
record of every run in runs.jsonl, and no resuming of checkpoints from another training setup
(setup.json beside them) unless on purpose, with --init-from."""

from __future__ import annotations

import ast
import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pydantic
import pytest
from data import classification_npz
from helpers import (
    EXAMPLES,
    ROOT,
    TWO_CPUS,
    finish_workers,
    launch_workers,
    npz,
    records,
    run_cli,
    run_preloaded,
    run_python,
    script_env,
    tf_check,
)
from loopgen.dsl import KerasDataset, Npz
from loopgen.dsl.loader import apply_override, load_spec
from loopgen.dsl.rules.rl import strategies
from loopgen.dsl.spec import STRATEGY_KINDS, Spec
from loopgen.render import fingerprint, render_script
from regen_generated import golden_files

# --- The setup fingerprint (no TensorFlow) ---------------------------------------------------


def setup_of(source: str) -> dict:
    """The value of the script's SETUP dict, its constants (SEED, BATCH_SIZE, ...) evaluated."""
    constants: dict = {}
    for node in ast.parse(source).body:
        if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
            expression = compile(ast.Expression(node.value), "<constant>", "eval")
            try:
                constants[node.targets[0].id] = eval(expression, {}, constants)
            except NameError:  # not a constant (a model, a function call, ...)
                pass
    return constants["SETUP"]


def test_every_variant_of_an_example_has_the_same_setup():
    """Checkpoints move between strategies, so the strategy is not part of the setup."""
    by_example: dict[str, list[dict]] = {}
    for spec, _, out in golden_files():
        by_example.setdefault(spec.stem, []).append(setup_of((ROOT / out).read_text()))
    for example, setups in by_example.items():
        spec = load_spec(EXAMPLES / f"{example}.py")
        assert len(setups) == len(strategies(spec) if spec.acts else STRATEGY_KINDS), example
        assert all(s == setups[0] for s in setups), example


def render_with(*overrides: str, example: str = "mnist_mlp") -> dict[str, str]:
    data = load_spec(EXAMPLES / f"{example}.py").model_dump(mode="json")
    for override in overrides:
        data = apply_override(data, override)
    return setup_of(render_script(Spec.model_validate(data), spec_file="spec.py"))


@pytest.mark.parametrize(
    ("override", "changed"),
    [
        ("data.batch_size=32", "data.batch_size"),
        ("seed=7", "seed"),
        ('data.train={"kind": "npz", "path": "other.npz"}', "data.train"),
        ("data.shuffle_buffer=0", "data.shuffle_buffer"),
        ("data.rescale=0.5", "data.rescale"),
        ("model.layers[1].units=128", "model"),
        ("optimizer.learning_rate=0.1", "optimizer"),
        ('loss={"kind": "sparse_categorical_crossentropy"}', None),  # and the last layer:
    ],
)
def test_what_changes_a_checkpoints_meaning_changes_the_setup(override, changed):
    base = render_with()
    if changed is None:  # from_logits=False needs a softmax: model and loss both change
        after = render_with(override, 'model.layers[3].activation="softmax"')
        assert {k for k in base if base[k] != after[k]} == {"model", "loss"}
        return
    after = render_with(override)
    assert {k for k in base if base[k] != after[k]} == {changed}, (base, after)


@pytest.mark.parametrize(
    "override",
    [
        'description="Another description."',
        "loop.epochs=9",
        "loop.log_every_steps=5",
        'checkpoint={"every_steps": 3, "keep": 1}',
        "performance.steps_per_loop=7",
        'performance.precision="mixed_bfloat16"',
        "data.cache=true",
        "data.prefetch=false",
        'logging={"csv": true}',
        'metrics=[{"kind": "sparse_top_k_categorical_accuracy", "k": 3}]',
        'distribute={"kind": "mirrored", "devices": ["/cpu:0", "/cpu:1"]}',
    ],
)
def test_what_a_resumed_run_may_change_keeps_the_setup(override):
    assert render_with(override) == render_with()


def test_descriptions_and_synchronized_batch_norm_keep_the_setup():
    """A custom layer's docstring is for people; synchronized BatchNormalization (what the
    mirrored variant asks for) has the same variables."""
    base = render_with(example="shapes_unet")
    assert render_with('custom_layers[0].doc="Two convolutions."', example="shapes_unet") == base
    synced = render_with("custom_layers[0].layers[1].synchronized=true", example="shapes_unet")
    assert synced == base
    assert render_with("custom_layers[0].layers[0].kernel_size=5", example="shapes_unet") != base


def test_a_later_optional_field_and_written_out_defaults_keep_the_setup():
    """A later loopgen that adds an optional field (at a default that keeps today's meaning)
    still resumes today's runs; a spec that writes a default out is the spec that leaves it."""
    spec = load_spec(EXAMPLES / "cifar10_resnet.py")
    for section in (spec.model, spec.data.train, spec.optimizer):
        later = pydantic.create_model(
            type(section).__name__, __base__=type(section), new_option=(int, 0)
        )
        same = later.model_validate(section.model_dump())
        assert fingerprint._hash(same) == fingerprint._hash(section), type(section).__name__
        changed = later.model_validate({**section.model_dump(), "new_option": 1})
        assert fingerprint._hash(changed) != fingerprint._hash(section)
    base = render_with()
    assert render_with('data.train.split="train"', "model.layers[1].use_bias=true") == base
    # Two sources that differ only in their kind are two setups.
    assert fingerprint._hash(Npz(path="d")) != fingerprint._hash(KerasDataset(name="mnist"))


# --- Real runs ---------------------------------------------------------------------------------

# The MNIST MLP on 48 examples at batch 8: 6 steps an epoch, a checkpoint every 2 steps, a log
# record every step.
SMALL = [
    "data.batch_size=8",
    "loop.log_every_steps=1",
    'checkpoint={"every_steps": 2, "keep": 3}',
]


@pytest.fixture
def small(render, tmp_path):
    """Renders the small MNIST run (extra --set overrides, another --variant) into tmp_path."""
    train = npz(classification_npz(tmp_path / "train.npz", 48, (28, 28)))

    def _render(*overrides: str, variant: str | None = None, name: str = "train.py") -> Path:
        return render("mnist_mlp", f"data.train={train}", *SMALL, *overrides,
                      variant=variant, name=name)  # fmt: skip

    return _render


def start(script: Path, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, str(script), *args], cwd=script.parent, env=script_env(),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip


def run_proc(script: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """Runs a script that may fail (forked from the preloaded server): the test looks at its
    exit."""
    return run_preloaded(str(script), *args, cwd=script.parent, timeout=300, check=False)


def refused(proc, *phrases: str) -> str:
    """Asserts a clean refusal: exit 1, the phrases on stderr, no traceback."""
    assert proc.returncode == 1, (proc.returncode, proc.stdout[-2000:], proc.stderr[-3000:])
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    for phrase in phrases:
        assert phrase in proc.stderr, (phrase, proc.stderr[-3000:])
    return proc.stderr


def wait_for_records(proc: subprocess.Popen[str], log: Path, count: int = 1) -> None:
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and proc.poll() is None:
        if log.exists() and log.read_text().count("\n") >= count:
            return
        time.sleep(0.01)
    raise AssertionError(f"no {count} records in {log}: {proc.communicate()}")


def runs(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "runs.jsonl").read_text().splitlines()]


def weights_equal(a: Path, b: Path) -> dict:
    result = tf_check("compare_checkpoints", str(a / "checkpoints"), str(b / "checkpoints"),
                      cwd=a.parent)  # fmt: skip
    assert result["same_keys"], result
    return result


@pytest.mark.slow
def test_a_second_run_on_a_locked_directory_stops_at_once(small, tmp_path):
    """The first run is frozen (SIGSTOP) while it holds the lock, so the second certainly finds
    it held; it stops in seconds, naming the directory and the run, and the first then ends
    with exactly the weights of a run that was alone."""
    script = small()
    lone, shared = tmp_path / "lone", tmp_path / "shared"
    flags = ["--epochs", "2", "--deterministic"]
    run_python(script, *flags, "--output-dir", str(lone), cwd=tmp_path)

    first = start(script, *flags, "--output-dir", str(shared))
    wait_for_records(first, shared / "metrics.jsonl")
    first.send_signal(signal.SIGSTOP)
    try:
        began = time.monotonic()
        second = run_proc(script, *flags, "--output-dir", str(shared))
        seconds = time.monotonic() - began
    finally:
        first.send_signal(signal.SIGCONT)
    _, stderr = first.communicate(timeout=300)
    assert first.returncode == 0, stderr[-3000:]

    message = refused(second, f"{shared} is in use by another run", f"pid {first.pid} on ")
    assert "started 20" in message and "--output-dir" in message
    assert seconds < 30, seconds  # it does not wait for the lock
    print(f"refused after {seconds:.1f} s: {message.strip().splitlines()[-1]}")
    assert weights_equal(lone, shared)["max_diff"] == 0.0
    steps = [r["step"] for r in records(shared)]
    assert steps == list(range(1, 13)), steps  # one record per step: the first run's
    assert [r["event"] for r in runs(shared)] == ["start", "end"]
    assert runs(shared)[0]["pid"] == first.pid


@pytest.mark.slow
def test_runs_jsonl_records_each_run_and_how_it_ended(small, tmp_path):
    out = tmp_path / "run"
    script = small()
    # A hand edit: the script's checksum no longer matches its header.
    text = script.read_text()
    script.write_text(text.replace("\ndef main(", "\n# my edit\n\n\ndef main(", 1))
    run_python(script, "--max-steps", "3", "--output-dir", str(out), "--no-lock", cwd=tmp_path)
    assert not (out / "run.lock").exists()  # --no-lock: no lock taken

    script.write_text(text)  # back to the render
    proc = start(script, "--epochs", "50", "--output-dir", str(out))
    wait_for_records(proc, out / "metrics.jsonl", 5)
    proc.send_signal(signal.SIGTERM)
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 128 + signal.SIGTERM, stderr[-3000:]
    stopped_at = int(stdout.split("Stopped by SIGTERM at step ")[1].split(";")[0])

    nan = small('optimizer.learning_rate={"kind": "piecewise_constant", "boundaries": [4], '
                '"values": [0.001, 1e12]}', name="nan.py")  # fmt: skip
    nan_out = tmp_path / "nan"
    refused(run_proc(nan, "--output-dir", str(nan_out)), "NaN or Inf at step")

    edited_start, edited_end, start_record, end_record = runs(out)
    nan_start, nan_end = runs(nan_out)
    header = text[: text.index('"""', 3)]
    nan_header = nan.read_text()[:1000]
    for record, source in ((edited_start, header), (start_record, header), (nan_start, nan_header)):
        assert record["event"] == "start"
        assert record["spec"] == "mnist_mlp" and f"spec sha256 {record['spec_sha256']}" in source
        assert record["loopgen"] == "0.1.0"
        assert record["tensorflow"].startswith("2.21") and record["keras"].startswith("3.")
        assert record["strategy"] is None and record["replicas"] == 1
        assert any("CPU:0" in device for device in record["devices"])
        assert record["host"] and record["pid"] > 0 and record["time"].startswith("20")
        assert record["command"][0].endswith(".py") and "--output-dir" in record["command"]
    assert edited_start["script_edited"] is True
    assert f"script sha256 {edited_start['script_sha256']}" not in header
    assert start_record["script_edited"] is False and nan_start["script_edited"] is False
    assert f"script sha256 {start_record['script_sha256']}" in header
    assert edited_start["flags"]["no_lock"] is True and edited_start["flags"]["max_steps"] == 3
    assert start_record["flags"]["epochs"] == 50 and start_record["flags"]["init_from"] is None
    assert edited_start["resumed_from"] is None and edited_start["step"] == 0
    assert start_record["resumed_from"].endswith("ckpt-3") and start_record["step"] == 3
    for begin, end in ((edited_start, edited_end), (start_record, end_record),
                       (nan_start, nan_end)):  # fmt: skip
        assert end["event"] == "end" and end["run"] == begin["run"]
    assert edited_start["run"] != start_record["run"]
    assert edited_end["exit"] == "finished" and edited_end["step"] == 3
    assert end_record["exit"] == "sigterm" and end_record["step"] == stopped_at
    assert nan_end["exit"] == "nan" and nan_end["nan_step"] > 4
    assert nan_end["step"] >= nan_end["nan_step"]


@pytest.mark.slow
def test_checkpoints_of_another_setup_are_refused_unless_branched_with_init_from(small, tmp_path):
    script = small()  # spec A: batch 8
    a, b = tmp_path / "a", tmp_path / "b"
    run_python(script, "--max-steps", "4", "--output-dir", str(a), cwd=tmp_path)
    setup = json.loads((a / "checkpoints" / "setup.json").read_text())
    assert setup["data.batch_size"] == 8 and len(setup["weights"]) == 16

    # Spec B, rendered onto the same script: another batch size.
    small("data.batch_size=16")
    message = refused(run_proc(script, "--output-dir", str(a)), f"Refusing to resume from {a}")
    assert "data.batch_size: 8 in the checkpoints, 16 in this run" in message
    assert message.count(" in the checkpoints, ") == 1  # nothing else differs
    assert f"--init-from {a}" in message
    assert [r["event"] for r in runs(a)] == ["start", "end"]  # the refused run wrote nothing

    # Branching on purpose: B starts from A's weights (--max-steps 0 saves them as ckpt-0).
    proc = run_python(script, "--init-from", str(a), "--max-steps", "0", "--output-dir", str(b),
                      cwd=tmp_path)  # fmt: skip
    assert f"Starting from the weights of {a / 'checkpoints' / 'ckpt-4'}" in proc.stdout
    same = tf_check("model_weights_diff", str(script), str(a), str(b), cwd=tmp_path)
    assert same["max_diff"] == 0.0 and same["from_initial"] > 1e-4, same
    assert runs(b)[0]["init_from"] == str(a / "checkpoints" / "ckpt-4")
    assert runs(b)[0]["flags"]["init_from"] == str(a)
    # ... and trains on from there as a run of its own.
    resumed = run_python(script, "--max-steps", "2", "--output-dir", str(b), cwd=tmp_path)
    assert "Resumed from" in resumed.stdout and "at step 0" in resumed.stdout
    assert runs(b)[-1]["exit"] == "finished" and runs(b)[-1]["step"] == 2

    # Wrong uses of --init-from: into a run that has checkpoints, from a directory without.
    into_a_run = run_proc(script, "--init-from", str(a), "--output-dir", str(b))
    refused(into_a_run, f"--init-from {a}: {b / 'checkpoints'} already holds", "without --init")
    empty = tmp_path / "empty"
    empty.mkdir()
    refused(run_proc(script, "--init-from", str(empty), "--output-dir", str(tmp_path / "c")),
            f"--init-from {empty}: no checkpoint in {empty / 'checkpoints'}")  # fmt: skip

    # A hand edit of the network that the spec does not show: the weights differ.
    text = script.read_text()
    script.write_text(text.replace("layers.Dense(64,", "layers.Dense(48,", 1))
    message = refused(run_proc(script, "--output-dir", str(b)), "What differs:\n  weights: ")
    assert message.count(" in the checkpoints, ") == 1


@pytest.mark.slow
def test_a_longer_run_and_another_strategy_resume_the_same_setup(small, tmp_path):
    single = small()
    mirrored = small(TWO_CPUS, variant="mirrored", name="mirrored.py")
    out = tmp_path / "run"
    run_python(single, "--epochs", "1", "--output-dir", str(out), cwd=tmp_path)
    longer = run_python(single, "--epochs", "2", "--output-dir", str(out), cwd=tmp_path)
    assert "Resumed from" in longer.stdout and "at step 6" in longer.stdout
    other = run_python(mirrored, "--epochs", "3", "--output-dir", str(out), cwd=tmp_path)
    assert "Resumed from" in other.stdout and "at step 12" in other.stdout
    starts = [r for r in runs(out) if r["event"] == "start"]
    assert [r["replicas"] for r in starts] == [1, 1, 2]
    assert starts[2]["strategy"] == "MirroredStrategy"
    assert [r["exit"] for r in runs(out) if r["event"] == "end"] == ["finished"] * 3


@pytest.mark.slow
def test_a_file_system_without_locks_is_named_with_the_way_out(small, tmp_path):
    result = tf_check("lock_without_locks", str(small()), str(tmp_path / "run"), cwd=tmp_path)
    assert not result["lock"]
    assert f"Cannot lock {tmp_path / 'run' / 'run.lock'}" in result["refusal"]
    assert "does not support locks" in result["refusal"] and "--no-lock" in result["refusal"]


@pytest.mark.slow
def test_a_second_multi_worker_job_is_refused_on_every_worker(small, tmp_path):
    """The chief of the running job holds the lock; the second job's chief cannot take it and
    its other worker learns so in the same collective: both stop, neither hangs."""
    script = small(variant="multi_worker", name="multi_worker.py")
    out = tmp_path / "run"
    job = launch_workers(script, "--epochs", "2000", "--output-dir", str(out), cwd=tmp_path)
    try:
        wait_for_records(job[0], out / "metrics.jsonl")
        began = time.monotonic()
        second = finish_workers(
            launch_workers(script, "--epochs", "200", "--output-dir", str(out), cwd=tmp_path),
            timeout=120,
        )
        seconds = time.monotonic() - began
        assert all(proc.poll() is None for proc in job), "the first job ended too soon"
    finally:
        job[1].send_signal(signal.SIGTERM)  # preempt the first job: both workers stop
        first = finish_workers(job)
    print(f"second job refused after {seconds:.1f} s")
    chief_pid = job[0].pid
    (chief, chief_out, chief_err), (worker, worker_out, worker_err) = second
    refused(subprocess.CompletedProcess([], chief.returncode, chief_out, chief_err),
            f"{out} is in use by another run (pid {chief_pid} on ")  # fmt: skip
    refused(subprocess.CompletedProcess([], worker.returncode, worker_out, worker_err),
            f"The chief could not lock {out}")  # fmt: skip
    for proc, _, stderr in first:
        assert proc.returncode == 128 + signal.SIGTERM, stderr[-3000:]

    # One holder, one record of the first job: its chief's.
    assert (out / "run.lock").read_text().startswith(f"pid {chief_pid} on ")
    start_record, end_record = runs(out)
    assert start_record["pid"] == chief_pid and start_record["replicas"] == 2
    assert start_record["strategy"] == "MultiWorkerMirroredStrategy"
    assert len(start_record["cluster"]["worker"]) == 2
    assert end_record["exit"] == "sigterm"
    assert not (out / "workers" / "worker-1" / "runs.jsonl").exists()
    steps = [r["step"] for r in records(out)]
    assert steps == sorted(set(steps))  # the second job wrote no metrics


def test_init_from_exists_only_with_checkpoints():
    """--init-from exists only where there are checkpoints to branch from and into."""
    proc = run_cli("render", "examples/mnist_mlp.py", "--set", "checkpoint=null")
    assert proc.returncode == 0, proc.stderr
    assert "parse_run_flags(" in proc.stdout and "init_from=True" not in proc.stdout
    proc = run_cli("render", "examples/mnist_mlp.py")
    assert proc.returncode == 0 and "init_from=True" in proc.stdout, proc.stderr
