"""training=VAE (issue 62 #4, #7): the training example (the codes' noise, the reparameterized
codes, the two loss terms, the KL weight's warm-up) and the prior's samples equal references
written apart from the script (tf_checks.py vae_formulas); a trained script logs the terms
apart, and its logged loss is their sum at the weight of each step; `sample` writes a PNG
grid the export's decoder draws alike; TensorBoard gets samples and reconstructions at each
validation. Its exact resume and its replicas are in the matrices of test_faults.py and
test_distributed.py."""

from __future__ import annotations

import data
import pytest
from helpers import records, run_preloaded, run_python, tf_check

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("reconstruction", ["bernoulli", "gaussian"])
def test_the_training_example_terms_and_samples_equal_references(reconstruction, render, tmp_path):
    script = render("shapes_vae", f"training.reconstruction={reconstruction!r}".replace("'", '"'))
    found = tf_check("vae_formulas", str(script), reconstruction, cwd=tmp_path)
    assert found["warmup"] == 300, found  # the example's, so the weight's ramp is checked
    for name in ("noise", "replica_slice", "mean", "log_variance", "decoded", "kl", "samples"):
        assert found[name] <= 1e-5, (name, found)
    assert found["reconstruction"] <= 1e-5, found  # relative: a sum over 768 pixels
    assert found["kl_weight"] <= 1e-7, found


def test_a_trained_vae_logs_its_terms_samples_and_exports(render, tmp_path):
    """Four epochs of one batch each (the logged means are then a step's values), the KL
    weight warming up over 3 of the 4 steps: each step's
    logged loss is its reconstruction plus the step's weight times its KL, validation's at the
    full weight; `sample` writes the grid the export's decoder draws from the same seed;
    validation wrote both grids to TensorBoard; a bad count stops with a message."""
    script = render("shapes_vae", *data.small_data_overrides("shapes_vae", tmp_path),
                    "data.batch_size=96", "training.kl_warmup_steps=3",
                    "training.beta=2.0")  # fmt: skip
    out = tmp_path / "run"
    run_python(script, "--epochs", "4", "--output-dir", str(out), cwd=tmp_path)
    logged = records(out)
    train = [r for r in logged if "loss" in r and "val_loss" not in r]
    assert [r["step"] for r in train] == [1, 2, 3, 4], logged
    for r in train:
        weight = 2.0 * min(1.0, (r["step"] - 1) / 3)  # the steps done before this one
        expected = r["reconstruction"] + weight * r["kl"]
        assert r["loss"] == pytest.approx(expected, rel=1e-5), (r, weight)
        assert r["kl"] > 0, r
    validated = [r for r in logged if "val_loss" in r]
    assert [r["step"] for r in validated] == [1, 2, 3, 4], logged
    for r in validated:
        expected = r["val_reconstruction"] + 2.0 * r["val_kl"]
        assert r["val_loss"] == pytest.approx(expected, rel=1e-5), r
    grid = tmp_path / "grid.png"
    said = run_python(script, "sample", "--count", "5", "--seed", "3", "--grid", str(grid),
                      "--output-dir", str(out), cwd=tmp_path)  # fmt: skip
    assert "Wrote 5 samples" in said.stdout
    found = tf_check("compare_vae_export", str(script), str(out / "export"), str(grid), "3", "5",
                     cwd=tmp_path)  # fmt: skip
    assert found["shape"] == [16, 80, 3], found  # 5 images of 16x16 in one row
    assert found["max_diff"] <= 1, found  # rounding to 8 bits
    assert found["other_seed_diff"] > 0.2, found  # 4 steps in: codes barely matter yet
    assert found["encoded"] == {"mean": [5, 8], "log_variance": [5, 8]}, found
    assert found["grids"] == {"samples": 4, "reconstructions": 4}, found
    failed = run_preloaded(str(script), "sample", "--count", "0", "--grid",
                           str(tmp_path / "no.png"), "--output-dir", str(out), cwd=tmp_path,
                           check=False)  # fmt: skip
    assert failed.returncode != 0 and "at least one image" in failed.stderr, failed.stderr[-500:]
    assert not (tmp_path / "no.png").exists()
