"""`loopgen sweep`: real Optuna studies on the embedded journal storage, each trial a rendered
script run in its own run directory. A sweep completes exactly its trials (also when killed and
run again, and when two processes share the study), scores them from their own metrics.jsonl,
stops a hopeless trial by SIGTERM with its checkpoint saved, and writes a best_spec.py that
renders. A bad sweep is refused before anything is written."""

from __future__ import annotations

import fcntl
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from data import tiny_classifier as write_spec
from helpers import ROOT, run_cli, run_python, script_env, tf_check
from loopgen.cli import app
from typer.testing import CliRunner


def write_sweep(folder: Path, **fields: str) -> Path:
    values = {
        "spec": '"spec.py"',
        "space": '{"optimizer.learning_rate": LogUniform(1e-4, 1e-1), '
        '"model.layers[0].units": IntRange(8, 32, step=8)}',
        "objective": '"val_accuracy"',
        "direction": '"maximize"',
        "trials": "4",
        **fields,
    }
    body = "".join(f"    {k}={v},\n" for k, v in values.items() if v is not None)
    path = folder / "sweep.py"
    path.write_text(f"from loopgen.dsl.sweep import *\n\nsweep = Sweep(\n{body})\n")
    return path


def sweep_cli(*args: str, cwd: Path, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(
        [sys.executable, "-m", "loopgen", "sweep", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=script_env(),
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc


def start_sweep(cwd: Path, *args: str, **options) -> subprocess.Popen[str]:
    """`loopgen sweep sweep.py [args]` in the background, its output to read at its end."""
    return subprocess.Popen(
        [sys.executable, "-m", "loopgen", "sweep", "sweep.py", *args],
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=script_env(),
        **options,
    )


def lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def trial_dir(folder: Path, number: int) -> Path:
    return folder / "sweeps" / "sweep" / "trials" / f"{number:03d}"


def study_trials(folder: Path, url: str | None = None) -> list:
    """The trials of the study "sweep": in the database at `url`, else in the default journal
    file beside the sweep."""
    import optuna
    from optuna.storages import JournalStorage
    from optuna.storages.journal import JournalFileBackend

    storage = url or JournalStorage(JournalFileBackend(str(folder / "sweeps/sweep/study.journal")))
    return optuna.load_study(study_name="sweep", storage=storage).get_trials()


GOOD = '{"optimizer.learning_rate": 0.01, "model.layers[0].units": 16}'
ALSO_GOOD = '{"optimizer.learning_rate": 0.003, "model.layers[0].units": 24}'
THIRD_GOOD = '{"optimizer.learning_rate": 0.005, "model.layers[0].units": 16}'
HOPELESS = '{"optimizer.learning_rate": 1e-06, "model.layers[0].units": 8}'


@pytest.mark.slow
def test_a_study_of_six_trials_two_at_a_time_prunes_the_hopeless_one_and_names_the_best(
    tmp_path,
):
    epochs = 8
    write_spec(tmp_path, epochs)
    write_sweep(
        tmp_path,
        trials="6",
        parallel="2",
        # The hopeless trial fourth: two at a time, it starts when a second trial has ended,
        # so that two have completed (or one was pruned, which takes two completed). Third,
        # it could run its last epoch before the second one ends, unpruned.
        pruner="Median(startup_trials=2)",
        first=f"[{GOOD}, {ALSO_GOOD}, {THIRD_GOOD}, {HOPELESS}]",
        devices='["0", "1"]',
        space='{"optimizer.learning_rate": LogUniform(1e-6, 1e-1), '
        '"model.layers[0].units": IntRange(8, 32, step=8)}',
    )
    proc = sweep_cli("sweep.py", cwd=tmp_path)
    trials = study_trials(tmp_path)
    assert [t.number for t in trials] == list(range(6))
    assert all(t.state.is_finished() for t in trials)

    # The pruner was told each validation value at its epoch, not its step (trials of other
    # batch sizes validate at other steps, after the same epochs).
    reported = [sorted(t.intermediate_values) for t in trials]
    assert reported[0] == list(range(1, epochs + 1)), reported
    assert all(r and set(r) <= set(range(1, epochs + 1)) for r in reported), reported

    # The hopeless trial was stopped before its last epoch by SIGTERM, its checkpoint saved.
    hopeless = trials[3]
    assert hopeless.params["optimizer.learning_rate"] == 1e-6
    assert hopeless.state.name == "PRUNED", proc.stdout
    assert sum(line.startswith("trial 3: pruned at epoch") for line in events(proc.stdout)) == 1
    run = trial_dir(tmp_path, 3) / "run"
    end = lines(run / "runs.jsonl")[-1]
    assert (end["event"], end["exit"]) == ("end", "sigterm")
    steps_per_epoch = 2048 // 32
    assert end["step"] <= (epochs - 1) * steps_per_epoch, end  # no step of its last epoch
    assert (run / "checkpoints" / f"ckpt-{end['step']}.index").exists()

    # The best trial is the best by the objective in the trials' own metrics.jsonl.
    finals = {}
    for t in trials:
        run = trial_dir(tmp_path, t.number) / "run"
        if t.state.name == "COMPLETE":
            logged = [
                r["val_accuracy"] for r in lines(run / "metrics.jsonl") if "val_accuracy" in r
            ]
            assert logged[-1] == pytest.approx(t.value)
            finals[t.number] = logged[-1]
    best = max(finals, key=finals.get)
    best_spec = tmp_path / "sweeps" / "sweep" / "best_spec.py"
    assert f"trial {best} of 6" in best_spec.read_text()
    record = json.loads((trial_dir(tmp_path, best) / "trial.json").read_text())
    for override in record["overrides"]:
        assert repr(override).strip("'") in best_spec.read_text()
    out = tmp_path / "best_train.py"
    rendered = run_cli("render", str(best_spec), "-o", str(out), cwd=tmp_path)
    assert rendered.returncode == 0, rendered.stderr
    # The best spec's script is the best trial's, but for the header naming its spec file.
    body = out.read_text().split('"""', 2)[2]
    assert body == (trial_dir(tmp_path, best) / "train.py").read_text().split('"""', 2)[2]
    for plot in ("history.png", "importances.png"):
        assert (tmp_path / "sweeps" / "sweep" / plot).read_bytes()[:4] == b"\x89PNG"

    # Each trial had a GPU of its own (CUDA_VISIBLE_DEVICES): the two first ones, which ran
    # together, different ones.
    devices = [
        (trial_dir(tmp_path, n) / "train.log").read_text().splitlines()[0].rsplit("=", 1)[1]
        for n in range(6)
    ]
    assert set(devices) == {"0", "1"} and devices[0] != devices[1], devices

    status = sweep_cli("status", "sweep.py", cwd=tmp_path).stdout.splitlines()
    assert status[0].split() == [
        "trial", "optimizer.learning_rate", "model.layers[0].units", "val_accuracy", "state",
        "steps", "time",
    ]  # fmt: skip
    assert [row.split()[0] for row in status[1:]] == [str(n) for n in range(6)]
    assert "pruned" in status[4].split()


@pytest.mark.parametrize("started", ["by_python", pytest.param("forked", marks=pytest.mark.slow)])
def test_a_trials_script_runs_with_its_device_as_its_cuda_visible_devices(
    tmp_path, monkeypatch, started
):
    """The device a trial is given is CUDA_VISIBLE_DEVICES in its script's own process (the
    six-trial study sees it in the sweep's log line only); a trial given none inherits the
    sweep's, and what the sweep adds (MLflow's run) reaches the script too, as do its
    folders on Python's path. So it is for a script started as `python train.py` and for one
    forked from the sweep's launcher, which has imported TensorFlow before the script starts
    (on a TensorFlow without CUDA: a device to pick is no reason to start it anew). The
    script here writes down its environment: no training."""
    from loopgen.sweep.space import load_sweep
    from loopgen.sweep.trial import Launcher, RunningTrial, create

    write_spec(tmp_path, epochs=1, examples=64)
    loaded = load_sweep(write_sweep(tmp_path, parallel="2", devices='["0", "1"]'))
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1")
    script = (
        "import json, os, sys\n"
        "preloaded = 'tensorflow' in sys.modules\n"
        "os.makedirs(sys.argv[2])\n"
        "with open(os.path.join(sys.argv[2], 'env.json'), 'w') as f:\n"
        "    json.dump({'env': dict(os.environ), 'path': sys.path, 'argv': sys.argv,\n"
        "               'cwd': os.getcwd(), 'preloaded': preloaded, 'pid': os.getpid()}, f)\n"
    )
    launcher = Launcher() if started == "forked" else None
    trials = []
    for number, device in enumerate(["1", None]):
        fd = create(loaded, number, {"optimizer.learning_rate": 0.01, "model.layers[0].units": 16})
        (trial_dir(tmp_path, number) / "train.py").write_text(script)
        trials.append(RunningTrial(loaded, number, fd, device))
        trials[-1].start(launcher, MLFLOW_RUN_ID=f"run-{number}")
    for trial in trials:
        assert trial.process.wait() == 0, trial.error()
        trial.close()
    if launcher is not None:
        launcher.close()
    seen = [json.loads((trial.run_dir / "env.json").read_text()) for trial in trials]
    assert [run["env"]["CUDA_VISIBLE_DEVICES"] for run in seen] == ["1", "0,1"]
    assert [run["env"]["MLFLOW_RUN_ID"] for run in seen] == ["run-0", "run-1"]
    # A TensorFlow built with CUDA (the full tensorflow package, which keras-hub's
    # tensorflow-text installs) starts a trial given a device anew: the launcher said which.
    forked = started == "forked"
    cuda = forked and launcher.ready["cuda"]
    assert [run["preloaded"] for run in seen] == [forked and not cuda, forked]
    assert len({run["pid"] for run in seen} | {os.getpid()}) == 3  # a process each
    for trial, run in zip(trials, seen, strict=True):
        assert run["argv"] == [str(trial.folder / "train.py"), "--output-dir", str(trial.run_dir)]
        assert run["cwd"] == str(tmp_path)  # the sweep file's folder
        # Importable as when the spec was validated (a module of yours its spec names, e.g.
        # an environment): the script's folder, the spec's, then where the sweep started.
        assert run["env"]["PYTHONPATH"].split(os.pathsep)[:2] == [str(tmp_path), os.getcwd()]
        assert run["path"][:3] == [str(trial.folder), str(tmp_path), os.getcwd()]


def test_a_pruned_trial_is_said_once_with_its_time_and_a_resumed_one_reports_no_step_twice(
    tmp_path, capsys
):
    """A poll that reads several values of a trial the pruner stops tells it once and says so
    once, with the time (the trial logs on until its SIGTERM lands), and a later poll, which
    reads the epochs it logged meanwhile, tells and says nothing more; a resumed trial's script
    logs again the epochs after its checkpoint, which are not reported again (Optuna warned
    "The reported value is ignored because this step=1 is already reported" for each)."""
    import warnings

    import optuna
    from loopgen.sweep.run import Sweeper
    from loopgen.sweep.space import load_sweep
    from loopgen.sweep.study import distributions

    class FromEpochFour(optuna.pruners.BasePruner):
        def prune(self, study, trial):
            return trial.last_step >= 4

    class Script:  # a trial's script: what its metrics.jsonl holds, all read at once
        pruned, terminated, polls = False, 0, 0

        def poll(self):  # epochs 1 to 5, then (logged before the SIGTERM landed) 6 and 7
            self.polls += 1
            epochs = range(1, 6) if self.polls == 1 else range(6, 8)
            return [(epoch, epoch / 10) for epoch in epochs], None

        def terminate(self):
            self.terminated += 1

    write_spec(tmp_path, epochs=1, examples=64)
    sweeper = Sweeper.__new__(Sweeper)
    sweeper.optuna, sweeper.loaded = optuna, load_sweep(write_sweep(tmp_path))
    sweeper.study = optuna.create_study(direction="maximize", pruner=FromEpochFour())
    trial = sweeper.study.ask(distributions(sweeper.loaded))
    for epoch in (1, 2):  # reported before the stop
        trial.report(epoch / 10, epoch)
    script = Script()
    script.reported = {1, 2}
    sweeper.running = {trial.number: (script, trial)}
    with warnings.catch_warnings(record=True) as warned:
        warnings.simplefilter("always")
        sweeper._watch(trial.number)
    assert not [w for w in warned if "already reported" in str(w.message)], warned
    assert sweeper.study.trials[0].intermediate_values == {1: 0.1, 2: 0.2, 3: 0.3, 4: 0.4}
    said = capsys.readouterr().out.splitlines()
    assert len(said) == 1 and TIMESTAMP.match(said[0]), said
    assert events(said[0]) == ["trial 0: pruned at epoch 4 (val_accuracy 0.4)"]
    assert script.pruned and script.terminated == 1

    sweeper._watch(trial.number)  # the next poll: the epochs logged since, never told
    assert sweeper.study.trials[0].intermediate_values == {1: 0.1, 2: 0.2, 3: 0.3, 4: 0.4}
    assert capsys.readouterr().out == "" and script.terminated == 1


def test_status_says_which_trials_are_interrupted_and_counts_no_downtime(tmp_path):
    """`loopgen sweep status` after a sweep was stopped or killed: a trial Optuna holds
    running that no process runs is `interrupted` (a line says the next `loopgen sweep`
    resumes it), one whose claim is held is running. A trial's time is its script's, from
    runs.jsonl: not the hour it waited between a stop and its resume (Optuna's start to end
    counts it), and with `+` where a run killed outright left its time unknown."""
    import optuna
    from loopgen.sweep.report import table
    from loopgen.sweep.space import load_sweep
    from loopgen.sweep.study import distributions
    from loopgen.sweep.trial import create

    def record(event: str, run: str, at: str) -> str:
        return json.dumps({"event": event, "run": run, "time": at, "step": 1})

    write_spec(tmp_path, epochs=1, examples=64)
    loaded = load_sweep(write_sweep(tmp_path, trials="3"))
    study = optuna.create_study(direction="maximize")
    asked = [study.ask(distributions(loaded)) for _ in range(3)]
    study.tell(asked[0], 0.5)
    now = time.strftime("%Y-%m-%dT%H:%M:%S%z", time.localtime(time.time() - 20))
    runs = {
        # Stopped after 30 s, resumed an hour later for 40 s more.
        0: [record("start", "a", "2026-11-27T10:00:00+0100"),
            record("end", "a", "2026-11-27T10:00:30+0100"),
            record("start", "b", "2026-11-27T11:00:00+0100"),
            record("end", "b", "2026-11-27T11:00:40+0100")],
        # 10 s, then a run killed outright (no end record), then stopped after 5 s.
        1: [record("start", "c", "2026-11-27T10:00:00+0100"),
            record("end", "c", "2026-11-27T10:00:10+0100"),
            record("start", "d", "2026-11-27T10:30:00+0100"),
            record("start", "e", "2026-11-27T11:00:00+0100"),
            record("end", "e", "2026-11-27T11:00:05+0100")],
        # Running for 20 s.
        2: [record("start", "f", now)],
    }  # fmt: skip
    held = None
    for trial in asked:
        fd = create(loaded, trial.number, dict(trial.params))
        run = trial_dir(tmp_path, trial.number) / "run"
        run.mkdir()
        (run / "runs.jsonl").write_text("\n".join(runs[trial.number]) + "\n")
        if trial.number == 2:
            held = fd  # its process holds its claim
        else:
            os.close(fd)
    rows = [row.split() for row in table(loaded, study).splitlines()]
    os.close(held)
    assert rows[1][-3:] == ["complete", "1", "70s"], rows
    assert rows[2][-3:] == ["interrupted", "1", "15s+"], rows
    assert rows[3][-3] == "running" and rows[3][-1] in ("20s", "21s", "22s"), rows
    assert " ".join(rows[4]) == (
        "interrupted: no process runs the trial (its sweep was stopped or killed); `loopgen "
        f"sweep {os.path.relpath(loaded.path)}` resumes it from its checkpoint"
    )


def test_the_storage_a_sweep_ran_on_is_remembered_but_not_its_password(tmp_path):
    """`loopgen sweep --storage URL` keeps the URL in the sweep's folder: `status` and the next
    `loopgen sweep` find the study without it (status said "no trial has run yet" of a
    SQLite study). A database's password is not written down: then --storage is asked for.
    Trial folders beside no study say that the study is in another storage."""
    from loopgen.errors import LoopgenError
    from loopgen.sweep.space import load_sweep
    from loopgen.sweep.study import open_study, remember_storage, remembered_storage

    write_spec(tmp_path, epochs=1, examples=64)
    loaded = load_sweep(write_sweep(tmp_path))
    loaded.output.mkdir(parents=True)
    assert remembered_storage(loaded, None) is None  # the journal file beside the sweep
    url = f"sqlite:///{tmp_path / 'study.db'}"
    remember_storage(loaded, url)
    assert remembered_storage(loaded, None) == url
    assert remembered_storage(loaded, "sqlite:///other.db") == "sqlite:///other.db"
    remember_storage(loaded, "postgresql://me:secret@db.example/sweeps")
    kept = (loaded.output / "storage").read_text()
    assert kept == "postgresql://me:***@db.example/sweeps\n"
    with pytest.raises(LoopgenError, match="pass --storage with the database's URL"):
        remembered_storage(loaded, None)
    (loaded.output / "storage").unlink()
    (loaded.output / "trials" / "000").mkdir(parents=True)
    with pytest.raises(LoopgenError, match=r"holds trials, but .* holds no study 'sweep'"):
        open_study(loaded, None)


def test_random_search_and_hyperband_are_optunas_random_sampler_and_hyperband_pruner(tmp_path):
    """A fresh study of a Sweep with RandomSearch() and Hyperband(...) has Optuna's
    RandomSampler, seeded with the sweep's seed (it draws what RandomSampler(seed) draws), and
    HyperbandPruner with the sweep's budget; Hyperband() without max_steps learns it ("auto")."""
    import dataclasses

    import optuna
    from loopgen.dsl.sweep import Hyperband
    from loopgen.sweep.space import load_sweep
    from loopgen.sweep.study import distributions, pruner, study

    write_spec(tmp_path, epochs=1, examples=64)
    sweep = write_sweep(
        tmp_path,
        sampler="RandomSearch()",
        seed="7",
        pruner="Hyperband(min_steps=2, max_steps=12, reduction_factor=4)",
    )
    loaded = load_sweep(sweep)
    made = study(loaded, None)
    assert type(made.sampler) is optuna.samplers.RandomSampler
    assert type(made.pruner) is optuna.pruners.HyperbandPruner
    budget = (made.pruner._min_resource, made.pruner._max_resource, made.pruner._reduction_factor)
    assert budget == (2, 12, 4)
    space = distributions(loaded)
    reference = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=7))
    for _ in range(3):
        assert made.ask(space).params == reference.ask(space).params

    learnt = pruner(
        dataclasses.replace(loaded, sweep=loaded.sweep.model_copy(update={"pruner": Hyperband()}))
    )
    assert (learnt._min_resource, learnt._max_resource, learnt._reduction_factor) == (1, "auto", 3)


def claimed(folder: Path) -> bool:
    """Whether a process (the sweep, or the trial's script it started) holds the claim."""
    fd = os.open(folder / "claim", os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False


def script_pid(run: Path) -> int:
    """The process running a trial's script: the pid its run.lock names (a trial forked from
    the sweep's launcher has the launcher's command line, not `python train.py`)."""
    return int(re.match(r"pid (\d+) ", (run / "run.lock").read_text())[1])


TIMESTAMP = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d ")


def events(output: str) -> list[str]:
    """The sweep's console lines about its trials, without their timestamps (which each has)."""
    found = []
    for line in output.splitlines():
        if TIMESTAMP.match(line):
            found.append(line[TIMESTAMP.match(line).end() :])
    return found


def pending(pid: int, number: signal.Signals) -> bool:
    """Whether the signal `number`, sent to the (stopped) process `pid`, waits for it."""
    status = dict(
        line.split(":\t", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines()
    )
    return bool(int(status["ShdPnd"], 16) & 1 << (number - 1))


@pytest.mark.slow
def test_a_stopped_or_killed_sweep_resumes_its_interrupted_trial_from_its_checkpoint(tmp_path):
    """Stopped by Ctrl-C (a SIGINT to the terminal's process group), the sweep stops its
    trial by SIGTERM, which saves a checkpoint. Killed outright, its trial sees it die and
    does the same. Run again each time, the sweep resumes the trial from there; it does not
    run again the trial that completed before, and starts no other. The study is in the
    database given by --storage (as another machine would share it), not in the default
    journal file."""
    epochs, steps_per_epoch = 6, 4096 // 32
    write_spec(tmp_path, epochs, examples=4096)
    write_sweep(tmp_path, trials="2", first=f"[{ALSO_GOOD}, {GOOD}]")
    url = f"sqlite:///{tmp_path / 'study.db'}"
    done, folder = trial_dir(tmp_path, 0), trial_dir(tmp_path, 1)
    deadline = time.monotonic() + 300

    def interrupted(how: signal.Signals, after: int) -> int:
        """Starts the sweep, stops it by `how` once its trial 1 saved a checkpoint past step
        `after`, waits for the trial to end; returns the step its trial stopped at."""
        # In a process group of its own, as a terminal starts it.
        sweep = start_sweep(tmp_path, "--storage", url, start_new_session=True)
        checkpoints = folder / "run" / "checkpoints"
        while not any(int(p.stem[5:]) > after for p in checkpoints.glob("ckpt-*.index")):
            assert sweep.poll() is None and time.monotonic() < deadline, sweep.stdout.read()
            time.sleep(0.01)
        # Held still until the sweep's SIGTERM (or its death's) is there for it: a fast
        # machine would otherwise train the trial to its end before the sweep wakes.
        trial = script_pid(folder / "run")
        os.kill(trial, signal.SIGSTOP)
        if how == signal.SIGINT:  # Ctrl-C: the terminal signals its whole process group
            os.killpg(sweep.pid, signal.SIGINT)
        else:
            sweep.send_signal(how)
        while not pending(trial, signal.SIGTERM):
            assert time.monotonic() < deadline
            time.sleep(0.01)
        os.kill(trial, signal.SIGCONT)
        output = sweep.communicate(timeout=120)[0]
        if how == signal.SIGINT:  # the sweep waited for its trial to stop
            assert sweep.returncode == 128 + signal.SIGINT, output
            assert "trial 1: stopped; it resumes from its checkpoint" in events(output)[-1]
        while claimed(folder):  # the trial's script still runs (killed: its sweep does not)
            assert time.monotonic() < deadline
            time.sleep(0.1)
        end = lines(folder / "run" / "runs.jsonl")[-1]
        assert (end["event"], end["exit"]) == ("end", "sigterm"), end
        assert after < end["step"] < epochs * steps_per_epoch
        assert (folder / "run" / "checkpoints" / f"ckpt-{end['step']}.index").exists()
        return end["step"]

    stopped = [interrupted(signal.SIGINT, after=0)]
    # Trial 0 completed before the sweep was stopped, and the study says so.
    assert [t.state.name for t in study_trials(tmp_path, url)] == ["COMPLETE", "RUNNING"]
    stopped.append(interrupted(signal.SIGKILL, after=stopped[0]))
    # Nothing runs trial 1 now: `status` says it is interrupted, and how it resumes. The
    # study's storage was remembered: neither status nor the sweep below need --storage.
    status = sweep_cli("status", "sweep.py", cwd=tmp_path).stdout.splitlines()
    assert status[2].split()[0] == "1" and "interrupted" in status[2].split(), status
    assert status[3].startswith("interrupted: no process runs the trial"), status
    assert "`loopgen sweep sweep.py` resumes it" in status[3]

    proc = sweep_cli("sweep.py", cwd=tmp_path)
    started = [line for line in events(proc.stdout) if line.startswith("trial ")]
    assert started[0].startswith("trial 1: resumed"), proc.stdout
    assert not any(line.startswith(("trial 0", "trial 2")) for line in started), proc.stdout
    trials = study_trials(tmp_path, url)  # optuna.load_study on the database
    assert [(t.number, t.state.name) for t in trials] == [(0, "COMPLETE"), (1, "COMPLETE")]
    assert not list(tmp_path.rglob("*.journal*"))  # no default journal file beside the sweep
    status = sweep_cli("status", "sweep.py", cwd=tmp_path).stdout
    assert [row.split()[0] for row in status.splitlines()[1:]] == ["0", "1"], status
    # The completed trial ran once, from start to end.
    start, end = lines(done / "run" / "runs.jsonl")
    assert (start["event"], start["resumed_from"]) == ("start", None)
    assert (end["event"], end["exit"], end["step"]) == ("end", "finished", epochs * steps_per_epoch)
    starts = [r for r in lines(folder / "run" / "runs.jsonl") if r["event"] == "start"]
    assert [r["resumed_from"] for r in starts[1:]] == [
        str(folder / "run" / "checkpoints" / f"ckpt-{step}") for step in stopped
    ]

    # It ends with the weights of an uninterrupted run of its values.
    run_python(folder / "train.py", "--output-dir", "uninterrupted", cwd=tmp_path)
    diff = tf_check(
        "compare_checkpoints", str(folder / "run" / "checkpoints"), "uninterrupted/checkpoints",
        cwd=tmp_path,
    )  # fmt: skip
    assert diff["same_keys"] and diff["step"] == epochs * steps_per_epoch
    assert diff["max_diff"] == 0.0


@pytest.mark.slow
def test_two_processes_on_one_study_share_its_trials_and_run_none_twice(tmp_path):
    write_spec(tmp_path, epochs=2, examples=512)
    write_sweep(tmp_path, trials="4")
    procs = [start_sweep(tmp_path) for _ in range(2)]
    outputs = [proc.communicate(timeout=600)[0] for proc in procs]
    assert [proc.returncode for proc in procs] == [0, 0], outputs
    started = [
        {int(line.split(":")[0].split()[1]) for line in events(out) if ": started:" in line}
        for out in outputs
    ]
    assert started[0] | started[1] == {0, 1, 2, 3}
    assert not started[0] & started[1]
    assert started[0] and started[1], outputs  # both took trials
    trials = [t for t in study_trials(tmp_path) if not t.user_attrs.get("surplus")]
    assert [(t.number, t.state.name) for t in trials] == [(n, "COMPLETE") for n in range(4)]
    # Only the process that made the study seeded its sampler: the one that joined drew
    # values of its own, not the same ones again.
    drawn = {tuple(sorted(t.params.items())) for t in trials}
    assert len(drawn) == 4, [t.params for t in trials]
    for number in range(4):
        records = lines(trial_dir(tmp_path, number) / "run" / "runs.jsonl")
        assert [r["event"] for r in records] == ["start", "end"]


LR = "optimizer.learning_rate"
BAD_SWEEPS = {
    "unknown_path": (
        {"space": '{"optimizer.learning_rat": LogUniform(1e-4, 1e-1)}'},
        "sweep.space['optimizer.learning_rat']: not a field of the spec spec.py",
    ),
    "outside_the_fields_bounds": (
        {"space": '{"data.batch_size": IntRange(0, 64, step=32)}'},
        "sweep.space['data.batch_size']: the value 0 does not fit: data.batch_size: Input "
        "should be greater than 0",
    ),
    "a_choice_that_does_not_fit": (
        {"space": '{"data.batch_size": Choice([32, "big"])}'},
        "sweep.space['data.batch_size']: the value \"big\" does not fit: data.batch_size: ",
    ),
    "float_for_an_integer": (
        {"space": '{"data.batch_size": Uniform(16, 64)}'},
        "sweep.space['data.batch_size']: data.batch_size takes integers (it is 32 in the "
        "spec): draw it with IntRange",
    ),
    "integers_for_a_float": (  # would try only the learning rates 1, 2 and 3
        {"space": f'{{"{LR}": IntRange(1, 3)}}'},
        f"sweep.space['{LR}']: {LR} takes fractions, and IntRange draws only the integers "
        "from 1 to 3: draw it with Uniform or LogUniform",
    ),
    "a_range_upside_down": (
        {"space": f'{{"{LR}": LogUniform(1e-1, 1e-4)}}'},
        f"sweep.space['{LR}']: low (0.1) must be below high (0.0001)",
    ),
    "log_from_zero": (
        {"space": f'{{"{LR}": LogUniform(0, 1e-1)}}'},
        f"sweep.space['{LR}']: low (0.0) must be above 0 on a log scale: use Uniform",
    ),
    "range_not_a_multiple_of_its_step": (
        {"space": '{"model.layers[0].units": IntRange(8, 30, step=8)}'},
        "sweep.space['model.layers[0].units']: high - low (22) is not a multiple of step (8)",
    ),
    "an_empty_choice": (
        {"space": '{"data.batch_size": Choice([])}'},
        "sweep.space['data.batch_size'].values: List should have at least 1 item",
    ),
    "a_choice_listed_twice": (
        {"space": '{"data.batch_size": Choice([16, 16])}'},
        "sweep.space['data.batch_size']: 16 is listed twice",
    ),
    "objective_never_logged": (
        {"objective": '"val_auc"'},
        "sweep.objective: 'val_auc' is not a value the run logs",
    ),
    "no_objective": ({"objective": None}, "sweep.objective: required field is missing"),
    "direction_misspelt": (
        {"direction": '"maximise"'},
        "sweep.direction: Input should be 'minimize' or 'maximize'",
    ),
    "a_field_misspelt": ({"trails": "4"}, "sweep.trails: unknown field"),
    "no_trials": ({"trials": "0"}, "sweep.trials: Input should be greater than 0"),
    "no_parallel": ({"parallel": "0"}, "sweep.parallel: Input should be greater than 0"),
    "a_negative_seed": ({"seed": "-1"}, "sweep.seed: Input should be greater than or equal to 0"),
    "a_sampler_without_startup": (
        {"sampler": "TPE(startup_trials=0)"},
        "sweep.sampler.startup_trials: Input should be greater than 0",
    ),
    "a_pruner_of_negative_warmup": (
        {"pruner": "Median(warmup_steps=-1)"},
        "sweep.pruner.warmup_steps: Input should be greater than or equal to 0",
    ),
    "grid_of_a_range": (
        {"sampler": "GridSearch()"},
        f"sweep.space['{LR}']: GridSearch tries listed values",
    ),
    "more_trials_than_the_grid": (
        {"space": '{"data.batch_size": Choice([16, 32])}', "sampler": "GridSearch()"},
        "sweep.trials: 4 trials, but the grid has 2 combinations",
    ),
    "a_grid_with_first_values": (
        {
            "space": '{"data.batch_size": Choice([16, 32])}',
            "sampler": "GridSearch()",
            "trials": "2",
            "first": '[{"data.batch_size": 16}]',
        },
        "sweep.first: GridSearch tries every combination of the space: remove first",
    ),
    "first_outside_the_space": (
        {"first": f'[{{"{LR}": 0.01}}]'},
        "sweep.first[0]: gives no value for model.layers[0].units",
    ),
    "first_of_a_path_not_in_the_space": (
        {"first": '[{"data.batch_size": 16}]'},
        "sweep.first[0]: 'data.batch_size' is not a path of sweep.space",
    ),
    "first_not_drawable": (
        {"first": f'[{{"{LR}": 0.5, "model.layers[0].units": 16}}]'},
        f"sweep.first[0]: {LR}=0.5 is not a value of LogUniform(0.0001, 0.1)",
    ),
    "first_values_that_do_not_fit_together": (
        {
            "space": '{"data.batch_size": Choice([30, 32]), '
            '"gradients.accumulate_steps": Choice([4])}',
            "first": '[{"data.batch_size": 30, "gradients.accumulate_steps": 4}]',
        },
        "sweep.first[0]: these values do not fit the spec: gradients.accumulate_steps=4 does "
        "not divide data.batch_size=30",
    ),
    "missing_spec": ({"spec": '"nowhere.py"'}, "sweep.spec: spec file not found"),
}


@pytest.mark.parametrize("case", BAD_SWEEPS, ids=str)
def test_a_bad_sweep_is_refused_in_one_line_naming_the_field_and_nothing_is_written(tmp_path, case):
    """Each mistake in a sweep file is one line naming `sweep.<field>` (never "the spec has
    1 error" when the mistake is the sweep file's), exit 1, nothing written."""
    fields, message = BAD_SWEEPS[case]
    write_spec(tmp_path, epochs=1, examples=64)
    write_sweep(tmp_path, **fields)
    before = sorted(tmp_path.iterdir())
    result = CliRunner().invoke(app, ["sweep", str(tmp_path / "sweep.py")])
    assert result.exit_code == 1
    assert isinstance(result.exception, SystemExit)  # a message, not a traceback
    assert message in result.output, result.output
    (line,) = result.output.splitlines()
    assert line.startswith(f"error: {tmp_path / 'sweep.py'}")
    assert "the spec has" not in line and "the sweep has" not in line
    assert sorted(tmp_path.iterdir()) == before


def test_a_bad_sweep_exits_1_from_the_command_line(tmp_path):
    write_spec(tmp_path, epochs=1, examples=64)
    write_sweep(tmp_path, trials="0")
    proc = run_cli("sweep", "sweep.py", cwd=tmp_path)
    assert proc.returncode == 1
    # The line of the Sweep(...) that holds the mistake.
    assert proc.stderr == "error: sweep.py:3: sweep.trials: Input should be greater than 0\n"
    assert not (tmp_path / "sweeps").exists()


def test_a_sweep_file_that_fails_to_import_says_the_sweep_file_raised_it(tmp_path):
    """The sweep file's own error is the sweep file's (naming the module it missed), not the
    spec's: the spec was not even read yet."""
    write_spec(tmp_path, epochs=1, examples=64)
    sweep = write_sweep(tmp_path)
    sweep.write_text("import no_such_sweep_helpers\n" + sweep.read_text())
    proc = run_cli("sweep", "sweep.py", cwd=tmp_path)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert proc.stderr.startswith(
        "error: sweep.py:1: the sweep file raised ModuleNotFoundError: "
        "No module named 'no_such_sweep_helpers'"
    ), proc.stderr
    assert "the spec raised" not in proc.stderr
    assert not (tmp_path / "sweeps").exists()


def test_mlflows_default_store_is_where_the_sweep_was_started_as_the_docs_point_mlflow_ui(
    tmp_path, monkeypatch
):
    """The sweep works in the sweep file's folder (its trials' data paths are read there), but
    MLflow's default store is the working directory's, where `mlflow ui` is run: the sweep's
    runs and its trials' (given the same URI) land there, not beside the sweep file."""
    pytest.importorskip("mlflow")
    from loopgen.sweep.space import load_sweep
    from loopgen.sweep.tracking import Tracking

    folder, here = tmp_path / "sweeps_here", tmp_path / "work"
    folder.mkdir(), here.mkdir()
    write_spec(folder, epochs=1, examples=64, logging='Logging(mlflow=MLflow(experiment="t"))')
    write_sweep(folder)
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    monkeypatch.chdir(here)
    loaded = load_sweep(folder / "sweep.py")
    monkeypatch.chdir(loaded.folder)  # as the sweep does before it connects
    tracking = Tracking(loaded)
    assert tracking.uri.endswith(str(here / "mlflow.db")), tracking.uri
    assert tracking.environment("x")["MLFLOW_TRACKING_URI"] == tracking.uri
    assert not (folder / "mlflow.db").exists()


def test_the_sweep_language_is_apart_from_the_spec_language():
    """A spec's `import loopgen.dsl` does not build the sweep models (their import time)."""
    code = "import sys, loopgen.dsl; print('loopgen.dsl.sweep' in sys.modules)"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert proc.stdout.strip() == "False", proc.stderr


def test_the_example_sweep_starts_from_its_spec_and_prunes_by_epoch():
    from loopgen.sweep.space import _field, load_sweep

    loaded = load_sweep(ROOT / "examples" / "sweeps" / "fashion_validation.py")
    assert loaded.spec_path == ROOT / "examples" / "fashion_validation.py"
    # Its first trial is the example itself: the baseline the search has to beat.
    (baseline,) = loaded.sweep.first
    example = loaded.spec.model_dump(mode="json")
    assert example["optimizer"]["learning_rate"] is None  # Keras's default: 1e-3
    for key, value in {**baseline, "optimizer.learning_rate": None}.items():
        assert _field(example, key) == value, key
    # Batch sizes vary, so validation values are compared at epochs, not steps.
    assert "data.batch_size" in loaded.sweep.space and loaded.per_epoch


@pytest.mark.slow
def test_a_trial_whose_values_do_not_validate_together_fails_with_the_message_and_the_sweep_goes_on(
    tmp_path,
):
    # Each value fits the spec alone; 4 micro-batches of a batch of 30 do not.
    write_spec(tmp_path, epochs=1, examples=256)
    write_sweep(
        tmp_path,
        space='{"data.batch_size": Choice([30, 32]), "gradients.accumulate_steps": Choice([4])}',
        sampler="GridSearch()",
        trials="2",
    )
    proc = sweep_cli("sweep.py", cwd=tmp_path)
    by_batch = {t.params["data.batch_size"]: t for t in study_trials(tmp_path)}
    failed, complete = by_batch[30], by_batch[32]
    assert (failed.state.name, complete.state.name) == ("FAIL", "COMPLETE")
    message = "gradients.accumulate_steps=4 does not divide data.batch_size=30"
    assert message in failed.user_attrs["error"]
    assert f"trial {failed.number}: failed: " in proc.stdout and message in proc.stdout
    assert not (trial_dir(tmp_path, failed.number) / "train.py").exists()
    status = sweep_cli("status", "sweep.py", cwd=tmp_path).stdout
    assert "fail: " in status


def make_study(folder: Path, direction: str = "maximize"):
    """The sweep's study made beforehand, as an earlier `loopgen sweep` would have."""
    import optuna
    from optuna.storages import JournalStorage
    from optuna.storages.journal import JournalFileBackend

    (folder / "sweeps" / "sweep").mkdir(parents=True)
    storage = JournalStorage(JournalFileBackend(str(folder / "sweeps/sweep/study.journal")))
    return optuna.create_study(study_name="sweep", storage=storage, direction=direction)


@pytest.mark.slow
def test_a_trial_whose_sweep_died_before_making_its_folder_is_made_and_run(tmp_path):
    """Killed between Optuna's ask and the trial's folder, a sweep leaves a running trial
    that no process runs: the next sweep makes its folder and runs it, instead of waiting."""
    import optuna

    write_spec(tmp_path, epochs=1, examples=256)
    write_sweep(tmp_path, trials="1")
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    study = make_study(tmp_path)
    trial = study.ask({
        "optimizer.learning_rate": optuna.distributions.FloatDistribution(1e-4, 1e-1, log=True),
        "model.layers[0].units": optuna.distributions.IntDistribution(8, 32, step=8),
    })  # fmt: skip
    trial.set_user_attr("host", socket.gethostname())
    trial.set_user_attr("pid", dead.pid)
    proc = sweep_cli("sweep.py", cwd=tmp_path, timeout=300)
    assert "trial 0: started" in proc.stdout
    (done,) = study_trials(tmp_path)
    assert done.state.name == "COMPLETE"
    record = json.loads((trial_dir(tmp_path, 0) / "trial.json").read_text())
    assert record["values"] == trial.params


@pytest.mark.parametrize(
    ("before", "message"),
    [
        ("direction", "sweep.direction: the study 'sweep' (in "),
        ("space", "sweep.space['optimizer.learning_rate']: the study 'sweep' (in "),
        ("folders", "trials/000 belongs to no trial of the study 'sweep'"),
        ("folders_of_no_study", "trials/000 belongs to no trial of the study 'sweep'"),
    ],
    ids=["direction", "space", "folders", "folders_of_no_study"],
)
def test_a_study_or_trials_of_another_sweep_are_refused(tmp_path, before, message):
    import optuna

    write_spec(tmp_path, epochs=1, examples=64)
    write_sweep(tmp_path)
    if before != "folders_of_no_study":
        study = make_study(tmp_path, "minimize" if before == "direction" else "maximize")
    if before == "space":  # drawn from another range
        lr = optuna.distributions.CategoricalDistribution([0.1, 0.01])
        study.ask({"optimizer.learning_rate": lr})
    if before.startswith("folders"):
        (tmp_path / "sweeps" / "sweep" / "trials" / "000").mkdir(parents=True)
    proc = run_cli("sweep", "sweep.py", cwd=tmp_path)
    assert proc.returncode == 1
    assert message in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr
    assert not (tmp_path / "sweeps" / "sweep" / "trials" / "001").exists()
    if before == "folders_of_no_study":  # refused before the study was made: still new
        storage = optuna.storages.JournalStorage(
            optuna.storages.journal.JournalFileBackend(
                str(tmp_path / "sweeps" / "sweep" / "study.journal")
            )
        )
        assert optuna.study.get_all_study_names(storage) == []
