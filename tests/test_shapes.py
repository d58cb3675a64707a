"""Render-time shape checking (dsl/shapes.py): it catches mismatches before TensorFlow starts,
and the shapes it infers are the ones Keras builds."""

from __future__ import annotations

import json

import pytest
from helpers import EXAMPLES, run_cli, tf_check
from loopgen.dsl.loader import apply_override, load_spec
from loopgen.dsl.shapes import ShapeError, check_shapes
from loopgen.dsl.spec import Spec

CONV = {"kind": "conv2d", "filters": 4}
# (example, overrides): padding, strides, windows and transposed convolutions of each kind.
CASES = {
    "mnist_mlp": ("mnist_mlp", []),
    "cifar10_vgg": ("cifar10_vgg", []),
    "shapes_unet": ("shapes_unet", []),
    # Its TFDS source would import tensorflow_datasets: arrays instead (never read here).
    "pets_unet": (
        "pets_unet",
        ['data.train={"kind": "npz", "path": "x.npz"}', "data.validation=null"],
    ),
    "strided-valid-conv": (
        "mnist_mlp",
        [
            "model.input_shape=[29, 27, 1]",
            "model.layers="
            + json.dumps(
                [
                    {**CONV, "kernel_size": 5, "strides": 2},
                    {"kind": "max_pooling2d", "pool_size": 3, "strides": 2, "padding": "same"},
                    {**CONV, "kind": "conv2d_transpose", "kernel_size": 3, "strides": 2},
                    {
                        **CONV,
                        "kind": "conv2d_transpose",
                        "kernel_size": [2, 3],
                        "strides": [1, 2],
                        "padding": "same",
                    },
                    {"kind": "up_sampling2d", "size": [2, 1]},
                    {"kind": "flatten"},
                    {"kind": "dense", "units": 10},
                ]
            ),
        ],
    ),
}


def spec(example: str, overrides: list[str]) -> Spec:
    data = load_spec(EXAMPLES / f"{example}.py").model_dump(mode="json")
    for override in overrides:
        data = apply_override(data, override)
    return Spec.model_validate(data)


def inferred(s: Spec) -> list[int]:
    classes = {c.name: c for c in s.custom_layers}
    return list(check_shapes(s.model.input_shape, s.model.layers, classes))


def test_inferred_shapes_of_the_examples():
    assert inferred(spec("mnist_mlp", [])) == [10]
    assert inferred(spec("cifar10_vgg", [])) == [10]
    assert inferred(spec("shapes_unet", [])) == [32, 32, 4]


def test_a_skip_of_the_wrong_size_is_caught_with_both_shapes():
    s = spec("shapes_unet", [])
    data = s.model_dump(mode="json")
    data["model"]["layers"][2]["layers"][0]["kernel_size"] = 3
    with pytest.raises(ValueError, match=r"\(16, 16, 32\).*\(17, 17, 32\)"):
        Spec.model_validate(data)


def test_spatial_layers_need_a_channel_axis():
    s = spec("cifar10_vgg", [])
    with pytest.raises(ShapeError, match=r"gets shape \(32, 32\); set model.input_shape"):
        check_shapes((32, 32), s.model.layers, {c.name: c for c in s.custom_layers})


@pytest.mark.slow
@pytest.mark.parametrize("case", sorted(CASES))
def test_inferred_output_shape_is_the_one_keras_builds(case, tmp_path):
    example, overrides = CASES[case]
    args = ["render", str(EXAMPLES / f"{example}.py"), "-o", str(tmp_path / "train.py")]
    for override in overrides:
        args += ["--set", override]
    proc = run_cli(*args)
    assert proc.returncode == 0, proc.stderr
    keras = tf_check("output_shape", str(tmp_path / "train.py"), cwd=tmp_path)["shape"]
    assert keras == inferred(spec(example, overrides))
