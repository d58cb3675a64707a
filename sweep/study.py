"""The Optuna side of a sweep: its storage, study, sampler, pruner and search space. Optuna
is imported here only, by `loopgen sweep` (pip install -e ".[sweep]")."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..dsl.sweep import Choice, IntRange, LogUniform
from ..errors import LoopgenError
from .space import LoadedSweep


def import_optuna():
    try:
        import optuna
    except ImportError:
        raise LoopgenError(
            'loopgen sweep runs on Optuna, which is not installed: pip install -e ".[sweep]" '
            "(or pip install optuna)"
        ) from None
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    return optuna


STORAGE_FILE = "study.journal"
"""The embedded storage in the sweep's folder: Optuna's journal file, which several processes
(on one machine, or on a shared file system) append to under a lock."""


def storage(loaded: LoadedSweep, url: str | None):
    """Optuna's storage: a database URL (sqlite:///..., postgresql://...), a journal file's
    path, or by default the journal file in the sweep's output folder."""
    import_optuna()
    from optuna.storages import JournalStorage
    from optuna.storages.journal import JournalFileBackend, JournalFileOpenLock

    if url and "://" in url:
        return url
    path = Path(url) if url else loaded.output / STORAGE_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    # An open(O_EXCL) lock file: works where symlinks do not (some network file systems).
    lock = JournalFileOpenLock(str(path))
    return JournalStorage(JournalFileBackend(str(path), lock_obj=lock))


def study(loaded: LoadedSweep, url: str | None):
    optuna = import_optuna()
    sweep = loaded.sweep
    created = optuna.create_study(
        storage=storage(loaded, url),
        study_name=loaded.name,
        direction=sweep.direction,
        sampler=sampler(loaded),
        pruner=pruner(loaded),
        load_if_exists=True,
    )
    for values in sweep.first:
        created.enqueue_trial(
            {key: to_param(sweep.space[key], value) for key, value in values.items()},
            skip_if_exists=True,
        )
    return created


def sampler(loaded: LoadedSweep):
    optuna = import_optuna()
    sweep = loaded.sweep
    kind = sweep.sampler.kind
    if kind == "tpe":
        return optuna.samplers.TPESampler(
            n_startup_trials=sweep.sampler.startup_trials, seed=sweep.seed
        )
    if kind == "random":
        return optuna.samplers.RandomSampler(seed=sweep.seed)
    grid = {key: [to_param(d, v) for v in listed(d)] for key, d in sweep.space.items()}

    class Grid(optuna.samplers.GridSampler):
        def after_trial(self, study, trial, state, values):
            """Optuna's GridSampler stops `study.optimize()` once its grid is done, and
            raises outside it; a sweep asks and tells, and ends after `trials` trials."""

    return Grid(grid, seed=sweep.seed)


def pruner(loaded: LoadedSweep):
    optuna = import_optuna()
    chosen = loaded.sweep.pruner
    if chosen is None:
        return optuna.pruners.NopPruner()
    if chosen.kind == "median":
        return optuna.pruners.MedianPruner(
            n_startup_trials=chosen.startup_trials, n_warmup_steps=chosen.warmup_steps
        )
    return optuna.pruners.HyperbandPruner(
        min_resource=chosen.min_steps,
        max_resource=chosen.max_steps or "auto",
        reduction_factor=chosen.reduction_factor,
    )


def distributions(loaded: LoadedSweep) -> dict[str, Any]:
    """Optuna's distribution of each path: a trial's parameters are the paths' values (a
    Choice of lists or objects is drawn as the JSON text of one)."""
    optuna = import_optuna()
    found = {}
    for key, d in loaded.sweep.space.items():
        if isinstance(d, Choice):
            found[key] = optuna.distributions.CategoricalDistribution(
                [to_param(d, v) for v in d.values]
            )
        elif isinstance(d, IntRange):
            found[key] = optuna.distributions.IntDistribution(d.low, d.high, step=d.step, log=d.log)
        else:
            found[key] = optuna.distributions.FloatDistribution(
                d.low, d.high, log=isinstance(d, LogUniform)
            )
    return found


def listed(d: Any) -> list[Any]:
    """The values of a Choice or an IntRange, for a grid."""
    return list(d.values) if isinstance(d, Choice) else list(range(d.low, d.high + 1, d.step))


def _structured(d: Any) -> bool:
    return isinstance(d, Choice) and any(isinstance(v, list | dict) for v in d.values)


def to_param(d: Any, value: Any) -> Any:
    """A field's value as Optuna stores it."""
    return json.dumps(value, sort_keys=True) if _structured(d) else value


def values(loaded: LoadedSweep, params: dict[str, Any]) -> dict[str, Any]:
    """A trial's field values from its Optuna parameters."""
    space = loaded.sweep.space
    return {
        key: json.loads(value) if _structured(space[key]) else value
        for key, value in params.items()
        if key in space
    }
