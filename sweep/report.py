"""What a sweep leaves for people: the table of its trials, the best trial's values as a spec
file (`best_spec.py`), and Optuna's plots of the search."""

from __future__ import annotations

import contextlib
import json
import os
import threading
from pathlib import Path
from typing import Any

import black

from .space import LoadedSweep
from .study import import_optuna, values
from .trial import alive, claimed, run_seconds, run_steps, trial_folder


def table(loaded: LoadedSweep, study: Any) -> str:
    """One row per trial: number, values, objective, state, steps, time. A trial that Optuna
    holds running but that no process runs (its sweep was stopped or killed) is
    `interrupted`; the next `loopgen sweep` resumes it. Its time is its script's, from
    runs.jsonl: the downtime between a stop and the resume is not counted (`+` where a run
    killed outright left its time unknown)."""
    rows = [["trial", *loaded.sweep.space, loaded.sweep.objective, "state", "steps", "time"]]
    interrupted = False
    for trial in study.get_trials(deepcopy=False):
        if trial.user_attrs.get("surplus") or trial.number >= loaded.sweep.trials:
            continue
        found = values(loaded, trial.params)
        objective = trial.value if trial.value is not None else _last(trial)
        folder = trial_folder(loaded, trial.number)
        state = trial.state.name.lower()
        if state == "running" and not _runs(trial, folder):
            state, interrupted = "interrupted", True
        if "error" in trial.user_attrs:
            state += f": {trial.user_attrs['error'][:60]}"
        seconds, known = run_seconds(folder / "run", running=state == "running")
        rows.append(
            [
                str(trial.number),
                *(_shown(found.get(key)) for key in loaded.sweep.space),
                "" if objective is None else f"{objective:.6g}",
                state,
                str(run_steps(folder / "run") or ""),
                "" if seconds is None else f"{seconds:.0f}s{'' if known else '+'}",
            ]
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)]
    lines = [
        "  ".join(
            [*(cell.ljust(w) for cell, w in zip(row, widths, strict=False)), row[-1]]
        ).rstrip()
        for row in rows
    ]
    if interrupted:
        lines.append(
            "interrupted: no process runs the trial (its sweep was stopped or killed); "
            f"`loopgen sweep {os.path.relpath(loaded.path, loaded.started_in)}` resumes it from "
            "its checkpoint"
        )
    return "\n".join(lines)


def _runs(trial: Any, folder: Path) -> bool:
    """Whether a process runs a trial that Optuna holds running: its folder's claim is held,
    or (no folder here) the process that asked for it may still be alive elsewhere."""
    if folder.is_dir():
        return claimed(folder)
    return alive(trial.user_attrs.get("host"), trial.user_attrs.get("pid"))


def _last(trial: Any) -> float | None:
    """A pruned or running trial's last reported objective."""
    steps = trial.intermediate_values
    return steps[max(steps)] if steps else None


def _shown(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.4g}"
    return json.dumps(value) if isinstance(value, list | dict | str) else str(value)


def best(loaded: LoadedSweep, study: Any) -> Any | None:
    states = import_optuna().trial.TrialState
    done = [
        t
        for t in study.get_trials(deepcopy=False, states=[states.COMPLETE])
        if t.number < loaded.sweep.trials
    ]
    if not done:
        return None
    pick = max if loaded.sweep.direction == "maximize" else min
    return pick(done, key=lambda t: t.value)


BEST_SPEC = '''"""The best trial of sweep {sweep} ({trial} of {total}: {objective}
{value:.6g}): the base spec with its values set.

    loopgen render {path} -o train.py
"""

from pathlib import Path

from loopgen.dsl.loader import load_spec

spec = load_spec(
    Path(__file__).parent / {spec!r},
    {name!r},
    overrides=[
{overrides}    ],
)
'''


def write_best_spec(loaded: LoadedSweep, trial: Any) -> Path:
    path = loaded.output / "best_spec.py"
    overrides = loaded.overrides(values(loaded, trial.params))
    text = BEST_SPEC.format(
        sweep=loaded.path.name,
        trial=f"trial {trial.number}",
        total=loaded.sweep.trials,
        objective=loaded.sweep.objective,
        value=trial.value,
        path=os.path.relpath(path, loaded.started_in),
        spec=os.path.relpath(loaded.spec_path, loaded.output),
        name=loaded.sweep.spec_name,
        overrides="".join(f"        {override!r},\n" for override in overrides),
    )
    partial = path.with_name(f".best_spec.py.{os.getpid()}")  # processes may end together
    partial.write_text(black.format_str(text, mode=black.Mode(line_length=100)))
    os.replace(partial, path)
    return path


_plotting: threading.Thread | None = None


def _import_plotting() -> None:
    with contextlib.suppress(ImportError):  # write_plots draws none
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot
        from optuna.visualization import matplotlib as _  # noqa: F401


def prepare_plots() -> None:
    """Imports matplotlib and Optuna's plots in a thread of their own, once: a second of a
    sweep's end otherwise, while the sweep's own thread mostly waits for its trials."""
    global _plotting
    if _plotting is None:
        _plotting = threading.Thread(target=_import_plotting, daemon=True)
        _plotting.start()


def write_plots(loaded: LoadedSweep, study: Any) -> list[Path]:
    """The optimization history and the parameters' importances, as PNG files (matplotlib,
    when installed). Importances need two finished trials."""
    if _plotting is not None:
        _plotting.join()
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        from optuna.visualization import matplotlib as plots
    except ImportError:
        return []
    import warnings

    written = []
    states = import_optuna().trial.TrialState
    complete = study.get_trials(deepcopy=False, states=[states.COMPLETE])
    drawings = [("history.png", plots.plot_optimization_history)]
    if len(complete) >= 2:
        drawings.append(("importances.png", plots.plot_param_importances))
    for name, draw in drawings:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # "experimental" warnings of Optuna's plots
            axes = draw(study)
        path = loaded.output / name
        partial = path.with_name(f".{os.getpid()}.{name}")
        axes.figure.savefig(partial, bbox_inches="tight", dpi=100)
        plt.close(axes.figure)
        os.replace(partial, path)
        written.append(path)
    return written


def write_results(loaded: LoadedSweep, study: Any, tracking: Any) -> int:
    """At the sweep's end: the table, best_spec.py and the plots (and the end of the sweep's
    MLflow run). 1 if no trial completed."""
    print(table(loaded, study))
    chosen = best(loaded, study)
    if tracking is not None:
        tracking.finish(*((chosen.value, chosen.number) if chosen else (None, None)))
    if chosen is None:
        print(f"No trial completed: see the trials' train.log in {loaded.output / 'trials'}")
        return 1
    path = write_best_spec(loaded, chosen)
    plots = write_plots(loaded, study)
    drawn = f"; plots: {', '.join(p.name for p in plots)}" if plots else ""
    print(
        f"Best: trial {chosen.number}, {loaded.sweep.objective} {chosen.value:.6g}; its spec: "
        f"{os.path.relpath(path, loaded.started_in)}{drawn}"
    )
    return 0
