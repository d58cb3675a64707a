"""The list of mutants (tests/mutants.py) against the code as it is: every mutant's text is in
its file exactly once, and every test it names exists. Running the mutants takes an hour
(`python -m tests.mutants`); this takes seconds, so that a change to a guarded line is noticed
at once: the mutant that undoes the guard must then be written again."""

from __future__ import annotations

import subprocess
import sys

import mutants
from helpers import ROOT


def test_every_mutants_text_is_in_its_file_exactly_once():
    assert len(mutants.MUTANTS) >= 67
    ids = [m.id for m in mutants.MUTANTS]
    assert len(set(ids)) == len(ids), sorted(i for i in ids if ids.count(i) > 1)
    found = {m.id: mutants.occurrences(m) for m in mutants.MUTANTS}
    assert {i: n for i, n in found.items() if n != 1} == {}, "texts not found exactly once"
    assert all(m.find != m.replace and m.tests and m.why for m in mutants.MUTANTS)


def test_every_test_a_mutant_names_exists():
    named = sorted({test for m in mutants.MUTANTS for test in m.tests})
    files = sorted({test.split("::")[0] for test in named})
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
         "-o", "addopts=", *files],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    collected = set(proc.stdout.splitlines())
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    missing = [t for t in named if "::" in t and t not in collected]
    assert missing == [], missing


def test_every_mutant_is_named_in_the_proofs_page():
    """docs/proofs.md says which claim each mutant undoes: a mutant added without its row is a
    guard the page does not show (eight were, before this test)."""
    page = (ROOT / "docs" / "proofs.md").read_text()
    assert [m.id for m in mutants.MUTANTS if f"`{m.id}`" not in page] == []
