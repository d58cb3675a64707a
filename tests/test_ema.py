"""ema=EMA (issue 62 #2): the exponential moving average of the weights follows its formula
at every step from the initial weights, is what validation scores and the export serves, and
the raw weights train; read from the checkpoints by variable name (tf_checks.py ema_state),
not through the script. Its exact resume and its replicas are in the matrices of
test_faults.py and test_distributed.py."""

from __future__ import annotations

import data
import pytest
from helpers import records, run_python, tf_check

pytestmark = pytest.mark.slow


def test_the_average_follows_its_formula_and_is_what_validation_scores_and_the_export_serves(
    render, tmp_path
):
    script = render(
        "fashion_validation", *data.small_data_overrides("fashion_validation", tmp_path),
        "data.batch_size=32", 'ema={"decay": 0.9}', 'checkpoint={"every_steps": 1, "keep": 100}',
    )  # fmt: skip
    out = tmp_path / "run"
    run_python(script, "--max-steps", "0", "--output-dir", str(out), cwd=tmp_path)
    run_python(script, "--epochs", "2", "--output-dir", str(out), cwd=tmp_path)
    state = tf_check("ema_state", str(script), str(out), "0.9", str(tmp_path / "v.npz"),
                     cwd=tmp_path)  # fmt: skip
    assert state["checkpoints"] == 7 and state["weights"] == 6, state  # ckpt-0 to ckpt-6
    assert state["start"] == 0.0, state  # it starts as the initial weights
    # ema = 0.9 * ema + 0.1 * w at each of the 6 steps, not 0.1 * ema + 0.9 * w.
    assert state["follows"] <= 1e-6 and state["apart"] > 1e-3, state
    assert state["export_from_average"] <= 1e-5 < 1e-4 < state["export_from_weights"], state
    last = [r for r in records(out) if "val_loss" in r][-1]
    assert last["step"] == 6
    assert last["val_loss"] == pytest.approx(state["average_loss"], rel=1e-5)
    assert abs(state["weights_loss"] - state["average_loss"]) > 1e-3, state
    # --init-from: a new run's average starts from the weights it loaded, not from those drawn.
    started = tmp_path / "started"
    run_python(script, "--max-steps", "0", "--init-from", str(out), "--output-dir", str(started),
               cwd=tmp_path)  # fmt: skip
    loaded = tf_check("ema_state", str(script), str(started), "0.9", str(tmp_path / "v.npz"),
                      cwd=tmp_path)  # fmt: skip
    assert loaded["checkpoints"] == 1 and loaded["start"] == 0.0, loaded
    # The weights loaded are out's own (they train on), not its average.
    assert loaded["weights_loss"] == pytest.approx(state["weights_loss"], rel=1e-6), loaded


def test_a_gans_generator_average_follows_its_formula_and_is_what_the_export_serves(
    render, tmp_path
):
    """ema=EMA on a GAN averages its generator: the checkpoints' average follows the formula
    from the initial weights, the exported generator is the average (the raw one differs),
    and --init-from starts the average from the generator loaded."""
    script = render("shapes_dcgan", *data.small_data_overrides("shapes_dcgan", tmp_path),
                    'ema={"decay": 0.9}', 'checkpoint={"every_steps": 1, "keep": 100}')  # fmt: skip
    out = tmp_path / "run"
    run_python(script, "--max-steps", "0", "--output-dir", str(out), cwd=tmp_path)
    run_python(script, "--epochs", "2", "--output-dir", str(out), cwd=tmp_path)
    state = tf_check("gan_ema_state", str(script), str(out), "0.9", cwd=tmp_path)
    assert state["checkpoints"] == 7, state  # ckpt-0 to ckpt-6: 96 images, 32 a batch
    assert state["start"] == 0.0, state
    assert state["follows"] <= 1e-6 and state["apart"] > 1e-3, state
    assert state["export_from_average"] <= 1e-5 < 1e-4 < state["export_from_weights"], state
    started = tmp_path / "started"
    run_python(script, "--max-steps", "0", "--init-from", str(out), "--output-dir", str(started),
               cwd=tmp_path)  # fmt: skip
    loaded = tf_check("gan_ema_state", str(script), str(started), "0.9", cwd=tmp_path)
    assert loaded["checkpoints"] == 1 and loaded["start"] == 0.0, loaded
