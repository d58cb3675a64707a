"""Fixtures shared by the tests."""

from __future__ import annotations

import fcntl
import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest
from helpers import render_into
from hypothesis import settings

# The suite draws the same examples every run (derandomized), so a failure reproduces and the
# time is known; HYPOTHESIS_PROFILE=deep draws new ones, five times as many. Inputs that once
# found a bug stay in the tests as explicit @example cases.
settings.register_profile("suite", derandomize=True, max_examples=80, deadline=None)
settings.register_profile("deep", max_examples=400, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "suite"))

# MLflow (the scripts that track runs, loopgen sweep) reports its use over the network unless
# told not to: no network at run time in tests. Set here, every subprocess inherits it.
os.environ["MLFLOW_DISABLE_TELEMETRY"] = "true"

DURATIONS = json.loads((Path(__file__).parent / "durations.json").read_text())
"""Seconds each test took in a recent run (tests/durations.py writes it)."""


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Longest first: with xdist handing out two tests at a time (pyproject.toml), the tests
    that run last are short ones, so both workers finish together. A test not measured yet
    counts as 20 s if it is marked slow."""

    def seconds(item: pytest.Item) -> float:
        default = 20.0 if item.get_closest_marker("slow") else 0.0
        return DURATIONS.get(item.nodeid, default)

    # tests/mutants.py runs a mutant's tests in the order it lists them, the likeliest and
    # cheapest to fail first, and stops at the first failure.
    if not os.environ.get("LOOPGEN_TESTS_AS_GIVEN"):
        items.sort(key=seconds, reverse=True)


@pytest.fixture
def render(tmp_path: Path):
    """Renders an example (with --set overrides, and another --variant) into tmp_path and
    returns the script path."""

    def _render(
        example: str,
        *overrides: str,
        name: str = "train.py",
        variant: str | None = None,
        cwd: Path | None = None,
    ) -> Path:
        return render_into(tmp_path / name, example, *overrides, variant=variant, cwd=cwd)

    return _render


@pytest.fixture(scope="session", autouse=True)
def autograph_cache(tmp_path_factory, worker_id) -> None:
    """One folder of AutoGraph's conversions for the whole run (autograph_cache.py), for the
    programs preloaded.py forks."""
    root = tmp_path_factory.getbasetemp()
    root = root.parent if worker_id != "master" else root
    os.environ["LOOPGEN_TESTS_AUTOGRAPH_CACHE"] = str(root / "autograph")


@pytest.fixture(scope="session")
def shared(tmp_path_factory, worker_id) -> Callable[[str, Callable[[Path], None]], Path]:
    """`shared(name, make)`: a folder that `make(folder)` filled, made once for the whole run:
    the first test process to ask makes it while the others wait on its lock. Tests only read
    it (a test that changes a run copies it first)."""
    root = tmp_path_factory.getbasetemp()
    root = (root.parent if worker_id != "master" else root) / "shared"
    root.mkdir(exist_ok=True)

    def once(name: str, make: Callable[[Path], None]) -> Path:
        folder, done = root / name, root / f"{name}.done"
        with open(root / f"{name}.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if not done.exists():
                folder.mkdir()  # a failed make leaves it: the next test fails on it, not on a mix
                make(folder)
                done.touch()
        return folder

    return once
