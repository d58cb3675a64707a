"""Training controls on real runs: gradient accumulation and clipping (single device, two
replicas, mixed float16), the script's own schedules, reduce-on-plateau, early stopping and the
best model (and their exact resume), and the metrics trackers (CSV, TensorBoard histograms,
Comet offline). Plus the spec rules that refuse conflicting controls, naming both fields."""

from __future__ import annotations

import csv
import glob
import json
import math
import signal
import zipfile
from pathlib import Path

import data
import pytest
from helpers import TWO_CPUS, npz, records, run_preloaded, run_python, tf_check
from test_runs import trained_example
from test_spec_validation import reject_set


def compare(a: Path, b: Path, cwd: Path) -> dict:
    return tf_check("compare_checkpoints", str(a / "checkpoints"), str(b / "checkpoints"), cwd=cwd)


def logged(out: Path, key: str) -> dict[int, float]:
    return {r["step"]: r[key] for r in records(out) if key in r}


# --- Spec rules (no TensorFlow) --------------------------------------------------------------


@pytest.mark.parametrize(
    ("example", "overrides", "phrases"),
    [
        ("shapes_plateau", ["gradients.clip_value=0.5"], ["gradients.clip_norm", "clip_value"]),
        ("mnist_onecycle", ["gradients.accumulate_steps=3"],
         ["gradients.accumulate_steps=3", "data.batch_size=256", "multiple of 3"]),
        ("mnist_onecycle", ['distribute={"kind": "mirrored", "devices": ["/cpu:0", "/cpu:1"]}',
                            "gradients.accumulate_steps=256"],
         ["per replica", "multiple of 512"]),
        ("mnist_onecycle", ["performance.xla=on"],
         ["performance.xla='on'", "gradients.accumulate_steps=4"]),
        ("shapes_plateau", ["early_stopping.patience=2"],
         ["early_stopping.patience=2", "reduce_on_plateau.patience=2", "larger"]),
        ("shapes_plateau", ['early_stopping.monitor="val_iou"'],
         ["early_stopping.monitor='val_iou'", "val_loss", "val_accuracy"]),
        ("shapes_plateau", ["data.validation=null"],
         ["best_model", "data.validation"]),
        ("shapes_plateau", ['optimizer.learning_rate={"kind": "one_cycle", "max_learning_rate": '
                            '0.01, "total_steps": 100}'],
         ["reduce_on_plateau", "optimizer.learning_rate", "one_cycle"]),
        ("shapes_plateau", ["logging.tensorboard=false"],
         ["logging.histograms=True", "logging.tensorboard=False"]),
        ("fashion_cyclical", ["loop.epochs=null", "loop.steps=200"],
         ["optimizer.learning_rate.warmup_steps=234", "loop.steps=200"]),
        ("fashion_cyclical", ["optimizer.learning_rate.after.maximal_learning_rate=0.001"],
         ["maximal_learning_rate=0.001", "initial_learning_rate=0.005"]),
        ("mnist_onecycle", ["loop.epochs=null", "loop.steps=500"],
         ["optimizer.learning_rate.total_steps=705", "loop.steps=500", "total_steps=500"]),
    ],
)  # fmt: skip
def test_conflicting_controls_are_refused_naming_both_fields(example, overrides, phrases):
    message = reject_set(example, *overrides, errors=0)
    for phrase in phrases:
        assert phrase in message, message


def test_a_warmup_in_front_of_a_schedule_checks_the_steps_left_after_it():
    after = {"kind": "one_cycle", "max_learning_rate": 0.1, "total_steps": 300}
    warmup = {"kind": "warmup", "warmup_steps": 200, "after": after}
    message = reject_set(
        "mnist_onecycle",
        "loop.epochs=null",
        "loop.steps=400",
        f"optimizer.learning_rate={json.dumps(warmup)}",
        errors=0,
    )
    assert "optimizer.learning_rate.after.total_steps=300" in message, message
    assert "the 200 steps left after optimizer.learning_rate.warmup_steps" in message, message


# --- Gradient accumulation and clipping -------------------------------------------------------


def mlp_overrides(tmp_path: Path) -> list[str]:
    """90 examples at batch 40: 3 steps an epoch, the last of 10 examples, which 4 micro-batches
    split unevenly (3 + 3 + 3 + 1). An L2 penalty, momentum, no XLA (it rounds differently)."""
    train = npz(data.classification_npz(tmp_path / "train.npz", 90, (28, 28)))
    return [
        f"data.train={train}",
        "data.validation=null",
        "data.batch_size=40",
        "logging.comet=null",
        "loop.log_every_steps=1",
        "performance.xla=off",
        'model.layers[1].kernel_regularizer={"kind": "l2", "l2": 0.01}',
        'optimizer={"kind": "sgd", "learning_rate": 0.1, "momentum": 0.9}',
    ]


@pytest.mark.slow
def test_accumulated_micro_batches_train_like_the_whole_batch(render, tmp_path):
    """Four micro-batches per step (one device, then two replicas) == one whole batch."""
    overrides = mlp_overrides(tmp_path)
    whole = render("mnist_onecycle", *overrides, "gradients.accumulate_steps=1", name="whole.py")
    micro = render("mnist_onecycle", *overrides, name="micro.py")
    mirrored = render("mnist_onecycle", *overrides, TWO_CPUS, variant="mirrored", name="m.py")
    assert "for i in tf.range(num_micro_batches)" in micro.read_text()
    runs = {}
    for script in (whole, micro, mirrored):
        runs[script.stem] = tmp_path / script.stem
        run_python(script, "--epochs", "2", "--output-dir", str(runs[script.stem]),
                   "--deterministic", cwd=tmp_path)  # fmt: skip

    for other in ("micro", "m"):
        result = compare(runs["whole"], runs[other], tmp_path)
        assert result["step"] == 6 and result["max_diff"] <= 1e-5, (other, result)
        # The logged loss is the whole batch's mean (penalty included once, not per part).
        expected, got = logged(runs["whole"], "loss"), logged(runs[other], "loss")
        assert sorted(got) == list(range(1, 7))
        assert all(math.isclose(got[s], expected[s], rel_tol=1e-5) for s in got), (got, expected)


def clip_overrides(tmp_path: Path) -> list[str]:
    """Plain SGD at 0.1 with the global norm clipped at 0.01 (far below the real norm): one step
    then moves the weights by exactly 0.1 * 0.01. A checkpoint every step, no export."""
    return [
        *data.small_data_overrides("shapes_plateau", tmp_path),
        'optimizer={"kind": "sgd", "learning_rate": 0.1}',
        "gradients.clip_norm=0.01",
        'checkpoint={"every_steps": 1, "keep": 5}',
        "loop.log_every_steps=1",
        "export.saved_model=false",
    ]


@pytest.mark.slow
@pytest.mark.parametrize(
    ("variant", "extra", "tolerance"),
    [
        (None, [], 1e-4),
        # Keras's own clipnorm would clip each replica's share: up to twice the norm.
        ("mirrored", [TWO_CPUS], 1e-4),
        # The gradients are of the loss scaled by 32768: unscaled clipping would barely move.
        (None, ["performance.precision=mixed_float16"], 2e-2),
    ],
    ids=["single_device", "mirrored", "mixed_float16"],
)
def test_clipping_limits_the_update_of_the_whole_batch(variant, extra, tolerance, render, tmp_path):
    script = render("shapes_plateau", *clip_overrides(tmp_path), *extra, variant=variant)
    out = tmp_path / "run"
    # --max-steps 0 saves the initial weights as ckpt-0; the second run trains step 1.
    run_python(script, "--max-steps", "0", "--output-dir", str(out), cwd=tmp_path)
    run_python(script, "--max-steps", "1", "--output-dir", str(out), cwd=tmp_path)
    checkpoints = out / "checkpoints"
    delta = tf_check("weight_delta_norm", str(checkpoints / "ckpt-0"), str(checkpoints / "ckpt-1"),
                     cwd=tmp_path)  # fmt: skip
    assert delta["count"] == 8  # kernel and bias of 4 layers
    assert delta["norm"] == pytest.approx(0.1 * 0.01, rel=tolerance), delta
    # The norm before clipping is logged, unscaled: far above the threshold, and finite.
    assert 0.05 < logged(out, "gradient_norm")[1] < 100


@pytest.mark.slow
@pytest.mark.parametrize(
    ("variant", "extra"), [(None, []), ("mirrored", [TWO_CPUS])], ids=["single_device", "mirrored"]
)
def test_clipping_by_value_bounds_each_element_of_the_whole_batchs_gradient(
    variant, extra, render, tmp_path
):
    """gradients.clip_value=1e-4, far below most elements of the gradient: one step of plain
    SGD at 0.1 moves no weight by more than 0.1 * 1e-4, the largest exactly that far; on two
    replicas too (clipping each replica's share, then summing, would move them up to twice as
    far)."""
    overrides = [o for o in clip_overrides(tmp_path) if not o.startswith("gradients.")]
    script = render("shapes_plateau", *overrides, "gradients.clip_norm=null",
                    "gradients.clip_value=0.0001", *extra, variant=variant)  # fmt: skip
    out = tmp_path / "run"
    run_python(script, "--max-steps", "0", "--output-dir", str(out), cwd=tmp_path)
    run_python(script, "--max-steps", "1", "--output-dir", str(out), cwd=tmp_path)
    checkpoints = out / "checkpoints"
    moved = tf_check("weight_steps", str(checkpoints / "ckpt-0"), str(checkpoints / "ckpt-1"),
                     cwd=tmp_path)  # fmt: skip
    assert moved["sizes"][-1] == pytest.approx(1e-5, abs=2e-7), moved


# --- Schedules ----------------------------------------------------------------------------------


@pytest.mark.slow
def test_warmup_then_triangular2_follows_its_formula_and_resumes(render, tmp_path):
    cyclical = {"kind": "cyclical", "initial_learning_rate": 0.01, "maximal_learning_rate": 0.1,
                "step_size": 3, "mode": "triangular2"}  # fmt: skip
    warmup = {"kind": "warmup", "warmup_steps": 2, "after": cyclical}
    script = render(
        "fashion_cyclical",
        *data.small_data_overrides("fashion_cyclical", tmp_path),
        f"optimizer.learning_rate={json.dumps(warmup)}",
        "loop.log_every_steps=1",
    )
    straight, resumed = tmp_path / "straight", tmp_path / "resumed"
    run_python(script, "--epochs", "4", "--output-dir", str(straight), cwd=tmp_path)
    rates = logged(straight, "learning_rate")  # after step s: the rate of step s + 1
    assert sorted(rates) == list(range(1, 13))
    # Warmup: step 1 at 2/2 of the cycle's first rate; then the cycle, its step 0 at step 2:
    # up to 0.1 in 3 steps, down to 0.01 in 3, then up to half the swing (triangular2).
    expected = {1: 0.01, 2: 0.01, 3: 0.04, 5: 0.1, 7: 0.04, 8: 0.01, 11: 0.055}
    for step, rate in expected.items():
        assert rates[step] == pytest.approx(rate, rel=1e-5), (step, rates)

    run_python(script, "--max-steps", "4", "--output-dir", str(resumed), cwd=tmp_path)
    run_python(script, "--epochs", "4", "--output-dir", str(resumed), cwd=tmp_path)
    assert logged(resumed, "learning_rate") == rates


@pytest.mark.slow
def test_one_cycle_rises_to_its_peak_then_anneals_to_the_floor(render, tmp_path):
    script = render(
        "mnist_onecycle",
        *data.small_data_overrides("mnist_onecycle", tmp_path),
        "logging.comet=null",
        "gradients.accumulate_steps=1",
        "optimizer.learning_rate.total_steps=12",
        "loop.log_every_steps=1",
    )
    out = tmp_path / "run"
    run_python(script, "--epochs", "4", "--output-dir", str(out), cwd=tmp_path)
    rates = logged(out, "learning_rate")
    start, peak = 0.5 / 25, 0.5
    floor = start / 1e4

    def one_cycle(step: float) -> float:
        rise = 0.3 * 12
        if step < rise:
            return peak + (start - peak) / 2 * (1 + math.cos(math.pi * step / rise))
        fraction = min((step - rise) / (12 - rise), 1.0)
        return floor + (peak - floor) / 2 * (1 + math.cos(math.pi * fraction))

    assert all(rates[s] == pytest.approx(one_cycle(s), rel=1e-4) for s in rates), rates
    assert rates[1] < rates[2] < rates[3] and rates[4] > rates[5] > rates[11]
    assert rates[12] == pytest.approx(floor, rel=1e-4)


# --- Decisions on validation values -------------------------------------------------------------


def plateau_overrides(tmp_path: Path) -> list[str]:
    """3 steps an epoch, a validation after each. min_delta=100: only the first validation ever
    improves. So the rate halves after validations 2, 3 and 4 (patience 1), the run stops after
    validation 4 (patience 3, at step 12 of 90), and the best weights are those of step 3."""
    return [
        *data.small_data_overrides("shapes_plateau", tmp_path),
        "loop.log_every_steps=1",
        'reduce_on_plateau={"patience": 1, "factor": 0.5, "min_delta": 100}',
        'early_stopping={"patience": 3, "min_delta": 100}',
        'best_model={"monitor": "val_loss", "min_delta": 100}',
    ]


@pytest.mark.slow
def test_plateau_early_stopping_and_best_model_act_and_resume_exactly(render, tmp_path):
    script = render("shapes_plateau", *plateau_overrides(tmp_path))
    straight, resumed = tmp_path / "straight", tmp_path / "resumed"
    proc = run_python(script, "--output-dir", str(straight), "--deterministic", cwd=tmp_path)
    assert "Stopping early" in proc.stdout and "Epoch 5/30" not in proc.stdout

    rates = logged(straight, "learning_rate")
    assert sorted(rates) == list(range(1, 13))
    expected = {**dict.fromkeys(range(1, 7), 3e-3), **dict.fromkeys(range(7, 10), 1.5e-3),
                **dict.fromkeys(range(10, 13), 7.5e-4)}  # fmt: skip
    assert rates == pytest.approx(expected, rel=1e-6)

    # The best weights: saved at the first validation, exported beside the last ones.
    assert sorted(p.name for p in (straight / "checkpoints" / "best").glob("*.index")) == [
        "ckpt-3.index"
    ]
    matches = tf_check("best_export_matches", str(script), str(straight), "24", cwd=tmp_path)
    assert matches["best"] <= 1e-5 and matches["last_vs_best"] > 1e-4, matches

    # Stopped after 2 epochs (the rate already lowered once), resumed: the same decisions at
    # the same steps, and the same weights, because the monitors are in the checkpoint.
    run_python(script, "--epochs", "2", "--output-dir", str(resumed), "--deterministic",
               cwd=tmp_path)  # fmt: skip
    proc = run_python(script, "--output-dir", str(resumed), "--deterministic", cwd=tmp_path)
    assert "Resumed from" in proc.stdout and "Stopping early" in proc.stdout
    assert logged(resumed, "learning_rate") == rates
    result = compare(straight, resumed, tmp_path)
    assert result["step"] == 12 and result["max_diff"] == 0.0, result
    # The best model's state is in the checkpoint too: the resumed run knows the best was at
    # step 3 and keeps it (without it, its first validation would be a new best).
    best = sorted(p.name for p in (resumed / "checkpoints" / "best").iterdir())
    assert best == sorted(p.name for p in (straight / "checkpoints" / "best").iterdir()), best
    matches = tf_check("best_export_matches", str(script), str(resumed), "24", cwd=tmp_path)
    assert matches["best"] <= 1e-5 and matches["last_vs_best"] > 1e-4, matches
    # A run that stopped early stays stopped.
    before = len(records(resumed))
    proc = run_python(script, "--output-dir", str(resumed), cwd=tmp_path)
    assert "already stopped early" in proc.stdout and len(records(resumed)) == before


# Runs a generated script (argv[2]) in this process, as `python SCRIPT` would. argv[1], a JSON
# object: each checkpoint the run writes is appended to the file "saves" names, as [kind, step]
# (kind "step": the run's checkpoints, "best": the best validation's weights); right after
# writing the one "kill_after" names, the run is SIGKILLed; as it logs step "sigterm_at", it
# gets a SIGTERM (a preemption: it ends the epoch's train_loop call, saves and exits).
KILLED_AFTER_SAVE = """
import importlib.util, json, os, signal, sys

sys.path[0] = os.path.dirname(os.path.abspath(sys.argv[2]))  # as `python SCRIPT`: its runtime
spec = importlib.util.spec_from_file_location("train", sys.argv[2])
script = importlib.util.module_from_spec(spec)
spec.loader.exec_module(script)
given = json.loads(sys.argv[1])
save, save_best = script.RunDirectory.save, script.RunDirectory.save_best
log = script.RunDirectory.log

def saved(kind, step):
    with open(given["saves"], "a") as f:
        f.write(json.dumps([kind, step]) + "\\n")
    if [kind, step] == given.get("kill_after"):
        os.kill(os.getpid(), signal.SIGKILL)

def save_then_die(self, step):
    save(self, step)
    saved("step", step)

def save_best_then_die(self, step):
    path = save_best(self, step)
    saved("best", step)
    return path

def log_then_preempted(self, split, step, values, epoch=None):
    log(self, split, step, values, epoch)
    if split == "train" and step == given.get("sigterm_at"):
        os.kill(os.getpid(), signal.SIGTERM)

script.RunDirectory.save, script.RunDirectory.save_best = save_then_die, save_best_then_die
script.RunDirectory.log = log_then_preempted
script.main(sys.argv[3:])
"""

# The run's state in its newest checkpoint and in checkpoints/best, against other runs': every
# value (weights, optimizer slots and rate, step, the monitors' best values and patience
# counts, the epoch's running means), exactly (the data iterator's position is the step's).
# Prints, for each other run, the values that differ or are in one of the two only.
SAME_STATE = """
import json, os, sys

import numpy as np
import tensorflow as tf
import tf_checks

def state(out):
    found = {}
    for folder in ("checkpoints", os.path.join("checkpoints", "best")):
        newest = tf.train.latest_checkpoint(os.path.join(out, folder))
        values = tf_checks.checkpoint_values(newest)
        found |= {f"{folder}/{os.path.basename(newest)}/{k}": v for k, v in values.items()}
    return found

straight = state(sys.argv[1])
assert any("early_stopping" in k for k in straight) and any("plateau" in k for k in straight)
differing = {}
for other in sys.argv[2:]:
    found = state(other)
    differing[other] = sorted(set(straight) ^ set(found)) + [
        k for k in straight if k in found and not np.array_equal(straight[k], found[k])
    ]
print(json.dumps(differing))
"""


def saves_of(out: Path) -> list[list]:
    return [json.loads(line) for line in (out / "saves.jsonl").read_text().splitlines()]


def without_wall_time(out: Path) -> list[dict]:
    """The logged records (training, validation, learning rates), not the steps per second."""
    return [{k: v for k, v in r.items() if k != "steps_per_second"} for r in records(out)]


@pytest.mark.slow
@pytest.mark.parametrize(
    ("cadence", "step_saves"),
    [
        # 2 steps an epoch: the checkpoints of steps 3 and 9 fall mid-epoch, those of steps 6
        # and 12 on an epoch's last step (12: the validation that stops the run).
        ({"every_steps": 3}, [3, 6, 9, 12]),
        # At the end of epochs 2 and 4 (steps 4, 8); epoch 6's validation stops the run (12).
        ({"every_epochs": 2}, [4, 8, 12]),
    ],
    ids=["every_steps", "every_epochs"],
)
def test_a_run_killed_after_any_of_its_checkpoints_resumes_to_the_same_end(
    cadence, step_saves, render, tmp_path
):
    """Issue 63: a run SIGKILLed right after each of its checkpoints in turn (the periodic
    ones, mid-epoch and on an epoch's last step, and the best model's), or preempted (SIGTERM)
    in an epoch's last train_loop call, then resumed in a new process, ends where the run that
    never stopped ends: at the same step, with the same weights, learning rate, monitors and
    best model, having logged the same values. A validation's effects (the plateau's lowered
    rate, early stopping's patience, the best value and weights) belong to the step of its
    epoch's end: a checkpoint of that step without them resumes into the next epoch as though
    the validation never ran."""
    script = render(
        "shapes_plateau",
        *data.small_data_overrides("shapes_plateau", tmp_path),
        "data.batch_size=48",
        "loop.log_every_steps=1",
        f"checkpoint={json.dumps(cadence)}",
        # min_delta=100: only the first validation improves the plateau's and early stopping's
        # value; the rate halves after validations 2 to 6, the run stops after validation 6
        # (step 12 of 60). The best model keeps each validation loss that is lower.
        'reduce_on_plateau={"patience": 1, "factor": 0.5, "min_delta": 100}',
        'early_stopping={"patience": 5, "min_delta": 100}',
        'best_model={"monitor": "val_loss"}',
        "logging.histograms=false",
        "export.saved_model=false",
    )

    def run(out: Path, **given: object) -> str:
        out.mkdir(exist_ok=True)
        proc = run_preloaded(
            "-c", KILLED_AFTER_SAVE, json.dumps({"saves": str(out / "saves.jsonl"), **given}),
            str(script), "--output-dir", str(out), "--deterministic", cwd=tmp_path, check=False,
        )  # fmt: skip
        expected = {"kill_after": -signal.SIGKILL, "sigterm_at": 128 + signal.SIGTERM}
        returncode = expected[next(iter(given))] if given else 0
        assert proc.returncode == returncode, (given, proc.stdout[-2000:], proc.stderr[-3000:])
        return proc.stdout

    straight = tmp_path / "straight"
    assert "Stopping early" in run(straight)
    saves = saves_of(straight)
    assert [step for kind, step in saves if kind == "step"] == step_saves, saves
    best = [step for kind, step in saves if kind == "best"]
    assert best[0] == 2 and len(best) >= 2, saves  # the first validation, and later ones
    rates = {r["step"]: r["learning_rate"] for r in records(straight) if "learning_rate" in r}
    assert rates[12] == pytest.approx(3e-3 / 2**4, rel=1e-6), rates  # logged before val. 6

    # Preempted at the end of epoch 3 (step 6: on the step cadence, off the epoch cadence).
    stops = [{"kill_after": save} for save in saves] + [{"sigterm_at": 6}]
    resumed = []
    for stop in stops:
        kind, step = stop.get("kill_after") or ("sigterm", stop["sigterm_at"])
        out = tmp_path / f"stopped_after_{kind}_{step}"
        run(out, **stop)
        before = saves_of(out)
        assert "kill_after" not in stop or before[-1] == stop["kill_after"], (stop, before)
        stdout = run(out)
        if [kind for kind, _ in before].count("step"):  # else it starts again
            newest = [step for kind, step in before if kind == "step"][-1]
            assert f"Resumed from {out / 'checkpoints' / f'ckpt-{newest}'}" in stdout, stop
        assert without_wall_time(out) == without_wall_time(straight), stop
        # Each checkpoint of the run that never stopped, written by one of the two runs.
        assert {*map(tuple, saves)} <= {*map(tuple, saves_of(out))}, (stop, saves_of(out))
        resumed.append(str(out))
    compared = run_preloaded("-c", SAME_STATE, str(straight), *resumed, cwd=tmp_path)
    differing = json.loads(compared.stdout.splitlines()[-1])
    assert differing == {out: [] for out in resumed}, differing


@pytest.mark.slow
def test_a_validated_run_without_monitors_killed_after_any_checkpoint_logs_every_validation(
    render, tmp_path
):
    """A run that validates every epoch without monitors, its step checkpoints on each epoch's
    last step: SIGKILLed right after each checkpoint in turn and resumed, it logs the records
    of the run that never stopped, every epoch's validation among them, and ends with its
    weights. A checkpoint of an epoch's last step written before the validation resumed into
    the next epoch, and that validation was never logged."""
    script = render(
        "shapes_plateau", *data.small_data_overrides("shapes_plateau", tmp_path),
        "data.batch_size=48", "loop.log_every_steps=1", "loop.epochs=4",
        'checkpoint={"every_steps": 2}', "reduce_on_plateau=null", "early_stopping=null",
        "best_model=null", "logging.histograms=false", "export.saved_model=false",
    )  # fmt: skip

    def run(out: Path, **given: object) -> None:
        out.mkdir(exist_ok=True)
        proc = run_preloaded(
            "-c", KILLED_AFTER_SAVE, json.dumps({"saves": str(out / "saves.jsonl"), **given}),
            str(script), "--output-dir", str(out), "--deterministic", cwd=tmp_path, check=False,
        )  # fmt: skip
        expected = -signal.SIGKILL if given else 0
        assert proc.returncode == expected, (given, proc.stdout[-2000:], proc.stderr[-3000:])

    straight = tmp_path / "straight"
    run(straight)
    saves = saves_of(straight)
    assert saves == [["step", 2], ["step", 4], ["step", 6], ["step", 8]], saves
    assert [r["step"] for r in records(straight) if "val_loss" in r] == [2, 4, 6, 8]
    for save in saves[:-1]:
        out = tmp_path / f"killed_after_{save[1]}"
        run(out, kill_after=save)
        run(out)
        assert without_wall_time(out) == without_wall_time(straight), save
        result = tf_check("compare_checkpoints", str(straight / "checkpoints"),
                          str(out / "checkpoints"), cwd=tmp_path)  # fmt: skip
        assert result["step"] == 8 and result["max_diff"] == 0.0, (save, result)


# --- Trackers -------------------------------------------------------------------------------------


@pytest.mark.slow
def test_csv_and_histograms_hold_what_the_run_logged(shared, tmp_path):
    # test_runs' run of shapes_plateau (small data, 2 epochs), made once for both.
    _, out, _ = trained_example(shared, "shapes_plateau")

    with open(out / "metrics.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    expected = records(out)
    columns = ["step", "epoch", "loss", "accuracy", "gradient_norm", "learning_rate",
               "steps_per_second", "val_loss", "val_accuracy"]  # fmt: skip
    assert list(rows[0]) == columns
    assert len(rows) == len(expected)
    for row, record in zip(rows, expected, strict=True):
        assert {k: float(v) for k, v in row.items() if v} == pytest.approx(record)

    plugins = tf_check("summary_plugins", str(out / "logs" / "train"), cwd=tmp_path)
    histograms = sorted(tag for tag, plugin in plugins.items() if plugin == "histograms")
    norms = sorted(tag for tag in plugins if tag.startswith("gradient_norm/"))
    assert len(histograms) == 8 and any(tag.endswith("/kernel") for tag in histograms), plugins
    assert norms == [f"gradient_norm/{tag}" for tag in histograms]
    assert plugins["gradient_norm"] == "scalars"


@pytest.mark.slow
def test_comet_offline_experiment_holds_the_logged_metrics(shared):
    # test_runs' run of mnist_onecycle (small data, 2 epochs), made once for both.
    _, out, _ = trained_example(shared, "mnist_onecycle")

    (archive,) = glob.glob(str(out / "comet" / "*.zip"))
    with zipfile.ZipFile(archive) as f:
        messages = [json.loads(line) for line in f.read("messages.json").decode().splitlines()]
    metrics = [m["payload"]["metric"] for m in messages if m["type"] == "metric_msg"]
    comet_loss = {m["step"]: m["metricValue"] for m in metrics if m["metricName"] == "loss"}
    assert comet_loss == pytest.approx(logged(out, "loss")) and comet_loss
    assert any(m["metricName"] == "val_accuracy" for m in metrics)
    params = {
        m["payload"]["param"]["paramName"]: m["payload"]["param"]["paramValue"]
        for m in messages
        if m["type"] == "parameter_msg" and m["payload"]["param"]["source"] == "manual"
    }
    assert params["batch_size"] == 32 and params["optimizer"] == "sgd", params
