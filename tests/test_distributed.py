"""Distributed variants: one spec renders a single-device script and its MirroredStrategy,
MultiWorkerMirroredStrategy and TPUStrategy twins. Checked without TensorFlow (the spec rules,
the CLI, the script's structure) and with it: real runs on two logical CPU devices, two worker
processes on 127.0.0.1, and checkpoints that cross from one variant to the other."""

from __future__ import annotations

import ast
import json
import re
import signal
import subprocess
import sys
from pathlib import Path

import data
import pytest
from helpers import (
    ACTING,
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
    saved_models,
    script_env,
    tf_check,
    wait_for_step,
    workers_running,
)
from regen_generated import golden_files
from test_runs import LM_RUNS, UNEXPORTED, trained_example, trained_overrides

DISTRIBUTED = ("mirrored", "multi_worker", "tpu")


# --- Spec rules and the CLI (no TensorFlow) -------------------------------------------------


def test_variant_flag_writes_each_strategy_from_one_spec():
    sources = {}
    for variant in ("single_device", *DISTRIBUTED):
        proc = run_cli("render", "examples/mnist_mlp.py", "--variant", variant)
        assert proc.returncode == 0, proc.stderr
        sources[variant] = proc.stdout
    assert "tf.distribute" not in sources["single_device"]
    assert "tf.distribute.MirroredStrategy()" in sources["mirrored"]
    assert "tf.distribute.MultiWorkerMirroredStrategy()" in sources["multi_worker"]
    assert "tf.distribute.TPUStrategy(resolver)" in sources["tpu"]
    assert "initialize_tpu_system" in sources["tpu"]
    # The spec as written (single device) is the --variant single_device script, flags aside.
    plain = run_cli("render", "examples/mnist_mlp.py").stdout
    body = lambda text: text[text.index("\nimport ") :]  # noqa: E731
    assert body(plain) == body(sources["single_device"])


def test_variant_then_set_configures_the_new_strategy():
    proc = run_cli("render", "examples/mnist_mlp.py", "--variant", "mirrored", "--set", TWO_CPUS)
    assert proc.returncode == 0, proc.stderr
    assert 'DEVICES = ["/cpu:0", "/cpu:1"]' in proc.stdout
    assert "set_logical_device_configuration" in proc.stdout
    assert "Rendered with: --variant mirrored --set distribute.devices=" in proc.stdout


def test_unknown_variant_is_refused_with_the_choices():
    proc = run_cli("render", "examples/mnist_mlp.py", "--variant", "horovod")
    assert proc.returncode != 0 and not proc.stdout
    assert "mirrored" in proc.stderr and "multi_worker" in proc.stderr


@pytest.mark.parametrize(
    ("overrides", "phrases"),
    [
        (
            ["data.batch_size=63",
             'distribute={"kind": "mirrored", "devices": ["/gpu:0", "/gpu:1"]}'],
            ["data.batch_size=63", "distribute.devices", "multiple of 2"],
        ),
        (
            ['distribute={"kind": "mirrored", "devices": ["/gpu:0", "GPU:0"]}'],
            ["distribute.devices", "twice"],
        ),
        (
            ['distribute={"kind": "mirrored", "devices": ["gpu0"]}'],
            ["distribute.devices[0]", "gpu0"],
        ),
        (
            ['distribute={"kind": "multi_worker", "communication": "mpi"}'],
            ["distribute.communication", "ring"],
        ),
        (['distribute={"kind": "horovod"}'], ["distribute", "mirrored", "tpu"]),
    ],
)  # fmt: skip
def test_strategy_mistakes_are_named(overrides, phrases, tmp_path):
    args = ["render", "examples/mnist_mlp.py", "-o", str(tmp_path / "train.py")]
    for override in overrides:
        args += ["--set", override]
    proc = run_cli(*args)
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    for phrase in phrases:
        assert phrase in proc.stderr, (phrase, proc.stderr)
    assert not (tmp_path / "train.py").exists()


def test_plain_batch_norm_under_several_devices_warns_and_points_to_synchronized():
    proc = run_cli("render", "examples/shapes_unet.py", "--variant", "mirrored")
    assert proc.returncode == 0 and proc.stdout
    warnings = [line for line in proc.stderr.splitlines() if line.startswith("warning:")]
    assert len(warnings) == 2, proc.stderr  # the two BatchNormalization layers of ConvBlock
    assert "custom_layers[0].layers[1].synchronized=True" in warnings[0]
    # No warning where it does not apply: one device, or the statistics already synchronized.
    for args in (
        [],
        ["--variant", "mirrored", "--set", 'distribute.devices=["/gpu:0"]'],
        ["--variant", "mirrored", "--set", "custom_layers[0].layers[1].synchronized=true",
         "--set", "custom_layers[0].layers[4].synchronized=true"],
    ):  # fmt: skip
        quiet = run_cli("render", "examples/shapes_unet.py", *args)
        assert quiet.returncode == 0 and "warning" not in quiet.stderr, (args, quiet.stderr)
    validate = run_cli("validate", "examples/shapes_unet.py", "--set", 'distribute={"kind": "tpu"}')
    assert validate.returncode == 0 and "synchronized=True" in validate.stderr


def train_statements(source: str) -> list[ast.stmt]:
    """The body of train(), which main() calls first thing."""
    tree = ast.parse(source)
    return next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "train").body


DISTRIBUTED_GOLDEN = sorted(
    out
    for _, variant, out in golden_files()
    if "strategy = tf.distribute" in (ROOT / out).read_text()
)


@pytest.mark.parametrize("golden", DISTRIBUTED_GOLDEN, ids=str)
def test_strategy_comes_before_any_other_tensorflow_op(golden):
    """Multi-worker and TPU set-up fail (or silently run on one device) when any TF op runs
    first; so does splitting the CPU into logical devices. (generated/ is a fresh render.)"""
    statements = train_statements((ROOT / golden).read_text())
    uses_tf = [
        i for i, s in enumerate(statements) if "tf." in ast.unparse(s) or "keras." in ast.unparse(s)
    ]
    creates = [i for i, s in enumerate(statements) if "strategy = tf.distribute." in ast.unparse(s)]
    assert creates, "no strategy"
    before = [ast.unparse(statements[i]) for i in uses_tf if i < creates[0]]
    allowed = ("TPUClusterResolver", "set_logical_device_configuration", "list_physical_devices")
    assert all(any(a in text for a in allowed) for text in before), before


def test_distributed_step_scales_losses_for_replicas():
    source = run_cli("render", "examples/cifar10_vgg.py", "--variant", "mirrored").stdout
    assert "reduction=None" in source  # per-example losses
    assert (
        "tf.nn.compute_average_loss(" in source and "global_batch_size=global_batch_size" in source
    )
    assert "tf.nn.scale_regularization_loss(tf.add_n(model.losses))" in source  # the VGG has L2
    assert re.search(r"strategy\.run\(\s*replica_train_step", source)
    assert "strategy.reduce(tf.distribute.ReduceOp.SUM, replica_losses" in source
    assert "with strategy.scope():" in source
    plain = run_cli("render", "examples/mnist_mlp.py", "--variant", "mirrored").stdout
    assert "scale_regularization_loss" not in plain  # no penalties, no penalty code


# --- Real runs ------------------------------------------------------------------------------


def assert_trained_on_two_replicas(
    example: str, script: Path, out: Path, stdout: str, exported: bool = True
) -> None:
    """The run of `script` (a mirrored variant) had two replicas, checkpointed, wrote every
    SavedModel of its export (if `exported`) and logged losses in range (a GAN's: its
    generator's)."""
    assert "2 replica(s) on this machine" in stdout
    assert list((out / "checkpoints").glob("ckpt-*.index"))
    if exported:
        saved = saved_models(out / "export", script)
        assert all((model / "saved_model.pb").is_file() for model in saved)
    gan = "gan" in example  # a GAN has two losses
    loss = "generator_loss" if gan else "loss"
    losses = [r[loss] for r in records(out) if loss in r]
    # A Wasserstein generator's loss is -its score; GRPO's, minus the advantages' mean.
    low = -100 if "wgan" in example or "grpo" in example else 0
    # A VAE's, a sum over each image's 768 pixels (about 530 at first on the shapes).
    high = 1000 if "vae" in example else 100
    assert losses and all(low < loss < high for loss in losses), losses


# Trained on two replicas by test_mirrored_equals_single_device instead, with their own
# networks: validated, checkpointed and exported there too, and compared to one device. Not
# cifar10_resnet and imdb_transformer, whose networks that test makes smaller: their whole
# networks train on two replicas here.
EQUALS_ONE_DEVICE = ("mnist_own_step", "mnist_distillation", "mnist_adversarial", "shapes_wgan_gp",
                     "shapes_simclr", "mnist_reptile", "mnist_maml",
                     "reviews_bert_lora", "sums_sft", "sums_dpo", "sums_grpo")  # fmt: skip
# Their exports are written and served on one device by test_runs. An export from two replicas
# differs from one device's only in the strategy's scope the model is saved from, alike for
# every network: shown here on the other examples' (pets_unet's synchronized BatchNormalization
# among them), and flowers_finetune's in test_models. These four, of the largest, would spend
# a third of their run tracing their export again.
EXPORTED_ON_ONE_DEVICE = ("cifar10_resnet", "flowers_finetune", "imdb_transformer",
                          "shapes_unet")  # fmt: skip


@pytest.mark.slow
@pytest.mark.parametrize(
    "example",
    sorted(
        p.stem
        for p in EXAMPLES.glob("*.py")
        if p.stem not in ACTING and p.stem not in EQUALS_ONE_DEVICE
    ),
)
def test_mirrored_variant_of_each_example_trains_on_two_devices(example, render, tmp_path):
    exported = example not in EXPORTED_ON_ONE_DEVICE
    script = render(
        example,
        *data.small_data_overrides(example, tmp_path),
        TWO_CPUS,
        *([] if exported else ["export.saved_model=false"]),
        variant="mirrored",
        name="mirrored.py",
    )
    out = tmp_path / "run"
    # One epoch: the example's own network built, traced, trained, checkpointed and exported on
    # two replicas. Epoch boundaries on two replicas: the SIGKILL matrix and mirrored_equals.
    proc = run_python(data.runnable(example, script), "--epochs", "1", "--output-dir", str(out),
                      cwd=tmp_path)  # fmt: skip
    assert "Epoch 1/1" in proc.stdout
    assert_trained_on_two_replicas(example, script, out, proc.stdout, exported)


PPO_SMALL = ["training.minibatches=2", "training.update_epochs=2"]
DQN_SMALL = ["training.buffer_size=24", "training.batch_size=8", "training.learning_starts=8",
             "training.train_every=1", "training.target_update_every=10"]  # fmt: skip


def mnist_overrides(tmp_path: Path) -> list[str]:
    """83 examples at global batch 16: 6 steps per epoch, the last of 3 examples (split 2 + 1
    over two replicas). L2 penalties, momentum and a schedule that drops after step 5: every
    place where distributed loss scaling goes wrong."""
    train = npz(data.classification_npz(tmp_path / "train.npz", 83, (28, 28)))
    optimizer = {
        "kind": "sgd",
        "momentum": 0.9,
        "learning_rate": {"kind": "piecewise_constant", "boundaries": [5], "values": [0.05, 0.01]},
    }
    return [
        f"data.train={train}",
        "data.batch_size=16",
        'model.layers[1].kernel_regularizer={"kind": "l2", "l2": 0.01}',
        f"optimizer={json.dumps(optimizer)}",
        "loop.log_every_steps=1",
    ]


def compared_at(checkpoint: Path, straight: Path, twin: Path, steps: int, cwd: Path):
    """The twin's newest checkpoint against `checkpoint` (a directory's newest, or one by its
    path), and the losses each run logged up to step `steps`."""
    result = tf_check("compare_checkpoints", str(checkpoint), str(twin / "checkpoints"), cwd=cwd)
    expected = {step: loss for step, loss in logged_losses(straight).items() if step <= steps}
    return result, expected, logged_losses(twin)


def compare(a: Path, b: Path, cwd: Path) -> dict:
    return tf_check("compare_checkpoints", str(a / "checkpoints"), str(b / "checkpoints"), cwd=cwd)


def logged_losses(out: Path) -> dict[int, float]:
    """The loss logged at each step: a GAN's discriminator's, PPO's and A2C's policy's, SAC's
    and TD3's critics'."""
    losses = {}
    for record in records(out):
        for name in ("loss", "discriminator_loss", "policy_loss", "critic_loss"):
            if name in record:
                losses[record["step"]] = record[name]
                break
    return losses


@pytest.mark.slow
def test_mirrored_equals_single_device_and_its_checkpoint_resumes_there(render, tmp_path):
    overrides = mnist_overrides(tmp_path)
    single = render("mnist_mlp", *overrides)
    mirrored = render("mnist_mlp", *overrides, TWO_CPUS, variant="mirrored", name="mirrored.py")
    flags = ["--deterministic"]
    straight, twin, handover = tmp_path / "single", tmp_path / "mirrored", tmp_path / "handover"
    run_python(single, "--epochs", "3", "--output-dir", str(straight), *flags, cwd=tmp_path)
    run_python(mirrored, "--epochs", "3", "--output-dir", str(twin), *flags, cwd=tmp_path)

    # Same global batches, same weights, slots and step after 18 steps.
    result = compare(straight, twin, tmp_path)
    assert result["same_keys"] and result["step"] == 18, result
    assert result["max_diff"] <= 1e-5, result
    # What the mirrored script logs is the global batch's loss, not one replica's share.
    expected, logged = logged_losses(straight), logged_losses(twin)
    assert sorted(logged) == list(range(1, 19))
    assert max(abs(expected[s] - logged[s]) for s in expected) <= 1e-5

    # Half the run on two replicas, the rest in the single-device script from that checkpoint.
    run_python(mirrored, "--epochs", "1", "--output-dir", str(handover), *flags, cwd=tmp_path)
    resumed = run_python(
        single, "--epochs", "3", "--output-dir", str(handover), *flags, cwd=tmp_path
    )
    assert "Resumed from" in resumed.stdout and "at step 6" in resumed.stdout
    result = compare(straight, handover, tmp_path)
    assert result["same_keys"] and result["step"] == 18 and result["max_diff"] <= 1e-5, result


@pytest.mark.slow
def test_mirrored_averages_per_pixel_losses_like_one_device(render, tmp_path):
    """Segmentation losses come per pixel: each example's pixels are averaged before the
    global-batch average, as the single-device mean over all pixels does."""
    without_batch_norm = [  # plain BatchNormalization differs by design (see the warning)
        'custom_layers[0].layers[1]={"kind": "activation", "activation": "linear"}',
        'custom_layers[0].layers[4]={"kind": "activation", "activation": "linear"}',
    ]
    overrides = [
        "data.train.count=40", "data.validation=null", "data.batch_size=16", *without_batch_norm,
    ]  # fmt: skip
    single = render("shapes_unet", *overrides)
    mirrored = render("shapes_unet", *overrides, TWO_CPUS, variant="mirrored", name="mirrored.py")
    flags = ["--max-steps", "3", "--deterministic"]  # the third batch holds 8 of the 40
    run_python(single, "--output-dir", str(tmp_path / "a"), *flags, cwd=tmp_path)
    run_python(mirrored, "--output-dir", str(tmp_path / "b"), *flags, cwd=tmp_path)
    result = compare(tmp_path / "a", tmp_path / "b", tmp_path)
    assert result["step"] == 3 and result["max_diff"] <= 1e-5, result


def start_workers(script: Path, *args: str, cwd: Path, extra=None, fresh=False) -> list:
    """Runs two workers on 127.0.0.1 to their end: (process, stdout, stderr) each."""
    return finish_workers(launch_workers(script, *args, cwd=cwd, extra=extra, fresh=fresh))


def run_workers(script: Path, *args: str, cwd: Path, fresh=False) -> list[str]:
    """Runs two workers to completion; returns each one's stdout."""
    finished = start_workers(script, *args, cwd=cwd, fresh=fresh)
    for index, (proc, stdout, stderr) in enumerate(finished):
        if proc.returncode != 0:
            pytest.fail(
                f"worker {index} exited {proc.returncode}\n{stdout[-3000:]}\n{stderr[-5000:]}"
            )
    return [stdout for _, stdout, _ in finished]


@pytest.mark.slow
def test_two_workers_train_alike_write_once_and_resume_after_a_restart(render, tmp_path):
    overrides = mnist_overrides(tmp_path)
    script = render("mnist_mlp", *overrides, variant="multi_worker", name="multi_worker.py")
    single = render("mnist_mlp", *overrides)
    out, restarted, straight = tmp_path / "run", tmp_path / "restarted", tmp_path / "single"
    flags = ["--deterministic"]

    # In new interpreters, as users start workers (the other jobs fork theirs, 3 s sooner).
    stdouts = run_workers(script, "--epochs", "3", "--output-dir", str(out), *flags,
                          cwd=tmp_path, fresh=True)  # fmt: skip
    assert "(chief)" in stdouts[0] and "(chief)" not in stdouts[1]
    # Both workers end with the same weights (worker 1 keeps its last checkpoint in scratch).
    scratch = out / "workers" / "worker-1"
    same = tf_check("compare_checkpoints", str(out / "checkpoints"), str(scratch / "checkpoints"),
                    cwd=tmp_path)  # fmt: skip
    assert same["same_keys"] and same["step"] == 18 and same["max_diff"] == 0.0, same
    # Only the chief wrote the export, the summaries and the metrics log.
    assert all(
        (saved / "saved_model.pb").is_file() for saved in saved_models(out / "export", script)
    )
    assert not (scratch / "export").exists()
    assert sorted(logged_losses(out)) == list(range(1, 19))  # one record per step, not two
    assert len(list((out / "logs" / "train").iterdir())) == 1
    # ... and the cluster trained what one device trains on the same global batches.
    run_python(single, "--epochs", "3", "--output-dir", str(straight), *flags, cwd=tmp_path)
    assert compare(straight, out, tmp_path)["max_diff"] <= 1e-5

    # A restart: the job stops at step 8 (mid-epoch), every worker is started again.
    run_workers(script, "--max-steps", "8", "--output-dir", str(restarted), *flags, cwd=tmp_path)
    stdouts = run_workers(script, "--epochs", "3", "--output-dir", str(restarted), *flags,
                          cwd=tmp_path)  # fmt: skip
    assert all("Resumed from" in s and "at step 8" in s for s in stdouts), stdouts
    result = compare(out, restarted, tmp_path)
    assert result["step"] == 18 and result["max_diff"] <= 1e-5, result


@pytest.mark.slow
@pytest.mark.parametrize(
    "example, overrides",
    [
        # Categorical actions: each worker acts on its rows of the draws one device makes for
        # all of the sub-environments.
        ("cartpole_ppo", [*PPO_SMALL, "training.rollout_steps=8"]),
        # Gaussian actions: its rows of one device's noise. Episodes cut at 20 steps: the
        # truncations' bootstraps, and episodes to log.
        ("pendulum_ppo",
         [*PPO_SMALL, "training.rollout_steps=16", "training.normalize_observations=false",
          "data.max_episode_steps=20"]),
        # A Dict observation: the rollout's parts exchanged, the saved ones gathered, by name.
        ("corridor_ppo", [*PPO_SMALL, "training.rollout_steps=8"]),
        # DQN: each worker's transitions exchanged before each train step (every second
        # vector step), so that every worker's buffer (wrapped round) is one device's; half
        # the actions are its rows of one device's random draws, half greedy on its own
        # observations. Its flags are bools, which collectives do not carry (uint8 pixels
        # are refused on several workers: dsl/rules/rl.py).
        ("cartpole_dqn",
         ["data.num_envs=4", *DQN_SMALL, "training.train_every=2", "training.start_epsilon=0.5"]),
    ],
    ids=["categorical", "gaussian", "dict", "dqn"],
)  # fmt: skip
def test_two_workers_act_as_one_device_stop_together_and_resume(
    example, overrides, render, tmp_path
):
    """Each worker steps its half of the sub-environments, seeded by their indices; the
    rollouts (DQN: the transitions) are exchanged and each minibatch shared out. The cluster
    trains what one device stepping all of them does. A SIGTERM to one worker stops both
    after the same update, and the checkpoint holds every worker's environments (and DQN's
    buffer): the restarted job continues every episode where it was (restarted in the
    categorical and DQN cases: the environments' state is saved by the same code whatever
    the observation)."""
    # Environment steps from one vote on a SIGTERM to the next: NUM_ENVS x ROLLOUT_STEPS, or
    # x TRAIN_EVERY.
    rollout = 4 * {"pendulum_ppo": 16, "cartpole_dqn": 2}.get(example, 8)
    # A log every 2 updates, and runs that end between logs: the episodes finished since
    # the last log are in the checkpoint, every worker's.
    common = [f"loop.log_every_steps={2 * rollout}", *overrides]
    data.companions(example, tmp_path)  # corridor_ppo's environment, beside the scripts
    single = data.runnable(example, render(example, *common, cwd=tmp_path))
    script = render(example, *common, variant="multi_worker", name="multi_worker.py", cwd=tmp_path)
    script = data.runnable(example, script)
    out, restarted, straight = tmp_path / "run", tmp_path / "restarted", tmp_path / "single"
    flags = ["--deterministic"]
    # Long enough for a SIGTERM to arrive mid-run (about 2 s of updates).
    updates = {"cartpole_ppo": 39, "cartpole_dqn": 75}.get(example, 3)
    # DQN's run ends a vector step after its last train step: that step's transitions are
    # still each worker's own when the last checkpoint is written.
    total = updates * rollout + (4 if example == "cartpole_dqn" else 0)
    steps = ["--max-steps", str(total)]

    stdouts = run_workers(script, *steps, "--output-dir", str(out), *flags, cwd=tmp_path)
    assert "(chief)" in stdouts[0] and "2 replica(s) in the cluster" in stdouts[0]
    assert not (out / "workers" / "worker-1" / "export").exists()  # the chief's only
    run_python(single, *steps, "--output-dir", str(straight), *flags, cwd=tmp_path)
    result = compare(straight, out, tmp_path)
    assert result["same_keys"] and result["step"] == total, result
    assert result["max_scaled_diff"] <= 1e-5, result
    # One record a log, the whole cluster's episodes in it, as one device logs them.
    expected, logged = records(straight), records(out)
    assert [r["step"] for r in logged] == [r["step"] for r in expected]
    for one, two in zip(expected, logged, strict=True):
        assert one.keys() == two.keys(), (one, two)
        for key in ("episodes", "episode_return", "episode_length", "policy_loss", "loss"):
            if key in one:
                assert abs(one[key] - two[key]) <= 1e-5 * max(1, abs(one[key])), (key, one, two)
    assert any("episodes" in r for r in logged)
    if example != "pendulum_ppo":  # continuous actions carry the weights' rounding along
        states = tf_check("compare_saved_states", str(straight / "checkpoints"),
                          str(out / "checkpoints"), cwd=tmp_path)  # fmt: skip
        assert states["states"] and states["same"], states
    if example not in ("cartpole_ppo", "cartpole_dqn"):
        return

    # Worker 1 alone is preempted, mid-episode: both stop after the same update and save.
    job = launch_workers(script, *steps, "--output-dir", str(restarted), *flags, cwd=tmp_path)
    with workers_running(job) as procs:
        wait_for_step(procs[0], restarted, 2)  # the chief logs every 2 updates
        procs[1].send_signal(signal.SIGTERM)
    stopped = set()
    for proc, stdout, stderr in finish_workers(procs):
        assert proc.returncode == 128 + signal.SIGTERM, stderr[-3000:]
        stopped.add(int(stdout.split("Stopped by SIGTERM at step ")[1].split(";")[0]))
    (step,) = stopped
    assert 4 * rollout <= step < updates * rollout and step % rollout == 0
    stdouts = run_workers(script, *steps, "--output-dir", str(restarted), *flags, cwd=tmp_path)
    assert all(f"at step {step}" in s for s in stdouts), stdouts
    result = compare(out, restarted, tmp_path)
    assert result["step"] == total and result["max_diff"] == 0.0, result
    states = tf_check("compare_saved_states", str(out / "checkpoints"),
                      str(restarted / "checkpoints"), cwd=tmp_path)  # fmt: skip
    assert states["same"], states


@pytest.mark.slow
def test_tpu_variant_says_there_is_no_tpu(render, tmp_path):
    """No TPU here: the TPU script gets as far as looking for one, then stops with a message
    that says what to do, instead of a traceback."""
    script = render("mnist_mlp", variant="tpu", name="tpu.py")
    env = script_env()
    env.pop("TPU_NAME", None)
    proc = subprocess.run(
        [sys.executable, str(script), "--output-dir", str(tmp_path / "run")],
        cwd=tmp_path, capture_output=True, text=True, timeout=120, env=env,
    )  # fmt: skip
    assert proc.returncode == 1, proc.stderr[-3000:]
    assert "No TPU to train on" in proc.stderr and "--variant" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert not (tmp_path / "run").exists()


def test_tpu_script_uses_fixed_batch_shapes():
    source = (ROOT / "generated" / "tpu" / "mnist_mlp.py").read_text()
    # Whole batches only: an epoch's order is cut to steps_per_epoch full batches.
    assert "steps_per_epoch = num_examples(train_examples) // GLOBAL_BATCH_SIZE" in source
    assert "order = order[start : steps_per_epoch * GLOBAL_BATCH_SIZE]" in source


@pytest.mark.slow
def test_workers_that_do_not_share_the_output_dir_refuse_to_train(render, tmp_path):
    """A worker that cannot see the chief's checkpoints would restart from step 0 while the
    chief resumes: every worker stops instead, with a message that says why."""
    script = render(
        "mnist_mlp", *mnist_overrides(tmp_path), variant="multi_worker", name="multi_worker.py"
    )
    shared = tmp_path / "shared"
    run_workers(script, "--max-steps", "3", "--output-dir", str(shared), cwd=tmp_path)
    finished = start_workers(
        script, "--epochs", "1", cwd=tmp_path,
        extra=lambda i: ["--output-dir", str(shared if i == 0 else tmp_path / "elsewhere")],
    )  # fmt: skip
    for proc, stdout, stderr in finished:
        assert proc.returncode == 1, (stdout[-2000:], stderr[-3000:])
        assert "not all at the same step" in stderr and "--output-dir" in stderr, stderr[-3000:]
    assert not list((shared / "checkpoints").glob("ckpt-6.*"))  # nothing trained


@pytest.mark.slow
@pytest.mark.parametrize(
    "example", ["shapes_plateau", "shapes_dcgan", "mnist_onecycle", "shapes_sam"]
)
def test_two_workers_run_the_issue_7_examples(example, render, tmp_path):
    """The GAN step, the validation monitors with their best checkpoint, accumulation, Comet and
    SAM's writes of the weights (in the cross-replica context) on two worker processes: both
    finish, and only the chief writes what is kept."""
    script = render(example, *data.small_data_overrides(example, tmp_path),
                    variant="multi_worker", name="multi_worker.py")  # fmt: skip
    out = tmp_path / "run"
    stdouts = run_workers(script, "--epochs", "2", "--output-dir", str(out), cwd=tmp_path)
    assert all("Epoch 2/2" in s for s in stdouts)
    steps = [r["step"] for r in records(out) if "steps_per_second" in r]
    assert steps == sorted(set(steps)), steps  # one record per log point: the chief's
    scratch = out / "workers" / "worker-1"
    if example == "shapes_plateau":
        best = saved_models(out / "export" / "best", script)
        assert all((saved / "saved_model.pb").is_file() for saved in best)
        assert list((out / "checkpoints" / "best").glob("ckpt-*.index"))
        assert not (scratch / "export").exists()
    if example == "shapes_dcgan":
        assert (out / "export" / "generator" / "saved_model.pb").is_file()
    if example == "mnist_onecycle":
        assert len(list((out / "comet").glob("*.zip"))) == 1
        assert not (scratch / "comet").exists()


SYNCHRONIZED = [
    f"{path}.layer.synchronized=true"
    for path in ("model.nodes[1]", "model.blocks[0].nodes[1]", "model.blocks[0].nodes[4]")
]
"""The resnet's BatchNormalization layers with the global batch's statistics under a strategy
(plain ones normalize each replica's slice on its own, and differ from one device by design)."""


@pytest.mark.slow
@pytest.mark.parametrize(
    ("example", "overrides", "steps", "tolerance"),
    [
        # Augmented in the pipeline: each image is augmented alike whichever replica reads it.
        # One step: synchronized statistics are E[x^2] - E[x]^2 over the replicas, and a fresh
        # 20-layer BatchNormalization network turns that rounding (1e-7) into 1e-2 within a
        # few steps, on any device count (the fit test sees it too). At 0.01 a wrong slice, a
        # replica's own augmentation or an unscaled gradient are off by far more after one.
        # Two residual blocks (an identity and a projection shortcut) of the nine: the
        # property is the pipeline's and BatchNormalization's, not the depth's (test_runs and
        # test_mirrored_variant_... train the full network).
        (
            "cifar10_resnet",
            [*SYNCHRONIZED, "optimizer.learning_rate.initial_learning_rate=0.01",
             'model.nodes[3].over={"filters": [16, 32], "strides": [1, 2]}'],
            1,
            1e-4,
        ),
        # Dropout off: each replica would draw its own masks for its slice. 64 examples at 24:
        # the smaller last batch (16) of each epoch, and the embedding's sparse gradient with
        # Adam updates the rows as on one device (a dense gradient would not: Keras squares
        # the sparse gradient's parts before summing them). One encoder block of the two:
        # the embedding's gradient is the property, not the depth.
        (
            "imdb_transformer",
            ["model.blocks[0].params.dropout=0.0", "model.nodes[4].layer.rate=0.0",
             "model.nodes[2].times=1",
             "data.batch_size=24", "loop.log_every_steps=50"],
            9,
            1e-5,
        ),
        # Your own step's losses, averaged over the global batch by loopgen; your optimizer.
        ("mnist_own_step", [], 6, 1e-5),
        # A frozen teacher on every replica, the student's two losses over the global batch.
        ("mnist_distillation", [], 6, 1e-5),
        # PGD's random start: each replica draws its examples' part of one device's noise.
        # Its best-model monitor too: the best weights exported beside the last ones.
        ("mnist_adversarial", [], 6, 1e-5),
        # WGAN-GP: noise and penalty points drawn for the global batch, sliced per replica;
        # the critic's steps and its nested tape, the losses over the global batch; the
        # generator's average (ema=EMA) updated in the cross-replica context.
        ("shapes_wgan_gp", ["training.critic_steps=2", 'ema={"decay": 0.9}'], 4, 1e-5),
        # SimCLR: each replica's views against the negatives of the whole global batch,
        # gathered (without the gather the loss alone is 0.7 off). Two steps: Adam turns the
        # convolutions' rounding (summed over 8 images, not 16) into 1e-6 a step.
        ("shapes_simclr", [], 2, 1e-5),
        # Meta-learning: 3 tasks a step, shared out 2 + 1; each replica adapts its own.
        ("mnist_reptile", ["training.tasks_per_step=3"], 6, 1e-5),
        # Two inner steps of the five: the chained adaptation and its second-order terms
        # are there at two (the example's five: test_runs).
        ("mnist_maml", ["training.tasks_per_step=3", "training.inner_steps=2"], 4, 1e-5),
        # SAM: the ascent along the global batch's gradient, the weights moved and restored on
        # every replica at once (the cross-replica context), the second gradient summed.
        ("shapes_sam", [], 6, 1e-5),
        # ema=EMA: the average updated in the cross-replica context, every copy alike.
        ("mnist_mlp", ['ema={"decay": 0.9}'], 6, 1e-5),
        # Flow matching, guided: noise, times and dropped labels drawn for the global batch
        # and sliced per replica; the validation's draws alike; the EMA denoiser.
        ("shapes_flow", [], 6, 1e-5),
        # A VAE: the codes' noise drawn for the global batch and sliced per replica, the
        # terms over the global batch, its validation and its EMA copy alike.
        ("shapes_vae", ['ema={"decay": 0.9}'], 6, 1e-5),
        # The ways that act, in environment steps: the same environments (NUM_ENVS of them,
        # seeded by their index) stepped by one policy, and each minibatch shared out, its
        # advantages normalized over the whole of it. Three updates of PPO (two epochs of two
        # minibatches), five of A2C, ten train steps of DQN on a wrapped-round buffer, and
        # PPO's Gaussian policy on normalized observations.
        ("cartpole_ppo", [*PPO_SMALL, "training.rollout_steps=8"], 96, 1e-5),
        ("cartpole_a2c", [], 200, 1e-5),
        ("cartpole_dqn", DQN_SMALL, 40, 1e-5),
        ("pendulum_ppo", [*PPO_SMALL, "training.rollout_steps=16"], 128, 1e-5),
        # A Dict observation: each minibatch's parts, by name, shared out alike (PPO's and
        # DQN's, from its replay buffer).
        ("corridor_ppo", [*PPO_SMALL, "training.rollout_steps=8"], 96, 1e-5),
        ("corridor_ppo", ['training={"kind": "dqn", "buffer_size": 24, "batch_size": 8, '
                          '"learning_starts": 8, "train_every": 1, "target_update_every": 10}'],
         40, 1e-5),
        # SAC and TD3: each sampled batch and its noise (SAC's policy samples, TD3's target
        # smoothing) shared out; the critics, the policy, log alpha and the Polyak targets
        # updated as on one device (TD3's policy at every second critic update).
        ("pendulum_sac", data.small_off_policy("pendulum_sac"), 40, 1e-5),
        ("pendulum_td3", data.small_off_policy("pendulum_td3"), 40, 1e-5),
        # A KerasHub BERT with LoRA: the adapters' gradients summed over replicas, the frozen
        # backbone left alone; without the head's dropout, whose masks each replica draws.
        ("reviews_bert_lora", ["model.dropout=0"], 6, 1e-5),
        # SFT: the mean over the response tokens of the global batch (their count summed over
        # the replicas); DPO: each pair kept whole on a replica.
        ("sums_sft", [], 6, 1e-5),
        ("sums_dpo", [], 6, 1e-5),
        # GRPO: each completion sampled from its row in the global batch, whichever replica
        # holds it; the groups kept whole; the loss's token count summed over the replicas.
        ("sums_grpo", [], 4, 1e-5),
    ],
    ids=["cifar10_resnet", "imdb_transformer", "mnist_own_step", "mnist_distillation",
         "mnist_adversarial", "shapes_wgan_gp", "shapes_simclr", "mnist_reptile", "mnist_maml",
         "shapes_sam", "mnist_mlp_ema", "shapes_flow", "shapes_vae", "cartpole_ppo", "cartpole_a2c",
         "cartpole_dqn", "pendulum_ppo", "corridor_ppo", "corridor_dqn", "pendulum_sac",
         "pendulum_td3", "reviews_bert_lora", "sums_sft", "sums_dpo", "sums_grpo"],
)  # fmt: skip
def test_mirrored_equals_single_device(
    example, overrides, steps, tolerance, render, shared, tmp_path
):
    acts = example in ACTING  # no dataset: environment steps, not epochs
    common = ["loop.log_every_steps=1", *overrides]
    if not acts:
        # Validation kept: its pass on two replicas is proved here, not in the mirrored variant
        # test (EQUALS_ONE_DEVICE). It leaves the weights alone.
        common += [*data.small_data_overrides(example, tmp_path), "data.batch_size=16"]
    data.companions(example, tmp_path)  # corridor_ppo's environment, beside the scripts
    # Only the mirrored twin of a dataset's script is asked for its export, and of the ways
    # that act pendulum_ppo's, the one with statistics to serve (test_runs and test_rl serve
    # the examples' on one device); of the causal LM's ways SFT's, whose export DPO and GRPO
    # render byte for byte (test_hub).
    no_export = "export.saved_model=false"
    exports = (not acts and example not in UNEXPORTED) or example in ("pendulum_ppo", "sums_sft")
    flags = [*([] if acts else ["--epochs", "3"]), "--max-steps", str(steps), "--deterministic"]
    twin = tmp_path / "mirrored"
    if example in LM_RUNS:
        # One device's run is test_runs' (the LM tests share it: its data, preset and overrides,
        # --deterministic), checkpointed every 2 steps: the twin is compared at its step.
        common = trained_overrides(shared, example)
        _, straight, _ = trained_example(shared, example)
        at_step = straight / "checkpoints" / f"ckpt-{steps}"
    else:
        single = data.runnable(example, render(example, *common, no_export))
        straight = tmp_path / "single"
        at_step = straight / "checkpoints"
        run_python(single, *flags, "--output-dir", str(straight), cwd=tmp_path)
    script = render(example, *common, no_export if not exports else "export.saved_model=true",
                    TWO_CPUS, variant="mirrored", name="mirrored.py")  # fmt: skip
    mirrored = data.runnable(example, script)
    proc = run_python(mirrored, *flags, "--output-dir", str(twin), cwd=tmp_path)
    # Equal weights prove nothing of a twin that ran on one replica.
    assert "2 replica(s) on this machine" in proc.stdout
    if not acts:
        # A --max-steps run ends as one of whole epochs does: checkpoint, then export.
        assert re.search(r"^Epoch 1/\d+$", proc.stdout, re.MULTILINE), proc.stdout[-2000:]
        assert_trained_on_two_replicas(example, script, twin, proc.stdout, exported=exports)
    if example == "mnist_adversarial":
        best = saved_models(twin / "export" / "best", script)
        assert all((saved / "saved_model.pb").is_file() for saved in best)
    result, expected, logged = compared_at(at_step, straight, twin, steps, tmp_path)
    assert result["same_keys"] and result["step"] == steps, result
    assert result["max_scaled_diff"] <= tolerance, result
    # One policy acted alike: the environments (and DQN's buffer) end alike. Not so for
    # continuous actions, which carry the weights' rounding (1e-7) into the environments.
    if acts and not example.startswith("pendulum_"):
        states = tf_check("compare_saved_states", str(straight / "checkpoints"),
                          str(twin / "checkpoints"), cwd=tmp_path)  # fmt: skip
        assert states["states"] and states["same"], states
    if example == "pendulum_ppo":
        # The export of two replicas' policy, loaded without the script, on raw observations:
        # the networks on them normalized by the checkpoint's statistics.
        observations = "[[1.0, 0.0, 0.0], [0.0, 1.0, -2.0], [-0.6, 0.8, 5.0]]"
        proc = run_preloaded(str(ROOT / "tests" / "rl_checks.py"), "served_against_networks",
                             str(mirrored), str(twin), observations, cwd=tmp_path)  # fmt: skip
        served = json.loads(proc.stdout.strip().splitlines()[-1])
        assert served["normalized"] and served["mean_diff"] <= 1e-5, served
        assert served["values_diff"] <= 1e-5, served
    assert sorted(logged) == sorted(expected)
    assert (
        max(abs(expected[s] - logged[s]) / max(1, abs(expected[s])) for s in expected) <= tolerance
    )
