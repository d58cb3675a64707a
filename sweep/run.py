"""Runs a sweep: keeps `parallel` trials running until the study holds `trials` finished ones.
One thread: it starts trial scripts, reads their metrics as they grow, reports them to
Optuna's pruner, and tells Optuna how each ended.

Several processes (on one machine or many) may run the same study: a trial's number is
Optuna's, and a trial is run by the process that holds its claim (trial.py). A trial left
running by a process that died is resumed from its checkpoint by the next process that
finds it unclaimed."""

from __future__ import annotations

import signal
import time
from typing import Any

from . import report
from .space import LoadedSweep
from .study import distributions, import_optuna, study, values
from .trial import RunningTrial, check_runnable, claim, create, trial_folder

POLL_SECONDS = 0.2
"""How often the trials' metrics.jsonl files are read (the pruner's reaction time)."""


class Sweeper:
    def __init__(self, loaded: LoadedSweep, storage: str | None):
        self.optuna = import_optuna()
        self.loaded = loaded
        self.study = study(loaded, storage)
        self.space = distributions(loaded)
        self.running: dict[int, tuple[RunningTrial, Any]] = {}
        self.stop_signal: int | None = None
        self.tracking = None
        if loaded.spec.logging.mlflow:
            from .tracking import Tracking

            self.tracking = Tracking(loaded, self.study)

    def run(self) -> int:
        check_runnable()
        for number in (signal.SIGINT, signal.SIGTERM):
            signal.signal(number, self._stop)
        while self.stop_signal is None:
            for number in list(self.running):
                self._watch(number)
            self._fill()
            if not self.running and self._finished():
                return report.write_results(self.loaded, self.study, self.tracking)
            time.sleep(POLL_SECONDS)
        return self._stopped()

    def _stop(self, number: int, frame: Any) -> None:
        self.stop_signal = number

    def _stopped(self) -> int:
        """Stops the running trials by SIGTERM (each saves a checkpoint) and leaves them
        running in the study: `loopgen sweep` again resumes them."""
        for running, _ in self.running.values():
            running.terminate()
        for number, (running, _) in self.running.items():
            running.process.wait()
            running.close()
            print(f"trial {number}: stopped; it resumes from its checkpoint with loopgen sweep")
        return 128 + self.stop_signal

    def _fill(self) -> None:
        while len(self.running) < self.loaded.sweep.parallel:
            job = self._next()
            if job is None:
                return
            trial, fd = job
            running = RunningTrial(self.loaded, trial.number, fd, self._device())
            try:
                running.render()
            except Exception as error:  # the sampled values do not validate: the sweep goes on
                self._fail(running, trial, str(error))
                continue
            tracked = running.record.get("mlflow_run_id")
            running.start(**(self.tracking.environment(tracked) if tracked else {}))
            self.running[trial.number] = (running, trial)
            shown = ", ".join(f"{k}={v}" for k, v in running.values.items())
            print(f"trial {trial.number}: {'resumed' if running.resumed else 'started'}: {shown}")

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
        trials = self.study.get_trials(deepcopy=False)
        total = self.loaded.sweep.trials
        for frozen in trials:
            if frozen.state != states.RUNNING or frozen.number >= total:
                continue
            if frozen.number in self.running:
                continue
            folder = trial_folder(self.loaded, frozen.number)
            fd = claim(folder) if folder.is_dir() else None
            if fd is not None:
                return self.optuna.trial.Trial(self.study, frozen._trial_id), fd
        if sum(t.state != states.WAITING for t in trials) >= total:
            return None
        trial = self.study.ask(self.space)
        if trial.number >= total:
            # Another process asked for the last trial at the same moment.
            trial.set_user_attr("surplus", True)
            self.study.tell(trial, state=states.FAIL)
            return None
        more = {"mlflow_run_id": self.tracking.child(trial.number)} if self.tracking else {}
        return trial, create(self.loaded, trial.number, values(self.loaded, trial.params), **more)

    def _watch(self, number: int) -> None:
        running, trial = self.running[number]
        reported, status = running.poll()
        for step, value in reported if not running.pruned else []:
            trial.report(value, step)
            if trial.should_prune():
                running.pruned = True
                running.terminate()
                objective, at = self.loaded.sweep.objective, self._at()
                print(f"trial {number}: pruned at {at} {step} ({objective} {value:.6g})")
        if status is None:
            return
        del self.running[number]
        states = self.optuna.trial.TrialState
        objective = self.loaded.sweep.objective
        if running.pruned:
            self.study.tell(trial, state=states.PRUNED)
            running.close()
        elif status != 0:
            self._fail(running, trial, f"the script exited with status {status}: {running.error()}")
        elif running.last is None:
            self._fail(running, trial, f"the run logged no {objective} to metrics.jsonl")
        else:
            self.study.tell(trial, running.last[1])
            running.close()
            at, value = running.last
            print(f"trial {number}: {objective} {value:.6g} at {self._at()} {at}")

    def _at(self) -> str:
        return "epoch" if self.loaded.per_epoch else "step"

    def _fail(self, running: RunningTrial, trial: Any, error: str) -> None:
        trial.set_user_attr("error", error)
        self.study.tell(trial, state=self.optuna.trial.TrialState.FAIL)
        if self.tracking and running.record.get("mlflow_run_id"):
            self.tracking.client.set_terminated(running.record["mlflow_run_id"], "FAILED")
        running.close()
        print(f"trial {trial.number}: failed: {error}")

    def _finished(self) -> bool:
        """Whether the study holds `trials` finished trials (and no trial to wait for)."""
        total = self.loaded.sweep.trials
        trials = [t for t in self.study.get_trials(deepcopy=False) if t.number < total]
        return len(trials) == total and all(t.state.is_finished() for t in trials)
