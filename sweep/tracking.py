"""MLflow for a sweep whose spec tracks its runs there: one parent run for the study, and each
trial's run created as its child before the trial starts (the script continues the run that
MLFLOW_RUN_ID names). Imported only for such specs."""

from __future__ import annotations

import os
from pathlib import Path

from ..errors import LoopgenError
from ..render.tracking import mlflow_key
from .space import LoadedSweep

PARENT_ATTR = "mlflow_parent_run_id"
"""The study's attribute holding its parent run's id: every process of the sweep uses it."""


class Tracking:
    def __init__(self, loaded: LoadedSweep):
        """Connects to the spec's tracking store: its tracking_uri (the sweep runs in the
        trials' folder, so a relative one is theirs), else MLFLOW_TRACKING_URI, else MLflow's
        default store in the folder the sweep was started in (mlflow.db there, as for
        `python train.py` run there: `mlflow ui` in that folder shows the sweep), which the
        trials are given."""
        try:
            import mlflow
        except ImportError:
            raise LoopgenError(
                "the spec tracks its runs in MLflow (logging.mlflow), which is not installed: "
                'pip install -e ".[mlflow]" (or pip install mlflow)'
            ) from None
        self.loaded = loaded
        settings = loaded.spec.logging.mlflow
        if settings.tracking_uri:
            mlflow.set_tracking_uri(settings.tracking_uri)
        elif not os.environ.get("MLFLOW_TRACKING_URI"):
            mlflow.set_tracking_uri(_default_uri(mlflow, loaded.started_in))
        self.uri = mlflow.get_tracking_uri()
        try:
            self.client = mlflow.MlflowClient(self.uri)
            experiment = self.client.get_experiment_by_name(settings.experiment)
            self.experiment_id = (
                experiment.experiment_id
                if experiment
                else self.client.create_experiment(settings.experiment)
            )
        except Exception as error:
            raise LoopgenError(f"logging.mlflow: {self._failed(error)}") from None

    def _failed(self, error: Exception) -> str:
        first = str(error).strip().splitlines()[0] if str(error).strip() else ""
        return f"MLflow at {self.uri} failed: {type(error).__name__}: {first}"

    def parent_of(self, study) -> None:
        """The sweep's own MLflow run, made by the process that finds none (under the sweep's
        lock): its settings as parameters (a space's path as mlflow_key writes it). A process
        that joins the sweep, or resumes it, marks it running again. Made and failed at once
        (MLflow refused its parameters), it is marked FAILED: none is left running."""
        self.parent = study.user_attrs.get(PARENT_ATTR)
        if self.parent is not None:
            try:
                if self.client.get_run(self.parent).info.status != "RUNNING":
                    self.client.update_run(self.parent, status="RUNNING")
            except Exception as error:
                raise LoopgenError(f"logging.mlflow: {self._failed(error)}") from None
            return
        loaded, sweep = self.loaded, self.loaded.sweep
        run = None
        try:
            run = self.client.create_run(
                self.experiment_id,
                run_name=f"sweep {loaded.name}",
                tags={"loopgen.sweep": str(loaded.path)},
            )
            self.client.log_batch(
                run.info.run_id,
                params=[
                    _param("objective", sweep.objective),
                    _param("direction", sweep.direction),
                    _param("trials", sweep.trials),
                    _param("sampler", sweep.sampler.kind),
                    _param("pruner", sweep.pruner.kind if sweep.pruner else None),
                    *(_param(mlflow_key(f"space.{k}"), repr(d)) for k, d in sweep.space.items()),
                ],
            )
        except Exception as error:
            if run is not None:
                self.end(run.info.run_id, "FAILED")
            raise LoopgenError(f"logging.mlflow: {self._failed(error)}") from None
        self.parent = run.info.run_id
        study.set_user_attr(PARENT_ATTR, self.parent)

    def stopped(self, status: str) -> None:
        """Ends the sweep's run when this process stops before the study is complete: KILLED
        (stopped: `loopgen sweep` resumes it) or FAILED (an error)."""
        if getattr(self, "parent", None) is not None:
            self.end(self.parent, status)

    def child(self, number: int) -> str:
        """A new trial's MLflow run, a child of the sweep's."""
        try:
            run = self.client.create_run(
                self.experiment_id,
                run_name=f"trial {number}",
                tags={"mlflow.parentRunId": self.parent},
            )
        except Exception as error:
            raise LoopgenError(f"logging.mlflow: trial {number}: {self._failed(error)}") from None
        return run.info.run_id

    def environment(self, run_id: str) -> dict[str, str]:
        """What a trial's script needs to log into its run."""
        return {"MLFLOW_TRACKING_URI": self.uri, "MLFLOW_RUN_ID": run_id}

    def end(self, run_id: str, status: str) -> None:
        """Ends a trial's run (pruned or failed, its script may not have); a failure to is
        said, not raised: the study knows how the trial ended."""
        try:
            self.client.set_terminated(run_id, status)
        except Exception as error:
            print(f"warning: could not end the MLflow run {run_id}: {self._failed(error)}")

    def finish(self, best_value: float | None, best_number: int | None) -> None:
        try:
            if best_value is not None:
                self.client.log_metric(self.parent, "best_objective", best_value)
                self.client.set_tag(self.parent, "loopgen.best_trial", str(best_number))
            self.client.set_terminated(self.parent, "FINISHED")
        except Exception as error:
            print(f"warning: could not end the sweep's MLflow run: {self._failed(error)}")


def _default_uri(mlflow, folder: Path) -> str:
    """MLflow's default tracking URI for a process working in `folder` (absolute)."""
    here = os.getcwd()
    os.chdir(folder)
    try:
        return mlflow.get_tracking_uri()
    finally:
        os.chdir(here)


def _param(key: str, value) -> object:
    from mlflow.entities import Param

    return Param(key, str(value))
