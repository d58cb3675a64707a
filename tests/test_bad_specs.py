"""Broken specs, each a real mistake (tests/bad_specs/, the first line says which): `render`
fails with a message naming the field path (or file and line) and the fix, exit 1, no
traceback, nothing written. The messages are snapshot-tested: a change to one shows in review
(update with `pytest tests/test_bad_specs.py --snapshot-update`)."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import ROOT, run_cli

BAD = sorted(
    path for path in (ROOT / "tests" / "bad_specs").iterdir() if path.suffix in (".py", ".json")
)  # not the __pycache__ a `python -m compileall .` leaves beside them

MACHINE_MEMORY = 24 * 2**30
"""The memory the checks measure against (the replay buffer that does not fit says how much
would), the same on every machine: not the machine's own, whose exact size differs."""


@pytest.fixture(autouse=True)
def same_machine_memory(monkeypatch):
    monkeypatch.setenv("LOOPGEN_MACHINE_MEMORY", str(MACHINE_MEMORY))


def test_there_are_enough_mistakes_and_each_says_what_it_is():
    assert len(BAD) >= 40
    for path in BAD:
        if path.suffix == ".py":
            assert path.read_text().startswith("# Mistake: "), path.name


@pytest.mark.parametrize("path", BAD, ids=lambda p: p.name)
def test_bad_spec_fails_cleanly(path: Path, tmp_path, snapshot):
    relative = path.relative_to(ROOT).as_posix()
    out = tmp_path / "out" / "train.py"
    proc = run_cli("render", relative, "-o", str(out))
    assert proc.returncode == 1, proc.stdout[-2000:]
    assert proc.stdout == ""
    assert proc.stderr.startswith(f"error: {relative}"), proc.stderr
    assert "Traceback" not in proc.stderr
    assert not (tmp_path / "out").exists()  # nothing written, not even the .loopgen/ folder
    assert proc.stderr == snapshot
