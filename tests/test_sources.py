"""The data sources at run time, beyond their examples' run tests: files that do not fit the
spec stop the script at its start, naming the file and the field; imdb's word ids reach the
model at the spec's length; two workers each read and decode only their replicas' share of
every batch. (Every source's SIGKILL-and-resume test, on
one device and on two replicas, is in test_faults.py.)"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import data
import pytest
from helpers import finish_workers, launch_workers, records, run_preloaded, run_python, tf_check

pytestmark = pytest.mark.slow


def fails_at_start(script: Path, cwd: Path) -> str:
    """Runs the script: it must stop before its first step with a message, not a traceback."""
    proc = run_preloaded(str(script), "--output-dir", str(cwd / "run"), cwd=cwd, timeout=300,
                         check=False)  # fmt: skip
    assert proc.returncode == 1, (proc.stdout[-2000:], proc.stderr[-3000:])
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    assert "Epoch 1/" not in proc.stdout
    return proc.stderr


def text_in_a_number_column(tmp: Path) -> str:
    """Houses CSV files whose second file has 'n/a' as the area of its 4th house (line 5)."""
    files = data.houses_csv(tmp / "houses", "bad", files=2, rows=8)
    path = tmp / "houses" / "bad-1.csv"
    lines = path.read_text().splitlines()
    lines[4] = "n/a," + lines[4].split(",", 1)[1]
    path.write_text("\n".join(lines) + "\n")
    return files


def unknown_label(tmp: Path) -> str:
    """A file of reviews, one labelled with a class the training file does not have."""
    (tmp / "unknown.tsv").write_text("loved it\tpos\nmeh\tso-so\n")
    return str(tmp / "unknown.tsv")


def flowers(tmp: Path, compression: str = "") -> str:
    tf_check("write_image_tfrecords", str(tmp / "flowers"), "t", "1", "4", "5", compression,
             cwd=tmp)  # fmt: skip
    return str(tmp / "flowers" / "t-*.tfrecord")


CASES = {
    "missing_image_directory": (
        "mnist_mlp",
        lambda tmp: ['data.train={"kind": "image_directory", "path": "nowhere", '
                     '"image_size": [8, 8]}', "model.input_shape=[8, 8, 3]"],
        ["data.train.path: 'nowhere' is not a directory"],
    ),
    "empty_glob": (
        "flowers_finetune",
        lambda tmp: ['data.train.files="none-*.tfrecord"', "data.validation=null"],
        ["data.train.files: no file matches 'none-*.tfrecord'"],
    ),
    "record_does_not_fit_the_features": (  # the labels are stored as int64
        "flowers_finetune",
        lambda tmp: [f"data.train.files={json.dumps(flowers(tmp))}", "data.validation=null",
                     'data.train.features.label={"dtype": "float32"}'],
        ["t-0.tfrecord: its records do not fit the spec's features (data.train.features)"],
    ),
    "missing_csv_column": (
        "houses_tabular",
        lambda tmp: [f"data.train.files={json.dumps(data.houses_csv(tmp, 'h', 1, 4))}",
                     'data.train.features.numeric=["area", "romos"]', "data.validation=null"],
        ["h-0.csv: no column 'romos'", "data.train.features"],
    ),
    "text_in_a_number_column": (
        "houses_tabular",
        lambda tmp: [f"data.train.files={json.dumps(text_in_a_number_column(tmp))}",
                     "data.validation=null"],
        ["bad-1.csv:5: column 'area'", "float32"],
    ),
    "compressed_tfrecords_read_as_plain": (
        "flowers_finetune",
        lambda tmp: [f"data.train.files={json.dumps(flowers(tmp, 'GZIP'))}",
                     "data.validation=null"],
        ["t-0.tfrecord cannot be read as a plain TFRecord file",
         "set data.train.compression (GZIP or ZLIB)"],
    ),
    "plain_csv_read_as_gzip": (
        "houses_tabular",
        lambda tmp: [f"data.train.files={json.dumps(data.houses_csv(tmp, 'h', 1, 4))}",
                     'data.train.compression="GZIP"', "data.validation=null"],
        ["h-0.csv cannot be read as a GZIP CSV file",
         "set data.train.compression to how it is compressed"],
    ),
    "gzipped_csv_read_as_plain": (
        "houses_tabular",
        lambda tmp: [f"data.train.files={json.dumps(data.houses_csv(tmp, 'h', 1, 4, 0, True))}",
                     "data.validation=null"],
        ["h-0.csv.gz cannot be read as a plain CSV file", "set data.train.compression"],
    ),
    "missing_text_file": (
        "reviews_text",
        lambda tmp: [f"data.train.path={json.dumps(str(tmp / 'none.tsv'))}"],
        ["data.train.path: no file", "none.tsv"],
    ),
    "validation_class_not_in_training": (
        "reviews_text",
        lambda tmp: [f"data.train.path={json.dumps(data.reviews_tsv(tmp / 'r.tsv', 12))}",
                     f"data.validation={json.dumps({'kind': 'text', 'path': unknown_label(tmp)})}"],
        ["data.validation.path:", "has labels ['so-so'] that are not classes of the training file"],
    ),
    "generator_signature": (  # windows of 64 steps where the spec declares 128
        "signals_generator",
        lambda tmp: [*data.small_data_overrides("signals_generator", tmp),
                     'data.train.kwargs={"count": 96, "length": 64, "seed": 1}'],
        ["signals:windows yields examples that do not match", "data.train.features"],
    ),
}  # fmt: skip


@pytest.mark.parametrize("case", list(CASES))
def test_files_that_do_not_fit_the_spec_stop_the_script_at_its_start(case, render, tmp_path):
    example, make, phrases = CASES[case]
    message = fails_at_start(render(example, *make(tmp_path)), tmp_path)
    for phrase in phrases:
        assert phrase in message, (phrase, message[-2000:])


READ = """    paths, labels = examples
    files = tf.map_fn("""
COUNTED = """    paths, labels = examples
    tf.print(indices, summarize=-1, output_stream="file://{log}/" + str(os.getpid()) + ".txt")
    files = tf.map_fn("""


def counting_decodes(script: Path, log: Path) -> Path:
    """A hand-edited copy of the script that writes the indices of the images it decodes, one
    line per read, to a file per process."""
    log.mkdir()
    source = script.read_text()
    assert READ in source
    counted = script.with_name(f"counted_{script.name}")
    counted.write_text(source.replace(READ, COUNTED.format(log=log)))
    return counted


def reads(log: Path) -> list[list[tuple[int, ...]]]:
    """Per process, the index lists it read (one per batch slice)."""
    return [
        [tuple(map(int, re.findall(r"-?\d+", line))) for line in path.read_text().splitlines()]
        for path in sorted(log.glob("*.txt"))
    ]


@pytest.mark.parametrize(
    ("source", "compression"),
    [("tfrecord", ""), ("tfrecord", "GZIP"), ("csv", ""), ("csv", "GZIP")],
)
def test_a_stream_seeks_past_whole_files_unread_to_the_batch_of_an_unbroken_run(
    source, compression, render, tmp_path
):
    """Streamed files of uneven sizes, shuffled in windows, plain or compressed: the first
    batch of a run resumed at any step of two epochs is that step's batch of a run that never
    stopped, and a seek into the last window of an epoch reads no file of the groups before
    it (deleted, they would stop a seek that reads and drops the records before its step)."""
    if source == "tfrecord":
        counts = "7,3,12,5,9,1,8,6,4"  # 55 records in 9 shards: 3 groups of files
        tf_check("write_image_tfrecords", str(tmp_path / "shards"), "t", "9", counts, "5",
                 compression, cwd=tmp_path)  # fmt: skip
        overrides = [*data.small_data_overrides("flowers_finetune", tmp_path),
                     f"data.train.files={tmp_path / 'shards' / 't-*.tfrecord'}"]  # fmt: skip
        example = "flowers_finetune"
    else:
        files = data.houses_csv(tmp_path / "houses", "t", 9, 6, gzipped=bool(compression))
        overrides = [f"data.train.files={files}"]
        example = "houses_tabular"
    if compression:
        overrides.append(f'data.train.compression="{compression}"')
    overrides += ["data.validation=null", "data.batch_size=8", "data.shuffle_buffer=16"]
    result = tf_check("stream_seek", str(render(example, *overrides)), "2", cwd=tmp_path)
    assert result["differ"] == [], result
    assert result["steps"] >= 12 and result["removed"] >= 4, result
    assert result["seek_without_them"], result


def test_a_validation_generator_is_called_with_its_own_arguments(render, tmp_path):
    """Training and validation from one generator function with different arguments: the
    validation stream yields the validation call's examples, counted from it."""
    validation = {
        "kind": "generator", "target": "signals:windows",
        "kwargs": {"count": 32, "length": 128, "seed": 2},
        "features": {"dtype": "float32", "shape": [128, 1]}, "label": {"dtype": "float32"},
    }  # fmt: skip
    script = render("signals_generator", *data.small_data_overrides("signals_generator", tmp_path),
                    f"data.validation={json.dumps(validation)}")  # fmt: skip
    result = tf_check("validation_stream", str(script), cwd=tmp_path)
    namespace: dict = {}
    exec(data.SIGNALS, namespace)
    signal, event = next(namespace["windows"](count=32, length=128, seed=2))
    assert result["count"] == 32, result
    assert result["first"][0] == signal.ravel().tolist() and result["first"][1] == [float(event)]


def test_validation_classes_keep_the_training_data_s_ids(render, tmp_path):
    """A class missing from the validation data does not shift the others' ids: validation
    labels are numbered by the training data's classes (a text file's class names, an image
    directory's sub-directories)."""
    (tmp_path / "train.tsv").write_text("good movie\tpos\nbad film\tneg\nso so\tmeh\n")
    (tmp_path / "val.tsv").write_text("great\tpos\nawful\tneg\n")
    text = render("reviews_text", f"data.train.path={tmp_path / 'train.tsv'}",
                  f'data.validation={{"kind": "text", "path": "{tmp_path / "val.tsv"}"}}',
                  name="text.py")  # fmt: skip
    # Training classes meh 0, neg 1, pos 2 (alphabetical); the file alone would give neg 0, pos 1.
    assert tf_check("class_ids", str(text), cwd=tmp_path)["validation"] == [2, 1]

    train = data.image_directory(tmp_path / "train", per_class=2, size=32)
    validation = data.image_directory(tmp_path / "val", per_class=2, size=32)
    shutil.rmtree(Path(validation) / "class_0")
    sources = [{"kind": "image_directory", "path": path, "image_size": [32, 32]}
               for path in (train, validation)]  # fmt: skip
    images = render("cifar10_vgg", f"data.train={json.dumps(sources[0])}",
                    f"data.validation={json.dumps(sources[1])}", name="images.py")  # fmt: skip
    assert tf_check("class_ids", str(images), cwd=tmp_path)["validation"] == [1, 1, 2, 2]


def test_a_split_image_directory_holds_out_each_class_the_same_files_every_run(render, tmp_path):
    """data.validation=Split(...) of an image directory: each class gives its share of files,
    picked by a permutation of the seed alone; every file is in exactly one part, and two runs
    (two processes) hold out the same files and validate on the same values."""
    images = data.image_directory(tmp_path / "images", per_class=10, size=8, classes=2)
    script = render(
        "mnist_mlp",
        f'data.train={{"kind": "image_directory", "path": "{images}", "image_size": [8, 8]}}',
        'data.validation={"kind": "split", "fraction": 0.2, "seed": 1337}',
        "model.input_shape=[8, 8, 3]", "data.batch_size=4",
    )  # fmt: skip
    first = tf_check("split_files", str(script), cwd=tmp_path)
    assert tf_check("split_files", str(script), cwd=tmp_path) == first
    train, validation = set(first["train"]), set(first["validation"])
    assert train | validation == {str(p) for p in Path(images).rglob("*.png")}
    assert not train & validation and len(validation) == 4  # 20% of each class's 10
    assert sorted(first["validation_labels"]) == [0, 0, 1, 1]
    assert sorted(set(first["train_labels"])) == [0, 1]
    for path, label in zip(first["validation"], first["validation_labels"], strict=True):
        assert Path(path).parent.name == f"class_{label}"

    validations = []
    for run in ("a", "b"):
        run_python(script, "--epochs", "2", "--deterministic", "--output-dir",
                   str(tmp_path / run), cwd=tmp_path)  # fmt: skip
        logged = [r for r in records(tmp_path / run) if "val_loss" in r]
        assert len(logged) == 2, logged
        validations.append(logged)
    assert validations[0] == validations[1]


def test_a_keras_text_dataset_reaches_the_model_as_word_ids_of_its_length(render, tmp_path):
    """imdb through keras.datasets (the download served by keras_datasets_mock.py): the ids of
    the spec's num_words most frequent words (the others the out-of-vocabulary id 2), each
    review padded at its end or cut to maxlen with its start kept: the model's input."""
    script = render("imdb_bilstm", *data.small_data_overrides("imdb_bilstm", tmp_path))
    result = tf_check("keras_text_dataset", str(script), cwd=tmp_path)
    assert result["train_shape"] == [64, 200] and result["test_shape"] == [32, 200], result
    assert result["dtype"] == "int32" and result["labels"] == 64, result
    shortest, longest = result["raw_lengths"]
    assert shortest < 200 < longest, result  # some reviews are padded, others cut
    assert result["padding_at_end"] > 0, result
    assert result["first_ids"] == [1], result  # Keras' start mark begins every row
    assert result["max_id"] < 20_000 and result["out_of_vocabulary"] > 0, result


def test_each_worker_decodes_only_its_half_and_they_train_like_one_device(render, tmp_path):
    """Two worker processes on 127.0.0.1: each reads and decodes only its replica's slice of
    every global batch, half an epoch each, and the job trains what one device trains."""
    images = data.image_directory(tmp_path / "images", per_class=32, size=8)  # 96 images
    overrides = [
        f'data.train={{"kind": "image_directory", "path": "{images}", "image_size": [8, 8]}}',
        "model.input_shape=[8, 8, 3]", "data.batch_size=16", "loop.log_every_steps=1",
    ]  # fmt: skip
    single = counting_decodes(render("mnist_mlp", *overrides), tmp_path / "single_log")
    workers = render("mnist_mlp", *overrides, variant="multi_worker", name="workers.py")
    workers = counting_decodes(workers, tmp_path / "workers_log")
    flags = ["--epochs", "2", "--deterministic"]
    run_python(single, *flags, "--output-dir", str(tmp_path / "single"), cwd=tmp_path)
    finished = finish_workers(
        launch_workers(workers, *flags, "--output-dir", str(tmp_path / "job"), cwd=tmp_path)
    )
    for proc, _, stderr in finished:
        assert proc.returncode == 0, stderr[-3000:]

    # The global batches of the 2 epochs (6 of 16 each), from the script's own epoch order;
    # worker w's slice of each is its half, [8w, 8w + 8).
    batches = tf_check("global_batches", str(single), "2", cwd=tmp_path)["batches"]
    assert len(batches) == 12
    (one_device,) = reads(tmp_path / "single_log")
    assert {tuple(b) for b in batches} <= set(one_device)
    worker_reads = reads(tmp_path / "workers_log")
    assert len(worker_reads) == 2
    for worker, lines in enumerate(worker_reads):
        mine = {tuple(b[8 * worker : 8 * worker + 8]) for b in batches}
        theirs = {tuple(b[8 * (1 - worker) : 16 - 8 * worker]) for b in batches}
        # Every one of its slices, none of the other worker's, nothing whole: of the 192
        # examples of 2 epochs it decoded 96 (and whatever it read ahead into epoch 3).
        assert mine <= set(lines) and not theirs & set(lines), (worker, lines)
        assert all(len(line) == 8 for line in lines), lines
    result = tf_check("compare_checkpoints", str(tmp_path / "single" / "checkpoints"),
                      str(tmp_path / "job" / "checkpoints"), cwd=tmp_path)  # fmt: skip
    assert result["step"] == 12 and result["max_diff"] <= 1e-5, result
