"""`python train.py predict PATH...`: the model to serve, of a restored checkpoint, on raw
inputs read from files (image files, directories of them, .npy and .npz arrays), a JSON line
per input in input order. Its records must equal the exported model's serving_default on the
same inputs, computed in a process that imports neither the script nor loopgen; bad inputs stop
it with exit 1, a message naming the file, and no predictions file written."""

from __future__ import annotations

import fcntl
import json
import resource
import subprocess
import sys
from pathlib import Path

import data
import numpy as np
import pytest
from helpers import npz, run_python, script_env, start_preloaded, tf_check

pytestmark = pytest.mark.slow


def predict(
    script: Path, out: Path, *args: str, fresh: bool = False
) -> subprocess.CompletedProcess[str]:
    """`python SCRIPT predict ARGS --output-dir OUT`, in a process forked from the tests'
    TensorFlow-preloaded server (it runs as `python ARGV` would, seconds sooner); `fresh`: in
    a new interpreter, as a user runs it (the locks are checked on that one)."""
    argv = [str(script), "predict", *args, "--output-dir", str(out)]
    return run_script(argv, script.parent, fresh)


def run_script(argv: list[str], cwd: Path, fresh: bool) -> subprocess.CompletedProcess[str]:
    """`python ARGV` in `cwd`, its exit status and output, whatever the status: forked from the
    preloaded server, or (`fresh`) in a new interpreter."""
    if fresh:
        return subprocess.run([sys.executable, *argv], cwd=cwd, env=script_env(),
                              capture_output=True, text=True, timeout=600)  # fmt: skip
    proc = start_preloaded(*argv, cwd=cwd)
    stdout, stderr = proc.communicate(timeout=600)
    return subprocess.CompletedProcess(argv, proc.returncode, stdout, stderr)


def predictions(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def assert_served(records: list[dict], out: Path, inputs: list[list[str]], cwd: Path) -> None:
    """predict's records say what the exported model serves for the same raw inputs (the
    export holds the newest checkpoint's weights)."""
    saved_model = str(out / "export" / "saved_model" / "1")
    expected = tf_check("served_outputs", saved_model, json.dumps(inputs), cwd=cwd)["outputs"]
    assert len(records) == len(expected)
    for record, served in zip(records, expected, strict=True):
        assert set(record) == {"input", *served}, (record, served)
        for key, value in served.items():
            if key in ("class_ids", "class_names"):
                assert record[key] == value, (record["input"], key)
            else:
                assert np.max(np.abs(np.subtract(record[key], value))) <= 1e-6, record["input"]


SMALL_VGG = [
    # cifar10_vgg's network cut to one VGG block (its custom layer) of 8 filters and a dense
    # layer of 16 units: what predict reads and writes does not depend on the network's size.
    'model.layers[0].over={"filters": [8]}',
    "model.layers[2].units=16",
]


def files_under(folder: Path) -> list[str]:
    """A directory's files as predict reads them: sorted, not the hidden ones."""
    return sorted(str(p) for p in folder.rglob("*") if p.is_file() and p.name[0] != ".")


def test_predict_image_files_and_directories_with_class_names(render, tmp_path):
    folder = tmp_path / "images"
    tf_check("write_image_files", str(folder), "4", cwd=tmp_path)
    source = {"kind": "image_directory", "path": str(folder), "image_size": [32, 32]}
    script = render(
        "cifar10_vgg",
        f"data.train={json.dumps(source)}",
        "data.validation=null",
        "data.batch_size=3",  # predict's batches too: 9 inputs make 3 batches
        "model.layers[-1].units=2",
        *SMALL_VGG,
    )
    out = tmp_path / "run"
    run_python(script, "--max-steps", "2", "--output-dir", str(out), cwd=tmp_path)
    before = {p: p.stat().st_mtime for p in out.rglob("*") if p.is_file()}

    # A file, then a directory (its files sorted, sub-directories included, .DS_Store not).
    (folder / "dark" / ".DS_Store").write_bytes(b"\0\0\0\1Bud1")
    single = str(folder / "light" / "1.jpg")
    proc = predict(script, out, single, str(folder))
    assert proc.returncode == 0, proc.stderr[-3000:]
    records = predictions(out / "predictions.jsonl")
    named = [single, *files_under(folder)]
    assert [r["input"] for r in records] == named
    assert {r["class_names"] for r in records} <= {"dark", "light"}
    assert all(r["class_names"] == ["dark", "light"][r["class_ids"]] for r in records)
    assert_served(records, out, [["bytes", path] for path in named], tmp_path)
    # A reader: nothing of the run directory is written but the predictions.
    assert {p: p.stat().st_mtime for p in before} == before

    # A reader beside other readers, refused while a run trains (holds the lock alone).
    with open(out / "run.lock", "a+") as lock:
        fcntl.flock(lock, fcntl.LOCK_SH | fcntl.LOCK_NB)  # an evaluate reading
        assert predict(script, out, single, fresh=True).returncode == 0
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)  # a run training
        proc = predict(script, out, single, fresh=True)
    assert proc.returncode == 1 and "is in use by another run" in proc.stderr, proc.stderr

    # Not an image: exit 1 naming it, and nothing written.
    (folder / "dark" / "notes.txt").write_text("not an image")
    target = tmp_path / "preds.jsonl"
    proc = predict(script, out, str(folder), "--predictions", str(target))
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert f"{folder / 'dark' / 'notes.txt'} is not a PNG, JPEG, BMP or GIF image" in proc.stderr
    assert not target.exists() and not list(tmp_path.glob("preds.jsonl*"))
    # A damaged image (a PNG cut short): named, though the model decodes it in a batch.
    damaged = tmp_path / "damaged"
    damaged.mkdir()
    (damaged / "a.png").write_bytes((folder / "dark" / "0.png").read_bytes())
    (damaged / "b.png").write_bytes((folder / "dark" / "2.png").read_bytes()[:60])
    proc = predict(script, out, str(damaged), "--predictions", str(target))
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    assert f"predict: {damaged / 'b.png'}: " in proc.stderr and not target.exists()
    # Where the predictions cannot go: said before predicting.
    proc = predict(script, out, single, "--predictions", str(tmp_path / "no" / "p.jsonl"))
    assert proc.returncode == 1 and "not a file in an existing directory" in proc.stderr


def test_predict_arrays_and_image_files_of_a_keras_dataset(render, tmp_path):
    """mnist_mlp as written, keras.datasets.mnist's download served by a test double: .npy
    and .npz arrays, and PNG files of mnist's size, which predict decodes to its uint8
    pixels; an image of another size is refused (the model does not resize)."""
    script = render("mnist_mlp")
    launcher = data.runnable("mnist_mlp", script, double="keras_datasets_mock")
    out = tmp_path / "run"
    run_python(launcher, "--max-steps", "3", "--output-dir", str(out), cwd=tmp_path)

    rng = np.random.default_rng(5)
    examples = rng.integers(0, 256, (4, 28, 28)).astype(np.uint8)
    np.save(tmp_path / "three.npy", examples[:3])
    np.save(tmp_path / "one.npy", examples[3])
    np.savez(tmp_path / "two.npz", x=examples[:2])
    data._write_png(tmp_path / "digit.png", np.repeat(examples[1][..., None], 3, axis=2))
    paths = [str(tmp_path / name) for name in ("three.npy", "digit.png", "one.npy", "two.npz")]
    target = tmp_path / "preds.jsonl"
    # Options between the command and the paths too.
    proc = predict(launcher, out, "--predictions", str(target), "--checkpoint", "latest", *paths)
    assert proc.returncode == 0, proc.stderr[-3000:]
    records = predictions(target)
    three, digit, one, two = paths
    named = [*(f"{three}[{i}]" for i in range(3)), digit, one, f"{two}[0]", f"{two}[1]"]
    assert [r["input"] for r in records] == named
    np.save(tmp_path / "all.npy", examples[[0, 1, 2, 1, 3, 0, 1]])
    assert_served(records, out, [["npy", str(tmp_path / "all.npy")]], tmp_path)

    refused = {
        "wide.png": "is 32x28 pixels; the model takes 28x28 images and does not resize them",
        "floats.npy": "holds float64 examples of shape (28, 28); the model takes uint8",
        "other.npz": "has no array 'x' (its arrays: ['images'])",
        "notes.txt": "is not an .npy or .npz file, nor an image",
    }
    data._write_png(tmp_path / "wide.png", np.zeros((28, 32, 3), np.uint8))
    np.save(tmp_path / "floats.npy", examples / 255.0)
    np.savez(tmp_path / "other.npz", images=examples)
    (tmp_path / "notes.txt").write_text("7")
    for name, message in refused.items():
        proc = predict(launcher, out, one, str(tmp_path / name), "--predictions", str(target))
        assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
        assert f"predict: {tmp_path / name} {message}" in proc.stderr
        assert predictions(target) == records  # the last predictions, left whole


def test_a_predictions_write_the_machine_refuses_leaves_the_last_predictions_whole(
    render, tmp_path
):
    """predict's output is written aside, then renamed over the last one: a write refused
    midway (a file size limit here, a full disk alike) leaves the last predictions whole, and
    nothing half-written beside them. mnist_mlp on an .npz file: the predictions are the only
    file predict writes."""
    train = data.classification_npz(tmp_path / "train.npz", 32, (28, 28))
    script = render("mnist_mlp", f"data.train={npz(train)}")
    out = tmp_path / "run"
    run_python(script, "--max-steps", "1", "--output-dir", str(out), cwd=tmp_path)
    examples = np.random.default_rng(5).integers(0, 256, (24, 28, 28)).astype(np.uint8)
    np.save(tmp_path / "few.npy", examples[:4])
    np.save(tmp_path / "many.npy", examples)
    target = tmp_path / "preds.jsonl"
    proc = predict(script, out, str(tmp_path / "few.npy"), "--predictions", str(target))
    assert proc.returncode == 0, proc.stderr[-3000:]
    written = target.read_bytes()
    limit = 2 * len(written)  # the 24 predictions take about 6 times as much
    proc = subprocess.run(
        [sys.executable, str(script), "predict", str(tmp_path / "many.npy"), "--predictions",
         str(target), "--output-dir", str(out)],
        cwd=tmp_path, env=script_env(), capture_output=True, text=True, timeout=600,
        preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit)),
    )  # fmt: skip
    assert proc.returncode == 1 and "File too large" in proc.stderr, proc.stderr[-2000:]
    assert target.read_bytes() == written
    assert [p.name for p in tmp_path.glob("preds.jsonl*")] == ["preds.jsonl"]


def test_predict_csv_rows_by_column_name(render, tmp_path):
    """houses_tabular on small CSV files: predict reads other CSV files by their header, the
    columns in any order and without the label, the city a string; a missing column or a
    field that is no number stops it, naming the file, line and column."""
    files = data.houses_csv(tmp_path / "houses", "train", 2, 12)
    script = render("houses_tabular", f"data.train.files={files}", "data.validation=null",
                    "data.batch_size=4")  # fmt: skip
    out = tmp_path / "run"
    run_python(script, "--max-steps", "2", "--output-dir", str(out), cwd=tmp_path)

    labelled = tmp_path / "houses" / "train-0.csv"
    unlabelled = tmp_path / "new.csv"  # columns in another order, no price
    rows = [line.split(",") for line in labelled.read_text().splitlines()[1:4]]
    unlabelled.write_text("city,age,rooms,area\n" + "".join(
        f"{city},{age},{rooms},{area}\n\n" for area, rooms, age, city, _ in rows
    ))  # fmt: skip
    target = tmp_path / "preds.jsonl"
    proc = predict(script, out, str(unlabelled), str(labelled), "--predictions", str(target))
    assert proc.returncode == 0, proc.stderr[-3000:]
    records = predictions(target)
    # Rows are named by their line (the header is line 1; empty lines are skipped).
    named = [f"{unlabelled}:{n}" for n in (2, 4, 6)] + [f"{labelled}:{n}" for n in range(2, 14)]
    assert [r["input"] for r in records] == named
    assert records[0]["scores"] == records[3]["scores"]  # the same house, read both ways
    assert_served(records, out, [["csv", str(unlabelled)], ["csv", str(labelled)]], tmp_path)

    broken = {
        "no_city.csv": ("area,rooms,age\n50,2,10\n", "no column 'city', which the model reads"),
        "words.csv": ("area,rooms,age,city\n50,2,10,nice\n60,two,3,lyon\n",
                      ":3: column 'rooms': Field 1 in record 1 is not a valid float: two"),
        "short.csv": ("area,rooms,age,city\n50,2,10,nice\n\n60,2\n",
                      ":4: Expect 4 fields but have 2 in record 1"),
    }  # fmt: skip
    for name, (text, message) in broken.items():
        (tmp_path / name).write_text(text)
        proc = predict(script, out, str(tmp_path / name), "--predictions", str(target))
        assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
        assert f"predict: {tmp_path / name}" in proc.stderr and message in proc.stderr
        assert predictions(target) == records


def test_predict_tfrecord_features_and_text_lines(render, tmp_path):
    """A TFRecord run of PNG and JPEG images predicts on records' encoded images (a file that
    is not TFRecord is refused); reviews_text predicts on lines of text, naming the classes."""
    folder = tmp_path / "records"
    tf_check("write_image_tfrecords", str(folder), "train", "2", "5", "2", "", "png,jpeg",
             cwd=tmp_path)  # fmt: skip
    source = {
        "kind": "tfrecord",
        "files": str(folder / "train-*.tfrecord"),
        "features": {"image": {"dtype": "string", "image": [32, 32]}, "label": {"dtype": "int64"}},
    }
    images = render("cifar10_vgg", f"data.train={json.dumps(source)}", "data.validation=null",
                    "data.batch_size=4", "model.layers[-1].units=2", *SMALL_VGG,
                    name="images.py")  # fmt: skip
    path = tmp_path / "reviews.tsv"
    data.reviews_tsv(path, 40)
    texts = render("reviews_text", f"data.train.path={path}", name="texts.py")
    for script in (images, texts):
        out = tmp_path / script.stem
        run_python(script, "--max-steps", "2", "--output-dir", str(out), cwd=tmp_path)

    tf_check("write_image_tfrecords", str(folder), "empty", "1", "0", "2", cwd=tmp_path)
    proc = predict(images, tmp_path / "images", str(folder))  # an empty file among them
    assert proc.returncode == 0, proc.stderr[-3000:]
    records = predictions(tmp_path / "images" / "predictions.jsonl")
    shards = [shard for shard in files_under(folder) if "empty" not in shard]
    assert [r["input"] for r in records] == [f"{s}[{i}]" for s in shards for i in range(5)]
    assert_served(records, tmp_path / "images", [["tfrecord", s] for s in shards], tmp_path)
    proc = predict(images, tmp_path / "images", str(path))
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    assert f"predict: {path} is not a TFRecord file of records with the features" in proc.stderr

    plain = tmp_path / "new.txt"
    # A form feed inside a line: a text of its own only where a line ends ("\n").
    plain.write_text("a great film\n\nboring and\x0c dull plot\n")
    proc = predict(texts, tmp_path / "texts", str(plain), str(path))
    assert proc.returncode == 0, proc.stderr[-3000:]
    records = predictions(tmp_path / "texts" / "predictions.jsonl")
    named = [f"{plain}:1", f"{plain}:3", *(f"{path}:{n}" for n in range(1, 41))]
    assert [r["input"] for r in records] == named
    assert all(r["class_names"] == ["neg", "pos"][r["class_ids"]] for r in records)
    assert_served(records, tmp_path / "texts", [["text", str(plain)], ["text", str(path)]],
                  tmp_path)  # fmt: skip


# Each head's spec (a --set each): its loss on one or several logits, and its training data:
# labels of an image directory's classes, or an .npz file's multi-hot or real-valued labels.
HEADS = {
    "binary": ["model.layers[-1].units=1",
               'loss={"kind": "binary_crossentropy", "from_logits": true}'],
    "multi_label": ["model.layers[-1].units=3",
                    'loss={"kind": "binary_crossentropy", "from_logits": true}'],
    "regression": ["model.layers[-1].units=1", 'loss={"kind": "mean_squared_error"}'],
}  # fmt: skip


@pytest.mark.parametrize("head", list(HEADS))
def test_predict_and_serve_binary_multi_label_and_regression_heads(render, tmp_path, head):
    """What predict writes and the model to serve returns for each kind of head (a softmax
    classifier's: test_predict_image_files_and_directories_with_class_names): a binary
    classifier's one logit gives one class id and one class name an example, a multi-label
    classifier's several a multi-hot id each, a regression's scores alone."""
    if head == "binary":  # two classes of image files: one logit, class names
        folder = tmp_path / "images"
        tf_check("write_image_files", str(folder), "2", cwd=tmp_path)
        source = {"kind": "image_directory", "path": str(folder), "image_size": [32, 32]}
        example, inputs = "cifar10_vgg", files_under(folder)
        served = [["bytes", path] for path in inputs]
        small = SMALL_VGG
    else:
        rng = np.random.default_rng(1)
        x = rng.integers(0, 256, (8, 28, 28)).astype(np.uint8)
        y = (rng.random((8, 3)) > 0.5) if head == "multi_label" else rng.random((8, 1))
        np.savez(tmp_path / "train.npz", x=x, y=y.astype(np.float32))
        np.save(tmp_path / "x.npy", x[:3])
        source = {"kind": "npz", "path": str(tmp_path / "train.npz")}
        example, inputs = "mnist_mlp", [str(tmp_path / "x.npy")]
        served = [["npy", inputs[0]]]
        small = []
    script = render(example, f"data.train={json.dumps(source)}", "data.validation=null",
                    "data.batch_size=2", "metrics=[]", *HEADS[head], *small)  # fmt: skip
    out = tmp_path / "run"
    run_python(script, "--max-steps", "2", "--output-dir", str(out), cwd=tmp_path)
    proc = predict(script, out, *inputs)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
    records = predictions(out / "predictions.jsonl")
    assert len(records) == (4 if head == "binary" else 3), records
    keys = {"input", "scores", "probabilities", "class_ids"}
    for record in records:
        if head == "binary":
            assert set(record) == {*keys, "class_names"}, record
            assert len(record["scores"]) == len(record["probabilities"]) == 1, record
            assert record["class_ids"] == int(record["probabilities"][0] > 0.5), record
            assert record["class_names"] == ["dark", "light"][record["class_ids"]], record
        elif head == "multi_label":
            assert set(record) == keys and len(record["scores"]) == 3, record
            assert record["class_ids"] == [int(p > 0.5) for p in record["probabilities"]]
        else:
            assert set(record) == {"input", "scores"} and len(record["scores"]) == 1, record
    assert_served(records, out, served, tmp_path)
