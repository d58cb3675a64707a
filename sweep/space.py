"""Loads a sweep file and checks it against its spec before anything runs: every path is a
field of the spec, every distribution's values fit the field, the objective is a value the run
logs. Every problem is reported, as `sweep.<field>: message`."""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from ..dsl.loader import FileData, _import_object, _split_path, apply_override, load_spec
from ..dsl.spec import Spec
from ..dsl.sweep import Choice, IntRange, Sweep
from ..errors import SpecError, validation_problems


@dataclass(frozen=True)
class LoadedSweep:
    sweep: Sweep
    path: Path
    """The sweep file."""
    spec_path: Path
    spec: Spec
    folder: Path
    """Where the trials run: the sweep file's folder (the spec's data paths are read from it)."""
    output: Path
    """The study file and trials/."""
    name: str
    """The study's name."""
    per_epoch: bool
    """Whether the objective is a validation value, reported to the pruner by epoch (trials
    of other batch sizes validate at other steps, but after the same epochs)."""
    started_in: Path
    """The directory the sweep was started from: the paths it prints are relative to it, and
    validating the spec found the modules of yours it names there too (after the spec's
    folder)."""

    def overrides(self, values: dict[str, Any]) -> list[str]:
        """The `--set` overrides of a trial's values, in the space's order."""
        return [f"{key}={json.dumps(values[key])}" for key in self.sweep.space if key in values]

    def trial_spec(self, values: dict[str, Any]) -> Spec:
        """The base spec with a trial's values set (a SpecError if they do not validate)."""
        return load_spec(self.spec_path, self.sweep.spec_name, self.overrides(values))


def load_sweep(path: Path, name: str = "sweep") -> LoadedSweep:
    """The sweep file's Sweep, checked against its spec. A mistake is a SpecError of one line
    per problem, `<file>: sweep.<field>: message`."""
    path = Path(path)
    found = _import_object(path, name, Sweep)
    if isinstance(found, dict):
        try:
            found = Sweep.model_validate(found)
        except ValidationError as error:
            problems = validation_problems(error, "sweep", Sweep, keys=True)
            # The line of the part that failed, when there is one problem.
            line = isinstance(found, FileData) and found.where and len(problems) == 1
            where = found.where if line else path  # type: ignore[union-attr]
            raise SpecError(f"{where}: " + f"\n{where}: ".join(problems)) from None
    if not isinstance(found, Sweep):
        raise SpecError(
            f"{path}: {name!r} is an object of type {type(found).__name__}, not a Sweep; bind "
            "it to Sweep(...) from loopgen.dsl.sweep"
        )
    sweep = found
    folder = path.resolve().parent
    spec_path = Path(os.path.normpath(folder / sweep.spec))
    try:
        spec = load_spec(spec_path, sweep.spec_name)
    except SpecError as error:
        raise SpecError(f"{path}: sweep.spec: {error}") from None
    problems = [
        *_space_problems(sweep, spec, spec_path),
        *_objective_problems(sweep, spec),
        *_sampler_problems(sweep),
    ]
    if problems:
        raise SpecError(f"{path}: " + f"\n{path}: ".join(problems))
    output = folder / (sweep.output_dir or f"sweeps/{path.stem}")
    per_epoch = sweep.objective in logged_values(spec)[1]
    name = sweep.name or path.stem
    return LoadedSweep(sweep, path, spec_path, spec, folder, output, name, per_epoch, Path.cwd())


def _space_problems(sweep: Sweep, spec: Spec, spec_path: Path) -> list[str]:
    data = spec.model_dump(mode="json")
    problems = []
    for key, distribution in sweep.space.items():
        where = f"sweep.space[{key!r}]"
        try:
            current = _field(data, key)
        except (KeyError, IndexError, TypeError, SpecError):
            problems.append(
                f"{where}: not a field of the spec {spec_path.name} (paths are written as "
                "--set takes them, e.g. optimizer.learning_rate or model.layers[1].units; "
                "`loopgen validate` lists the spec's fields)"
            )
            continue
        for value in _probes(distribution):
            problem = _misfit(data, key, value)
            if problem:
                problems.append(f"{where}: the value {json.dumps(value)} does not fit: {problem}")
                break
        else:
            problem = _kind_problem(data, key, distribution, current)
            if problem:
                problems.append(f"{where}: {problem}")
    for i, values in enumerate(sweep.first):
        for key in values:
            if key not in sweep.space:
                problems.append(f"sweep.first[{i}]: {key!r} is not a path of sweep.space")
        unknown = [k for k in values if k not in sweep.space]
        missing = [k for k in sweep.space if k not in values]
        if missing and not unknown:
            problems.append(f"sweep.first[{i}]: gives no value for {', '.join(missing)}")
        outside = [
            f"{key}={json.dumps(value)} is not a value of {sweep.space[key]!r}"
            for key, value in values.items()
            if key in sweep.space and not _drawable(sweep.space[key], value)
        ]
        problems.extend(f"sweep.first[{i}]: {problem}" for problem in outside)
        if not unknown and not missing and not outside:
            overridden = data
            for key, value in values.items():
                overridden = apply_override(overridden, f"{key}={json.dumps(value)}")
            problem = _spec_problem(overridden)
            if problem:
                problems.append(f"sweep.first[{i}]: these values do not fit the spec: {problem}")
    return problems


def _kind_problem(data: dict, key: str, distribution: Any, current: Any) -> str | None:
    """Integers drawn for a field that takes fractions (IntRange on a learning rate would try
    only 1, 2, 3), or fractions for one that takes only integers: a value between the ends,
    which fit, tells which the field takes."""
    if isinstance(distribution, Choice):
        return None
    low, high = distribution.low, distribution.high
    between = (low + (high - low) * share for share in (0.5, 0.25, 0.75, 0.1))
    fraction = next((value for value in between if value != int(value)), None)
    if fraction is None:
        return None
    takes_fractions = _misfit(data, key, fraction) is None
    if isinstance(distribution, IntRange) and takes_fractions:
        return (
            f"{key} takes fractions, and IntRange draws only the integers from {low} to {high}: "
            "draw it with Uniform or LogUniform, or list its values with Choice"
        )
    if not isinstance(distribution, IntRange) and not takes_fractions:
        shown = f" (it is {current} in the spec)" if isinstance(current, int) else ""
        return f"{key} takes integers{shown}: draw it with IntRange, or list its values with Choice"
    return None


def _drawable(distribution: Any, value: Any) -> bool:
    """Whether the distribution could draw the value (Optuna refuses others)."""
    if isinstance(distribution, Choice):
        return value in distribution.values
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    if isinstance(distribution, IntRange):
        return (
            value == int(value)
            and distribution.low <= value <= distribution.high
            and (value - distribution.low) % distribution.step == 0
        )
    return distribution.low <= value <= distribution.high


def _field(data: Any, key: str) -> Any:
    node = data
    for part in _split_path(key, key):
        if isinstance(part, str) and not isinstance(node, dict):
            raise KeyError(part)
        node = node[part]
    return node


def _probes(distribution: Any) -> list[Any]:
    """The values that show whether a distribution fits a field: its ends, or every choice."""
    if isinstance(distribution, Choice):
        return list(distribution.values)
    return [distribution.low, distribution.high]


def _misfit(data: dict, key: str, value: Any) -> str | None:
    """Why the spec does not validate with `key` set to `value`, in one line (None if it does)."""
    return _spec_problem(apply_override(data, f"{key}={json.dumps(value)}"))


def _spec_problem(data: dict) -> str | None:
    """Why the spec's data does not validate, in one line: its problems by their paths in the
    spec (`data.batch_size: ...`), separated by semicolons. None if it validates."""
    try:
        Spec.model_validate(data)
    except ValidationError as error:
        problems = validation_problems(error, "spec", Spec)
        return "; ".join(p.removeprefix("spec: ").removeprefix("spec.") for p in problems)
    return None


def grid_values(d: Choice | IntRange) -> list[Any]:
    """The values of a Choice or an IntRange, a grid's axis."""
    return list(d.values) if isinstance(d, Choice) else list(range(d.low, d.high + 1, d.step))


def logged_values(spec: Spec) -> tuple[list[str], list[str]]:
    """The values a run of the spec writes to metrics.jsonl: (training, validation)."""
    train = [*spec.log_names()]
    if spec.acts:  # the episodes finished since the last log
        return [*train, "episode_return", "episode_length"], []
    if spec.data.validation is not None or spec.training.kind in ("reptile", "maml"):
        validation = [f"val_{name}" for name in spec.log_names()]
    else:
        validation = []
    return train, validation


def _objective_problems(sweep: Sweep, spec: Spec) -> list[str]:
    if not spec.logging.jsonl:
        return [
            "sweep.objective: the trials are scored from metrics.jsonl, which the spec does not "
            "write: set logging.jsonl=True"
        ]
    train, validation = logged_values(spec)
    if sweep.objective in train or sweep.objective in validation:
        return []
    hint = (
        " (validation values need data.validation)"
        if sweep.objective.startswith("val_") and not validation
        else ""
    )
    return [
        f"sweep.objective: {sweep.objective!r} is not a value the run logs{hint}; it logs "
        + ", ".join([*train, *validation])
    ]


def _sampler_problems(sweep: Sweep) -> list[str]:
    if sweep.sampler.kind != "grid":
        return []
    if sweep.first:
        return ["sweep.first: GridSearch tries every combination of the space: remove first"]
    problems = [
        f"sweep.space[{key!r}]: GridSearch tries listed values: draw this field with Choice or "
        "IntRange, or use TPE or RandomSearch"
        for key, distribution in sweep.space.items()
        if not isinstance(distribution, Choice | IntRange)
    ]
    if problems:
        return problems
    size = math.prod(len(grid_values(d)) for d in sweep.space.values())
    if sweep.trials > size:
        return [
            f"sweep.trials: {sweep.trials} trials, but the grid has {size} combinations: a "
            f"grid is tried once each; set trials={size}"
        ]
    return []
