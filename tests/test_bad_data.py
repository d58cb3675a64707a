"""Data that cannot train, or that changed under a run, stops the script at its start: one
line naming the file or spec field and the fix, exit 1, no traceback (issue 32)."""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest
from data import classification_npz, image_directory, pattern_npz, runnable, small_data_overrides
from helpers import npz, run_preloaded

pytestmark = pytest.mark.slow


def run(script: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """The script's run, however it ends (forked from the preloaded server)."""
    return run_preloaded(str(script), *args, cwd=cwd, timeout=300, check=False)


def refused(proc: subprocess.CompletedProcess[str], *words: str, lines: int = 1) -> str:
    """The refusal: exit 1, no traceback, its message the last `lines` lines of stderr (TF's
    own log lines come before), naming each of `words`."""
    assert proc.returncode == 1, proc.stdout[-2000:] + proc.stderr[-4000:]
    assert "Traceback" not in proc.stderr, proc.stderr[-4000:]
    message = "\n".join(proc.stderr.strip().splitlines()[-lines:])
    for word in words:
        assert word in message, proc.stderr[-2000:]
    return message


def test_a_resume_on_other_training_data_is_refused_and_new_data_accepts_it(render, tmp_path):
    path = tmp_path / "train.npz"
    script = render("mnist_mlp", f"data.train={npz(classification_npz(path, 96, (28, 28)))}")
    out = tmp_path / "run"
    first = run(script, "--max-steps", "2", "--output-dir", str(out), cwd=tmp_path)
    assert first.returncode == 0, first.stderr[-4000:]
    checkpoints = out / "checkpoints"
    setup = json.loads((checkpoints / "setup.json").read_text())
    assert setup["data"]["examples"] == 96 and str(path) in setup["data"]["files"]
    before = {p.name: p.read_bytes() for p in checkpoints.iterdir() if p.is_file()}

    # Another file of as many examples, written later: the same count, but not the data the
    # checkpoints were trained on (its size and time say so).
    classification_npz(path, 96, (28, 28), seed=5)
    stat = os.stat(path)
    os.utime(path, (stat.st_atime, stat.st_mtime + 5))
    message = refused(
        run(script, "--epochs", "3", "--output-dir", str(out), cwd=tmp_path),
        "Refusing to resume", f"  {path}: ", "--new-data", lines=3,
    )  # fmt: skip
    assert "examples in the checkpoints" not in message, message
    assert {p.name: p.read_bytes() for p in checkpoints.iterdir() if p.is_file()} == before

    # A valid file with fewer examples: another epoch length and order.
    classification_npz(path, 64, (28, 28), seed=3)
    stat = os.stat(path)
    os.utime(path, (stat.st_atime, stat.st_mtime + 5))  # a later write, whatever the clock
    message = refused(
        run(script, "--epochs", "3", "--output-dir", str(out), cwd=tmp_path),
        "Refusing to resume",
        "data.train: 96 examples in the checkpoints, 64 in this run",
        str(path),
        "--new-data",
        lines=4,
    )
    assert message.startswith("Refusing"), message
    after = {p.name: p.read_bytes() for p in checkpoints.iterdir() if p.is_file()}
    assert after == before  # nothing lost, nothing written

    accepted = run(script, "--max-steps", "3", "--new-data", "--output-dir", str(out),
                   cwd=tmp_path)  # fmt: skip
    assert accepted.returncode == 0, accepted.stderr[-4000:]
    assert "Resuming on other training data (--new-data)" in accepted.stdout
    assert "Resumed from" in accepted.stdout
    assert json.loads((checkpoints / "setup.json").read_text())["data"]["examples"] == 64


@pytest.mark.parametrize("source", ["npz", "image_directory"])
def test_the_same_data_copied_again_resumes_and_other_data_of_the_same_size_does_not(
    render, tmp_path, source
):
    """setup.json records each training file's size and time, and a new run the sha256 of its
    contents (a directory's: of its files' names and contents): a file (or an image directory)
    copied again, its times new, its contents the same, resumes (setup.json takes the new
    times); an image moved to another class, and other contents of the same size, are still
    refused."""
    if source == "npz":
        path = tmp_path / "train.npz"
        script = render("mnist_mlp", f"data.train={npz(classification_npz(path, 96, (28, 28)))}")
    else:
        path = Path(image_directory(tmp_path / "images", per_class=8, size=8, classes=2))
        data = {"kind": "image_directory", "path": str(path), "image_size": [8, 8]}
        script = render("mnist_mlp", f"data.train={json.dumps(data)}",
                        "model.input_shape=[8, 8, 3]", "data.batch_size=4")  # fmt: skip
    out = tmp_path / "run"
    first = run(script, "--max-steps", "2", "--output-dir", str(out), cwd=tmp_path)
    assert first.returncode == 0, first.stderr[-4000:]
    setup = out / "checkpoints" / "setup.json"
    recorded = json.loads(setup.read_text())["data"]
    assert list(recorded["digests"]) == [str(path)]

    # Copied away and back: the same bytes, later times.
    files = [path] if source == "npz" else sorted(path.rglob("*.png"))
    for file in files:
        content = file.read_bytes()
        file.unlink()
        file.write_bytes(content)
        stat = os.stat(file)
        os.utime(file, (stat.st_atime, stat.st_mtime + 5))  # later, whatever the clock
    resumed = run(script, "--max-steps", "3", "--output-dir", str(out), cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stdout[-2000:] + resumed.stderr[-4000:]
    assert f"The same training data, copied again: {path}" in resumed.stdout
    assert "Resumed from" in resumed.stdout
    now = json.loads(setup.read_text())["data"]
    assert now["files"] != recorded["files"] and now["digests"] == recorded["digests"]

    if source == "image_directory":
        # An image moved to another class, its time kept (class_0's last becomes class_1's
        # first: as many files and bytes, the same contents in the same order): relabelled,
        # so other data, which the files' names in the digest tell.
        image, moved = path / "class_0" / "7.png", path / "class_1" / "0-moved.png"
        image.rename(moved)
        refused(run(script, "--max-steps", "4", "--output-dir", str(out), cwd=tmp_path),
                "Refusing to resume", str(path), "--new-data", lines=4)  # fmt: skip
        moved.rename(image)  # back where setup.json records it

    # Other contents, the same size: refused as other data.
    if source == "npz":  # other examples, as many
        size = path.stat().st_size
        classification_npz(path, 96, (28, 28), seed=5)
        assert path.stat().st_size == size
    else:  # an image of class 0 and one of class 1 swapped: as many files, as many bytes
        a, b = path / "class_0" / "0.png", path / "class_1" / "0.png"
        a_bytes, b_bytes = a.read_bytes(), b.read_bytes()
        a.write_bytes(b_bytes)
        b.write_bytes(a_bytes)
        # Both older than the newest file: the directory's newest time stays as recorded.
        for file in (a, b):
            stat = os.stat(file)
            os.utime(file, (stat.st_atime, stat.st_mtime - 60))
    # Its sha256 differs: said, so that equal sizes do not read as a new time alone.
    refused(run(script, "--max-steps", "4", "--output-dir", str(out), cwd=tmp_path),
            "Refusing to resume", f"{path}: its contents changed (another sha256); ",
            "--new-data", lines=4)  # fmt: skip


TFDS_DATASET = "the TFDS dataset oxford_iiit_pet:4.*.* (tfds.load)"


DOWNLOADS = ["keras_datasets", "backbone_weights", "keras_hub_preset", "tfds", "tfds_no_module"]


@pytest.mark.parametrize("source", DOWNLOADS)
def test_a_failed_download_is_one_message_and_leaves_the_directory_as_it_was(
    render, tmp_path, source
):
    """Offline (tests/offline.py: no host resolves, an empty ~/.keras and TFDS data folder),
    the script's real download fails: one message naming what it downloads and the spec's local
    alternative, exit 1, and the output directory as it was: none where there was none (nor
    its parent), run.lock with what it held where there was one, and no lock held. Within
    seconds, nothing retried: a TFDS dataset not prepared in its data folder is refused when
    its hosts do not resolve, before TFDS's downloader (which retries each file for minutes)
    starts (issue 63 #19). TFDS installed without importlib_resources, which it needs to
    prepare a dataset: one message too, naming the module to install."""
    double = "offline"
    if source == "keras_datasets":  # getting started's first spec, as it is
        script = render("mnist_mlp")
        out = tmp_path / "runs" / "first"
        words = ["Cannot download mnist (keras.datasets.mnist.load_data()): URL fetch failure",
                 "Name or service not known", "data.train=Npz(path=...)"]  # fmt: skip
    elif source == "tfds":  # pets_unet's spec, as it is
        script = render("pets_unet")
        out = tmp_path / "runs" / "pets"
        words = [f"Cannot download {TFDS_DATASET}: it is not prepared in ",
                 "no host TFDS downloads it from resolves, as offline (thor.robots.ox.ac.uk, "
                 "storage.googleapis.com: [Errno -2] Name or service not known)",
                 "set data.train.data_dir to it", "data.train=Npz(...)"]  # fmt: skip
    elif source == "tfds_no_module":  # tensorflow-datasets installed alone
        script = render("pets_unet")
        out = tmp_path / "run"
        out.mkdir()
        (out / "run.lock").write_text("pid 4242 on host-a, started 2026-11-23T14:05:09+0100\n")
        double = "offline_without_importlib_resources"
        words = [f"Cannot download {TFDS_DATASET}: it needs the module importlib_resources "
                 "(pip install importlib_resources)", "set data.train.data_dir to it"]  # fmt: skip
    elif source == "keras_hub_preset":  # a KerasHub preset by its name (Kaggle, via kagglehub)
        script = render(
            "reviews_bert_lora", *small_data_overrides("reviews_bert_lora", tmp_path)[:1]
        )
        out = tmp_path / "runs" / "bert"
        words = ["Cannot download the KerasHub preset 'bert_tiny_en_uncased'",
                 "Name or service not known", "save_to_preset"]  # fmt: skip
    else:  # MobileNetV2's imagenet weights
        data = npz(classification_npz(tmp_path / "train.npz", 8, (160, 160, 3), classes=5))
        script = render("flowers_finetune", f"data.train={data}", "data.validation=null",
                        "data.batch_size=4")  # fmt: skip
        out = tmp_path / "run"
        out.mkdir()
        (out / "run.lock").write_text("pid 4242 on host-a, started 2026-11-23T14:05:09+0100\n")
        words = [
            "Cannot download MobileNetV2's imagenet weights (keras.applications)",
            "Set weights=None on the Backbone of node 'features'",
            "weights='PATH'",
        ]
    launcher = runnable(source, script, double=double)
    proc = run(launcher, "--max-steps", "1", "--output-dir", str(out), cwd=tmp_path)
    message = refused(proc, *words)
    assert message.startswith("Cannot download"), message
    # At once: no download retried (TFDS's retries took 3 minutes offline, and its download
    # threads' warnings followed the message), the message the last line.
    assert "Retrying" not in proc.stderr, proc.stderr[-4000:]
    if source in ("keras_datasets", "keras_hub_preset", "tfds"):
        assert not (tmp_path / "runs").exists()
    else:
        assert sorted(p.name for p in out.iterdir()) == ["run.lock"]
        assert (out / "run.lock").read_text().startswith("pid 4242 on host-a")
        with open(out / "run.lock") as f:  # unlocked: another run may take it
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)


def bad_npz(path: Path, case: str) -> None:
    rng = np.random.default_rng(0)
    if case == "shape":
        x = rng.integers(0, 255, (32, 28, 28, 3)).astype(np.uint8)
        np.savez(path, x=x, y=np.arange(32) % 10)
    elif case == "strings":
        np.savez(path, x=np.array(["a picture"] * 32), y=np.arange(32) % 10)
    elif case == "lengths":
        x = rng.integers(0, 255, (32, 28, 28)).astype(np.uint8)
        np.savez(path, x=x, y=np.arange(30) % 10)


@pytest.mark.parametrize(
    ("case", "words"),
    [
        ("shape", ["data.train.path", "(28, 28, 3)", "model takes (28, 28)"]),
        ("strings", ["data.train.path", "'x'", "not numbers"]),
        ("lengths", ["data.train.path", "differ in length", "'y': 30"]),
    ],
)
def test_an_npz_that_cannot_train_stops_the_script_at_its_start(render, tmp_path, case, words):
    path = tmp_path / "train.npz"
    bad_npz(path, case)
    script = render("mnist_mlp", f"data.train={npz(str(path))}", "data.batch_size=8")
    out = tmp_path / "run"
    refused(
        run(script, "--max-steps", "1", "--output-dir", str(out), cwd=tmp_path), str(path), *words
    )
    assert not (out / "checkpoints").exists()  # stopped before training


@pytest.mark.parametrize(
    ("damage", "field"),
    [("empty", "train"), ("truncated", "train"), ("not_an_image", "train"),
     # Whole ends, damaged bytes between: found only when a step (or a validation pass)
     # decodes it, and named then, the steps before it kept by their checkpoint.
     ("inside", "train"), ("inside", "validation")],
)  # fmt: skip
def test_a_damaged_image_file_stops_the_script_naming_it(render, tmp_path, damage, field):
    images = Path(image_directory(tmp_path / "images", per_class=4, size=8, classes=2))
    validation = Path(image_directory(tmp_path / "validation", per_class=2, size=8, classes=2))
    bad = (images if field == "train" else validation) / "class_1" / "1.png"
    content = bad.read_bytes()
    middle = len(content) // 2
    damaged = {"empty": b"", "truncated": content[:middle],
               "not_an_image": b"<html>not found</html>",
               "inside": content[:middle] + bytes(8) + content[middle + 8 :]}  # fmt: skip
    bad.write_bytes(damaged[damage])
    source = {"kind": "image_directory", "path": str(images), "image_size": [8, 8]}
    script = render("mnist_mlp", f"data.train={json.dumps(source)}",
                    f"data.validation={json.dumps({**source, 'path': str(validation)})}",
                    "model.input_shape=[8, 8, 3]", "data.batch_size=4",
                    'checkpoint={"every_steps": 1}')  # fmt: skip
    out = tmp_path / "run"
    # Two epochs of two steps: the training file is read by the first epoch's steps.
    proc = run(script, "--epochs", "2", "--output-dir", str(out), cwd=tmp_path)
    message = refused(proc, f"data.{field}.path", str(bad))
    if damage != "inside":  # found when the script starts
        assert not (out / "checkpoints").exists()
        return
    assert "cannot be decoded" in message
    # Stopped in the first epoch, whose steps before it are kept by their checkpoints.
    saved = [int(p.name[5:-6]) for p in (out / "checkpoints").glob("ckpt-*.index")]
    # The first epoch's order (the spec's seed) puts a damaged training file in step 2. An
    # epoch's last step is saved after its validation (which a resumed run would skip), so a
    # validation pass that stops leaves step 2 unsaved too: either way step 1 alone is saved.
    assert saved == [1], saved


@pytest.mark.parametrize("example", ["mnist_reptile", "mnist_maml"])
def test_a_held_out_class_the_data_lacks_is_refused(render, tmp_path, example):
    # Ten classes (0 to 9): class 12 is none of them.
    train = pattern_npz(tmp_path / "train.npz", 300, (28, 28))
    script = render(example, f"data.train={npz(train)}", "training.ways=3",
                    "training.test_classes=[7, 8, 12]", "model.layers[6].units=3",
                    "training.evaluation_tasks=6")  # fmt: skip
    refused(
        run(script, "--max-steps", "1", "--output-dir", str(tmp_path / "run"), cwd=tmp_path),
        "training.test_classes",
        "class 12",
    )


@pytest.mark.slow
@pytest.mark.parametrize("file_format", ["jsonl", "csv"])
def test_a_records_file_that_is_not_utf8_is_one_message_naming_its_line(
    render, tmp_path, file_format
):
    """Issue 63's item 4: a byte that is not UTF-8 in a JSON Lines (or CSV) file was a
    UnicodeDecodeError's traceback; now one line naming the file (and a JSON Lines file's line),
    exit 1, and the output directory is left as it was (no run.lock)."""
    rows = [("good film", "pos"), ("bad film", "neg"), ("caf\xe9 so so", "neg")]
    path = tmp_path / f"reviews.{file_format}"
    if file_format == "jsonl":
        text = "".join(json.dumps({"text": t, "label": label}) + "\n" for t, label in rows)
    else:
        text = "text,label\n" + "".join(f"{t},{label}\n" for t, label in rows)
    # The third record's é in Latin-1, as an editor that does not save UTF-8 writes it.
    path.write_bytes(text.replace("\\u00e9", "\xe9").encode("latin-1"))
    source = {"kind": "text_records", "path": str(path), "text": "text", "label": "label"}
    script = render("reviews_text", f"data.train={json.dumps(source)}", "data.validation=null")
    out = tmp_path / "run"
    proc = run(script, "--max-steps", "1", "--output-dir", str(out), cwd=tmp_path)
    where = f"{path}:3" if file_format == "jsonl" else str(path)
    message = refused(proc, f"{where}: not UTF-8 text", "b'\\xe9'", "save the file as UTF-8")
    assert message.startswith(where), message
    assert not out.exists()  # no run.lock, no directory: as if it never started
