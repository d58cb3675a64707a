"""Runs a sweep: keeps `parallel` trials running until the study holds `trials` finished ones.
One thread: it starts trial scripts, reads their metrics as they grow, reports them to
Optuna's pruner, and tells Optuna how each ended.

Several processes (on one machine or many) may run the same study: a trial's number is
Optuna's, and a trial is run by the process that holds its claim (trial.py). A trial left
running by a process that died is resumed from its checkpoint by the next process that
finds it unclaimed."""

from __future__ import annotations

import os
import signal
import socket
import time
from typing import Any

from ..errors import LoopgenError
from . import early, report
from .space import LoadedSweep
from .study import distributions, import_optuna, remember_storage, study, values
from .trial import (
    Launcher,
    RunningTrial,
    SweepLock,
    alive,
    check_runnable,
    claim,
    create,
    trial_folder,
)

POLL_SECONDS = 0.2
"""How often the trials' metrics.jsonl files are read (the pruner's reaction time)."""


def say(message: str) -> None:
    """A line of the sweep's console, with its time: a sweep runs for hours."""
    print(f"{time.strftime('%Y-%m-%d %H:%M:%S')} {message}", flush=True)


class Sweeper:
    def __init__(self, loaded: LoadedSweep, storage: str | None):
        self.loaded = loaded
        # Started first (by the command itself, see early.py): it imports TensorFlow while
        # this process imports Optuna and makes the study.
        self.launcher = Launcher() if loaded.sweep.preload else None
        if self.launcher is None:
            early.discard()
        try:
            self._open(storage)
        except BaseException:
            if self.launcher is not None:
                self.launcher.abort()
            raise
        self.running: dict[int, tuple[RunningTrial, Any]] = {}
        self.stop_signal: int | None = None
        self.waiting: set[int] = set()

    def _open(self, storage: str | None) -> None:
        loaded = self.loaded
        self.optuna = import_optuna()
        # Where the trials run: relative paths (MLflow's default store, a relative
        # tracking_uri) then mean the same for the sweep and its trials.
        storage = absolute_storage(storage)
        os.chdir(loaded.folder)
        self.lock = SweepLock(loaded.output)
        self.tracking = None
        if loaded.spec.logging.mlflow:
            from .tracking import Tracking

            self.tracking = Tracking(loaded)  # connects first: a bad URI is said at once
        self.space = distributions(loaded)
        with self.lock:  # no other process asks for a trial while this one checks the study
            self.study = study(loaded, storage)
            check_study(loaded, self.study, self.space)
            remember_storage(loaded, storage)
            if self.tracking:
                self.tracking.parent_of(self.study)

    def run(self) -> int:
        check_runnable()
        # Where it all lands: beside the sweep file, whatever the working directory, so that
        # `loopgen sweep` from anywhere finds the study again.
        output = os.path.relpath(self.loaded.output, self.loaded.started_in)
        mlflow = f"; MLflow runs in {self.tracking.uri}" if self.tracking else ""
        say(f"sweep {self.loaded.name}: trials, study and results in {output}/{mlflow}")
        for number in (signal.SIGINT, signal.SIGTERM):
            signal.signal(number, self._stop)
        try:
            while self.stop_signal is None:
                for number in list(self.running):
                    self._watch(number)
                self._fill()
                if not self.running and self._finished():
                    return report.write_results(self.loaded, self.study, self.tracking)
                if self.running:
                    report.prepare_plots()  # their imports, while the trials run
                if self.launcher is not None:
                    self.launcher.wait(POLL_SECONDS)  # woken at once when a trial ends
                else:
                    time.sleep(POLL_SECONDS)
            code = self._stopped()
        except BaseException:
            if self.tracking:
                self.tracking.stopped("FAILED")
            raise
        finally:
            if self.launcher is not None:
                self.launcher.close()
        if self.tracking:
            self.tracking.stopped("KILLED")  # `loopgen sweep` again resumes it
        return code

    def _stop(self, number: int, frame: Any) -> None:
        if self.stop_signal is not None:
            say("Stopping: waiting for the trials to save their checkpoints.")
        self.stop_signal = number

    def _stopped(self) -> int:
        """Stops the running trials by SIGTERM (each saves a checkpoint) and leaves them
        running in the study: `loopgen sweep` again resumes them. A trial that ended before
        is told as usual."""
        for number in list(self.running):
            self._watch(number)
        for running, _ in self.running.values():
            running.terminate()
        for number, (running, _) in self.running.items():
            running.process.wait()
            running.close()
            say(f"trial {number}: stopped; it resumes from its checkpoint with loopgen sweep")
        return 128 + self.stop_signal

    def _fill(self) -> None:
        while len(self.running) < self.loaded.sweep.parallel and self.stop_signal is None:
            job = self._next()
            if job is None:
                return
            trial, fd = job
            try:
                running = RunningTrial(self.loaded, trial.number, fd, self._device())
            except (OSError, ValueError, KeyError) as error:
                folder = trial_folder(self.loaded, trial.number)
                self._fail(None, trial, f"{folder / 'trial.json'} cannot be read: {error}")
                os.close(fd)
                continue
            try:
                running.render()
            except Exception as error:  # the sampled values do not validate: the sweep goes on
                self._fail(running, trial, str(error))
                continue
            tracked = running.record.get("mlflow_run_id")
            running.start(self.launcher, **(self.tracking.environment(tracked) if tracked else {}))
            # What a resumed trial reported before its stop: its script logs the steps after
            # its checkpoint again, which the pruner has seen.
            running.reported = set(self._frozen(trial.number).intermediate_values)
            self.running[trial.number] = (running, trial)
            shown = ", ".join(f"{k}={v}" for k, v in running.values.items())
            say(f"trial {trial.number}: {'resumed' if running.resumed else 'started'}: {shown}")

    def _frozen(self, number: int) -> Any:
        return next(t for t in self.study.get_trials(deepcopy=False) if t.number == number)

    def _device(self) -> str | None:
        """The device with the fewest running trials (CUDA_VISIBLE_DEVICES), if any listed."""
        devices = self.loaded.sweep.devices
        if not devices:
            return None
        busy = [running.device for running, _ in self.running.values()]
        return min(devices, key=lambda d: (busy.count(d), devices.index(d)))

    def _next(self) -> tuple[Any, int] | None:
        """A trial to run: one left running by a process that died, else a new one while the
        study has fewer than `trials`. None when there is none (all taken)."""
        states = self.optuna.trial.TrialState
        total = self.loaded.sweep.trials
        with self.lock:
            trials = self.study.get_trials(deepcopy=False)
            for frozen in trials:
                if frozen.state != states.RUNNING or frozen.number >= total:
                    continue
                if frozen.number in self.running:
                    continue
                job = self._interrupted(frozen)
                if job is not None:
                    return job
            if sum(t.state != states.WAITING for t in trials) >= total:
                return None
            trial = self.study.ask(self.space)
            trial.set_user_attr("host", socket.gethostname())
            trial.set_user_attr("pid", os.getpid())
            if trial.number >= total:
                # Another process asked for the last trial at the same moment (on another
                # machine: the lock is this file system's).
                trial.set_user_attr("surplus", True)
                self.study.tell(trial, state=states.FAIL)
                return None
            return trial, self._create(trial.number, trial.params)

    def _interrupted(self, frozen: Any) -> tuple[Any, int] | None:
        """A running trial that no process runs: claimed, with its folder (made again from
        its values when the process that asked for it died before making it)."""
        folder = trial_folder(self.loaded, frozen.number)
        if folder.is_dir():
            fd = claim(folder)
        elif not alive(frozen.user_attrs.get("host"), frozen.user_attrs.get("pid")):
            fd = self._create(frozen.number, frozen.params)
        else:  # running elsewhere, in a folder this machine does not see
            if frozen.number not in self.waiting:
                self.waiting.add(frozen.number)
                where = f"on {frozen.user_attrs.get('host', 'another machine')}"
                say(f"trial {frozen.number}: running {where}; waiting for it to end")
            return None
        if fd is None:
            return None
        # Told finished between the listing and the claim: not to be run again.
        now = next(t for t in self.study.get_trials(deepcopy=False) if t.number == frozen.number)
        if now.state != self.optuna.trial.TrialState.RUNNING:
            os.close(fd)
            return None
        return self.optuna.trial.Trial(self.study, frozen._trial_id), fd

    def _create(self, number: int, params: dict[str, Any]) -> int:
        more = {"mlflow_run_id": self.tracking.child(number)} if self.tracking else {}
        return create(self.loaded, number, values(self.loaded, params), **more)

    def _watch(self, number: int) -> None:
        running, trial = self.running[number]
        reported, status = running.poll()
        for step, value in reported if not running.pruned else []:
            if step in running.reported:
                continue  # logged again by a resumed run
            running.reported.add(step)
            trial.report(value, step)
            if trial.should_prune():
                # Said once: the trial logs on until its SIGTERM lands, which it then obeys.
                running.pruned = True
                running.terminate()
                objective, at = self.loaded.sweep.objective, self._at()
                say(f"trial {number}: pruned at {at} {step} ({objective} {value:.6g})")
                break
        if status is None:
            return
        if self.stop_signal is not None and status in (128 + signal.SIGTERM, -signal.SIGTERM):
            if not running.pruned:
                return  # stopped with the sweep: _stopped() leaves it to resume
        del self.running[number]
        states = self.optuna.trial.TrialState
        objective = self.loaded.sweep.objective
        if running.pruned:
            self.study.tell(trial, state=states.PRUNED)
            self._end_tracked(running, "KILLED")
            running.close()
        elif status != 0:
            self._fail(running, trial, f"the script exited with status {status}: {running.error()}")
        elif running.last is None:
            self._fail(running, trial, f"the run logged no {objective} to metrics.jsonl")
        else:
            self.study.tell(trial, running.last[1])
            running.close()
            at, value = running.last
            say(f"trial {number}: {objective} {value:.6g} at {self._at()} {at}")

    def _at(self) -> str:
        return "epoch" if self.loaded.per_epoch else "step"

    def _fail(self, running: RunningTrial | None, trial: Any, error: str) -> None:
        trial.set_user_attr("error", error)
        self.study.tell(trial, state=self.optuna.trial.TrialState.FAIL)
        if running is not None:
            self._end_tracked(running, "FAILED")
            running.close()
        say(f"trial {trial.number}: failed: {error}")

    def _end_tracked(self, running: RunningTrial, status: str) -> None:
        """Ends a trial's MLflow run, which its script may never have started."""
        if self.tracking and running.record.get("mlflow_run_id"):
            self.tracking.end(running.record["mlflow_run_id"], status)

    def _finished(self) -> bool:
        """Whether the study holds `trials` finished trials (and no trial to wait for)."""
        total = self.loaded.sweep.trials
        trials = [t for t in self.study.get_trials(deepcopy=False) if t.number < total]
        return len(trials) == total and all(t.state.is_finished() for t in trials)


def absolute_storage(url: str | None) -> str | None:
    """A relative journal file's path or SQLite URL made absolute (before the chdir)."""
    if url is None:
        return None
    if url.startswith("sqlite:///") and not url.startswith("sqlite:////"):
        return "sqlite:///" + os.path.abspath(url.removeprefix("sqlite:///"))
    return url if "://" in url else os.path.abspath(url)


def check_study(loaded: LoadedSweep, study: Any, space: dict[str, Any]) -> None:
    """Refuses to go on with a study that another sweep made: another direction, another
    space, or trial folders of trials it does not hold."""
    from optuna.distributions import check_distribution_compatibility

    where = f"the study {loaded.name!r} (in {loaded.output})"
    fix = "give this sweep another name or output_dir, or move the old study away"
    if study.direction.name.lower() != loaded.sweep.direction:
        raise LoopgenError(
            f"sweep.direction: {where} was made to {study.direction.name.lower()}; {fix}"
        )
    trials = study.get_trials(deepcopy=False)
    for trial in trials:
        for key, drawn in trial.distributions.items():
            if key not in space:
                raise LoopgenError(
                    f"sweep.space: {where} also drew {key!r}, which this sweep does not; {fix}"
                )
            try:
                check_distribution_compatibility(drawn, space[key])
            except ValueError:
                raise LoopgenError(
                    f"sweep.space[{key!r}]: {where} drew it from {drawn}; {fix}"
                ) from None
    numbers = {t.number for t in trials}
    folders = loaded.output / "trials"
    for folder in sorted(folders.iterdir()) if folders.is_dir() else []:
        if folder.name.isdigit() and int(folder.name) not in numbers:
            raise LoopgenError(
                f"{folder} belongs to no trial of {where}: an earlier study's trials are "
                f"there; {fix}"
            )
