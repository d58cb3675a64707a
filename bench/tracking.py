"""The tracking and sweep parts of the bench: what MLflow tracking costs a run, and what a sweep
adds to each trial over the trial script's own run.

tracking: the same spec (mnist_mlp on synthetic data: 300 steps, a log point every 10 steps, a
checkpoint, the export uploaded as MLflow artifacts) trained untracked and tracked in MLflow's
default store (mlflow.db in the working directory, made by a first tracked run that is not
counted), each a fresh `python train.py`, in alternating order each round; a round's ratio is
its tracked run's wall time over its untracked one's, and the figure the median of the
rounds' ratios. A first tracked run in a new directory also creates mlflow.db (MLflow's
migrations): timed apart.

sweep: `loopgen sweep` of a tiny classifier (as tests/test_sweep.py's), one trial at a time,
with trials forked from the preloaded launcher and with each started as `python train.py`
(Sweep(preload=False)). A trial's own run time is from its start record in runs.jsonl to its
end record, as a watcher polling every 10 ms sees them appear (runs.jsonl keeps seconds). The
per-trial overhead is the sweep's wall time (the command's start to its exit) less the trials'
own run times, over the number of trials: Python's and TensorFlow's start-up, the scripts'
setup before their start records, rendering, Optuna, the sweep's own start and its results
(the plots). Apart: what each further trial adds, from a trial's end record to the next one's
start record (the script's exit, the sweep's poll, Optuna, the render, the start-up), and a
trial's start-up, from its process (the first line of its train.log) to its start record."""

from __future__ import annotations

import contextlib
import json
import subprocess
import threading
import time
from pathlib import Path

import numpy as np

from .report import median
from .workload import EXAMPLES

STEPS = 300
TRACKING_OVERRIDES = [
    "loop.epochs=1",
    "loop.log_every_steps=10",
    "data.batch_size=64",
    "data.validation=null",
    'checkpoint={"every_epochs": 1}',
]


def _run(command: list[str], cwd: Path, env: dict) -> float:
    start = time.perf_counter()
    proc = subprocess.run(command, capture_output=True, text=True, cwd=cwd, env=env)
    seconds = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed:\n{proc.stderr[-3000:]}")
    return seconds


def _render(python: str, folder: Path, name: str, overrides: list[str]) -> Path:
    script = folder / f"{name}.py"
    command = [str(Path(python).with_name("loopgen")), "render", str(EXAMPLES / "mnist_mlp.py")]
    command += ["-o", str(script)]
    for override in overrides:
        command += ["--set", override]
    subprocess.run(command, check=True, capture_output=True, cwd=folder)
    return script


def tracking_rows(python: str, rounds: int, folder: Path, env: dict) -> dict:
    """Wall times of the untracked and the tracked run, each round in a new order."""
    folder = folder / "tracking"
    folder.mkdir()
    rng = np.random.default_rng(0)
    np.savez(
        folder / "train.npz",
        x=rng.integers(0, 256, (STEPS * 64, 28, 28), dtype=np.uint8),
        y=rng.integers(0, 10, STEPS * 64),
    )
    data = ['data.train={"kind": "npz", "path": "train.npz"}']
    plain = _render(python, folder, "untracked", [*data, *TRACKING_OVERRIDES])
    tracked = _render(
        python, folder, "tracked",
        [*data, *TRACKING_OVERRIDES, 'logging.mlflow={"experiment": "bench"}'],
    )  # fmt: skip
    runs = {"untracked": plain, "tracked": tracked}
    # The first tracked run in a new working directory creates MLflow's store.
    first = _run([python, str(tracked), "--output-dir", "first"], folder, env)
    seconds: dict[str, list[float]] = {name: [] for name in runs}
    for index in range(rounds):
        order = list(runs) if index % 2 == 0 else list(reversed(runs))
        for name in order:
            out = f"{name}-{index}"
            seconds[name].append(_run([python, str(runs[name]), "--output-dir", out], folder, env))
    ratios = [t / u for t, u in zip(seconds["tracked"], seconds["untracked"], strict=True)]
    return {
        "steps": STEPS,
        "log_points": STEPS // 10,
        "seconds": seconds,
        "first_tracked_seconds": first,
        "ratio": median(ratios),
        "ratios": ratios,
    }


def tracking_table(result: dict) -> str:
    untracked = median(result["seconds"]["untracked"])
    tracked = median(result["seconds"]["tracked"])
    first = result["first_tracked_seconds"]
    return "\n".join([
        f"| mnist_mlp, {result['steps']} steps, {result['log_points']} log points, "
        f"{len(result['ratios'])} rounds | wall time (median) |",
        "|---|---|",
        f"| untracked | {untracked:.1f} s |",
        f"| tracked in MLflow (mlflow.db) | {tracked:.1f} s |",
        f"| **tracked ÷ untracked** (median of the rounds' ratios) | **{result['ratio']:.2f}** "
        f"({', '.join(f'{r:.2f}' for r in result['ratios'])}) |",
        f"| the first tracked run, which creates mlflow.db | {first:.1f} s |",
    ])  # fmt: skip


SWEEP = """from loopgen.dsl.sweep import *

sweep = Sweep(
    spec="spec.py",
    space={{"optimizer.learning_rate": LogUniform(1e-3, 1e-1)}},
    objective="val_accuracy",
    direction="maximize",
    trials={trials},
    first=[{{"optimizer.learning_rate": 0.01}}],
    preload={preload},
    name="{name}",
)
"""


def _watch(folder: Path, seen: dict, stop: threading.Event) -> None:
    """Notes when each trial's process starts (the sweep writes the first line of its
    train.log then), and when its start and end records appear in its runs.jsonl."""
    while not stop.is_set():
        for log in folder.glob("sweeps/*/trials/*/train.log"):
            seen.setdefault((log.parts[-4], log.parent.name, "process"), time.perf_counter())
        for runs in folder.glob("sweeps/*/trials/*/run/runs.jsonl"):
            sweep, trial = runs.parts[-5], runs.parent.parent.name
            for line in runs.read_text().splitlines():
                with contextlib.suppress(json.JSONDecodeError):  # a line being written
                    seen.setdefault((sweep, trial, json.loads(line)["event"]), time.perf_counter())
        time.sleep(0.01)


TINY = """from loopgen.dsl import *

spec = Spec(
    name="tiny",
    data=Data(
        train=Npz(path="train.npz"), validation=Npz(path="val.npz"), batch_size=32, rescale=1 / 255
    ),
    model=Sequential(input_shape=(8,), layers=[Dense(units=16, activation="relu"), Dense(units=4)]),
    loss=SparseCategoricalCrossentropy(from_logits=True),
    optimizer=Adam(learning_rate=1e-2),
    metrics=[SparseCategoricalAccuracy()],
    loop=Loop(epochs=2, log_every_steps=16),
    checkpoint=Checkpoint(every_epochs=1),
)
"""
"""The tests' tiny classifier (tests/data.py): 8 features whose mean encodes one of 4 classes,
512 examples, two epochs of 16 steps: a trial whose own run takes seconds."""


def sweep_rows(python: str, trials: int, rounds: int, folder: Path, env: dict) -> dict:
    """Per-trial overhead of `loopgen sweep`, trials forked and started anew, each round in a
    new order."""
    folder = folder / "sweep"
    folder.mkdir()
    for name, count, seed in (("train", 512, 0), ("val", 256, 1)):
        rng = np.random.default_rng(seed)
        y = rng.integers(0, 4, size=count)
        x = np.clip(y[:, None] * 50 + rng.integers(0, 60, size=(count, 8)), 0, 255)
        np.savez(folder / f"{name}.npz", x=x.astype(np.uint8), y=y.astype(np.int64))
    (folder / "spec.py").write_text(TINY)
    loopgen = str(Path(python).with_name("loopgen"))
    result: dict[str, dict] = {
        how: {"overhead": [], "own": [], "wall": [], "start_up": [], "between": []}
        for how in ("forked", "python")
    }
    for index in range(rounds):
        order = ["forked", "python"] if index % 2 == 0 else ["python", "forked"]
        for how in order:
            name = f"{how}{index}"
            sweep = folder / f"{name}.py"
            sweep.write_text(SWEEP.format(trials=trials, preload=how == "forked", name=name))
            seen: dict = {}
            stop = threading.Event()
            watcher = threading.Thread(target=_watch, args=(folder, seen, stop))
            watcher.start()
            try:
                wall = _run([loopgen, "sweep", str(sweep)], folder, env)
            finally:
                stop.set()
                watcher.join()
            at = {
                event: [seen[(name, f"{n:03d}", event)] for n in range(trials)]
                for event in ("process", "start", "end")
            }
            own = [end - start for start, end in zip(at["start"], at["end"], strict=True)]
            row = result[how]
            row["wall"].append(wall)
            row["own"].append(sum(own))
            row["overhead"].append((wall - sum(own)) / trials)
            # From the trial's process to its start record: Python's and TensorFlow's start
            # (the first forked trial waits for the launcher's), and the script's setup.
            row["start_up"] += [s - p for p, s in zip(at["process"], at["start"], strict=True)]
            # From a trial's end record to the next one's start record: what each trial adds.
            row["between"] += [s - e for e, s in zip(at["end"], at["start"][1:], strict=False)]
    for row in result.values():
        row["median_overhead"] = median(row["overhead"])
        row["median_start_up"] = median(row["start_up"])
        row["median_between"] = median(row["between"])
    return {"trials": trials, "rounds": rounds, **result}


def sweep_table(result: dict) -> str:
    lines = [
        f"| `loopgen sweep`, {result['trials']} trials one at a time, {result['rounds']} "
        "round(s) | per-trial overhead (median; each round) | from a trial's end to the next's "
        "start (median) | a trial's start-up (median) | a trial's own run (median) |",
        "|---|---|---|---|---|",
    ]
    labels = {
        "forked": "trials forked (the default)",
        "python": "each trial a new `python train.py` (preload=False)",
    }
    for how, label in labels.items():
        row = result[how]
        own = median(row["own"]) / result["trials"]
        each = ", ".join(f"{o:.2f}" for o in row["overhead"])
        lines.append(
            f"| {label} | **{row['median_overhead']:.2f} s** ({each}) "
            f"| **{row['median_between']:.2f} s** | {row['median_start_up']:.2f} s | {own:.2f} s |"
        )
    return "\n".join(lines)
