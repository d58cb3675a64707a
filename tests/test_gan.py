"""GANs: the spec rules, and real runs where the alternating step is the one DCGAN (or WGAN-GP,
with its nested tape and critic steps, also under mixed_float16 loss scaling) describes,
checked against a step computed by hand; the checkpoint holds both networks and both
optimizers (the noise is a function of the step: a resumed run ends bit-exactly where an
uninterrupted one does), and the generator is exported and samples its images to
TensorBoard."""

from __future__ import annotations

import json

import data
import numpy as np
import pytest
from helpers import records, run_preloaded, run_python, tf_check
from test_models import stopped_at
from test_spec_validation import reject_set


@pytest.mark.parametrize(
    ("overrides", "phrases"),
    [
        (['loss={"kind": "mean_squared_error"}'],
         ["training is a GAN, and loss is set", "remove loss"]),
        (['data.validation={"kind": "split"}'], ["data.validation is set for a GAN"]),
        (["training.latent_dim=64"],
         ["training.generator.input_shape=(32,)", "training.latent_dim=64"]),
        (["training.generator.layers[7].activation=relu"],
         ["training.generator.layers[7]", "tanh", "sigmoid"]),
        (["training.discriminator.layers[5].units=2"],
         ["training.discriminator outputs shape (2,)"]),
        (["data.train.image_size=32"], ["(16, 16, 3)", "(32, 32, 3)", "data.train.image_size"]),
        (["gradients.clip_norm=1.0"], ["gradients is set for a GAN"]),
        (["performance.xla=on"], ["performance.xla='on' for a GAN"]),
        (["training.generator.layers[4].strides=1"],
         ["training.generator makes images of shape (8, 8, 3)",
          "training.discriminator.input_shape"]),
    ],
)  # fmt: skip
def test_gan_mistakes_are_named(overrides, phrases):
    message = reject_set("shapes_dcgan", *overrides, errors=0)
    for phrase in phrases:
        assert phrase in message, message


@pytest.mark.parametrize(
    ("overrides", "phrases"),
    [
        (["training.penalty=null"], ["training.loss='wasserstein' without training.penalty",
                                     "GradientPenalty"]),
        (["training.loss=cross_entropy"], ["GradientPenalty() with training.loss='cross_entropy'",
                                           "R1()"]),
        (["training.label_smoothing=0.1"], ["training.label_smoothing is set"]),
        (['training.discriminator.layers[3]={"kind": "batch_normalization"}'],
         ["training.discriminator.layers[3] is a BatchNormalization", "LayerNormalization"]),
    ],
)  # fmt: skip
def test_wgan_gp_mistakes_are_named(overrides, phrases):
    message = reject_set("shapes_wgan_gp", *overrides, errors=0)
    for phrase in phrases:
        assert phrase in message, message


def small(tmp_path, example="shapes_dcgan", export=False) -> list[str]:
    """Small data, a log a step, and no export unless the test looks at it."""
    return [*data.small_data_overrides(example, tmp_path), "loop.log_every_steps=1",
            *([] if export else ["export.saved_model=false"])]  # fmt: skip


@pytest.mark.slow
@pytest.mark.parametrize(
    ("example", "precision", "steps", "tolerance"),
    [
        ("shapes_dcgan", "float32", 1, 1e-5),
        ("shapes_wgan_gp", "float32", 2, 1e-6),
    ],
)
def test_the_alternating_step_is_the_papers(example, precision, steps, tolerance, render, tmp_path):
    sgd = '{"kind": "sgd", "learning_rate": 0.05}'
    optimizers = [f"training.generator_optimizer={sgd}", f"training.discriminator_optimizer={sgd}"]
    critic = ["training.critic_steps=2"] if example == "shapes_wgan_gp" else []
    every_step = 'checkpoint={"every_steps": 1, "keep": 5}'
    script = render(example, *small(tmp_path, example), *optimizers, *critic, every_step,
                    f"performance.precision={precision}")  # fmt: skip
    out = tmp_path / "run"
    run_python(script, "--max-steps", "0", "--output-dir", str(out), cwd=tmp_path)
    run_python(script, "--max-steps", str(steps), "--output-dir", str(out), cwd=tmp_path)
    result = tf_check("gan_steps", str(script), str(out), "0.05", precision, str(steps),
                      cwd=tmp_path)  # fmt: skip
    assert result["count"] >= 12 and result["max_diff"] <= tolerance, result
    assert result["updates"]["discriminator"] >= 1 and result["updates"]["generator"] >= 1
    assert result["moved"] > 100 * tolerance, result  # the step did train


@pytest.mark.slow
def test_the_gradient_penalty_is_scaled_under_mixed_precision(render, tmp_path):
    """The penalty's inner tape differentiates the critic's scores scaled by the loss scale:
    unscaled, the float16 gradients of a young critic's small scores underflow."""
    script = render("shapes_wgan_gp", "performance.precision=mixed_float16")
    result = tf_check("penalty_under_loss_scaling", str(script), cwd=tmp_path)
    assert result["penalty_diff"] <= 1e-6 and result["gradient_diff"] <= 1e-6, result
    assert result["unscaled_gradient_diff"] > 1e-3, result  # what the scaling prevents


@pytest.mark.slow
def test_gan_resumes_exactly_and_exports_its_generator(render, tmp_path):
    """Resumed at an epoch's end (step 3) and mid-epoch (step 2): the straight run's values.
    The run resumed at step 3 starts from the straight run's checkpoint of step 3 (it keeps
    steps 3 and 6), as a run of 1 epoch leaves it, rather than training that epoch again."""
    script = render("shapes_dcgan", *small(tmp_path, export=True))
    straight, split, mid = tmp_path / "straight", tmp_path / "split", tmp_path / "mid"
    flags = ["--deterministic"]
    run_python(script, "--epochs", "2", "--output-dir", str(straight), *flags, cwd=tmp_path)
    stopped_at(straight / "checkpoints", split / "checkpoints", 3)
    resumed = run_python(script, "--epochs", "2", "--output-dir", str(split), *flags,
                         cwd=tmp_path)  # fmt: skip
    assert f"Resumed from {split / 'checkpoints' / 'ckpt-3'} at step 3" in resumed.stdout
    run_python(script, "--max-steps", "2", "--output-dir", str(mid), *flags, cwd=tmp_path)
    run_python(script, "--epochs", "2", "--output-dir", str(mid), *flags, cwd=tmp_path)
    results = json.loads(run_preloaded("-c", COMPARE, str(straight / "checkpoints"),
                                       str(split / "checkpoints"), str(mid / "checkpoints"),
                                       cwd=tmp_path).stdout.splitlines()[-1])  # fmt: skip
    for result in results:
        # Both networks, both optimizers' slots, and the noise generator's state.
        assert result["same_keys"] and result["step"] == 6 and result["max_diff"] == 0.0, result
        assert result["count"] >= 40
    assert [r["step"] for r in records(split)] == [4, 5, 6]
    logged = [r for r in records(mid) if "generator_loss" in r]
    assert [r["step"] for r in logged] == list(range(1, 7))
    assert all(0 < r["real_score"] < 1 and 0 < r["fake_score"] < 1 for r in logged)

    # The exported generator, loaded without the script: noise in, images of the data's shape
    # and range out.
    probe = (
        "import numpy as np, tensorflow as tf, sys\n"
        "g = tf.saved_model.load(sys.argv[1])\n"
        "x = g.serve(tf.random.normal((5, 32))).numpy()\n"
        "print(x.shape, float(x.min()), float(x.max()))\n"
    )
    proc = run_preloaded("-c", probe, str(straight / "export" / "generator"), cwd=tmp_path)
    shape, low, high = proc.stdout.strip().rsplit(" ", 2)
    assert shape.endswith("(5, 16, 16, 3)") and -1 <= float(low) < float(high) <= 1
    assert np.isfinite([float(low), float(high)]).all()


COMPARE = """
import json, sys

import tf_checks

straight, *others = sys.argv[1:]
print(json.dumps([tf_checks.compare_checkpoints(straight, other) for other in others]))
"""
"""tf_checks.compare_checkpoints of a run's checkpoints (argv[1]) and each other run's, in one
process."""


@pytest.mark.slow
def test_r1_penalty_trains_a_cross_entropy_gan(render, tmp_path):
    """R1 on the DCGAN: the penalty on the real images' gradients is logged, positive and
    finite, and equals a hand-computed ||grad D(x)||^2 / 2 for the script's discriminator."""
    script = render("shapes_dcgan", *small(tmp_path), 'training.penalty={"kind": "r1"}')
    out = tmp_path / "run"
    run_python(script, "--max-steps", "3", "--output-dir", str(out), cwd=tmp_path)
    logged = [r["r1_penalty"] for r in records(out) if "r1_penalty" in r]
    assert len(logged) == 3 and all(0 < p < 1e6 for p in logged), logged
    result = tf_check("r1_reference", str(script), cwd=tmp_path)
    assert result["max_diff"] <= 1e-6 and result["penalty"] > 0, result


@pytest.mark.slow
def test_an_overflowing_penalty_is_a_skipped_step_not_a_divergence(render, tmp_path):
    """Under mixed_float16 the penalty's inner gradient overflows float16 at Keras' first loss
    scale (2**15): the optimizer skips that update and halves the scale, and the run goes on
    (without the guard the NaN penalty stops it at step 1 as diverged)."""
    mixed = ["training.critic_steps=1", "performance.precision=mixed_float16"]
    script = render("shapes_wgan_gp", *small(tmp_path, "shapes_wgan_gp"), *mixed,
                    'checkpoint={"every_steps": 1}')  # fmt: skip
    out = tmp_path / "run"
    run_python(script, "--max-steps", "3", "--output-dir", str(out), cwd=tmp_path)
    result = tf_check("finite_checkpoint", str(out / "checkpoints"), cwd=tmp_path)
    assert result["all_finite"] and result["step"] == 3, result
    logged = [r for r in records(out) if "gradient_penalty" in r]
    assert [r["step"] for r in logged] == [1, 2, 3]
    assert all(r["gradient_penalty"] == r["gradient_penalty"] for r in logged)  # no NaN


@pytest.mark.slow
def test_uneven_replica_slices_draw_what_one_device_draws(render, tmp_path):
    """29 images in batches of 12: the epoch's last batch (step 3) of 5 splits over three
    replicas as 1, 2 and 2 images, and each draws the noise and penalty points of its own images (a
    replica starting at id * (5 // 3) would draw its neighbour's)."""
    common = [*small(tmp_path, "shapes_wgan_gp"), "data.train.count=29", "data.batch_size=12",
              "training.critic_steps=2"]  # fmt: skip
    three = 'distribute.devices=["/cpu:0", "/cpu:1", "/cpu:2"]'
    single = render("shapes_wgan_gp", *common)
    mirrored = render("shapes_wgan_gp", *common, three, variant="mirrored", name="mirrored.py")
    for script, out in ((single, "single"), (mirrored, "mirrored")):
        run_python(script, "--max-steps", "3", "--deterministic", "--output-dir",
                   str(tmp_path / out), cwd=tmp_path)  # fmt: skip
    result = tf_check("compare_checkpoints", str(tmp_path / "single" / "checkpoints"),
                      str(tmp_path / "mirrored" / "checkpoints"), cwd=tmp_path)  # fmt: skip
    assert result["step"] == 3 and result["max_scaled_diff"] <= 1e-5, result


@pytest.mark.slow
@pytest.mark.parametrize("example", ["shapes_dcgan", "shapes_wgan_gp"])
def test_the_generated_images_come_closer_to_the_data(example, render, tmp_path):
    """A GAN's metric improving: the mean of 256 generated images (fixed noise) comes closer
    to the data's mean image over 48 steps (the generator starts near 0, the drawn shapes'
    background is not)."""
    script = render(example, "data.train.count=256", "data.batch_size=32",
                    'checkpoint={"every_steps": 8, "keep": 10}')  # fmt: skip
    out = tmp_path / "run"
    run_python(script, "--epochs", "6", "--output-dir", str(out), cwd=tmp_path)
    result = tf_check("generated_distance", str(script), str(out / "checkpoints"), cwd=tmp_path)
    distances = result["distances"]
    assert len(distances) == 6 and distances[-1] < 0.95 * distances[0], distances
