"""The Optuna side of a sweep: its storage, study, sampler, pruner and search space. Optuna
is imported here only, by `loopgen sweep` (pip install -e ".[sweep]")."""

from __future__ import annotations

import json
import os
import urllib.parse
from pathlib import Path
from typing import Any

from ..dsl.sweep import Choice, IntRange, LogUniform
from ..errors import LoopgenError
from .space import LoadedSweep, grid_values


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


STORAGE_NOTE = "storage"
"""The file in the sweep's output folder that keeps the --storage it ran on (a database's
password left out): `loopgen sweep` and `loopgen sweep status` use it when not given one."""


def remembered_storage(loaded: LoadedSweep, url: str | None) -> str | None:
    """The study's storage: `url` (--storage) if given, else the one the sweep ran on last
    (kept in <output>/storage), else None: the journal file in the sweep's folder."""
    note = loaded.output / STORAGE_NOTE
    if url or not note.is_file():
        return url
    kept = note.read_text().strip()
    if urllib.parse.urlsplit(kept).password == "***":
        raise LoopgenError(
            f"--storage: the study {loaded.name!r} is in {kept} ({note} keeps it without its "
            "password): pass --storage with the database's URL"
        )
    return kept


def remember_storage(loaded: LoadedSweep, url: str | None) -> None:
    """Keeps a --storage other than the default journal file in <output>/storage, so that
    the next `loopgen sweep` or `status` without --storage finds the study."""
    if url is None:
        return
    parts = urllib.parse.urlsplit(url)
    if parts.password:  # not written down: the user gives it again
        netloc = parts.netloc.replace(f":{parts.password}@", ":***@", 1)
        url = urllib.parse.urlunsplit(parts._replace(netloc=netloc))
    note = loaded.output / STORAGE_NOTE
    if note.is_file() and note.read_text().strip() == url:
        return
    partial = note.with_name(f".{STORAGE_NOTE}.{os.getpid()}")
    partial.write_text(url + "\n")
    os.replace(partial, note)


def storage(loaded: LoadedSweep, url: str | None):
    """Optuna's storage: a database URL (sqlite:///..., postgresql://...), a journal file's
    path, or by default the journal file in the sweep's output folder."""
    optuna = import_optuna()
    from optuna.storages import JournalStorage
    from optuna.storages.journal import JournalFileBackend, JournalFileOpenLock

    try:
        if url and "://" in url:
            return optuna.storages.RDBStorage(url)
        path = Path(url) if url else loaded.output / STORAGE_FILE
        path.parent.mkdir(parents=True, exist_ok=True)
        # An open(O_EXCL) lock file: works where symlinks do not (some network file systems).
        lock = JournalFileOpenLock(str(path))
        return JournalStorage(JournalFileBackend(str(path), lock_obj=lock))
    except Exception as error:  # a driver not installed, a server down, a path not writable
        shown = url or loaded.output / STORAGE_FILE
        raise LoopgenError(
            f"--storage {shown}: cannot open the study's storage: {type(error).__name__}: "
            f"{str(error).splitlines()[0] if str(error) else ''}"
        ) from None


def study(loaded: LoadedSweep, url: str | None):
    """The sweep's study, made if new (its `first` values queued). The sampler is seeded
    with `seed` in the process that makes the study only: a process that joins or resumes
    it would draw the same values again."""
    optuna = import_optuna()
    sweep = loaded.sweep
    where = storage(loaded, url)
    fresh = loaded.name not in optuna.study.get_all_study_names(where)
    folders = loaded.output / "trials"
    left = sorted(f.name for f in folders.iterdir() if f.name.isdigit()) if folders.is_dir() else []
    if fresh and left:  # said before the study is made: run again, it is still new
        raise LoopgenError(
            f"{folders / left[0]} belongs to no trial of the study {loaded.name!r} (in "
            f"{loaded.output}): an earlier study's trials are there; give this sweep another "
            "name or output_dir, or move the old study away"
        )
    created = optuna.create_study(
        storage=where,
        study_name=loaded.name,
        direction=sweep.direction,
        sampler=sampler(loaded, sweep.seed if fresh else None),
        pruner=pruner(loaded),
        load_if_exists=True,
    )
    if fresh:
        for values in sweep.first:
            created.enqueue_trial(
                {key: to_param(sweep.space[key], value) for key, value in values.items()},
                skip_if_exists=True,  # two machines that found the study new at once
            )
    return created


def open_study(loaded: LoadedSweep, url: str | None):
    """The sweep's study as it is, for `loopgen sweep status`: never made, never changed."""
    optuna = import_optuna()
    # The default journal file is not made by reading it.
    missing = url is None and not (loaded.output / STORAGE_FILE).exists()
    where = None if missing else storage(loaded, url)
    if where is None or loaded.name not in optuna.study.get_all_study_names(where):
        folders = loaded.output / "trials"
        if folders.is_dir() and any(f.name.isdigit() for f in folders.iterdir()):
            shown = url or loaded.output / STORAGE_FILE
            raise LoopgenError(
                f"{loaded.path}: {folders} holds trials, but {shown} holds no study "
                f"{loaded.name!r}: the study is in the storage the sweep ran on; pass it with "
                "--storage"
            )
        raise LoopgenError(
            f"{loaded.path}: no trial has run yet: the storage holds no study {loaded.name!r} "
            f"(run `loopgen sweep {loaded.path}`)"
        )
    return optuna.load_study(study_name=loaded.name, storage=where)


def sampler(loaded: LoadedSweep, seed: int | None):
    optuna = import_optuna()
    sweep = loaded.sweep
    kind = sweep.sampler.kind
    if kind == "tpe":
        return optuna.samplers.TPESampler(n_startup_trials=sweep.sampler.startup_trials, seed=seed)
    if kind == "random":
        return optuna.samplers.RandomSampler(seed=seed)
    grid = {key: [to_param(d, v) for v in grid_values(d)] for key, d in sweep.space.items()}

    class Grid(optuna.samplers.GridSampler):
        def after_trial(self, study, trial, state, values):
            """Optuna's GridSampler stops `study.optimize()` once its grid is done, and
            raises outside it; a sweep asks and tells, and ends after `trials` trials."""

    return Grid(grid, seed=seed)


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
