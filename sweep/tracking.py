"""MLflow for a sweep whose spec tracks its runs there: one parent run for the study, and each
trial's run created as its child before the trial starts (the script continues the run that
MLFLOW_RUN_ID names). Imported only for such specs."""

from __future__ import annotations

import os
from contextlib import contextmanager
from pathlib import Path

from ..errors import LoopgenError
from .space import LoadedSweep

PARENT_ATTR = "mlflow_parent_run_id"
"""The study's attribute holding its parent run's id: every process of the sweep uses it."""


@contextmanager
def working_directory(path: Path):
    before = os.getcwd()
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(before)


class Tracking:
    def __init__(self, loaded: LoadedSweep, study):
        try:
            import mlflow
        except ImportError:
            raise LoopgenError(
                "the spec tracks its runs in MLflow (logging.mlflow), which is not installed: "
                'pip install -e ".[mlflow]" (or pip install mlflow)'
            ) from None
        settings = loaded.spec.logging.mlflow
        if settings.tracking_uri:
            mlflow.set_tracking_uri(settings.tracking_uri)
        # Resolved where the trials run: MLflow's default store is in the working directory.
        with working_directory(loaded.folder):
            self.uri = mlflow.get_tracking_uri()
        self.client = mlflow.MlflowClient(self.uri)
        experiment = self.client.get_experiment_by_name(settings.experiment)
        self.experiment_id = (
            experiment.experiment_id
            if experiment
            else self.client.create_experiment(settings.experiment)
        )
        self.parent = study.user_attrs.get(PARENT_ATTR)
        if self.parent is None:
            run = self.client.create_run(
                self.experiment_id,
                run_name=f"sweep {loaded.name}",
                tags={"loopgen.sweep": str(loaded.path)},
            )
            self.parent = run.info.run_id
            study.set_user_attr(PARENT_ATTR, self.parent)
            sweep = loaded.sweep
            self.client.log_batch(
                self.parent,
                params=[
                    _param("objective", sweep.objective),
                    _param("direction", sweep.direction),
                    _param("trials", sweep.trials),
                    _param("sampler", sweep.sampler.kind),
                    _param("pruner", sweep.pruner.kind if sweep.pruner else None),
                    *(_param(f"space.{key}", d) for key, d in sweep.space.items()),
                ],
            )

    def child(self, number: int) -> str:
        """A new trial's MLflow run, a child of the sweep's."""
        run = self.client.create_run(
            self.experiment_id,
            run_name=f"trial {number}",
            tags={"mlflow.parentRunId": self.parent},
        )
        return run.info.run_id

    def environment(self, run_id: str) -> dict[str, str]:
        """What a trial's script needs to log into its run."""
        return {"MLFLOW_TRACKING_URI": self.uri, "MLFLOW_RUN_ID": run_id}

    def finish(self, best_value: float | None, best_number: int | None) -> None:
        if best_value is not None:
            self.client.log_metric(self.parent, "best_objective", best_value)
            self.client.set_tag(self.parent, "loopgen.best_trial", str(best_number))
        self.client.set_terminated(self.parent, "FINISHED")


def _param(key: str, value) -> object:
    from mlflow.entities import Param

    return Param(key, str(value))
