"""GANs: the spec rules, and real runs where the alternating step is the one DCGAN describes
(checked against a step computed by hand), the checkpoint holds both networks, both optimizers
and the noise (a resumed run ends bit-exactly where an uninterrupted one does), and the
generator is exported and samples its images to TensorBoard."""

from __future__ import annotations

import data
import numpy as np
import pytest
from helpers import records, run_python, tf_check
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


def small(tmp_path) -> list[str]:
    return [*data.small_data_overrides("shapes_dcgan", tmp_path), "loop.log_every_steps=1"]


@pytest.mark.slow
def test_the_alternating_step_is_dcgans(render, tmp_path):
    sgd = '{"kind": "sgd", "learning_rate": 0.05}'
    optimizers = [f"training.generator_optimizer={sgd}", f"training.discriminator_optimizer={sgd}"]
    script = render("shapes_dcgan", *small(tmp_path), *optimizers, 'checkpoint={"every_steps": 1}')
    out = tmp_path / "run"
    run_python(script, "--max-steps", "0", "--output-dir", str(out), cwd=tmp_path)
    run_python(script, "--max-steps", "1", "--output-dir", str(out), cwd=tmp_path)
    result = tf_check("gan_first_step", str(script), str(out), "0.05", cwd=tmp_path)
    assert result["count"] >= 16 and result["max_diff"] <= 1e-5, result


@pytest.mark.slow
def test_gan_resumes_exactly_and_exports_its_generator(render, tmp_path):
    script = render("shapes_dcgan", *small(tmp_path))
    straight, split, mid = tmp_path / "straight", tmp_path / "split", tmp_path / "mid"
    flags = ["--deterministic"]
    run_python(script, "--epochs", "2", "--output-dir", str(straight), *flags, cwd=tmp_path)
    run_python(script, "--epochs", "1", "--output-dir", str(split), *flags, cwd=tmp_path)
    run_python(script, "--epochs", "2", "--output-dir", str(split), *flags, cwd=tmp_path)
    run_python(script, "--max-steps", "2", "--output-dir", str(mid), *flags, cwd=tmp_path)
    run_python(script, "--epochs", "2", "--output-dir", str(mid), *flags, cwd=tmp_path)
    for other in (split, mid):
        result = tf_check("compare_checkpoints", str(straight / "checkpoints"),
                          str(other / "checkpoints"), cwd=tmp_path)  # fmt: skip
        # Both networks, both optimizers' slots, and the noise generator's state.
        assert result["same_keys"] and result["step"] == 6 and result["max_diff"] == 0.0, result
        assert result["count"] >= 40
    logged = [r for r in records(split) if "generator_loss" in r]
    assert [r["step"] for r in logged] == list(range(1, 7))
    assert all(0 < r["real_score"] < 1 and 0 < r["fake_score"] < 1 for r in logged)

    # The exported generator: noise in, images of the data's shape and range out.
    import subprocess
    import sys

    probe = (
        "import numpy as np, tensorflow as tf, sys\n"
        "g = tf.saved_model.load(sys.argv[1])\n"
        "x = g.serve(tf.random.normal((5, 32))).numpy()\n"
        "print(x.shape, float(x.min()), float(x.max()))\n"
    )
    proc = subprocess.run([sys.executable, "-c", probe, str(straight / "export" / "generator")],
                          capture_output=True, text=True, check=True)  # fmt: skip
    shape, low, high = proc.stdout.strip().rsplit(" ", 2)
    assert shape.endswith("(5, 16, 16, 3)") and -1 <= float(low) < float(high) <= 1
    assert np.isfinite([float(low), float(high)]).all()
