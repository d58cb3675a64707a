"""MLflow tracking against a real `mlflow server` on 127.0.0.1: a run's parameters are the
spec's fields, its metrics equal metrics.jsonl step by step, a resumed run continues the same
MLflow run, and a sweep's trials are child runs of the sweep's run."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from data import tiny_classifier
from helpers import ROOT, free_ports, run_cli, run_preloaded, run_python, script_env
from loopgen.render import stamp


@contextmanager
def mlflow_server(folder: Path) -> Iterator[str]:
    """`mlflow server` with one worker and no job runner (seconds faster to start), its store
    and artifacts in `folder`; stopped with its process group."""
    (port,) = free_ports(1)
    log = open(folder / "server.log", "w")
    proc = subprocess.Popen(
        [
            str(Path(sys.executable).parent / "mlflow"), "server", "--host", "127.0.0.1",
            "--port", str(port), "--workers", "1",
            "--backend-store-uri", f"sqlite:///{folder / 'server.db'}",
            "--artifacts-destination", str(folder / "artifacts"),
        ],
        env={**os.environ, "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"},
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 180
        while True:
            assert proc.poll() is None, (folder / "server.log").read_text()[-3000:]
            assert time.monotonic() < deadline, "mlflow server did not answer in 180 s"
            try:
                with urllib.request.urlopen(f"{url}/health", timeout=2) as answer:
                    if answer.status == 200:
                        break
            except OSError:
                time.sleep(0.5)
        yield url
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=60)
        log.close()


def logged(run_dir: Path) -> dict[str, list[tuple[int, float]]]:
    """Each value of metrics.jsonl as (step, value) pairs, in step order."""
    found: dict[str, list[tuple[int, float]]] = {}
    for line in (run_dir / "metrics.jsonl").read_text().splitlines():
        record = json.loads(line)
        for key, value in record.items():
            if key not in ("step", "epoch"):
                found.setdefault(key, []).append((record["step"], value))
    return found


def history(client, run_id: str, key: str) -> list[tuple[int, float]]:
    return sorted((m.step, m.value) for m in client.get_metric_history(run_id, key))


@pytest.mark.slow
def test_mlflow_holds_the_run_as_metrics_jsonl_does_across_a_resume_and_a_sweeps_trials(
    tmp_path,
):
    import mlflow

    with mlflow_server(tmp_path) as url:
        client = mlflow.MlflowClient(url)
        tracked = f'Logging(mlflow=MLflow(experiment="tiny", tracking_uri="{url}"))'
        run = tmp_path / "run"
        run.mkdir()
        tiny_classifier(run, epochs=3, examples=512, logging=tracked)
        rendered = run_cli("render", "spec.py", "-o", "train.py", cwd=run)
        assert rendered.returncode == 0, rendered.stderr
        # Stopped in the middle of epoch 2 (a checkpoint there), then resumed to the end.
        run_python(run / "train.py", "--max-steps", "24", cwd=run)
        first_id = (run / "runs" / "tiny" / "mlflow_run_id").read_text()
        assert client.get_run(first_id).info.status == "FINISHED"
        run_python(run / "train.py", cwd=run)
        out = run / "runs" / "tiny"
        starts = [json.loads(x) for x in (out / "runs.jsonl").read_text().splitlines()]
        assert [r["resumed_from"] is not None for r in starts if r["event"] == "start"] == [
            False,
            True,
        ]

        (only,) = client.search_runs([client.get_experiment_by_name("tiny").experiment_id])
        assert only.info.run_id == first_id == (out / "mlflow_run_id").read_text()
        assert only.info.status == "FINISHED"
        # Metrics: each value of metrics.jsonl at each step, and nothing else.
        jsonl = logged(out)
        assert set(only.data.metrics) == set(jsonl)
        for key, values in jsonl.items():
            assert history(client, first_id, key) == values, key
        assert max(step for step, _ in jsonl["loss"]) == 48
        # Parameters: each field spec.py sets and each object's kind, written out here (not
        # by the renderer's own flattening). The seed is logged at its default (0); the batch
        # size at its default (32) is not, as no --set names it.
        assert only.data.params == {
            "name": "tiny",
            "seed": "0",
            "data.train.kind": "npz",
            "data.train.path": "train.npz",
            "data.validation.kind": "npz",
            "data.validation.path": "val.npz",
            "data.rescale": str(1 / 255),
            "model.kind": "sequential",
            "model.input_shape": "[8]",
            "model.layers.0.kind": "dense",
            "model.layers.0.units": "16",
            "model.layers.0.activation": "relu",
            "model.layers.1.kind": "dense",
            "model.layers.1.units": "4",
            "loss.kind": "sparse_categorical_crossentropy",
            "loss.from_logits": "True",
            "optimizer.kind": "adam",
            "optimizer.learning_rate": "0.01",
            "metrics.0.kind": "sparse_categorical_accuracy",
            "loop.epochs": "3",
            "loop.log_every_steps": "16",
            "checkpoint.every_epochs": "1",
            "logging.mlflow.experiment": "tiny",
            "logging.mlflow.tracking_uri": url,
        }
        # Tags: what it was rendered from.
        header = stamp.header((run / "train.py").read_text())
        assert only.data.tags["loopgen.spec_sha256"] == header.spec_hash
        assert only.data.tags["loopgen.loopgen"] == header.version
        artifacts = {a.path for a in client.list_artifacts(first_id)}
        assert artifacts == {"export", "spec.py", "train.py"}
        exported = {a.path for a in client.list_artifacts(first_id, "export")}
        assert "export/saved_model" in exported

        # A sweep of the spec: one parent run, each trial's run its child.
        sweep = tmp_path / "sweep"
        sweep.mkdir()
        proc = tracked_sweep(sweep, tracked, script_env())
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
        check_tracked_sweep(client, sweep, proc.stdout)


THREE_LAYERS = 'Dense(units=16, activation="relu"), Dense(units=16, activation="relu"), '
SWEEP = """from loopgen.dsl.sweep import *

sweep = Sweep(
    spec="spec.py",
    space={
        "optimizer.learning_rate": LogUniform(1e-6, 1e-1),
        "data.batch_size": Choice([32, 64]),
        "model.layers[1].units": IntRange(8, 32, step=8),
    },
    objective="val_accuracy",
    direction="maximize",
    trials=3,
    pruner=Median(startup_trials=2),
    first=[
        {"optimizer.learning_rate": 0.01, "data.batch_size": 32, "model.layers[1].units": 16},
        {"optimizer.learning_rate": 0.003, "data.batch_size": 64, "model.layers[1].units": 24},
        # Hopeless: pruned at its first epoch.
        {"optimizer.learning_rate": 1e-6, "data.batch_size": 32, "model.layers[1].units": 8},
    ],
    PRELOAD
)
"""


def tracked_sweep(folder: Path, logging: str, env: dict[str, str], preload: bool = True):
    """A sweep of a three-layer spec tracked in MLflow, over a list element's field
    (`model.layers[1].units`: MLflow keys take no brackets), the learning rate and the batch
    size: three trials, the third hopeless."""
    tiny_classifier(folder, epochs=3, examples=1024, logging=logging)
    spec = folder / "spec.py"
    spec.write_text(spec.read_text().replace('Dense(units=16, activation="relu"), ', THREE_LAYERS))
    (folder / "sweep.py").write_text(SWEEP.replace("PRELOAD", f"preload={preload},"))
    return subprocess.run(
        [sys.executable, "-m", "loopgen", "sweep", "sweep.py"],
        cwd=folder, capture_output=True, text=True, timeout=600, env=env,
    )  # fmt: skip


def check_tracked_sweep(client, folder: Path, console: str) -> None:
    """The sweep's run holds its space, each trial's (its child) the values drawn, and each
    ended as its trial did: finished, the pruned one KILLED."""
    from loopgen.render.tracking import mlflow_key

    experiment = client.get_experiment_by_name("tiny").experiment_id
    (parent,) = client.search_runs([experiment], "tags.`loopgen.sweep` != ''")
    assert parent.info.status == "FINISHED"
    assert {k: v for k, v in parent.data.params.items() if k.startswith("space.")} == {
        "space.optimizer.learning_rate": "LogUniform(1e-06, 0.1)",
        "space.data.batch_size": "Choice([32, 64])",
        "space.model.layers.1.units": "IntRange(8, 32, step=8)",
    }
    children = client.search_runs([experiment], f"tags.mlflow.parentRunId = '{parent.info.run_id}'")
    assert sorted(c.info.run_name for c in children) == ["trial 0", "trial 1", "trial 2"]
    finals = {}
    for child in children:
        number = int(child.info.run_name.split()[1])
        trial_run = folder / "sweeps" / "sweep" / "trials" / f"{number:03d}" / "run"
        assert (trial_run / "mlflow_run_id").read_text() == child.info.run_id
        assert child.info.status == ("KILLED" if number == 2 else "FINISHED"), number
        # Each trial's values are its parameters, a drawn default (trial 0's batch size of
        # 32) too: compared side by side, no column is blank.
        trial = json.loads((trial_run.parent / "trial.json").read_text())
        for path, value in trial["values"].items():
            assert child.data.params[mlflow_key(path)] == str(value)
        assert child.data.params["model.layers.1.units"] == str(
            trial["values"]["model.layers[1].units"]
        )
        values = logged(trial_run)["val_accuracy"]
        assert history(client, child.info.run_id, "val_accuracy") == values
        if number != 2:
            finals[number] = values[-1][1]
    # Pruned on its first epoch's value. How many more it logs before the SIGTERM lands (or
    # it ends, three tiny epochs on a loaded machine) is up to timing, and every one of them
    # is in MLflow as in metrics.jsonl (above).
    assert re.search(r"trial 2: pruned at epoch 1 \(val_accuracy ", console), console
    assert parent.data.metrics["best_objective"] == max(finals.values())


@pytest.mark.slow
def test_a_sweep_tracked_in_a_file_store_holds_its_space_and_each_trials_values(tmp_path):
    """The same sweep on MLflow's file store (`./mlruns`, which MLflow 3 keeps only with
    MLFLOW_ALLOW_FILE_STORE=true), whose runs are folders and parameters files: the same
    parent run, children, parameters and ends as on a server."""
    import mlflow

    store = f"file://{tmp_path / 'mlruns'}"
    logging = f'Logging(mlflow=MLflow(experiment="tiny", tracking_uri="{store}"))'
    env = script_env(MLFLOW_ALLOW_FILE_STORE="true")
    proc = tracked_sweep(tmp_path, logging, env)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    os.environ["MLFLOW_ALLOW_FILE_STORE"] = "true"
    try:
        check_tracked_sweep(mlflow.MlflowClient(store), tmp_path, proc.stdout)
    finally:
        del os.environ["MLFLOW_ALLOW_FILE_STORE"]


REFUSED = {
    # MLflow refuses the sweep's parameters (as it refused `space.model.layers[0].units`).
    "parameters": "import mlflow\n"
    "def refused(self, *args, **kwargs):\n"
    "    raise mlflow.exceptions.MlflowException('INVALID_PARAMETER_VALUE: refused')\n"
    "mlflow.MlflowClient.log_batch = refused\n",
    # The first trial's run cannot be made.
    "first_trial": "from loopgen.errors import LoopgenError\n"
    "from loopgen.sweep import tracking\n"
    "def refused(self, number):\n"
    "    raise LoopgenError(f'logging.mlflow: trial {number}: MLflow refused it')\n"
    "tracking.Tracking.child = refused\n",
}


@pytest.mark.parametrize("failure", sorted(REFUSED))
def test_a_sweep_that_fails_before_its_first_trial_leaves_no_mlflow_run_running(tmp_path, failure):
    """MLflow fails the sweep after its run was made and before any trial ran (its parameters
    refused, the first trial's run not made): the sweep exits 1 saying why, and its run is
    FAILED, not left RUNNING (with no parameters, as issue 49 found it)."""
    import mlflow

    store = f"file://{tmp_path / 'mlruns'}"
    logging = f'Logging(mlflow=MLflow(experiment="tiny", tracking_uri="{store}"))'
    tiny_classifier(tmp_path, epochs=1, examples=64, logging=logging)
    (tmp_path / "sweep.py").write_text(SWEEP.replace("PRELOAD", "preload=False,"))
    code = REFUSED[failure] + "from loopgen.cli import app\napp(['sweep', 'sweep.py'])\n"
    env = script_env(MLFLOW_ALLOW_FILE_STORE="true")
    proc = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True,
                          text=True, timeout=300, env=env)  # fmt: skip
    assert proc.returncode == 1, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert proc.stderr.startswith("error: logging.mlflow: "), proc.stderr
    assert "Traceback" not in proc.stderr
    os.environ["MLFLOW_ALLOW_FILE_STORE"] = "true"
    try:
        client = mlflow.MlflowClient(store)
        (run,) = client.search_runs([client.get_experiment_by_name("tiny").experiment_id])
    finally:
        del os.environ["MLFLOW_ALLOW_FILE_STORE"]
    assert run.data.tags["loopgen.sweep"] and run.info.status == "FAILED"


@pytest.mark.parametrize(
    ("path", "key"),
    [
        ("model.layers[1].units", "model.layers.1.units"),
        ("space.model.layers[0].units", "space.model.layers.0.units"),
        ("model.blocks[0].nodes[-1].layer.filters", "model.blocks.0.nodes.-1.layer.filters"),
        ("data.train.features.image/encoded.dtype", "data.train.features.image/encoded.dtype"),
        ("data.kwargs.a//b", "data.kwargs.a__b"),
        ("data.kwargs.a/../b", "data.kwargs.a_.._b"),
        ("tasks.masque (fr).loss", "tasks.masque _fr_.loss"),
        ("data.env.ratio:x", "data.env.ratio_x"),
        ("a" * 300, None),
    ],
)
def test_a_spec_path_becomes_a_parameter_key_that_mlflow_takes(path, key):
    """MLflow refuses brackets in a key (issue 49: `space.model.layers[0].units` failed a
    sweep); mlflow_key writes a list index as a part of its own and any other character
    MLflow refuses as `_`, keeps a key that stays itself as a file path (the file store), and
    shortens a key past 250 characters, keeping it apart from others by a hash."""
    from loopgen.render.tracking import mlflow_key
    from mlflow.utils.validation import _validate_param_name

    found = mlflow_key(path)
    _validate_param_name(found)  # raises on a key MLflow refuses
    if key is not None:
        assert found == key
    else:
        assert len(found) == 250 and found.startswith("a" * 200)
        assert mlflow_key("a" * 299 + "b") != found


UNTRACKED_PROCESS = """
import os, runpy, sys

sys.argv = sys.argv[1:]
sys.path[0] = os.path.dirname(os.path.abspath(sys.argv[0]))  # as `python SCRIPT`: its runtime
try:
    runpy.run_path(sys.argv[0], run_name="__main__")
finally:
    print("mlflow imported:", "mlflow" in sys.modules)
"""


# Each script stopped part way (a checkpoint there), then resumed to the end.
LOCAL_RUNS = {
    "tiny": (["--max-steps", "4"], "loss"),
    # Reinforcement learning: 8 updates of 4 environments x 16 steps, a log line an update.
    "cartpole_ppo": (["--max-steps", "256"], "policy_loss"),
}


@pytest.mark.slow
@pytest.mark.parametrize("example", sorted(LOCAL_RUNS))
def test_without_a_tracking_uri_the_run_is_in_mlflow_db_where_the_script_ran(example, tmp_path):
    """tracking_uri=None is MLflow's default store, mlflow.db (SQLite) in the working
    directory (what the mlflow extra, MLflow's client with SQLAlchemy and Alembic, must
    hold), for a script that learns from data and one that acts: a resumed run continues the
    same MLflow run, which holds metrics.jsonl's values step by step."""
    import mlflow

    tracked = {"experiment": "local"}
    if example == "tiny":
        logging = f"Logging(mlflow=MLflow(**{tracked}))"
        tiny_classifier(tmp_path, epochs=1, examples=256, logging=logging)
        rendered = run_cli("render", "spec.py", "-o", "train.py", cwd=tmp_path)
    else:
        rendered = run_cli(
            "render", str(ROOT / "examples" / f"{example}.py"), "-o", str(tmp_path / "train.py"),
            "--set", f"logging.mlflow={json.dumps(tracked)}", "--set", "loop.steps=512",
            "--set", "loop.log_every_steps=64", "--set", "checkpoint.every_steps=128",
            "--set", "training.rollout_steps=16", "--set", "export.saved_model=false",
        )  # fmt: skip
    assert rendered.returncode == 0, rendered.stderr
    assert "MLFLOW_TRACKING_URI" not in os.environ
    stop, key = LOCAL_RUNS[example]
    # The training process leaves MLflow to a process of its own: importing it and opening
    # its store take seconds of CPU, which training would wait for (Python runs one thread at
    # a time), and so would each log point for its write.
    proc = run_preloaded("-c", UNTRACKED_PROCESS, str(tmp_path / "train.py"), *stop, cwd=tmp_path)
    assert proc.stdout.splitlines()[-1] == "mlflow imported: False", proc.stdout[-2000:]
    out = tmp_path / "runs" / example
    first_id = (out / "mlflow_run_id").read_text()
    resumed = run_python(tmp_path / "train.py", cwd=tmp_path)
    assert "Resumed from" in resumed.stdout

    client = mlflow.MlflowClient(f"sqlite:///{tmp_path / 'mlflow.db'}")
    (only,) = client.search_runs([client.get_experiment_by_name("local").experiment_id])
    assert only.info.run_id == first_id == (out / "mlflow_run_id").read_text()
    assert only.info.status == "FINISHED"
    jsonl = logged(out)
    assert set(only.data.metrics) == set(jsonl) and key in jsonl
    for name, values in jsonl.items():
        assert history(client, first_id, name) == values, name
    if example == "cartpole_ppo":  # the spec's fields, overrides included
        assert only.data.params["training.kind"] == "ppo"
        assert only.data.params["training.rollout_steps"] == "16"
