"""Fixtures shared by the tests."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from helpers import EXAMPLES, run_cli
from hypothesis import settings

# The suite draws the same examples every run (derandomized), so a failure reproduces and the
# time is known; HYPOTHESIS_PROFILE=deep draws new ones, five times as many. Inputs that once
# found a bug stay in the tests as explicit @example cases.
settings.register_profile("suite", derandomize=True, max_examples=80, deadline=None)
settings.register_profile("deep", max_examples=400, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "suite"))

DURATIONS = json.loads((Path(__file__).parent / "durations.json").read_text())
"""Seconds each test took in a recent run (tests/durations.py writes it)."""


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Longest first: with xdist handing out two tests at a time (pyproject.toml), the tests
    that run last are short ones, so both workers finish together. A test not measured yet
    counts as 20 s if it is marked slow."""

    def seconds(item: pytest.Item) -> float:
        default = 20.0 if item.get_closest_marker("slow") else 0.0
        return DURATIONS.get(item.nodeid, default)

    items.sort(key=seconds, reverse=True)


@pytest.fixture
def render(tmp_path: Path):
    """Renders an example (with --set overrides, and another --variant) into tmp_path and
    returns the script path."""

    def _render(
        example: str, *overrides: str, name: str = "train.py", variant: str | None = None
    ) -> Path:
        out = tmp_path / name
        args = ["render", str(EXAMPLES / f"{example}.py"), "-o", str(out)]
        args += ["--variant", variant] if variant else []
        for override in overrides:
            args += ["--set", override]
        proc = run_cli(*args)
        assert proc.returncode == 0, proc.stderr
        return out

    return _render
