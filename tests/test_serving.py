"""The model to serve (export/saved_model/1) takes what the training source holds and prepares
it as training did. Every example whose script serves is checked on its run in test_runs.py;
here, each kind of source on tiny data written by the test: an image directory of PNG and JPEG
files of varied sizes (the served model takes the files' bytes, decodes, resizes and rescales
them, and names the classes), a CSV file with a string column (the columns by name), TFRecord
files of PNG and JPEG images (the encoded bytes), a text file (the texts), and a TFDS dataset
(its images as TFDS decodes them, and its class names). Each is checked
in a fresh process that imports neither the script nor loopgen (helpers.serving_matches)."""

from __future__ import annotations

import json

import pytest
from data import houses_csv, reviews_tsv, runnable
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
    assert served["inputs"] == {"images": ["string", [None]]}, served
    assert served["outputs"] == ["class_ids", "class_names", "probabilities", "scores"]


def test_a_csv_model_serves_the_columns_it_reads_a_string_column_too(render, tmp_path):
    files = houses_csv(tmp_path / "houses", "train", 2, 12)
    # A column whose name cannot name a signature's input: it is served as area_m2.
    for path in (tmp_path / "houses").iterdir():
        path.write_text(path.read_text().replace("area,", "area m2,", 1))
    numeric = json.dumps(["area m2", "rooms", "age"])
    script = render("houses_tabular", f"data.train.files={files}", "data.validation=null",
                    f"data.train.features.numeric={numeric}", "data.batch_size=4")  # fmt: skip
    out = tmp_path / "run"
    run_python(script, "--max-steps", "2", "--output-dir", str(out), cwd=tmp_path)

    # The served model builds its inputs with the pipeline's own csv_inputs(): the numeric
    # columns stacked in the spec's order, normalized by the adapted layer, the city looked up.
    served = assert_serves_raw_examples(script, out, tmp_path)
    assert served["inputs"] == {
        "area_m2": ["float32", [None]],
        "rooms": ["float32", [None]],
        "age": ["float32", [None]],
        "city": ["string", [None]],
    }, served
    assert served["not_inputs"] == ["price"], served  # the label
    assert served["outputs"] == ["scores"], served


def test_a_tfrecord_model_serves_png_and_jpeg_bytes_decoded_and_rescaled(render, tmp_path):
    folder = tmp_path / "records"
    tf_check("write_image_tfrecords", str(folder), "train", "2", "6", "2", "", "png,jpeg",
             cwd=tmp_path)  # fmt: skip
    image = {"dtype": "string", "image": [32, 32]}
    source = {
        "kind": "tfrecord",
        "files": str(folder / "train-*.tfrecord"),
        "features": {"image": image, "label": {"dtype": "int64"}},
    }
    script = render(
        "cifar10_vgg",  # rescales by 1/255
        f"data.train={json.dumps(source)}",
        "data.validation=null",
        "data.batch_size=4",
        "model.layers[-1].units=2",  # two classes: dark, light
    )
    out = tmp_path / "run"
    run_python(script, "--max-steps", "2", "--output-dir", str(out), cwd=tmp_path)

    # The 40x40 images are decoded and resized to 32x32 by the pipeline's record_inputs(),
    # rescaled by its prepare_inputs() (a served model without it answers otherwise).
    served = assert_serves_raw_examples(script, out, tmp_path)
    assert served["unprepared"] > 1e-3, served
    assert served["inputs"] == {"image": ["string", [None]]}, served
    assert served["not_inputs"] == ["label"], served
    assert served["outputs"] == ["class_ids", "probabilities", "scores"], served


@pytest.mark.parametrize("labels", ["names", "ids"])
def test_a_text_model_serves_strings_and_names_the_classes(labels, render, tmp_path):
    path = tmp_path / "reviews.tsv"
    reviews_tsv(path, 40)
    if labels == "ids":
        path.write_text(path.read_text().replace("\tneg", "\t0").replace("\tpos", "\t1"))
    script = render("reviews_text", f"data.train.path={path}")
    out = tmp_path / "run"
    run_python(script, "--max-steps", "2", "--output-dir", str(out), cwd=tmp_path)

    # Labels that are names (neg, pos): the served model names the class of each text.
    served = assert_serves_raw_examples(script, out, tmp_path)
    assert served["inputs"] == {"texts": ["string", [None]]}, served
    names = ["class_names"] if labels == "names" else []
    assert served["outputs"] == sorted(["class_ids", *names, "probabilities", "scores"])


def test_a_tfrecord_model_serves_numeric_features_in_their_shape_beside_images(render, tmp_path):
    folder = tmp_path / "records"
    tf_check("write_image_tfrecords", str(folder), "train", "1", "8", "2", "", "png,jpeg", "yes",
             cwd=tmp_path)  # fmt: skip
    features = {
        "image": {"dtype": "string", "image": [32, 32]},
        "stats": {"dtype": "float32", "shape": [2]},
        "label": {"dtype": "int64"},
    }
    source = {"kind": "tfrecord", "files": str(folder / "train-*.tfrecord"), "features": features}
    model = {
        "kind": "graph",
        "inputs": {"image": {"shape": [32, 32, 3]}, "stats": {"shape": [2]}},
        "nodes": [
            {"name": "pooled", "layer": {"kind": "global_average_pooling2d"}, "inputs": "image"},
            {"name": "joined", "layer": {"kind": "concatenate"}, "inputs": ["pooled", "stats"]},
            {"name": "logits", "layer": {"kind": "dense", "units": 2}, "inputs": "joined"},
        ],
        "outputs": "logits",
    }
    script = render(
        "flowers_finetune",
        f"data.train={json.dumps(source)}",
        "data.validation=null",
        "data.batch_size=4",
        f"model={json.dumps(model)}",
        "fine_tune=null",
    )
    out = tmp_path / "run"
    run_python(script, "--max-steps", "2", "--output-dir", str(out), cwd=tmp_path)

    served = assert_serves_raw_examples(script, out, tmp_path)
    assert served["inputs"] == {
        "image": ["string", [None]],
        "stats": ["float32", [None, 2]],
    }, served
    assert served["not_inputs"] == ["label"], served


def test_a_tfds_classifier_serves_decoded_images_of_any_size_and_names_the_classes(
    render, tmp_path
):
    # Oxford-IIIT Pet's breeds (a ClassLabel of 37 names), read through TFDS's test double:
    # images of differing sizes, resized to 32x32 in the pipeline and in the served model.
    source = {"kind": "tfds", "name": "oxford_iiit_pet:4.*.*", "image_size": [32, 32]}
    script = render(
        "cifar10_vgg",
        f"data.train={json.dumps(source)}",
        "data.validation=null",
        "data.batch_size=4",
        "model.layers[-1].units=37",
    )
    out = tmp_path / "run"
    run_python(runnable("pets_unet", script), "--max-steps", "2", "--output-dir", str(out),
               cwd=tmp_path)  # fmt: skip

    served = assert_serves_raw_examples(script, out, tmp_path)
    assert served["inputs"] == {"images": ["uint8", [None, None, None, 3]]}, served
    assert served["outputs"] == ["class_ids", "class_names", "probabilities", "scores"]
