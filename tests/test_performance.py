"""The speed options (issue 5) change how fast the script trains, never what it trains:
steps per call keep every cadence and the exact result, XLA stays within rounding, mixed
precision scales the loss and resumes exactly. Plus the benchmark harness, run small."""

from __future__ import annotations

import json
import re
import statistics
import subprocess
import sys

import data
import numpy as np
import pytest
from helpers import ROOT, npz, records, run_cli, run_preloaded, run_python, tf_check

# --- What the spec renders -----------------------------------------------------------------


def rendered(example: str, *overrides: str, variant: str | None = None) -> str:
    args = ["render", f"examples/{example}.py"]
    args += ["--variant", variant] if variant else []
    for override in overrides:
        args += ["--set", override]
    proc = run_cli(*args)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


@pytest.mark.parametrize(
    ("example", "overrides", "variant", "compiled"),
    [
        ("mnist_mlp", [], None, True),  # dense layers only: auto compiles
        ("fashion_validation", [], None, False),  # Dropout: XLA random numbers are slow on CPU
        ("cifar10_vgg", [], None, False),  # convolutions: auto does not
        ("shapes_unet", [], None, False),
        ("mnist_mlp", [], "mirrored", False),  # distributed: auto does not
        ("mnist_mlp", ["performance.xla=off"], None, False),
        ("cifar10_vgg", ["performance.xla=on"], None, True),
        # DQN's Q-network on one device: its greedy call and its train step.
        ("cartpole_dqn", [], None, True),
        ("cartpole_dqn", ["performance.xla=off"], None, False),
        ("cartpole_dqn", [], "mirrored", False),
        ("breakout_dqn", [], None, False),  # convolutions
        ("cartpole_ppo", [], None, False),  # the other ways that act: not measured to gain
    ],
)
def test_xla_auto_compiles_dense_single_device_steps_only(example, overrides, variant, compiled):
    source = rendered(example, *overrides, variant=variant)
    # xla: off only for --check-numerics and --dump-debug-info, whose checks XLA cannot run.
    assert ("@tf.function(jit_compile=xla)" in source) == compiled
    compiles = 2 if example == "cartpole_dqn" else 1
    assert source.count("jit_compile=xla") == (compiles if compiled else 0)
    assert ("xla = execution_modes(args)" in source) == compiled


@pytest.mark.parametrize(
    ("example", "variant", "named"),
    [("cartpole_ppo", None, "training is PPO"), ("pendulum_sac", None, "training is SAC"),
     ("cartpole_dqn", "mirrored", "distribute.kind='mirrored'")],
)  # fmt: skip
def test_xla_on_for_a_way_that_acts_is_refused_but_for_dqn_on_one_device(example, variant, named):
    """It would be ignored without a word: only DQN's single-device script compiles."""
    args = ["render", f"examples/{example}.py", "--set", "performance.xla=on"]
    proc = run_cli(*args, *(["--variant", variant] if variant else []))
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert f"performance.xla='on' but {named}" in proc.stderr and "'auto' or 'off'" in proc.stderr
    assert "jit_compile=xla" in rendered("cartpole_dqn", "performance.xla=on")


def test_xla_on_under_a_distributed_strategy_is_refused_naming_both_fields():
    proc = run_cli(
        "render", "examples/mnist_mlp.py", "--variant", "mirrored",
        "--set", "performance.xla=on",
    )  # fmt: skip
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert "performance.xla='on'" in proc.stderr and "distribute.kind='mirrored'" in proc.stderr
    assert "'auto' or 'off'" in proc.stderr


def test_precision_renders_policy_and_loss_scaling_only_where_needed():
    plain = rendered("mnist_mlp")
    assert "mixed_precision" not in plain and "scale_loss" not in plain
    bf16 = rendered("mnist_mlp", "performance.precision=mixed_bfloat16")
    assert 'keras.mixed_precision.set_global_policy("mixed_bfloat16")' in bf16
    assert "LossScaleOptimizer" not in bf16 and "scale_loss" not in bf16  # no underflow there
    fp16 = rendered("cifar10_vgg", "performance.precision=mixed_float16")
    assert re.search(r"keras\.optimizers\.LossScaleOptimizer\(\s*keras\.optimizers\.SGD\(", fp16)
    assert "scaled_loss = optimizer.scale_loss(loss)" in fp16
    assert "tape.gradient(scaled_loss, model.trainable_variables)" in fp16
    # The policy is set before the model is built, and the output is cast back to float32.
    assert fp16.index("set_global_policy(") < fp16.index("model = build_model()")
    assert 'layers.Activation("linear", dtype="float32")' in fp16


def test_loop_calls_stop_at_every_cadence():
    source = rendered("mnist_mlp", "checkpoint.every_epochs=null", "checkpoint.every_steps=30")
    assert "STEPS_PER_LOOP = 50" in source
    helper = source[source.index("def steps_in_call(") : source.index("\ndef train(")]
    for bound in ("STEPS_PER_LOOP", "epoch_end - global_step",
                  "LOG_EVERY_STEPS - global_step % LOG_EVERY_STEPS",
                  "CHECKPOINT_EVERY_STEPS - global_step % CHECKPOINT_EVERY_STEPS"):  # fmt: skip
        assert bound in helper
    # A tensor, not a Python int: each new int would retrace train_loop.
    assert "train_loop(train_iterator, tf.constant(num_steps))" in source


def test_nondeterministic_input_is_opt_in():
    assert "deterministic=False" not in rendered("mnist_mlp")
    source = rendered("mnist_mlp", "data.deterministic=false")
    # Both parallel maps: reading (and decoding) the examples, and preprocessing them.
    assert source.count("deterministic=False") == 3  # the comment and the two maps


# --- Real runs ------------------------------------------------------------------------------


@pytest.fixture
def digits(tmp_path):
    """100 MNIST-shaped examples at batch 8: 13 steps per epoch, the last one of 4 examples."""
    train = npz(data.classification_npz(tmp_path / "train.npz", 100, (28, 28)))
    return [f"data.train={train}", "data.batch_size=8"]


@pytest.mark.slow
def test_steps_per_loop_keeps_cadences_and_results_exact_and_traces_once(digits, render, tmp_path):
    """7 steps per call against 1: log points every 5 steps and at epoch ends, checkpoints
    every 4 steps, bit-identical weights; and train_loop traces once although num_steps takes
    several values and the last batch of each epoch is smaller."""
    common = [*digits, "loop.log_every_steps=5", "checkpoint.every_epochs=null",
              "checkpoint.every_steps=4", "checkpoint.keep=100", "performance.xla=off"]  # fmt: skip
    seven = render("mnist_mlp", *common, "performance.steps_per_loop=7", name="seven.py")
    one = render("mnist_mlp", *common, "performance.steps_per_loop=1", name="one.py")
    flags = ["--epochs", "2", "--deterministic"]
    traces = tf_check("trace_counts", str(seven), *flags, "--output-dir",
                      str(tmp_path / "seven"), cwd=tmp_path)  # fmt: skip
    assert traces["train_loop"] == 1 and traces["train_step"] == 1, traces
    run_python(one, *flags, "--output-dir", str(tmp_path / "one"), cwd=tmp_path)

    expected_logs = [5, 10, 13, 15, 20, 25, 26]
    logged = {
        name: [r for r in records(tmp_path / name) if "loss" in r] for name in ("seven", "one")
    }
    for name, rows in logged.items():
        assert [r["step"] for r in rows] == expected_logs, name
        saved = sorted(int(p.stem.split("-")[1])
                       for p in (tmp_path / name / "checkpoints").glob("ckpt-*.index"))  # fmt: skip
        assert saved == [4, 8, 12, 16, 20, 24, 26], name
    for a, b in zip(logged["seven"], logged["one"], strict=True):
        assert a["loss"] == b["loss"] and a["accuracy"] == b["accuracy"]
        assert a["steps_per_second"] > 0
    result = tf_check("compare_checkpoints", str(tmp_path / "seven" / "checkpoints"),
                      str(tmp_path / "one" / "checkpoints"), cwd=tmp_path)  # fmt: skip
    assert result["same_keys"] and result["step"] == 26
    assert result["max_diff"] == 0.0, result


@pytest.mark.slow
def test_xla_step_matches_the_uncompiled_step_within_rounding(digits, render, tmp_path):
    """One epoch (with the smaller last batch, compiled for its own shape) with and without
    XLA: the same training up to float rounding."""
    runs = {}
    for xla in ("on", "off"):
        script = render("mnist_mlp", *digits, f"performance.xla={xla}", name=f"{xla}.py")
        if xla == "on":
            assert "jit_compile=xla" in script.read_text()
        out = tmp_path / xla
        run_python(script, "--epochs", "1", "--deterministic", "--output-dir", str(out),
                   cwd=tmp_path)  # fmt: skip
        runs[xla] = out
    result = tf_check("compare_checkpoints", str(runs["on"] / "checkpoints"),
                      str(runs["off"] / "checkpoints"), cwd=tmp_path)  # fmt: skip
    assert result["same_keys"] and result["step"] == 13
    assert 0.0 <= result["max_diff"] <= 1e-5, result
    losses = [[r["loss"] for r in records(out) if "loss" in r] for out in runs.values()]
    assert losses[0] == pytest.approx(losses[1], rel=1e-5)


@pytest.mark.slow
def test_mixed_float16_scales_the_loss_and_resumes_exactly(digits, render, tmp_path):
    script = render("mnist_mlp", *digits, "performance.precision=mixed_float16")
    dtypes = tf_check("model_dtypes", str(script), "mixed_float16", cwd=tmp_path)
    assert "float16" in dtypes["compute"] and dtypes["variables"] == ["float32"]
    assert dtypes["output"] == "float32"
    straight, split = tmp_path / "straight", tmp_path / "split"
    flags = ["--epochs", "2", "--deterministic"]
    run_python(script, *flags, "--output-dir", str(straight), cwd=tmp_path)
    run_python(script, *flags, "--max-steps", "9", "--output-dir", str(split), cwd=tmp_path)
    run_python(script, *flags, "--output-dir", str(split), cwd=tmp_path)
    saved = tf_check("checkpoint_dtypes", str(straight / "checkpoints"), cwd=tmp_path)
    # The dynamic loss scale and its counter are part of the optimizer's checkpoint.
    assert any("dynamic_scale" in name for name in saved), sorted(saved)
    result = tf_check("compare_checkpoints", str(straight / "checkpoints"),
                      str(split / "checkpoints"), cwd=tmp_path)  # fmt: skip
    assert result["same_keys"] and result["step"] == 26
    assert result["max_diff"] == 0.0, result
    losses = [r["loss"] for r in records(straight) if "loss" in r]
    assert all(np.isfinite(losses)) and losses[-1] < losses[0]

    # The step differentiates the scaled loss, which apply_gradients unscales: the weights move
    # as float32's do (the gradients of the loss not scaled would come out 32768 times smaller).
    moved = {}
    for precision in ("mixed_float16", "float32"):
        every_step = 'checkpoint={"every_steps": 1, "keep": 10}'
        twin = render("mnist_mlp", *digits, f"performance.precision={precision}", every_step,
                      name=f"{precision}.py")  # fmt: skip
        out = tmp_path / precision
        for steps in ("0", "3"):  # --max-steps 0 saves the initial weights as ckpt-0
            run_python(twin, "--max-steps", steps, "--output-dir", str(out), cwd=tmp_path)
        checkpoints = out / "checkpoints"
        moved[precision] = tf_check("weight_delta_norm", str(checkpoints / "ckpt-0"),
                                    str(checkpoints / "ckpt-3"), cwd=tmp_path)["norm"]  # fmt: skip
    assert moved["mixed_float16"] == pytest.approx(moved["float32"], rel=0.05), moved


@pytest.mark.slow
@pytest.mark.parametrize("variant", ["single_device", "mirrored"])
def test_mixed_bfloat16_trains(variant, digits, render, tmp_path):
    extra = ['distribute.devices=["/cpu:0", "/cpu:1"]'] if variant == "mirrored" else []
    script = render("mnist_mlp", *digits, "performance.precision=mixed_bfloat16", *extra,
                    variant=variant)  # fmt: skip
    out = tmp_path / "run"
    run_python(script, "--epochs", "2", "--output-dir", str(out), cwd=tmp_path)
    losses = [r["loss"] for r in records(out) if "loss" in r]
    assert all(np.isfinite(losses)) and losses[-1] < losses[0]


@pytest.mark.slow
def test_bench_measures_loop_and_fit_in_one_run(tmp_path):
    """The harness, small: one example, short epochs. It must time all four runs, compute the
    ratios from them, time the CLI render of the examples asked (a plain one, the longest
    reading path, one that acts: test_cli renders every example without TensorFlow) and of a
    spec with a description of a megabyte, and see that it did not import TensorFlow, and
    time a resumed run's first batch and the pipeline on the image source asked for (the
    other's figures come from the same code)."""
    out = tmp_path / "results.json"
    rendered = ["mnist_mlp", "flowers_finetune", "cartpole_ppo"]
    proc = subprocess.run(
        [sys.executable, "-m", "bench", "--parts", "fit", "render", "data", "inspect",
         "--examples", "mnist_mlp", "--steps-per-epoch", "30",
         "--rounds", "1", "--render-repeats", "1", "--render-examples", *rendered,
         "--described-mb", "1",
         "--data-images", "128", "--data-repeats", "1", "--data-sources", "tfrecord",
         "--out", str(out)],
        cwd=ROOT, capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = json.loads(out.read_text())
    result = results["fit"]["examples"]["mnist_mlp"]
    runs = result["runs"]
    assert set(runs) == {"loop_defaults", "loop_plain", "fit_matched", "fit_defaults"}
    for run in runs.values():
        (epochs,) = run["epoch_seconds"]  # one round
        assert len(epochs) == 4 and all(s > 0 for s in epochs)
        assert run["samples_per_second"] == pytest.approx(30 * 64 / sorted(epochs[1:])[1])
    speed = {name: run["samples_per_second"] for name, run in runs.items()}
    assert result["ratios"]["matched"] == pytest.approx(
        speed["loop_defaults"] / speed["fit_matched"]
    )
    assert "| mnist_mlp | 50 | on |" in proc.stdout
    # logging.inspect's cost: both scripts timed, each round (120 steps: one inspected).
    inspected = results["inspect"]["examples"]["mnist_mlp"]
    assert all(len(inspected["epoch_seconds"][k]) == 1 for k in ("plain", "inspected"))
    assert inspected["ratio"] > 0 and "| mnist_mlp | 30 |" in proc.stdout
    render = results["render"]["examples"]
    # And a spec with a description of 1 MB (the bench's 8 MB beside it shows the growth).
    assert set(render) == {*rendered, "mnist_mlp, 1 MB description"}
    for timing in render.values():
        assert timing["imports_tensorflow"] is False
        assert 0 < timing["seconds"] < 30
        # Each run beside a run of the stack alone: loopgen's own share is their difference.
        pairs = zip(timing["runs"], timing["stack_runs"], strict=True)
        assert timing["own_seconds"] == pytest.approx(statistics.median(r - s for r, s in pairs))
        assert 0 < timing["stack_seconds"] < 30
    data = results["data"]["sources"]
    assert set(data) == {"tfrecord"}  # a source asked for; each runs the same code
    for row in data.values():
        # 128 images at batch 64: two whole steps an epoch (no last, smaller batch for the loop's
        # run to trace again), resumed in the middle of epoch 0, 5, 20, 50.
        assert [s["step"] for s in row["seek"].values()] == [1, 11, 41, 101]
        assert all(s["seconds"] > 0 for s in row["seek"].values())
        assert row["input_ratio"] == pytest.approx(
            row["pipeline_examples_per_second"] / row["loop_examples_per_second"]
        )
    assert "| tfrecord |" in proc.stdout


@pytest.mark.slow
def test_mixed_float16_on_two_replicas_equals_one_device(digits, render, tmp_path):
    """Loss scaling across replicas: each replica scales its share of the global mean, the
    optimizer unscales the summed gradients. Two CPU replicas end where one device does."""
    outs = {}
    for variant in ("single_device", "mirrored"):
        extra = ['distribute.devices=["/cpu:0", "/cpu:1"]'] if variant == "mirrored" else []
        script = render("mnist_mlp", *digits, "performance.precision=mixed_float16", *extra,
                        variant=variant, name=f"{variant}.py")  # fmt: skip
        outs[variant] = tmp_path / variant
        run_python(script, "--epochs", "2", "--deterministic", "--output-dir",
                   str(outs[variant]), cwd=tmp_path)  # fmt: skip
    result = tf_check("compare_checkpoints", str(outs["single_device"] / "checkpoints"),
                      str(outs["mirrored"] / "checkpoints"), cwd=tmp_path)  # fmt: skip
    assert result["same_keys"] and result["step"] == 26
    assert result["max_diff"] <= 1e-5, result


@pytest.mark.slow
def test_every_validation_pass_covers_the_validation_set_once(render, tmp_path):
    """Validation reads one iterator for the whole run, validation_steps batches per pass: each
    pass must be exactly the validation set (50 examples at batch 16: the last batch has 2),
    so the logged val_loss equals the checkpointed model's loss over all 50 examples."""
    train = npz(data.classification_npz(tmp_path / "train.npz", 64, (28, 28)))
    val_path = data.classification_npz(tmp_path / "val.npz", 50, (28, 28), seed=5)
    script = render("fashion_validation", f"data.train={train}", f"data.validation={npz(val_path)}",
                    "data.batch_size=16", "checkpoint.keep=5")  # fmt: skip
    out = tmp_path / "run"
    for epochs in ("1", "3"):  # the second process restores, then validates twice more
        run_python(script, "--epochs", epochs, "--output-dir", str(out), cwd=tmp_path)
        logged = [r["val_loss"] for r in records(out) if "val_loss" in r][-1]
        expected = tf_check("validation_loss", str(script), str(out), val_path, cwd=tmp_path)
        assert expected["count"] == 50
        assert logged == pytest.approx(expected["loss"], rel=1e-5, abs=1e-6)
    assert len([r for r in records(out) if "val_loss" in r]) == 3


def test_bench_ratios_pair_each_round_with_itself(monkeypatch):
    """A slow spell that slows a whole round (both tools) cancels out of the ratio: each
    round's loop is compared with that round's fit, and the rounds' ratios give the median."""
    monkeypatch.syspath_prepend(str(ROOT))  # bench/ runs as `python -m bench` from there
    from bench.report import ratios

    def run(*rounds):
        return {"epoch_seconds": [[9.0, *[seconds] * 3] for seconds in rounds]}  # + a warm-up

    # The loop is 3% faster; round 3 is slowed twofold for both, round 2 for the loop alone.
    fit, loop = run(1.0, 1.0, 2.0), run(0.97, 1.94, 1.94)
    throughput = {"loop_defaults": loop, "loop_plain": loop}
    throughput |= {"fit_matched": fit, "fit_defaults": fit}
    assert ratios(throughput)["matched"] == pytest.approx(1 / 0.97)
    # Pooling each tool's epochs first would compare the loop's slow rounds with fit's fast
    # ones: 1.0 / 1.94.


@pytest.mark.slow
def test_bench_measures_mlflow_tracking_and_a_sweeps_overhead_per_trial(tmp_path):
    """The harness's tracking and sweep parts, small: a run tracked in MLflow against the same
    run untracked (their wall times and the ratio), and a sweep's per-trial overhead with its
    trials forked and started anew, from when each trial's records appeared."""
    out = tmp_path / "results.json"
    proc = subprocess.run(
        [sys.executable, "-m", "bench", "--parts", "tracking", "sweep", "--tracking-rounds", "1",
         "--sweep-trials", "2", "--sweep-rounds", "1", "--out", str(out)],
        cwd=ROOT, capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = json.loads(out.read_text())
    tracking = results["tracking"]
    (tracked,), (untracked,) = tracking["seconds"]["tracked"], tracking["seconds"]["untracked"]
    assert tracking["ratio"] == pytest.approx(tracked / untracked)
    assert tracking["first_tracked_seconds"] > 0 and tracking["log_points"] == 30
    assert "| **tracked ÷ untracked**" in proc.stdout
    sweep = results["sweep"]
    for how in ("forked", "python"):
        row = sweep[how]
        ((wall,), (own,)) = row["wall"], row["own"]
        assert 0 < own < wall and row["median_overhead"] == pytest.approx((wall - own) / 2)
        assert len(row["start_up"]) == 2 and len(row["between"]) == 1
        assert all(0 < s < wall for s in row["start_up"] + row["between"])
    assert "| trials forked (the default) |" in proc.stdout


SAVE_BENCH_GPT2 = """
import json
import sys

sys.path.insert(0, sys.argv[1])
from bench.lm import CONFIG, PRESET

sys.argv = ["-c", sys.argv[2], json.dumps(CONFIG)]
exec(PRESET)
"""


@pytest.mark.slow
def test_bench_measures_the_sft_loop_against_keras_hubs_fit_in_tokens_per_second(tmp_path):
    """The harness's lm part, small (2 steps an epoch, 1 round) on the tests' tiny Llama
    (--lm-preset): the rendered sums_sft loop and KerasHub's CausalLM.fit, as usually called
    and with one iterator, each timed over its epochs; tokens/s is the epoch's tokens (records x
    sequence length) over the median of the epochs after the first, and each ratio pairs the
    round's loop with the round's fit. Without --lm-preset, it saves a GPT-2 (here too)."""
    gpt2 = tmp_path / "gpt2"
    run_preloaded("-c", SAVE_BENCH_GPT2, str(ROOT), str(gpt2), cwd=tmp_path)
    saved = json.loads((gpt2 / "config.json").read_text())
    assert saved["class_name"] == "GPT2Backbone", saved
    assert saved["config"]["hidden_dim"] == 128 and saved["config"]["num_layers"] == 2, saved
    preset = data.llama_preset(tmp_path / "llama")
    out = tmp_path / "results.json"
    proc = subprocess.run(
        [sys.executable, "-m", "bench", "--parts", "lm", "--lm-records", "32", "--lm-rounds", "1",
         "--lm-preset", preset, "--out", str(out)],
        cwd=ROOT, capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    lm = json.loads(out.read_text())["lm"]
    assert lm["steps_per_epoch"] == 2 and lm["sequence_length"] == 32
    assert lm["preset"] == preset and f"CPUs: the preset {preset}, every weight" in proc.stdout
    runs = lm["runs"]
    assert set(runs) == {"loop", "fit", "fit_repeat"}
    for run in runs.values():
        (epochs,) = run["epoch_seconds"]  # one round
        assert len(epochs) == 4 and all(s > 0 for s in epochs)
        (rate,) = run["tokens_per_second"]
        assert rate == pytest.approx(32 * 32 / statistics.median(epochs[1:]))
    for peer in ("fit", "fit_repeat"):
        (ratio,) = lm["ratios"][peer]
        assert ratio == pytest.approx(
            runs["loop"]["tokens_per_second"][0] / runs[peer]["tokens_per_second"][0]
        )
        assert lm["ratio"][peer] == pytest.approx(ratio)
    assert "| **loop ÷ fit** (median of the rounds' ratios) |" in proc.stdout


@pytest.mark.slow
def test_bench_measures_the_flow_loop_against_a_keras_io_style_fit_in_steps_per_second(tmp_path):
    """The harness's generative part, small (128 images: 2 steps an epoch, 1 round): the
    rendered shapes_flow loop and the keras.io-style train_step under fit, with compile's
    defaults and without XLA, each timed over its epochs; steps/s is the epoch's steps over
    the median of the epochs after the first, each ratio pairs the round's loop with the
    round's fit, and the machine's load is beside the round."""
    out = tmp_path / "results.json"
    proc = subprocess.run(
        [sys.executable, "-m", "bench", "--parts", "generative", "--generative-images", "128",
         "--generative-rounds", "1", "--out", str(out)],
        cwd=ROOT, capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    found = json.loads(out.read_text())["generative"]
    assert found["steps_per_epoch"] == 2 and found["images"] == 128, found
    assert len(found["loads"]) == 1 and found["loads"][0] >= 0, found
    runs = found["runs"]
    assert set(runs) == {"loop", "fit", "fit_no_jit"}
    for run in runs.values():
        (epochs,) = run["epoch_seconds"]  # one round
        assert len(epochs) == 4 and all(s > 0 for s in epochs)
        (rate,) = run["steps_per_second"]
        assert rate == pytest.approx(2 / statistics.median(epochs[1:]))
    for peer in ("fit", "fit_no_jit"):
        (ratio,) = found["ratios"][peer]
        assert ratio == pytest.approx(
            runs["loop"]["steps_per_second"][0] / runs[peer]["steps_per_second"][0]
        )
    assert "| **loop ÷ fit** (median of the rounds' ratios) |" in proc.stdout
