"""The model to serve (export/saved_model/1) takes what the training source holds and prepares
it as training did. Arrays (Npz, KerasDataset, Shapes) are checked on every example's run in
test_runs.py; here, an image directory of PNG and JPEG files of varied sizes: the served model
takes the files' bytes, decodes, resizes and rescales them, and names the classes."""

from __future__ import annotations

import json

import pytest
from helpers import run_python, tf_check
from test_runs import assert_serves_raw_examples

pytestmark = pytest.mark.slow


def test_an_image_directory_model_serves_png_and_jpeg_bytes(render, tmp_path):
    folder = tmp_path / "images"
    tf_check("write_image_files", str(folder), "6", cwd=tmp_path)
    source = {"kind": "image_directory", "path": str(folder), "image_size": [32, 32]}
    script = render(
        "cifar10_vgg",
        f"data.train={json.dumps(source)}",
        "data.validation=null",
        "data.batch_size=4",
        "model.layers[-1].units=2",  # two classes: dark, light
    )
    out = tmp_path / "run"
    run_python(script, "--max-steps", "2", "--output-dir", str(out), cwd=tmp_path)

    served = assert_serves_raw_examples(script, out, tmp_path)
    assert served["input"] == ["images", "string", [None]], served
    assert served["outputs"] == ["class_ids", "class_names", "probabilities", "scores"]
