"""training=Diffusion and training=FlowMatching (issue 62 #1, #3, #7): the training example,
the schedule, the loss and the sampler's steps equal references written apart from the script
(tf_checks.py generative_formulas); a trained script samples a PNG grid, its export draws the
same images from (seed, labels, steps), TensorBoard gets a grid at each validation, and bad
sampling flags are refused. Their exact resume and their replicas are in the matrices of
test_faults.py and test_distributed.py."""

from __future__ import annotations

import data
import numpy as np
import pytest
from helpers import records, run_preloaded, run_python, tf_check

pytestmark = pytest.mark.slow

CASES = {
    # Guided flow matching: the path, the velocity, the dropped labels, two Euler steps.
    "flow_matching": ("shapes_flow", [], "velocity"),
    # DDPM: the cosine schedule (Nichol & Dhariwal), epsilon; two DDIM steps.
    "cosine_epsilon": ("shapes_diffusion", [], "epsilon"),
    # The linear schedule (Ho et al.) with v-prediction, and the clean image's prediction.
    "linear_v": (
        "shapes_diffusion",
        ['training.schedule={"kind": "linear"}', 'training.prediction="v"'],
        "v",
    ),
    "cosine_sample": ("shapes_diffusion", ['training.prediction="sample"'], "sample"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_training_example_schedule_loss_and_sampler_equal_references(case, render, tmp_path):
    example, overrides, prediction = CASES[case]
    script = render(example, *overrides)
    found = tf_check("generative_formulas", str(script), prediction, cwd=tmp_path)
    for name in ("inputs", "target", "time", "loss", "sampler"):
        assert found[name] <= 1e-5, (case, name, found)
    if example == "shapes_diffusion":
        assert found["schedule"] <= 1e-6 and found["levels"] >= 990, found
    else:
        assert found["labels_equal"], found
        assert found["dropout_rate"] == pytest.approx(0.1, abs=0.015), found


def test_a_trained_flow_model_samples_exports_and_writes_grids(render, tmp_path):
    """Two epochs of the guided example on small data: `sample` writes a PNG grid of the asked
    size, the export's sampler draws the same images from the same (seed, labels, steps,
    guidance), another seed other images; validation wrote sample grids to TensorBoard; bad
    flags stop with a message and exit non-zero, writing nothing."""
    script = render("shapes_flow", *data.small_data_overrides("shapes_flow", tmp_path),
                    "loop.log_every_steps=1")  # fmt: skip
    out = tmp_path / "run"
    run_python(script, "--epochs", "2", "--output-dir", str(out), cwd=tmp_path)
    assert [r["step"] for r in records(out) if "val_loss" in r] == [2, 4]  # 96 images, 64 a batch
    grid = tmp_path / "grid.png"
    said = run_python(script, "sample", "--count", "5", "--label", "1", "--steps", "4",
                      "--seed", "3", "--grid", str(grid), "--output-dir", str(out),
                      cwd=tmp_path)  # fmt: skip
    assert "Wrote 5 samples" in said.stdout
    found = tf_check("compare_sample_grid", str(script), str(out / "export"), str(grid), "3",
                     "1", "4", "5", cwd=tmp_path)  # fmt: skip
    assert found["shape"] == [16, 80, 3], found  # 5 images of 16x16 in one row
    assert found["max_diff"] <= 1, found  # rounding to 8 bits
    assert found["other_seed_diff"] > 10, found
    assert found["validation_grids"] == 2, found
    for flags, message in (
        (["--label", "3"], "the classes are 0 .. 2"),
        (["--count", "0"], "at least one image"),
    ):
        failed = run_preloaded(str(script), "sample", *flags, "--grid", str(tmp_path / "no.png"),
                               "--output-dir", str(out), cwd=tmp_path, check=False)  # fmt: skip
        assert failed.returncode != 0 and message in failed.stderr, (flags, failed.stderr[-500:])
        assert not (tmp_path / "no.png").exists()


def test_an_unconditional_model_refuses_a_label_to_sample(render, tmp_path):
    script = render("shapes_diffusion", *data.small_data_overrides("shapes_diffusion", tmp_path),
                    "data.validation=null")  # fmt: skip
    out = tmp_path / "run"
    run_python(script, "--max-steps", "2", "--output-dir", str(out), cwd=tmp_path)
    failed = run_preloaded(str(script), "sample", "--label", "1", "--output-dir", str(out),
                           cwd=tmp_path, check=False)  # fmt: skip
    assert failed.returncode != 0 and "trained without classes" in failed.stderr
    failed = run_preloaded(str(script), "sample", "--steps", "1001", "--output-dir", str(out),
                           cwd=tmp_path, check=False)  # fmt: skip
    assert failed.returncode != 0 and "DDIM takes 1 to TIMESTEPS=1000" in failed.stderr
    assert not (out / "samples.png").exists()
    # Without validation data the grid is written at each epoch's end.
    images = tf_check("image_tags", str(out / "logs" / "train"), cwd=tmp_path)
    assert images.get("samples") == 1, images
    assert np.isfinite(records(out)[-1]["loss"])


def test_the_class_conditional_examples_guided_samples_are_recognised(render, tmp_path):
    """Done-when of issue 62: shapes_flow as the example trains it (2,000 shapes, about 6,000
    steps), then 100 guided samples of each class from its export: a small classifier trained
    on real shapes labels at least 80 % of each class's as that class."""
    script = render("shapes_flow", "export.saved_model=true")
    out = tmp_path / "run"
    run_python(script, "--output-dir", str(out), cwd=tmp_path, timeout=1200)
    found = tf_check("recognised_samples", str(script), str(out / "export"), "100", cwd=tmp_path)
    assert found["real_accuracy"] >= 0.9, found
    assert all(share >= 0.8 for share in found["recognised"].values()), found
