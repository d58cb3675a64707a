"""The generated script under faults, driven in subprocesses: killed with SIGKILL at a random
step, stopped by SIGTERM (preemption), a loss that turns NaN, a damaged newest checkpoint."""

from __future__ import annotations

import json
import random
import signal
import subprocess
import sys
from pathlib import Path

import data
import pytest
from data import classification_npz
from helpers import (
    TWO_CPUS,
    finish_workers,
    launch_workers,
    npz,
    records,
    run_preloaded,
    run_python,
    script_env,
    start_preloaded,
    tf_check,
    tree,
    wait_for_step,
    workers_running,
)
from test_runs import trained_example

pytestmark = pytest.mark.slow

# The MNIST MLP with Dropout (whose random state must survive a restart), momentum, 320
# examples at batch 16: 20 steps an epoch, a checkpoint every 7 steps (mid-epoch), a log line
# every step.
LAYERS = [
    {"kind": "flatten"},
    {"kind": "dense", "units": 32, "activation": "relu"},
    {"kind": "dropout", "rate": 0.3},
    {"kind": "dense", "units": 10, "name": "predictions"},
]
EPOCHS = 3
STEPS = 20 * EPOCHS


def mlp_script(render, tmp_path: Path, *overrides: str) -> Path:
    return render(
        "mnist_mlp",
        f"data.train={npz(classification_npz(tmp_path / 'train.npz', 320, (28, 28)))}",
        "data.batch_size=16",
        f"model.layers={json.dumps(LAYERS)}",
        "optimizer.momentum=0.9",
        "loop.log_every_steps=1",
        'checkpoint={"every_steps": 7, "keep": 3}',
        *overrides,
    )


@pytest.fixture
def script(render, tmp_path):
    return mlp_script(render, tmp_path)


def run(script: Path, out: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run_python(
        script, "--epochs", str(EPOCHS), "--output-dir", str(out), "--deterministic", *args,
        cwd=script.parent,
    )  # fmt: skip


def start(script: Path, out: Path) -> subprocess.Popen[str]:
    env = script_env()
    return subprocess.Popen(
        [sys.executable, str(script), "--epochs", str(EPOCHS), "--output-dir", str(out),
         "--deterministic"],
        cwd=script.parent, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip


def mid_epoch_step(case: str, steps: range, per_epoch: int | None) -> int:
    """A step of `steps` drawn by a generator seeded with `case`, in the middle half of its
    epoch of `per_epoch` steps (any step without epochs, or with epochs of one step)."""
    middle = [s for s in steps if per_epoch and per_epoch / 4 <= s % per_epoch <= per_epoch * 3 / 4]
    return random.Random(case).choice(middle or list(steps))


def signal_at_step(proc: subprocess.Popen[str], out: Path, step: int, sig: int) -> None:
    wait_for_step(proc, out, step)
    proc.send_signal(sig)


def same_weights(a: Path, b: Path) -> dict:
    result = tf_check("compare_checkpoints", str(a / "checkpoints"), str(b / "checkpoints"),
                      cwd=a.parent)  # fmt: skip
    assert result["same_keys"] and result["step"] == STEPS, result
    return result


def test_sigkill_at_a_random_step_then_resume_ends_like_an_uninterrupted_run(script, tmp_path):
    straight, killed = tmp_path / "straight", tmp_path / "killed"
    run(script, straight)
    # After the first checkpoint, before the end, in the middle of an epoch; seeded, so that a
    # failure reproduces.
    at = mid_epoch_step("sigkill", range(9, STEPS - 10), 20)
    proc = start(script, killed)
    signal_at_step(proc, killed, at, signal.SIGKILL)
    proc.communicate(timeout=60)
    assert proc.returncode == -signal.SIGKILL, f"killed at step {at}"
    # It held the output directory's lock: the file still names it, but the lock died with
    # the process, so the next run takes it (no stale lock).
    assert (killed / "run.lock").read_text().startswith(f"pid {proc.pid} on ")

    resumed = run(script, killed)
    assert "Resumed from" in resumed.stdout, f"killed at step {at}"
    # runs.jsonl: the killed run started and never ended; the resumed one did both.
    lines = (killed / "runs.jsonl").read_text().splitlines()
    killed_start, resumed_start, resumed_end = map(json.loads, lines)
    assert killed_start["event"] == "start" and killed_start["pid"] == proc.pid
    assert resumed_start["event"] == "start" and resumed_end["run"] == resumed_start["run"]
    assert resumed_end["exit"] == "finished" and resumed_end["step"] == STEPS
    result = same_weights(straight, killed)
    # Weights, momentum slots, the step and Dropout's random state: all exactly as if the run
    # had never stopped.
    assert result["max_diff"] == 0.0, (at, result)


def test_sigterm_saves_a_checkpoint_and_the_next_run_resumes_from_it(script, tmp_path):
    straight, stopped = tmp_path / "straight", tmp_path / "stopped"
    run(script, straight)
    at = mid_epoch_step("sigterm", range(2, STEPS - 10), 20)
    proc = start(script, stopped)
    signal_at_step(proc, stopped, at, signal.SIGTERM)
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 128 + signal.SIGTERM, stderr[-3000:]
    assert "Traceback" not in stderr
    # It stopped after the step it was in, and saved exactly there (not at the last cadence).
    step = int(stdout.split("Stopped by SIGTERM at step ")[1].split(";")[0])
    assert at <= step < STEPS
    assert f"saved {stopped / 'checkpoints' / f'ckpt-{step}'}" in stdout
    assert not (stopped / "export").exists()  # an interrupted run does not export

    resumed = run(script, stopped)
    assert f"ckpt-{step} at step {step}" in resumed.stdout
    assert same_weights(straight, stopped)["max_diff"] == 0.0


def test_nan_loss_stops_the_run_naming_the_step_and_keeps_the_good_checkpoint(render, tmp_path):
    # From step 5 on the learning rate is absurd: the weights blow up within a few steps.
    script = render(
        "mnist_mlp",
        f"data.train={npz(classification_npz(tmp_path / 'train.npz', 320, (28, 28)))}",
        "data.batch_size=16",
        "loop.log_every_steps=1",
        'checkpoint={"every_steps": 2, "keep": 2}',
        'optimizer.learning_rate={"kind": "piecewise_constant", "boundaries": [4], '
        '"values": [0.001, 1e12]}',
    )
    out = tmp_path / "run"
    env = script_env()
    proc = subprocess.run(
        [sys.executable, str(script), "--output-dir", str(out)],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
    bad = int(proc.stderr.split("NaN or Inf at step ")[1].split(":")[0])
    # The step named is the first with a non-finite loss: the logged running mean (one record
    # per step) is finite before it and not at it.
    losses = {r["step"]: r["loss"] for r in records(out) if "loss" in r}
    assert max(losses) == bad
    assert all(abs(losses[s]) < float("inf") for s in range(1, bad)), losses
    # Not finite: null in strict JSON, named in "nonfinite".
    bad_record = next(r for r in records(out) if r["step"] == bad and "loss" in r)
    assert losses[bad] is None and bad_record["nonfinite"]["loss"] in ("NaN", "Infinity"), losses
    # The newest checkpoint is from before that step, and holds finite weights.
    result = tf_check("finite_checkpoint", str(out / "checkpoints"), cwd=tmp_path)
    assert result["all_finite"] and result["count"] >= 6, result
    assert result["step"] < bad and result["step"] >= bad - 2, (bad, result)
    assert f"ckpt-{result['step']}" in proc.stderr
    assert not (out / "export").exists()


def garble_index(path: Path) -> None:
    """Garbles a checkpoint's .index file as a bad disk might: the size of its index block, in
    the file's footer, becomes a terabyte (TensorFlow then fails with std::bad_alloc)."""

    def varint(data: bytes, at: int) -> tuple[int, int]:
        value = shift = 0
        while True:
            byte = data[at]
            value, shift, at = value | (byte & 0x7F) << shift, shift + 7, at + 1
            if byte < 0x80:
                return value, at

    def encoded(value: int) -> bytes:
        out = bytearray()
        while value >= 0x80:
            out.append(value & 0x7F | 0x80)
            value >>= 7
        return bytes([*out, value])

    data = path.read_bytes()
    footer, at, handles = data[-48:], 0, []
    for _ in range(3):  # the metaindex block's offset and size, the index block's offset
        value, at = varint(footer, at)
        handles.append(value)
    handles.append(2**40)  # the index block's size
    garbled = b"".join(encoded(v) for v in handles).ljust(40, b"\0") + footer[40:]
    path.write_bytes(data[:-48] + garbled)


def test_a_nan_loss_between_log_points_is_caught_before_the_next_save(render, tmp_path):
    """No log point before the loss turns NaN (one every 1,000 steps): the check before each
    save stops the run, and the newest checkpoint is from before the step it names."""
    script = render(
        "mnist_mlp",
        f"data.train={npz(classification_npz(tmp_path / 'train.npz', 320, (28, 28)))}",
        "data.batch_size=16",
        "loop.log_every_steps=1000",
        'checkpoint={"every_steps": 2, "keep": 2}',
        'optimizer.learning_rate={"kind": "piecewise_constant", "boundaries": [4], '
        '"values": [0.001, 1e12]}',
        "export.saved_model=false",
    )
    out = tmp_path / "run"
    proc = run_preloaded(str(script), "--output-dir", str(out), cwd=tmp_path, check=False)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
    bad = int(proc.stderr.split("NaN or Inf at step ")[1].split(":")[0])
    assert not (out / "metrics.jsonl").exists() or not records(out)  # nothing was logged
    result = tf_check("finite_checkpoint", str(out / "checkpoints"), cwd=tmp_path)
    assert result["all_finite"] and bad - 2 <= result["step"] < bad, (bad, result)


@pytest.mark.parametrize("damage", ["data_cut_short", "index_garbled"])
def test_a_damaged_newest_checkpoint_falls_back_to_the_one_before(script, tmp_path, damage):
    straight, damaged = tmp_path / "straight", tmp_path / "damaged"
    run(script, straight)
    run_python(script, "--epochs", "2", "--output-dir", str(damaged), "--deterministic",
               cwd=tmp_path)  # fmt: skip
    checkpoints = damaged / "checkpoints"
    # Saved at 28 and 35 on the cadence, 40 at the end of epoch 2: damage the newest.
    if damage == "data_cut_short":
        data = checkpoints / "ckpt-40.data-00000-of-00001"
        data.write_bytes(data.read_bytes()[: data.stat().st_size // 2])
        said = "its files are damaged or are no checkpoint's ("
    else:
        garble_index(checkpoints / "ckpt-40.index")
        # Said so, not as TensorFlow's MemoryError: std::bad_alloc.
        said = "its index file is damaged (reading it asked for more memory than there is)\n"

    resumed = run(script, damaged)
    assert f"Cannot restore {checkpoints / 'ckpt-40'}: {said}" in resumed.stdout, resumed.stdout
    assert "MemoryError" not in resumed.stdout + resumed.stderr
    assert f"Resumed from {checkpoints / 'ckpt-35'} at step 35" in resumed.stdout
    assert same_weights(straight, damaged)["max_diff"] == 0.0


def test_when_no_checkpoint_restores_the_run_stops_instead_of_starting_over(script, tmp_path):
    out = tmp_path / "run"
    run_python(script, "--max-steps", "14", "--output-dir", str(out), cwd=tmp_path)
    for index in (out / "checkpoints").glob("*.index"):
        index.write_bytes(b"not a checkpoint index")
    env = script_env()
    proc = subprocess.run(
        [sys.executable, str(script), "--output-dir", str(out)],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
    assert "None of the checkpoints restores" in proc.stderr
    assert "Move them away" in proc.stderr
    assert len(records(out)) == 14  # it did not train on from step 0


def test_sigterm_to_one_worker_stops_every_worker_after_the_same_step(render, tmp_path):
    """Preemption of one machine in a multi-worker job: the workers agree (in the train step)
    to stop after the same step, save together, and a restarted job resumes there."""
    script = render(
        "mnist_mlp",
        f"data.train={npz(classification_npz(tmp_path / 'train.npz', 320, (28, 28)))}",
        "data.batch_size=16",
        "loop.log_every_steps=1",
        'checkpoint={"every_steps": 7, "keep": 3}',
        variant="multi_worker",
    )
    args = ["--epochs", str(EPOCHS), "--deterministic"]
    straight, stopped = tmp_path / "straight", tmp_path / "stopped"

    def job(out: Path) -> list[subprocess.Popen[str]]:
        return launch_workers(script, *args, "--output-dir", str(out), cwd=tmp_path)

    for proc, _, stderr in finish_workers(job(straight)):
        assert proc.returncode == 0, stderr[-3000:]

    at = mid_epoch_step("sigterm_worker", range(2, STEPS - 15), 20)
    with workers_running(job(stopped)) as procs:
        wait_for_step(procs[0], stopped, at)  # the chief writes the log
        procs[1].send_signal(signal.SIGTERM)  # only worker 1 is preempted
    results = finish_workers(procs)
    steps = set()
    for proc, stdout, stderr in results:
        assert proc.returncode == 128 + signal.SIGTERM, (at, stderr[-3000:])
        steps.add(int(stdout.split("Stopped by SIGTERM at step ")[1].split(";")[0]))
    (step,) = steps  # the same step on both
    assert at <= step < STEPS
    assert (stopped / "checkpoints" / f"ckpt-{step}.index").is_file()

    resumed = finish_workers(
        launch_workers(script, *args, "--output-dir", str(stopped), cwd=tmp_path)
    )
    for proc, stdout, stderr in resumed:
        assert proc.returncode == 0, stderr[-3000:]
        assert f"ckpt-{step} at step {step}" in stdout
    result = tf_check("compare_checkpoints", str(straight / "checkpoints"),
                      str(stopped / "checkpoints"), cwd=tmp_path)  # fmt: skip
    assert result["step"] == STEPS and result["max_diff"] <= 1e-5, result


# --- every source and every way of training, on one device and on two replicas ----------------

RESUME_RUNS = {
    # source or way: (example, epochs, extra overrides); checkpoints every 2 steps, a log line
    # a step.
    "image_directory": ("cifar10_vgg", 3, ["data.validation=null", "data.batch_size=8"]),
    # A small network on flowers_finetune's records (test_models resumes its MobileNetV2 on
    # either side of the unfreeze).
    "tfrecord": ("flowers_finetune", 4, ["data.validation=null"]),
    "csv": ("houses_tabular", 4, ["data.validation=null", "data.batch_size=16"]),
    "text": ("reviews_text", 3, ["data.validation=null", "data.batch_size=16"]),
    "generator": ("signals_generator", 3, ["data.batch_size=16"]),
    # A U-Net of one level (8 and 16 filters) in place of three (32 to 256): the proof is the
    # TFDS source's position and the synchronized BatchNormalization's state in the checkpoint,
    # which the smaller one has as well (test_runs and test_distributed train the full one).
    "tfds": ("pets_unet", 3, ["data.validation=null", *data.SMALL_UNET]),
    "own_step": ("mnist_own_step", 3, ["data.validation=null"]),
    # A KerasHub preset's BERT with LoRA: the adapters, the head and the backbone's dropout
    # state; the preset's tokenizer in the pipeline.
    "keras_hub": ("reviews_bert_lora", 2, ["data.validation=null"]),
    # A KerasHub causal LM: SFT's masked targets, DPO's pairs and its reference (the preset,
    # loaded again, not checkpointed). test_runs' runs (SHARED_RUNS): their overrides there.
    "sft": ("sums_sft", 2, []),
    # SFT's packing: each batch's examples packed into rows anew after the resume, a
    # function of the batch alone (4 sums to a row of 32 tokens).
    "sft_packed": ("sums_sft_packed", 2, []),
    "dpo": ("sums_dpo", 2, []),
    # GRPO: completions sampled from (seed, step, row), with no sampler state to save.
    "grpo": ("sums_grpo", 2, []),
    "distillation": ("mnist_distillation", 3, ["data.validation=null"]),
    # PGD's random starts, drawn from (seed, step, position): the same after a resume.
    "adversarial": ("mnist_adversarial", 3, ["data.validation=null", "best_model=null"]),
    # The critic's steps inside a step; noise and penalty points from (seed, step, position);
    # the generator's average (ema=EMA), continued.
    "gan_penalty": ("shapes_wgan_gp", 3, ["training.critic_steps=2", 'ema={"decay": 0.9}']),
    # Two views of each image, from (seed, epoch, position, view).
    "contrastive": ("shapes_simclr", 3, ["data.validation=null", "data.batch_size=16"]),
    # Tasks drawn from (seed, step, task); each adapted by its inner loop inside the step.
    "reptile": ("mnist_reptile", 1, []),
    # Two inner steps, not five: the chained adaptation and its second-order tape are the
    # same code (a Python loop), one graph copy per step (test_runs runs the example's five).
    "maml": ("mnist_maml", 3, ["training.inner_steps=2"]),
    # SAM: two passes a step, the weights moved and restored inside it (nothing of the
    # ascent outlives the step); the base optimizer's slots and schedule.
    "sam": ("shapes_sam", 3, ["data.validation=null"]),
    # The average of the weights (ema=EMA), continued, not restarted, by a resumed run.
    "ema": ("mnist_mlp", 3, ['ema={"decay": 0.9}']),
    # Diffusion's and flow matching's draws (noise, timesteps, dropped labels) from (seed,
    # step, position); the EMA denoiser. DDPM with v-prediction, flow matching guided.
    "diffusion": ("shapes_diffusion", 3, ["data.validation=null", 'training.prediction="v"']),
    "flow_matching": ("shapes_flow", 3, ["data.validation=null"]),
    # A VAE's codes' noise from (seed, step, position), the KL weight's warm-up a function of
    # the step; its EMA copy (encoder and decoder) continued.
    "vae": (
        "shapes_vae",
        3,
        ["data.validation=null", 'ema={"decay": 0.9}', "training.kl_warmup_steps=5"],
    ),
    # Reinforcement learning, in environment steps (a count of them instead of epochs): the
    # environments mid-episode and DQN's replay buffer (wrapped round) are in the checkpoint;
    # actions, minibatches and exploration drawn from (seed, step).
    "ppo": (
        "cartpole_ppo",
        384,
        ["training.rollout_steps=8", "training.minibatches=2", "training.update_epochs=2"],
    ),
    "a2c": ("cartpole_a2c", 400, []),
    # A Dict observation (the corridor's cell and goal) in the environments' pickled state,
    # and part by part in DQN's replay buffer.
    "dict_observations": (
        "corridor_ppo",
        256,
        ["training.rollout_steps=8", "training.minibatches=2", "training.update_epochs=2"],
    ),
    "dict_dqn": (
        "corridor_ppo",
        160,
        [
            'training={"kind": "dqn", "buffer_size": 64, "batch_size": 16, "learning_starts": 16, '
            '"train_every": 1, "target_update_every": 10}'
        ],
    ),
    # A Gaussian policy (its log std learnt) on normalized observations (running statistics),
    # learning from scaled rewards (the running variance of each sub-environment's discounted
    # return, and the returns themselves, mid-episode).
    "ppo_continuous": (
        "pendulum_ppo",
        768,
        [
            "training.rollout_steps=16",
            "training.minibatches=2",
            "training.update_epochs=2",
            "training.normalize_rewards=true",
        ],
    ),
    # Pixels (Breakout's 4 stacked frames, uint8) in the replay buffer, and each Atari
    # emulator's state (its random generator's, which sticky actions draw from, too) and the
    # generator of its no-op starts beside the pickled game; a lost life ends an episode, so
    # that games reset within the budget. A small network: the example's is the Nature CNN.
    "pixel_dqn": ("breakout_dqn", 120, [*data.small_pixel_dqn()]),
    "dqn": (
        "cartpole_dqn",
        160,
        [
            "training.buffer_size=64",
            "training.batch_size=16",
            "training.learning_starts=16",
            "training.train_every=1",
            "training.target_update_every=10",
        ],
    ),
    # SAC: the critics, their targets, both optimizers, log alpha and its optimizer, and the
    # replay buffer (wrapped round); the acting and the updates' noise from (seed, step).
    # Small networks: the example's are 256 wide.
    "sac": ("pendulum_sac", 64, [*data.small_off_policy("pendulum_sac")]),
    # TD3: the target policy too, and the policy delay, counted by the critics' optimizer.
    "td3": ("pendulum_td3", 64, [*data.small_off_policy("pendulum_td3")]),
}
SHARED_RUNS = {"sft", "sft_packed", "dpo", "grpo"}
"""The causal LM ways: their uninterrupted run is test_runs' (LM_RUNS), with validation (SFT's,
DPO's) and a checkpoint every 2 steps, all kept."""
ACTING_CASES = {"ppo", "a2c", "dqn", "ppo_continuous", "dict_observations", "dict_dqn", "sac",
                "td3", "pixel_dqn"}  # fmt: skip
"""The cases that act: their length is in environment steps (--max-steps)."""
ONE_DEVICE_ENOUGH = {"ppo", "a2c", "dict_observations", "dict_dqn", "pixel_dqn", "keras_hub",
                     "sft", "sft_packed", "dpo", "grpo", "diffusion", "vae"}  # fmt: skip
"""Their replicas run the code of ppo_continuous's (PPO's partial, A2C's with it); a Dict's
parts shared out by the replicas: test_distributed's mirrored_equals_single_device. The
KerasHub cases' replicas run the supervised cases' step and checkpoint (resumed on two
replicas there); what is their own on replicas (SFT's token count, DPO's pairs, LoRA's frozen
backbone, GRPO's completions sampled by row) is mirrored_equals_single_device's (packed
SFT's: test_packing's). The VAE's and DDPM's draws on replicas are those of shapes_vae's and
shapes_flow's mirrored_equals_single_device (and flow matching's resume on two replicas)."""
RESUME_CASES = [
    (source, variant)
    for source in sorted(RESUME_RUNS)
    for variant in ("single_device", "mirrored")
    if variant == "single_device" or source not in ONE_DEVICE_ENOUGH
]


@pytest.mark.parametrize(("source", "variant"), RESUME_CASES)
def test_sigkill_then_resume_is_exact_for_every_source_and_way(
    source, variant, render, shared, tmp_path
):
    """The data position is a function of the step for every source (index-shuffled arrays and
    files, streamed records, a generator, TFDS), and every way of training checkpoints all its
    state: a run killed at a random step and resumed ends with exactly the weights of one that
    never stopped, on one device and on two replicas."""
    example, epochs, extra = RESUME_RUNS[source]
    length = ["--max-steps" if source in ACTING_CASES else "--epochs", str(epochs)]
    flags = [*length, "--deterministic"]
    killed = tmp_path / "killed"
    if source in SHARED_RUNS:
        # The uninterrupted run is test_runs' (2 epochs, --deterministic): its script is killed
        # and resumed here, in a directory of this test's.
        script, straight, _ = trained_example(shared, example)
    else:
        # No export: what is compared is the checkpoints (test_runs exports every example).
        overrides = [*data.small_data_overrides(example, tmp_path, backbone=False), *extra,
                     "loop.log_every_steps=1", 'checkpoint={"every_steps": 2, "keep": 3}',
                     "export.saved_model=false"]  # fmt: skip
        if variant == "mirrored":
            overrides.append(TWO_CPUS)
        script = render(example, *overrides,
                        variant=None if variant == "single_device" else variant)  # fmt: skip
        script = data.runnable(example, script)
        straight = tmp_path / "straight"
        run_python(script, *flags, "--output-dir", str(straight), cwd=tmp_path)
    steps = max(r["step"] for r in records(straight))
    # A log line a step; reinforcement learning logs a line an update (PPO) or vector step.
    lines = len(records(straight)) if source in ACTING_CASES else steps
    # Seeded by the case (a failure reproduces), and for epochs in the middle of one: the run
    # resumes inside an epoch, its data position, augmentation and running means mid-way.
    at = mid_epoch_step(f"{source}/{variant}", range(3, lines - 2),
                        None if source in ACTING_CASES else steps // epochs)  # fmt: skip
    # Killed in a process forked from one that has imported TensorFlow (its own process, as
    # `python train.py` is; test_sigkill_at_a_random_step_... kills `python train.py` itself).
    proc = start_preloaded(str(script), *flags, "--output-dir", str(killed), cwd=tmp_path)
    try:
        signal_at_step(proc, killed, at, signal.SIGKILL)
    except BaseException:
        if proc.poll() is None:
            proc.kill()
        proc.communicate(timeout=60)  # frees this test process's preloaded server
        raise
    proc.communicate(timeout=60)
    assert proc.returncode == -signal.SIGKILL, (source, at, proc.returncode)
    resumed = run_python(script, *flags, "--output-dir", str(killed), cwd=tmp_path)
    assert "Resumed from" in resumed.stdout, (source, at)
    result = tf_check("compare_checkpoints", str(straight / "checkpoints"),
                      str(killed / "checkpoints"), cwd=tmp_path)  # fmt: skip
    assert result["same_keys"] and result["step"] == steps, result
    assert result["max_diff"] == 0.0, (source, variant, at, result)
    # The logged running means, resumed mid-window too (replicas round their sums anew).
    assert result["means"] and result["values_diff"] <= 1e-6, (source, variant, at, result)
    if source in (
        "ema",
        "diffusion",
        "flow_matching",
        "vae",
        "gan_penalty",
    ):  # the average is in the checkpoint, and so among what is compared
        saved = tf_check("checkpoint_dtypes", str(killed / "checkpoints"), cwd=tmp_path)
        average = "ema_generator/" if source == "gan_penalty" else "ema_model/"
        assert any(name.startswith(average) for name in saved), sorted(saved)
    if source in ACTING_CASES:  # the environments' state and the replay buffer too
        states = tf_check("compare_saved_states", str(straight / "checkpoints"),
                          str(killed / "checkpoints"), cwd=tmp_path)  # fmt: skip
        assert states["states"] and states["same"], (source, at, states)


# --- The machine fails the run: a full disk, a file-size limit, a read-only mount, an
# --output-dir that is a file, a damaged data file. Each is produced for real: a tmpfs of a
# few hundred KiB in a private mount namespace (unshare -m, as root) fills up like a disk.


def in_namespace(tmp_path: Path, shell: str) -> None:
    """Runs `shell` (sh) in a private mount namespace: its mounts vanish with it."""
    proc = subprocess.run(["unshare", "-m", "sh", "-ec", shell], cwd=tmp_path, env=script_env(),
                          capture_output=True, text=True, timeout=600)  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]


def script_command(script: Path, out: Path, name: str, *args: str) -> str:
    """The shell command of one run into `out`, its exit status and output kept in tmp_path."""
    words = " ".join([sys.executable, str(script), "--epochs", str(EPOCHS), "--deterministic",
                      "--output-dir", str(out), *args])  # fmt: skip
    folder = script.parent
    output = f"> {folder}/{name}.out 2> {folder}/{name}.err"
    return f"{{ {words} {output} && echo 0 || echo $?; }} > {folder}/{name}.rc"


def outcome(tmp_path: Path, name: str) -> tuple[int, str, str]:
    return (int((tmp_path / f"{name}.rc").read_text()), (tmp_path / f"{name}.out").read_text(),
            (tmp_path / f"{name}.err").read_text())  # fmt: skip


def stopped_by_the_machine(tmp_path: Path, name: str, *phrases: str) -> str:
    """The run `name` stopped with exit 1 and a few lines naming what happened, no traceback."""
    code, _, stderr = outcome(tmp_path, name)
    message = stderr[stderr.index("Stopped: ") :] if "Stopped: " in stderr else stderr[-3000:]
    assert code == 1 and "Traceback" not in stderr, (code, stderr[-3000:])
    assert len(message.splitlines()) <= 3, message
    for phrase in phrases:
        assert phrase in message, (phrase, message)
    return message


def pages(folder: Path, skip: str = "") -> int:
    """KiB that the files under `folder` take on a tmpfs (whole 4 KiB pages)."""
    return sum(-(-p.stat().st_size // 4096) * 4 for p in folder.rglob("*")
               if p.is_file() and not (skip and skip in p.parts))  # fmt: skip


def test_a_full_disk_stops_the_run_with_a_message_and_the_next_run_resumes_exactly(
    script, tmp_path
):
    straight, probe, mnt = tmp_path / "straight", tmp_path / "probe", tmp_path / "mnt"
    run(script, straight)
    run(script, probe, "--max-steps", "14")  # what the run holds after its second checkpoint
    checkpoint_size = pages(probe / "checkpoints") // 2
    # Room for two checkpoints and the logs, and half of a third: the save at step 21 fails.
    size = pages(probe, skip="export") + checkpoint_size // 2
    mnt.mkdir()
    out = mnt / "run"
    commands = f"""
        mount -t tmpfs -o size={size}k tmpfs {mnt}
        {script_command(script, out, "full")}
        find {out} | sort > {tmp_path}/after_full.txt
        cp -a {out} {tmp_path}/after_full
        mount -o remount,size=64m {mnt}
        {script_command(script, out, "resumed")}
        cp -a {out} {tmp_path}/resumed
    """
    in_namespace(tmp_path, commands)
    checkpoints = out / "checkpoints"
    stopped_by_the_machine(
        tmp_path, "full", f"cannot write {checkpoints / 'ckpt-21'} (No space left on device)",
        "The disk is full", f"The newest checkpoint, {checkpoints / 'ckpt-14'} (step 14)",
        "is intact: once there is room, run the script again with the same --output-dir",
    )  # fmt: skip
    # Nothing half-written: no temporary directory, no file of the checkpoint that failed;
    # the older checkpoints are whole.
    left = (tmp_path / "after_full.txt").read_text()
    assert "_temp" not in left and "ckpt-21" not in left and "ckpt-14.index" in left, left
    after_full = tmp_path / "after_full"
    end = json.loads((after_full / "runs.jsonl").read_text().splitlines()[-1])
    assert end["exit"] == "error" and end["step"] == 21
    assert "Traceback" in end["traceback"] and "No space left on device" in end["traceback"]
    logged = (after_full / "metrics.jsonl").read_text().splitlines()
    assert all(line.endswith("}") for line in logged)

    code, stdout, _ = outcome(tmp_path, "resumed")
    assert code == 0 and f"Resumed from {checkpoints / 'ckpt-14'} at step 14" in stdout
    assert same_weights(straight, tmp_path / "resumed")["max_diff"] == 0.0


def test_an_export_that_does_not_fit_leaves_no_part_of_it_and_is_written_by_the_next_run(
    render, tmp_path
):
    # The SavedModel and the .keras file: twice a checkpoint's weights.
    script = mlp_script(render, tmp_path, "export.keras=true")
    straight, mnt = tmp_path / "straight", tmp_path / "mnt"
    run(script, straight)
    # Room for the training (a save writes its checkpoint before the oldest of the three kept
    # goes), not for the export.
    checkpoint_size = pages(straight / "checkpoints") // 3
    size = pages(straight, skip="export") + checkpoint_size + 8
    assert pages(straight / "export") > checkpoint_size + 8
    mnt.mkdir()
    out = mnt / "run"
    commands = f"""
        mount -t tmpfs -o size={size}k tmpfs {mnt}
        {script_command(script, out, "full")}
        find {out} | sort > {tmp_path}/after_full.txt
        mount -o remount,size=64m {mnt}
        {script_command(script, out, "again")}
        find {out}/export | sort > {tmp_path}/export.txt
    """
    in_namespace(tmp_path, commands)
    stopped_by_the_machine(tmp_path, "full", f"cannot write {out / 'export.partial'}",
                           "No space left on device", "(step 60), is intact")  # fmt: skip
    assert f"{out}/export" not in (tmp_path / "after_full.txt").read_text()  # nor export.partial
    code, stdout, _ = outcome(tmp_path, "again")
    assert code == 0 and "nothing left to train" in stdout
    exported = (tmp_path / "export.txt").read_text()
    assert f"{out}/export/saved_model/1/saved_model.pb" in exported
    assert f"{out}/export/network/saved_model.pb" in exported


def test_a_file_size_limit_stops_the_first_save_and_leaves_no_checkpoint_behind(script, tmp_path):
    out = tmp_path / "run"
    # 100 KiB: more than the logs write, less than a checkpoint (about 200 KiB).
    in_namespace(tmp_path, f"( ulimit -f 100; {script_command(script, out, 'limited')} )")
    stopped_by_the_machine(
        tmp_path, "limited", f"cannot write {out / 'checkpoints' / 'ckpt-7'}", "File too large",
        "ulimit -f", "No checkpoint was saved yet",
    )  # fmt: skip
    assert sorted(p.name for p in (out / "checkpoints").iterdir()) == ["setup.json"]


def test_a_read_only_output_directory_is_named_for_a_new_run_and_for_a_resumed_one(
    script, tmp_path
):
    trained, mnt = tmp_path / "trained", tmp_path / "mnt"
    run(script, trained, "--max-steps", "7")
    mnt.mkdir()
    commands = f"""
        mount -t tmpfs -o size=4m tmpfs {mnt}
        cp -a {trained} {mnt}/trained
        mount -o remount,ro {mnt}
        {script_command(script, mnt / "new", "new")}
        {script_command(script, mnt / "trained", "resumed")}
    """
    in_namespace(tmp_path, commands)
    stopped_by_the_machine(tmp_path, "new", f"cannot write {mnt / 'new'} (Read-only file system)",
                           "pass an --output-dir on a writable one")  # fmt: skip
    # One way to resume, not two contradictory hints (another --output-dir, and the same).
    resumed = stopped_by_the_machine(
        tmp_path, "resumed", f"cannot write {mnt / 'trained' / 'run.lock'}",
        "Read-only file system", "ckpt-7 (step 7), is intact: to resume from it, run the script "
        "again with the same --output-dir once it can be written, or copy "
        f"{mnt / 'trained'} to a place that can and pass that as --output-dir.",
    )  # fmt: skip
    assert "pass an --output-dir on a writable one" not in resumed


def test_a_disk_full_from_the_start_leaves_no_empty_lock_file_nor_directory(script, tmp_path):
    """The first write of a new run (run.lock's text) fails on a full disk: the run stops
    saying so and leaves nothing behind, not an empty run.lock (nor the directory it made)."""
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    out = mnt / "run"
    commands = f"""
        mount -t tmpfs -o size=64k tmpfs {mnt}
        head -c 1M /dev/zero > {mnt}/filler || true
        {script_command(script, out, "full")}
        find {mnt} | sort > {tmp_path}/after_full.txt
    """
    in_namespace(tmp_path, commands)
    stopped_by_the_machine(
        tmp_path, "full", f"cannot write {out / 'run.lock'} (No space left on device)",
        "The disk is full: free some space.",
    )  # fmt: skip
    assert (tmp_path / "after_full.txt").read_text().split() == [str(mnt), f"{mnt}/filler"]


KILLED_IN_THE_BEST_EXPORT = """
import os, runpy, signal, sys

import keras

export = keras.Model.export


def killed_in_the_best(self, path, *args, **kwargs):
    # Killed part way through writing the best weights' network, as by SIGKILL.
    if "best" in path:
        os.makedirs(path)
        with open(os.path.join(path, "saved_model.pb"), "wb") as f:
            f.write(b"half")
        os.kill(os.getpid(), signal.SIGKILL)
    return export(self, path, *args, **kwargs)


keras.Model.export = killed_in_the_best
sys.argv = sys.argv[1:]
sys.path[0] = os.path.dirname(os.path.abspath(sys.argv[0]))  # as `python SCRIPT`: its runtime
runpy.run_path(sys.argv[0], run_name="__main__")
"""


def test_a_kill_while_exporting_the_best_weights_leaves_the_old_export_whole(render, tmp_path):
    """export/best (the best validation's weights) is written in the same step as the last
    weights' export: killed while writing it, the run leaves the export it replaced as it was,
    not a new one holding half of best/; the next run writes the whole again."""
    validation = npz(classification_npz(tmp_path / "val.npz", 64, (28, 28)))
    script = mlp_script(render, tmp_path, f"data.validation={validation}",
                        'best_model={"monitor": "val_loss"}')  # fmt: skip
    out = tmp_path / "run"
    run_python(script, "--epochs", "2", "--output-dir", str(out), cwd=tmp_path)
    before = tree(out / "export")
    assert "best/network/saved_model.pb" in before and "network/saved_model.pb" in before
    killed = run_preloaded("-c", KILLED_IN_THE_BEST_EXPORT, str(script), "--epochs", "3",
                           "--output-dir", str(out), cwd=tmp_path, check=False)  # fmt: skip
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-3000:]
    assert tree(out / "export") == before
    again = run_python(script, "--epochs", "3", "--output-dir", str(out), cwd=tmp_path)
    assert "nothing left to train" in again.stdout
    after = tree(out / "export")
    assert set(after) == set(before) and after != before
    assert not list(tmp_path.glob("run/export*partial*"))


def test_an_output_dir_that_is_a_file_is_named(script, tmp_path):
    afile = tmp_path / "afile"
    afile.write_text("not a directory")
    in_namespace(tmp_path, script_command(script, afile, "file") + "; "
                 + script_command(script, afile / "run", "below"))  # fmt: skip
    stopped_by_the_machine(tmp_path, "file", f"cannot write {afile} (File exists)",
                           "--output-dir names a file")  # fmt: skip
    stopped_by_the_machine(tmp_path, "below", f"cannot write {afile / 'run'} (Not a directory)",
                           "A part of --output-dir is a file")  # fmt: skip
    assert afile.read_text() == "not a directory"


def test_a_truncated_npz_stops_the_script_naming_the_field_and_the_file(render, tmp_path):
    path = Path(classification_npz(tmp_path / "train.npz", 64, (28, 28)))
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    script = render("mnist_mlp", f"data.train={npz(str(path))}")
    proc = run_preloaded(str(script), "--output-dir", str(tmp_path / "run"), cwd=tmp_path,
                         check=False)  # fmt: skip
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
    assert f"data.train.path: cannot read {path} as an .npz file" in proc.stderr
    assert not (tmp_path / "run" / "runs.jsonl").exists()
