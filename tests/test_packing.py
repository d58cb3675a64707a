"""SFT's packing (training=SFT(packing=True)), on the tiny Llama preset the tests save
themselves: the packed rows' loss against the same packing done again in NumPy, validation
left unpacked, and two replicas against one device. Resume after SIGKILL is in test_faults'
matrix (`sft_packed`); the bad specs in tests/bad_specs/sft_packing_*, dpo_with_packing."""

from __future__ import annotations

import json

import pytest
from data import small_data_overrides
from helpers import ROOT, TWO_CPUS, render_into, run_preloaded, run_python
from test_distributed import compared_at
from test_runs import PACKED, trained_example, trained_overrides

pytestmark = pytest.mark.slow


def packing_check(check: str, *args: str, cwd) -> dict:
    proc = run_preloaded(str(ROOT / "tests" / "packing_checks.py"), check, *args, cwd=cwd)
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_packed_rows_loss_is_numpys_of_the_same_packing_and_validation_is_unpacked(shared):
    """The first step's logged loss, from the preset's weights, against the NumPy loss of the
    first batch packed anew (best-fit decreasing, each example whole, its prompt masked): the
    mean over the response tokens of the batch. The same batch unpacked gives another loss
    (a token sees the examples before it in its row), so the check tells packed rows from
    unpacked ones. Validation is not packed: its loss is each example's alone, on the
    checkpoint's weights, and its perplexity the exp of that. (test_runs' packed run.)"""
    script, out, _ = trained_example(shared, "sums_sft_packed")
    result = packing_check("packed_first_loss", str(script), str(out), cwd=script.parent)
    # 16 examples of 7 or 8 tokens: 4 rows of 32, where unpacked 16 rows would be 3/4 padding.
    assert result["rows"] < result["examples"] / 3 and result["padding"] < 0.15, result
    assert abs(result["logged"] - result["expected"]) <= 1e-5 * result["expected"], result
    assert abs(result["unpacked"] - result["expected"]) > 1e-4, result
    assert abs(result["val_loss"] - result["val_expected"]) <= 1e-5 * result["val_expected"]
    assert abs(result["val_perplexity"] - result["val_exp"]) <= 1e-4 * result["val_exp"]


def test_packing_is_best_fit_decreasing_where_first_fit_packs_otherwise(tmp_path):
    """The script's pack_examples() on examples of 3, 20, 13 and 16 tokens, rows of 32: best fit
    decreasing (20 opens row 0, 16 row 1, 13 fits row 1 only, then 3 fits both and goes where
    it leaves the least room, row 1) against first fit (3 into row 0, the first it fits), both
    worked out here by hand."""
    script = render_into(tmp_path / "train.py", "sums_sft",
                         *small_data_overrides("sums_sft", tmp_path), *PACKED)  # fmt: skip
    lengths = [3, 20, 13, 16]
    result = packing_check("packed_lengths", str(script), json.dumps(lengths), cwd=tmp_path)
    assert result["capacity"] == 32, result

    def rows(*examples_of_rows):
        """Each row's examples, whole and in this order from column 0, then padding."""
        made = []
        for examples in examples_of_rows:
            row = [(e + 1) * 100 + t for e in examples for t in range(lengths[e])]
            made.append(row + [0] * (32 - len(row)))
        return made

    best_fit, first_fit = rows([1], [3, 2, 0]), rows([1, 0], [3, 2])
    assert best_fit != first_fit
    assert result["rows"] == best_fit, result


def test_packed_sft_on_two_replicas_equals_one_device(shared, tmp_path):
    """Each global batch is packed whole, then its rows shared out: two replicas train on the
    rows one device trains on, the loss the mean over the response tokens of the global batch
    (their count summed over replicas). Packed per replica, the rows would differ. One
    device's run is test_runs' packed run, compared at its checkpoint of step 6."""
    _, straight, _ = trained_example(shared, "sums_sft_packed")
    mirrored = render_into(tmp_path / "mirrored.py", "sums_sft",
                           *trained_overrides(shared, "sums_sft_packed"), TWO_CPUS,
                           variant="mirrored")  # fmt: skip
    twin = tmp_path / "mirrored"
    flags = ["--epochs", "2", "--max-steps", "6", "--deterministic"]
    proc = run_python(mirrored, *flags, "--output-dir", str(twin), cwd=tmp_path)
    assert "2 replica(s) on this machine" in proc.stdout
    result, expected, logged = compared_at(straight / "checkpoints" / "ckpt-6", straight, twin, 6,
                                           tmp_path)  # fmt: skip
    assert result["same_keys"] and result["step"] == 6, result
    assert result["max_scaled_diff"] <= 1e-5, result
    assert sorted(logged) == sorted(expected)
    assert max(abs(expected[s] - logged[s]) / max(1, abs(expected[s])) for s in expected) <= 1e-5
