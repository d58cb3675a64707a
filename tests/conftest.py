"""Fixtures shared by the tests."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import EXAMPLES, run_cli


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
