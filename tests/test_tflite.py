"""export.tflite: the run's export/model.tflite, run by tf.lite.Interpreter on raw training
examples in a process that imports neither the script nor loopgen, answers what the model to
serve (export/saved_model/1) answers on them; a GAN's, what its generator answers on noise.
The specs it cannot convert are refused at render time (tests/bad_specs/tflite_*)."""

from __future__ import annotations

import pytest
from data import classification_npz
from helpers import npz, run_python, tf_check

pytestmark = pytest.mark.slow


def assert_tflite_serves_alike(script, out, cwd):
    reference = cwd / "serving_reference.npz"
    tf_check("serving_reference", str(script), str(out), str(reference), cwd=cwd)
    export = out / "export"
    found = tf_check(
        "tflite_matches",
        str(export / "saved_model" / "1"),
        str(export / "model.tflite"),
        str(reference),
        cwd=cwd,
    )
    assert found["outputs"] == found["served_outputs"], found
    assert found["input"][2][0] == -1, found  # any batch size
    assert found["scores"] <= 1e-5 and found["scores_spread"] > 0, found
    assert found["probabilities"] <= 1e-5 and found["class_ids"], found
    return found


def test_an_array_model_converts_to_tflite(render, tmp_path):
    train = npz(classification_npz(tmp_path / "train.npz", 96, (28, 28)))
    script = render("mnist_mlp", f"data.train={train}", "export.tflite=true")
    out = tmp_path / "run"
    run_python(script, "--max-steps", "3", "--output-dir", str(out), cwd=tmp_path)

    found = assert_tflite_serves_alike(script, out, tmp_path)
    assert found["input"] == ["features", "uint8", [-1, 28, 28]], found


def test_an_image_model_converts_to_tflite(render, tmp_path):
    script = render(
        "shapes_plateau", "data.train.count=96", "data.validation.count=32", "export.tflite=true"
    )
    out = tmp_path / "run"
    run_python(script, "--max-steps", "3", "--output-dir", str(out), cwd=tmp_path)

    found = assert_tflite_serves_alike(script, out, tmp_path)
    assert found["input"][0] == "images" and found["input"][2] == [-1, 24, 24, 3], found
    # The best validation's weights are exported beside the last ones, with their own file.
    assert (out / "export" / "best" / "model.tflite").is_file()


def test_a_multi_task_model_converts_every_head(render, tmp_path):
    script = render(
        "shapes_multitask", "data.train.count=96", "data.validation.count=32", "export.tflite=true"
    )
    out = tmp_path / "run"
    run_python(script, "--max-steps", "3", "--output-dir", str(out), cwd=tmp_path)

    reference = tmp_path / "serving_reference.npz"
    tf_check("serving_reference", str(script), str(out), str(reference), cwd=tmp_path)
    export = out / "export"
    found = tf_check("tflite_matches", str(export / "saved_model" / "1"),
                     str(export / "model.tflite"), str(reference), cwd=tmp_path)  # fmt: skip
    heads = [f"{task}_{name}" for task in ("mask", "shape")
             for name in ("class_ids", "probabilities", "scores")]  # fmt: skip
    assert found["outputs"] == found["served_outputs"] == sorted(heads), found
    for task in ("mask", "shape"):
        assert found[f"{task}_scores"] <= 1e-5 and found[f"{task}_scores_spread"] > 0, found
        assert found[f"{task}_probabilities"] <= 1e-5 and found[f"{task}_class_ids"], found


def test_a_gan_generator_converts_to_tflite(render, tmp_path):
    script = render(
        "shapes_dcgan", "data.train.count=96", "data.batch_size=32", "export.tflite=true"
    )
    out = tmp_path / "run"
    run_python(script, "--max-steps", "3", "--output-dir", str(out), cwd=tmp_path)

    export = out / "export"
    found = tf_check(
        "tflite_matches",
        str(export / "generator"),
        str(export / "model.tflite"),
        "noise",
        cwd=tmp_path,
    )
    assert found["input"][1:] == ["float32", [-1, 32]], found  # LATENT_DIM noise
    ((image,),) = [[key for key in found["outputs"] if not key.endswith("_spread")]]
    assert found[image] <= 1e-5 and found[f"{image}_spread"] > 0, found


def test_the_layers_refused_are_those_that_do_not_convert(tmp_path):
    """dsl/rules/export.py's tables, measured again on the installed TensorFlow."""
    from loopgen.dsl.catalog import lookup
    from loopgen.dsl.rules.export import LOOPING, NOT_BUILTIN, random_in_graph

    found = tf_check("tflite_layers", cwd=tmp_path)
    refused = set(found["refused"])
    assert LOOPING | set(NOT_BUILTIN) <= refused, found
    randoms = {kind for kind in refused if kind.startswith("random_")}
    assert randoms and all(random_in_graph(lookup("layers", kind)) for kind in randoms)
    assert not random_in_graph(lookup("layers", "dropout"))
    # What the rules let through converts: a recurrent layer unrolled, string lookups, ...
    assert set(found["converted"]) == {
        "lstm unrolled", "bidirectional gru unrolled", "string_lookup", "dropout", "embedding",
        "multi_head_attention",
    }, found  # fmt: skip
