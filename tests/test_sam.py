"""optimizer=SAM (issue 62 #5): the generated step is sharpness-aware minimization as Foret et
al. write it, checked against a step recomputed by hand from the checkpoints (tf_checks.py
sam_first_step); the loss it logs is the loss at the weights, not at the perturbed ones. Its
exact resume and its replicas are in the matrices of test_faults.py and test_distributed.py."""

from __future__ import annotations

import data
import pytest
from helpers import records, run_python, tf_check

pytestmark = pytest.mark.slow

SGD_SAM = 'optimizer={"kind": "sam", "base": {"kind": "sgd", "learning_rate": 0.5}, "rho": 0.05}'


def test_a_sam_step_equals_the_two_pass_step_written_by_hand(render, tmp_path):
    """The first step from ckpt-0 to ckpt-1 with plain SGD as the base: w - lr * g(w + e),
    e = rho * g(w) / ||g(w)||, within float rounding, and far from plain SGD's step; the
    loss logged at step 1 is the loss at w."""
    script = render(
        "shapes_sam", *data.small_data_overrides("shapes_sam", tmp_path), SGD_SAM,
        "loop.log_every_steps=1", 'checkpoint={"every_steps": 1, "keep": 10}',
    )  # fmt: skip
    out = tmp_path / "run"
    run_python(script, "--max-steps", "0", "--output-dir", str(out), cwd=tmp_path)
    run_python(script, "--max-steps", "1", "--output-dir", str(out), cwd=tmp_path)
    step = tf_check("sam_first_step", str(script), str(out), "0.5", "0.05", cwd=tmp_path)
    assert step["max_diff"] <= 1e-5, step
    # SAM's gradient is not the plain one: without the ascent the weights would be here.
    assert step["from_plain"] > 1e-3, step
    first = next(r for r in records(out) if "loss" in r)
    assert first["step"] == 1
    assert first["loss"] == pytest.approx(step["loss_at_weights"], rel=1e-5)
