"""Unit tests of runtime/loopgen_runtime.py, by import: the run directory's lock, setup.json,
checkpoints, logs, faults and downloads, and the debugging flags and replay's helpers. Each test
builds a RunDirectory as a rendered script does (a subclass setting its class attributes, and
the flags the runtime reads), in tmp_path; no generated script runs."""

from __future__ import annotations

import argparse
import contextlib
import csv
import errno
import hashlib
import inspect
import json
import math
import os
import queue
import re
import resource
import signal
import socket
import subprocess
import sys
import threading
import time
import types
import urllib.error
from pathlib import Path

import numpy as np
import pytest
from loopgen.runtime import loopgen_runtime as rt

SCRIPT = '''"""Train a tiny model (a test's stand-in for a rendered script).

Written by loopgen 0.1.0 from examples/tiny.py
(spec sha256 1111111111111111, script sha256 0000000000000000).
"""

import tensorflow as tf


def loss_of(x):
    return tf.math.log(x)


def train_step(x):
    loss = loss_of(x)
    return loss
'''

SETUP = {"model": "0123456789abcdef", "data.batch_size": 32, "optimizer": "adam"}
EXAMPLES = list(range(10))
READERS = ("evaluate", "predict", "replay")


def line_of(text: str, fragment: str) -> int:
    """The number of the first line of `text` holding `fragment`."""
    return next(n for n, line in enumerate(text.splitlines(), 1) if fragment in line)


def flags(tmp_path: Path, **changes) -> argparse.Namespace:
    """The flags a script with replay and --overfit-batches parses (check_debugging_flags done)."""
    values = {
        "command": "train",
        "output_dir": str(tmp_path / "run"),
        "checkpoint": "latest",
        "epochs": 3,
        "max_steps": None,
        "init_from": None,
        "new_data": False,
        "deterministic": False,
        "no_lock": False,
        "eager": False,
        "check_numerics": False,
        "dump_debug_info": False,
        "profile": None,
        "fast_dev_run": None,
        "overfit_batches": None,
        "step": None,
    }
    return argparse.Namespace(**{**values, **changes})


def run_class(tmp_path: Path, **attributes) -> type:
    """A script's RunDirectory: its script (a rendered one's header) beside tmp_path's run."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    script = tmp_path / "train.py"
    if not script.exists():
        script.write_text(SCRIPT)
    attributes = {
        "script": str(script),
        "rendered_from": {"loopgen": "0.1.0", "spec": "examples/tiny.py"},
        "setup": SETUP,
        "num_examples": staticmethod(len),
        "readers": READERS,
        **attributes,
    }
    return type("RunDirectory", (rt.RunDirectory,), attributes)


def make_run(tmp_path: Path, args: argparse.Namespace | None = None, **attributes):
    return run_class(tmp_path, **attributes)(args if args is not None else flags(tmp_path))


def release(run) -> None:
    """Closes the run's run.lock: the flock goes with it."""
    run.lock_file.close()


def read_jsonl(path) -> list[dict]:
    return [json.loads(line) for line in Path(path).read_text().splitlines()]


def write_state(directory: Path, steps) -> None:
    """A `checkpoint` state file listing ckpt-<step> of each step (their files need not exist)."""
    directory.mkdir(parents=True, exist_ok=True)
    lines = [f'model_checkpoint_path: "ckpt-{steps[-1]}"']
    lines += [f'all_model_checkpoint_paths: "ckpt-{step}"' for step in steps]
    (directory / "checkpoint").write_text("\n".join(lines) + "\n")


@contextlib.contextmanager
def file_size_limit(size: int):
    """RLIMIT_FSIZE: a write past `size` bytes fails with EFBIG (Python ignores SIGXFSZ), as a
    full disk fails it, part written and the rest refused."""
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, (size, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))


@pytest.fixture(scope="module")
def tf():
    """TensorFlow, imported once for the module (the runtime imports it when first used)."""
    import tensorflow

    return tensorflow


@pytest.fixture(scope="module")
def keras(tf):
    import keras as module

    return module


def dense(keras, units=2):
    layer = keras.layers.Dense(units)
    layer.build((None, 3))
    return layer


def trained(tmp_path: Path, tf, keras, saves, args=None, **attributes):
    """A run that locked its directory, started as a new run and saved a checkpoint at each of
    `saves` (its kernel filled with the step's number); its lock released again."""
    run = make_run(tmp_path, args, **attributes)
    run.lock()
    model = dense(keras)
    step = tf.Variable(0, dtype=tf.int64)
    run.restore(tf.train.Checkpoint(model=model, step=step), EXAMPLES, model=model)
    run.nonfinite_step = tf.Variable(-1, dtype=tf.int64)
    for number in saves:
        step.assign(number)
        model.kernel.assign(tf.fill(model.kernel.shape, float(number)))
        run.save(number)
    release(run)
    return run


def resume(tmp_path: Path, tf, keras, args=None, units=2, **attributes):
    """A second run's restore() on tmp_path's run; returns it and its network."""
    run = make_run(tmp_path, args, **attributes)
    model = dense(keras, units)
    step = tf.Variable(0, dtype=tf.int64)
    run.restore(tf.train.Checkpoint(model=model, step=step), EXAMPLES, model=model)
    return run, model


def started(tmp_path: Path, tf, args=None, done=0, total=10, **attributes):
    """A run whose start() has written its start record, at step `done` of `total`."""
    run = make_run(tmp_path, args, **attributes)
    os.makedirs(run.path, exist_ok=True)
    step = tf.Variable(done, dtype=tf.int64)
    run.start(step, tf.Variable(-1, dtype=tf.int64), total)
    return run


# --- The lock -------------------------------------------------------------------------------


def test_a_training_run_holds_the_lock_and_a_second_is_refused_naming_the_first(tmp_path):
    first = make_run(tmp_path)
    assert first.lock() is None
    text = (tmp_path / "run" / "run.lock").read_text()
    assert text.startswith(f"pid {os.getpid()} on {socket.gethostname()}, started ")
    second = make_run(tmp_path)
    with pytest.raises(SystemExit) as refused:
        second.lock()
    assert str(refused.value) == (
        f"{first.path} is in use by another run ({text.strip()}). Wait for it to end, or pass "
        "another --output-dir."
    )
    second.lock_file.close()
    release(first)
    third = make_run(tmp_path)
    assert third.lock() is None  # released: the next run takes it
    release(third)


def test_readers_share_the_lock_and_a_training_run_is_refused_naming_them(tmp_path):
    (tmp_path / "run" / "checkpoints").mkdir(parents=True)
    readers = [make_run(tmp_path, flags(tmp_path, command=c)) for c in ("evaluate", "predict")]
    for reader in readers:
        assert reader.lock() is None
    assert (tmp_path / "run" / "run.lock").read_text() == ""  # a reader writes nothing
    trainer = make_run(tmp_path)
    with pytest.raises(SystemExit) as refused:
        trainer.lock()
    assert str(refused.value).startswith(
        f"{trainer.path} is in use by another run (evaluate or predict or replay reads it). "
    )
    trainer.lock_file.close()
    for reader in readers:
        release(reader)


def test_a_reader_is_refused_while_a_run_trains(tmp_path):
    (tmp_path / "run" / "checkpoints").mkdir(parents=True)
    trainer = make_run(tmp_path)
    trainer.lock()
    reader = make_run(tmp_path, flags(tmp_path, command="evaluate"))
    with pytest.raises(SystemExit) as refused:
        reader.lock()
    assert f"is in use by another run (pid {os.getpid()} on " in str(refused.value)
    reader.lock_file.close()
    release(trainer)


def test_a_reader_of_a_directory_without_checkpoints_stops_before_locking(tmp_path):
    reader = make_run(tmp_path, flags(tmp_path, command="evaluate"))
    with pytest.raises(SystemExit, match=r"^Nothing to evaluate: .* holds no checkpoints\.$"):
        reader.lock()
    assert not (tmp_path / "run").exists()


def test_no_lock_takes_no_lock_and_says_so_except_in_fast_dev_runs_scratch(tmp_path, capsys):
    unlocked = make_run(tmp_path, flags(tmp_path, no_lock=True))
    assert unlocked.lock() is None
    assert not (tmp_path / "run" / "run.lock").exists()
    assert capsys.readouterr().out == (
        f"Not locking {unlocked.path} (--no-lock): no other run may use it.\n"
    )
    holder = make_run(tmp_path)
    holder.lock()
    # Another run holds it: --no-lock does not look.
    assert make_run(tmp_path, flags(tmp_path, no_lock=True)).lock() is None
    capsys.readouterr()
    scratch = make_run(tmp_path, flags(tmp_path, no_lock=True, fast_dev_run=2))
    assert scratch.lock() is None
    assert "Not locking" not in capsys.readouterr().out
    release(holder)


def test_a_multi_worker_jobs_refusal_is_returned_not_raised(tmp_path):
    first = make_run(tmp_path, multi_worker=True)
    assert first.lock() is None
    second = make_run(tmp_path, multi_worker=True)
    message = second.lock()
    assert message.startswith(f"{second.path} is in use by another run (pid {os.getpid()} on ")
    assert message.endswith("Wait for it to end, or pass another --output-dir.")
    # undo() is one process's: a multi-worker job's workers leave the directory as it is.
    assert not hasattr(first, "made") and not hasattr(first, "lock_text")
    second.lock_file.close()
    release(first)


def test_a_file_system_without_locks_is_refused_with_the_no_lock_advice(tmp_path, monkeypatch):
    def flock(file, operation):
        raise OSError(errno.ENOLCK, os.strerror(errno.ENOLCK))

    monkeypatch.setattr(rt.fcntl, "flock", flock)
    run = make_run(tmp_path)
    with pytest.raises(SystemExit) as refused:
        run.lock()
    assert str(refused.value) == (
        f"Cannot lock {run.path}/run.lock: No locks available. This file system does not support "
        f"locks; if no other run uses {run.path}, run again with --no-lock."
    )
    run.lock_file.close()


def test_a_lock_the_disk_cannot_write_leaves_no_run_lock_nor_the_directory_it_made(tmp_path):
    run = make_run(tmp_path)
    with file_size_limit(0), pytest.raises(OSError) as refused:
        run.lock()
    with contextlib.suppress(OSError):
        run.lock_file.close()
    assert refused.value.errno == errno.EFBIG
    assert refused.value.filename == f"{run.path}/run.lock"
    assert not (tmp_path / "run").exists()
    assert run.fault(refused.value) == (
        f"Stopped: cannot write {run.path}/run.lock (File too large). The file grew beyond the "
        "size this process may write: raise ulimit -f."
    )


def test_unlock_puts_back_run_locks_old_text_and_releases_the_lock(tmp_path):
    (tmp_path / "run").mkdir()
    old = "pid 1 on elsewhere, started 2026-01-01T00:00:00+0000\n"
    (tmp_path / "run" / "run.lock").write_text(old)
    run = make_run(tmp_path)
    run.lock()
    assert (tmp_path / "run" / "run.lock").read_text() != old
    run.unlock()
    assert (tmp_path / "run" / "run.lock").read_text() == old
    assert run.lock_file.closed
    other = make_run(tmp_path)
    assert other.lock() is None
    release(other)
    text = (tmp_path / "run" / "run.lock").read_text()
    run.unlock()  # once only: it no longer holds the lock
    assert (tmp_path / "run" / "run.lock").read_text() == text


def test_unlock_removes_run_lock_and_the_empty_folders_the_run_made(tmp_path):
    output = tmp_path / "a" / "b" / "run"
    run = make_run(tmp_path, flags(tmp_path, output_dir=str(output)))
    run.lock()
    assert run.made_folders == [str(output), str(output.parent), str(tmp_path / "a")]
    run.unlock()
    assert sorted(os.listdir(tmp_path)) == ["train.py"]
    # A folder that holds something else meanwhile stays, and the folders above it.
    run = make_run(tmp_path, flags(tmp_path, output_dir=str(output)))
    run.lock()
    (tmp_path / "a" / "note.txt").write_text("mine")
    run.unlock()
    assert not (tmp_path / "a" / "b").exists()
    assert os.listdir(tmp_path / "a") == ["note.txt"]


def test_the_lock_settles_what_a_kill_mid_export_left(tmp_path, capsys):
    (tmp_path / "run" / "export.old").mkdir(parents=True)
    (tmp_path / "run" / "export.old" / "model.keras").write_text("weights")
    run = make_run(tmp_path)
    run.lock()
    assert (tmp_path / "run" / "export" / "model.keras").read_text() == "weights"
    assert not (tmp_path / "run" / "export.old").exists()
    assert (
        f"Put back {run.path}/export: a replacement of it was cut short" in capsys.readouterr().out
    )
    release(run)


# --- A run refused before it starts ----------------------------------------------------------


def test_a_run_refused_at_its_start_leaves_no_setup_json_run_lock_or_directory(tmp_path, tf, keras):
    run = make_run(tmp_path, flags(tmp_path, profile=(8, 12)))
    run.lock()
    model = dense(keras)
    step = tf.Variable(0, dtype=tf.int64)
    run.restore(tf.train.Checkpoint(model=model, step=step), EXAMPLES, model=model)
    assert (tmp_path / "run" / "checkpoints" / "setup.json").exists()
    with pytest.raises(SystemExit) as refused:
        run.start(step, tf.Variable(-1, dtype=tf.int64), 10)
    assert str(refused.value) == (
        "--profile 8:12: this run trains steps 1 to 10; give START:STOP within them"
    )
    run.end(refused.value)
    release(run)
    assert not (tmp_path / "run").exists()


def test_a_refused_run_puts_back_what_run_lock_said_and_keeps_a_directory_it_found(
    tmp_path, tf, keras
):
    (tmp_path / "run").mkdir()
    old = "pid 7 on elsewhere, started 2026-01-01T00:00:00+0000\n"
    (tmp_path / "run" / "run.lock").write_text(old)
    (tmp_path / "run" / "notes.txt").write_text("mine")

    def train(args, run):
        run.lock()
        model = dense(keras)
        run.restore(tf.train.Checkpoint(model=model), EXAMPLES, model=model)
        raise SystemExit("Refused: a test's reason")

    with pytest.raises(SystemExit, match="a test's reason"):
        rt.run_and_record(flags(tmp_path), train, run_class(tmp_path))
    assert sorted(os.listdir(tmp_path / "run")) == ["notes.txt", "run.lock"]
    assert (tmp_path / "run" / "run.lock").read_text() == old


def test_a_failed_download_leaves_the_directory_as_the_run_found_it(tmp_path):
    output = tmp_path / "a" / "run"

    def train(args, run):
        run.lock()
        with rt.downloading("MNIST", "Offline? Give the data as files."):
            raise urllib.error.URLError("[Errno -3] Temporary failure in name resolution")

    with pytest.raises(rt.DownloadFailed) as failed:
        rt.run_and_record(flags(tmp_path, output_dir=str(output)), train, run_class(tmp_path))
    assert str(failed.value).startswith("Cannot download MNIST: <urlopen error [Errno -3] ")
    assert sorted(os.listdir(tmp_path)) == ["train.py"]


def test_run_and_record_says_a_machine_fault_in_a_few_lines(tmp_path, tf):
    def train(args, run):
        run.lock()
        run.start(tf.Variable(0, dtype=tf.int64), tf.Variable(-1, dtype=tf.int64), 10)
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), f"{args.output_dir}/metrics.jsonl")

    with pytest.raises(SystemExit) as stopped:
        rt.run_and_record(flags(tmp_path), train, run_class(tmp_path))
    path = tmp_path / "run"
    assert str(stopped.value) == (
        f"Stopped: cannot write {path}/metrics.jsonl (No space left on device). The disk is full: "
        "free some space.\nNo checkpoint was saved yet: once there is room, run the script again."
    )
    end = read_jsonl(path / "runs.jsonl")[-1]
    assert end["exit"] == "error"
    assert end["error"] == f"OSError: [Errno 28] No space left on device: '{path}/metrics.jsonl'"


# --- setup.json: the training setup ------------------------------------------------------------


def test_check_setup_refuses_another_setup_listing_each_key_that_differs(tmp_path):
    run = make_run(tmp_path)
    os.makedirs(run.checkpoints)
    saved = {**SETUP, "model": "aaaa", "gone": 1, "weights": "w1", "data": {"examples": 1}}
    Path(run.checkpoints, "setup.json").write_text(json.dumps(saved))
    setup = {**SETUP, "model": "bbbb", "data.batch_size": 64, "weights": "w1"}
    with pytest.raises(SystemExit) as refused:
        run.check_setup(setup)
    message = str(refused.value)
    assert message.startswith(
        f"Refusing to resume from {run.checkpoints}: its checkpoints come from another training "
        "setup (SETUP in this script; weights: "
    )
    lines = message.splitlines()
    assert "  model: 'aaaa' in the checkpoints, 'bbbb' in this run" in lines
    assert "  data.batch_size: 32 in the checkpoints, 64 in this run" in lines
    assert "  gone: 1 in the checkpoints, None in this run" in lines
    assert not [line for line in lines if line.startswith(("  optimizer", "  weights", "  data:"))]
    assert message.endswith(f"(with --init-from {run.path} to start from those weights).")
    run.check_setup({key: value for key, value in saved.items() if key != "data"})  # the same


def test_a_new_run_records_its_setup_its_weights_and_its_data_in_setup_json(tmp_path, tf, keras):
    data = tmp_path / "data.bin"
    data.write_bytes(b"0123456789")
    run = trained(tmp_path, tf, keras, saves=(), train_files=str(data))
    saved = json.loads(Path(run.checkpoints, "setup.json").read_text())
    assert saved == {
        **SETUP,
        "weights": rt.weights_fingerprint(run.checkpoint.model),
        "data": {
            "examples": 10,
            "files": {str(data): rt.file_record(str(data))},
            "digests": {str(data): hashlib.sha256(b"\0" + b"0123456789").hexdigest()},
        },
    }


def test_a_network_edited_by_hand_is_refused_by_its_weights_fingerprint(tmp_path, tf, keras):
    trained(tmp_path, tf, keras, saves=(1,))
    with pytest.raises(SystemExit) as refused:
        resume(tmp_path, tf, keras, units=3)
    message = str(refused.value)
    assert "its checkpoints come from another training setup" in message
    assert re.search(
        r"^  weights: '[0-9a-f]{16}' in the checkpoints, '[0-9a-f]{16}' in this", message, re.M
    )


def test_a_resume_on_other_data_through_restore_is_refused(tmp_path, tf, keras):
    data = tmp_path / "data.bin"
    data.write_bytes(b"0123456789")
    trained(tmp_path, tf, keras, saves=(1,), train_files=str(data))
    data.write_bytes(b"another ten")
    with pytest.raises(SystemExit, match="its checkpoints were trained on other data"):
        resume(tmp_path, tf, keras, train_files=str(data))


# --- setup.json: the training data -------------------------------------------------------------


def data_run(tmp_path: Path, data: Path, examples=EXAMPLES, **changes):
    run = make_run(tmp_path, flags(tmp_path, **changes), train_files=str(data))
    run.data = run.data_record(examples)
    return run


def record_setup(run) -> str:
    """setup.json as a new run of `run` writes it."""
    os.makedirs(run.checkpoints, exist_ok=True)
    setup_path = os.path.join(run.checkpoints, "setup.json")
    with open(setup_path, "w") as f:
        json.dump({**run.setup, "data": rt.with_digests(run.data)}, f)
    return setup_path


def test_the_data_record_holds_the_number_of_examples_and_each_files_size_and_time(tmp_path):
    data = tmp_path / "data.bin"
    data.write_bytes(b"0123456789")
    os.utime(data, (1_700_000_000, 1_700_000_000))
    run = make_run(tmp_path, train_files=str(data))
    assert run.data_record(EXAMPLES) == {
        "examples": 10,
        "files": {str(data): "10 bytes, modified 2023-11-14T22:13:20Z"},
    }
    for name in ("part-2.bin", "part-1.bin"):
        (tmp_path / name).write_bytes(b"x")
    pattern = make_run(tmp_path, train_files=str(tmp_path / "part-*.bin"), train_glob=True)
    assert list(pattern.data_record(EXAMPLES)["files"]) == [
        str(tmp_path / "part-1.bin"),
        str(tmp_path / "part-2.bin"),
    ]
    assert make_run(tmp_path, unit="updates").data_record(EXAMPLES) is None  # an environment


def test_other_training_data_is_refused_naming_the_file_that_differs(tmp_path):
    data = tmp_path / "data.bin"
    data.write_bytes(b"0123456789")
    before = rt.file_record(str(data))
    setup_path = record_setup(data_run(tmp_path, data))
    data.write_bytes(b"0123456789, and more")
    run = data_run(tmp_path, data)  # as many examples: only the file tells
    with pytest.raises(SystemExit) as refused:
        run.check_data(setup_path)
    message = str(refused.value)
    assert message.startswith(
        f"Refusing to resume from {run.checkpoints}: its checkpoints were trained on other data "
        "(setup.json records the number of examples and each file's size and time, and the "
        "sha256 of data up to a gigabyte). What differs:\n"
    )
    assert (
        f"  {data}: its contents changed (another sha256); {before} in the checkpoints, "
        f"{rt.file_record(str(data))} in this run\n"
    ) in message
    assert "resume on this data on purpose with --new-data" in message


def test_other_data_of_another_number_of_examples_is_refused(tmp_path):
    run = make_run(tmp_path)  # no files named: the number of examples alone
    run.data = run.data_record(EXAMPLES)
    setup_path = record_setup(run)
    run.data = run.data_record(EXAMPLES[:9])
    with pytest.raises(SystemExit) as refused:
        run.check_data(setup_path)
    assert "\n  data.train: 10 examples in the checkpoints, 9 in this run\n" in str(refused.value)


def test_new_data_accepts_other_data_and_setup_json_records_it(tmp_path, capsys):
    data = tmp_path / "data.bin"
    data.write_bytes(b"0123456789")
    setup_path = record_setup(data_run(tmp_path, data))
    data.write_bytes(b"other data, longer")
    run = data_run(tmp_path, data, new_data=True)
    run.check_data(setup_path)
    out = capsys.readouterr().out
    assert out.startswith(f"Resuming on other training data (--new-data):\n  {data}: ")
    saved = json.loads(Path(setup_path).read_text())
    assert saved == {
        **SETUP,
        "data": {
            "examples": 10,
            "files": {str(data): rt.file_record(str(data))},
            "digests": {str(data): rt.file_digest(str(data))},
        },
    }
    data_run(tmp_path, data).check_data(setup_path)  # the next resume takes it as it is


def test_a_file_copied_again_with_the_same_contents_is_the_same_data(tmp_path, capsys):
    data = tmp_path / "data.bin"
    data.write_bytes(b"0123456789")
    os.utime(data, (1_700_000_000, 1_700_000_000))
    setup_path = record_setup(data_run(tmp_path, data))
    digests = json.loads(Path(setup_path).read_text())["data"]["digests"]
    data.write_bytes(data.read_bytes())
    os.utime(data, (1_800_000_000, 1_800_000_000))  # copied again: a new time
    data_run(tmp_path, data).check_data(setup_path)
    assert capsys.readouterr().out == f"The same training data, copied again: {data}\n"
    saved = json.loads(Path(setup_path).read_text())["data"]
    assert saved["files"] == {str(data): "10 bytes, modified 2027-01-15T08:00:00Z"}
    assert saved["digests"] == digests


# --- Checkpoints --------------------------------------------------------------------------------


def saved_checkpoints(tf, directory: Path, steps) -> None:
    variable = tf.Variable(0.0)
    manager = tf.train.CheckpointManager(tf.train.Checkpoint(v=variable), str(directory), 10)
    for step in steps:
        variable.assign(float(step))
        manager.save(checkpoint_number=step)


def test_checkpoints_whose_state_file_is_gone_are_kept_and_listed_again(tmp_path, tf, capsys):
    """A `checkpoint` file deleted (or never synced) beside whole checkpoints: the manager would
    take them for saves cut short and remove every one; they are listed again instead."""
    directory = tmp_path / "checkpoints"
    saved_checkpoints(tf, directory, (2, 10))
    (directory / "checkpoint").unlink()
    paths = rt.checkpoint_paths(str(directory))
    assert paths == [str(directory / "ckpt-2"), str(directory / "ckpt-10")]
    state = directory / "checkpoint"
    expected = f"{state} was missing: rebuilt from the checkpoint files (ckpt-2, ckpt-10)\n"
    assert capsys.readouterr().out == expected
    run = run_class(tmp_path)(flags(tmp_path))
    run.remove_partial_checkpoints(str(directory))
    assert sorted(p.name for p in directory.glob("ckpt-*.index")) == [
        "ckpt-10.index",
        "ckpt-2.index",
    ]
    assert rt.checkpoint_paths(str(tmp_path / "nothing")) == []  # no folder: no checkpoint yet
    empty = tmp_path / "empty"
    empty.mkdir()
    assert rt.checkpoint_paths(str(empty)) == [] and not (empty / "checkpoint").exists()


@pytest.mark.parametrize(
    "damage", [b"\xff\xfe\x00\x01garbage", b"", b'model_checkpoint_path: "ckpt-'], ids=repr
)
def test_a_damaged_state_file_is_rebuilt_from_the_index_files(tmp_path, tf, damage, capsys):
    directory = tmp_path / "checkpoints"
    saved_checkpoints(tf, directory, (2, 10))
    state = directory / "checkpoint"
    state.write_bytes(damage)
    inode = state.stat().st_ino
    paths = rt.checkpoint_paths(str(directory))
    assert paths == [str(directory / "ckpt-2"), str(directory / "ckpt-10")]  # by number
    assert capsys.readouterr().out == (
        f"{state} was damaged: rebuilt from the checkpoint files (ckpt-2, ckpt-10)\n"
    )
    rebuilt = tf.train.get_checkpoint_state(str(directory))
    assert rebuilt.model_checkpoint_path == str(directory / "ckpt-10")
    assert list(rebuilt.all_model_checkpoint_paths) == paths
    assert rebuilt.last_preserved_timestamp < min(rebuilt.all_model_checkpoint_timestamps)
    assert state.stat().st_ino != inode  # a new file renamed over it, not rewritten in place
    assert not Path(f"{state}.tmp").exists()


def test_a_state_file_rebuilt_is_never_half_written(tmp_path, tf, monkeypatch):
    directory = tmp_path / "checkpoints"
    saved_checkpoints(tf, directory, (1, 2))
    state = directory / "checkpoint"
    state.write_bytes(b"\xffgarbage")

    class HalfWritten:  # a disk that takes half the text, then fills up
        def __init__(self, file):
            self.file = file

        def __enter__(self):
            return self

        def __exit__(self, *exception):
            self.file.close()

        def write(self, text):
            self.file.write(text[: len(text) // 2])
            self.file.flush()
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    def opened(path, mode="r", *args, **kwargs):
        file = open(path, mode, *args, **kwargs)
        return HalfWritten(file) if "w" in mode else file

    monkeypatch.setattr(rt, "open", opened, raising=False)
    with pytest.raises(OSError):
        rt.checkpoint_paths(str(directory))
    monkeypatch.undo()
    assert state.read_bytes() == b"\xffgarbage"  # damaged as it was: the next run repairs it
    assert rt.checkpoint_paths(str(directory)) == [
        str(directory / "ckpt-1"),
        str(directory / "ckpt-2"),
    ]


def test_checkpoint_paths_without_repair_reads_the_index_files_and_writes_nothing(
    tmp_path, tf, capsys
):
    directory = tmp_path / "checkpoints"
    saved_checkpoints(tf, directory, (3, 4))
    (directory / "checkpoint").write_bytes(b"\xffgarbage")
    files = sorted(os.listdir(directory))
    paths = rt.checkpoint_paths(str(directory), repair=False)
    assert paths == [str(directory / "ckpt-3"), str(directory / "ckpt-4")]
    assert (directory / "checkpoint").read_bytes() == b"\xffgarbage"
    assert sorted(os.listdir(directory)) == files
    assert capsys.readouterr().out == ""


def test_a_damaged_state_file_without_any_checkpoint_is_removed(tmp_path, tf, capsys):
    directory = tmp_path / "checkpoints"
    directory.mkdir()
    (directory / "checkpoint").write_bytes(b"\xffgarbage")
    assert rt.checkpoint_paths(str(directory)) == []
    assert os.listdir(directory) == []
    assert "rebuilt from the checkpoint files (none)" in capsys.readouterr().out
    assert rt.checkpoint_paths(str(tmp_path / "absent")) == []


def test_remove_partial_checkpoints_removes_what_a_cut_save_left(tmp_path, tf, capsys):
    directory = tmp_path / "checkpoints"
    saved_checkpoints(tf, directory, (1, 2))
    (directory / "ckpt-3.index").write_bytes(b"cut")
    (directory / "ckpt-3.data-00000-of-00001").write_bytes(b"cut")
    (directory / "ckpt-4_temp").mkdir()
    (directory / "ckpt-4_temp" / "part-00000-of-00001.index").write_bytes(b"cut")
    (directory / "checkpoint.tmp0a1b2c3d").write_text('model_checkpoint_path: "ckpt-4"\n')
    make_run(tmp_path).remove_partial_checkpoints(str(directory))
    assert sorted(os.listdir(directory)) == [
        "checkpoint",
        "ckpt-1.data-00000-of-00001",
        "ckpt-1.index",
        "ckpt-2.data-00000-of-00001",
        "ckpt-2.index",
    ]
    assert capsys.readouterr().out == (
        f"Removed {directory}/checkpoint.tmp0a1b2c3d: the state file of a save that was cut short\n"
    )


def test_restore_resumes_from_the_newest_checkpoint_that_restores(tmp_path, tf, keras, capsys):
    trained(tmp_path, tf, keras, saves=(1, 2, 3))
    checkpoints = tmp_path / "run" / "checkpoints"
    (checkpoints / "ckpt-3.data-00000-of-00001").write_bytes(b"garbage")
    metrics = tmp_path / "run" / "metrics.jsonl"  # a killed run logged past its checkpoint
    metrics.write_text("".join(json.dumps({"step": s, "loss": 0.5}) + "\n" for s in range(1, 5)))
    capsys.readouterr()
    run, model = resume(tmp_path, tf, keras)
    out = capsys.readouterr().out
    assert (
        f"Cannot restore {checkpoints}/ckpt-3: its files are damaged or are no checkpoint's "
        "(IndexError: "
    ) in out
    assert f"Resumed from {checkpoints}/ckpt-2 at step 2\n" in out
    assert (run.resumed_from, run.saved) == (str(checkpoints / "ckpt-2"), 2)
    np.testing.assert_array_equal(model.kernel.numpy(), np.full((3, 2), 2.0))
    assert [record["step"] for record in read_jsonl(metrics)] == [1, 2]


def test_restore_stops_when_no_checkpoint_restores(tmp_path, tf, keras):
    trained(tmp_path, tf, keras, saves=(1, 2))
    checkpoints = tmp_path / "run" / "checkpoints"
    for step in (1, 2):
        (checkpoints / f"ckpt-{step}.data-00000-of-00001").write_bytes(b"garbage")
    with pytest.raises(SystemExit) as refused:
        resume(tmp_path, tf, keras)
    assert str(refused.value) == (
        f"None of the checkpoints restores ({checkpoints}/ckpt-1, {checkpoints}/ckpt-2): see the "
        "errors above. Move them away (or pass another --output-dir) to start from scratch."
    )


def test_init_from_starts_from_another_runs_weights_once(tmp_path, tf, keras, capsys):
    source = trained(tmp_path / "source", tf, keras, saves=(5,))
    newest = f"{source.checkpoints}/ckpt-5"
    run, model = resume(tmp_path, tf, keras, args=flags(tmp_path, init_from=source.path))
    assert run.init_from == newest
    assert f"Starting from the weights of {newest}" in capsys.readouterr().out
    np.testing.assert_array_equal(model.kernel.numpy(), np.full((3, 2), 5.0))
    assert int(run.checkpoint.step.numpy()) == 0  # the weights alone, not the step
    run.nonfinite_step = tf.Variable(-1, dtype=tf.int64)
    run.save(1)
    with pytest.raises(SystemExit) as refused:
        resume(tmp_path, tf, keras, args=flags(tmp_path, init_from=source.path))
    assert str(refused.value).startswith(
        f"--init-from {source.path}: {run.checkpoints} already holds this run's checkpoints."
    )
    with pytest.raises(SystemExit, match=r"cannot load .*ckpt-5 into this network \("):
        resume(
            tmp_path / "other",
            tf,
            keras,
            args=flags(tmp_path / "other", init_from=source.path),
            units=3,
        )
    empty = tmp_path / "empty"
    with pytest.raises(SystemExit) as refused:
        resume(tmp_path / "third", tf, keras, args=flags(tmp_path / "third", init_from=str(empty)))
    assert str(refused.value) == (
        f"--init-from {empty}: no checkpoint in {empty}/checkpoints. Give the --output-dir of a "
        "run that saved one."
    )


def test_evaluate_restores_the_checkpoint_it_names_and_writes_nothing(tmp_path, tf, keras):
    trained(tmp_path, tf, keras, saves=(1, 2))
    checkpoints = tmp_path / "run" / "checkpoints"

    def snapshot():
        return {path: path.stat().st_mtime_ns for path in (tmp_path / "run").rglob("*")}

    before = snapshot()
    run, model = resume(tmp_path, tf, keras, args=flags(tmp_path, command="evaluate"))
    assert (run.resumed_from, run.saved) == (str(checkpoints / "ckpt-2"), 2)
    np.testing.assert_array_equal(model.kernel.numpy(), np.full((3, 2), 2.0))
    chosen = flags(tmp_path, command="evaluate", checkpoint=str(checkpoints / "ckpt-1"))
    run, model = resume(tmp_path, tf, keras, args=chosen)
    assert run.saved == 1
    np.testing.assert_array_equal(model.kernel.numpy(), np.full((3, 2), 1.0))
    bogus = str(tmp_path / "no-checkpoint")
    with pytest.raises(SystemExit, match=f"^--checkpoint: cannot restore {re.escape(bogus)}: its"):
        resume(tmp_path, tf, keras, args=flags(tmp_path, command="evaluate", checkpoint=bogus))
    assert snapshot() == before


def test_a_nan_before_a_save_stops_the_run_and_keeps_its_batch_for_replay(
    tmp_path, tf, keras, monkeypatch
):
    def batch_of_step(examples, step):
        return np.full((2, 3), step, np.float32), np.arange(2) + step

    monkeypatch.setattr(sys, "argv", ["train.py"])
    run = trained(
        tmp_path, tf, keras, saves=(2,), batch_names=("images", "labels"),
        batch_of_step=staticmethod(batch_of_step),
    )  # fmt: skip
    run.nonfinite_step.assign(3)
    with pytest.raises(SystemExit) as stopped:
        run.save(4)
    assert str(stopped.value) == (
        f"The loss became NaN or Inf at step 3: stopped without saving (newest checkpoint: "
        f"{run.checkpoints}/ckpt-2).\nThe batch it trained on is in {run.path}/debug/step-3; "
        "replay the step, eagerly with every op checked:\n"
        f"  python train.py replay --step 3 --output-dir {run.path}\n"
        "Lower the learning rate, clip the gradients, or look for NaN in the data."
    )
    assert rt.checkpoint_paths(run.checkpoints, repair=False) == [f"{run.checkpoints}/ckpt-2"]
    assert os.listdir(f"{run.path}/debug/step-3") == ["batch.npz"]
    with np.load(f"{run.path}/debug/step-3/batch.npz") as batch:
        np.testing.assert_array_equal(batch["images"], np.full((2, 3), 3.0))
        np.testing.assert_array_equal(batch["labels"], [3, 4])


def test_link_checkpoint_makes_a_checkpoint_the_only_one_of_a_directory(tmp_path, tf, keras):
    run = trained(tmp_path, tf, keras, saves=(1, 2))
    target = tmp_path / "scratch" / "checkpoints"
    run.link_checkpoint(f"{run.checkpoints}/ckpt-1", str(target))
    assert sorted(os.listdir(target)) == [
        "checkpoint",
        "ckpt-1.data-00000-of-00001",
        "ckpt-1.index",
        "setup.json",
    ]
    assert (target / "ckpt-1.index").stat().st_ino == Path(
        run.checkpoints, "ckpt-1.index"
    ).stat().st_ino
    assert (target / "setup.json").read_text() == Path(run.checkpoints, "setup.json").read_text()
    assert rt.checkpoint_paths(str(target), repair=False) == [str(target / "ckpt-1")]
    model, step = dense(keras), tf.Variable(0, dtype=tf.int64)
    rt.restore_whole(tf.train.Checkpoint(model=model, step=step), str(target / "ckpt-1"))
    assert int(step.numpy()) == 1
    np.testing.assert_array_equal(model.kernel.numpy(), np.full((3, 2), 1.0))


# --- The logs -----------------------------------------------------------------------------------


def test_append_writes_strict_json_with_nonfinite_values_as_null_and_named(tmp_path):
    run = make_run(tmp_path)
    os.makedirs(run.path)
    record = {"step": 3, "loss": math.nan, "grad": math.inf, "low": -math.inf, "acc": 0.5}
    run.append("metrics.jsonl", record)
    text = (tmp_path / "run" / "metrics.jsonl").read_text()
    assert text.endswith("}\n") and text.count("\n") == 1

    def refuse(constant):
        raise ValueError(f"not strict JSON: {constant}")

    assert json.loads(text, parse_constant=refuse) == {
        "step": 3,
        "loss": None,
        "grad": None,
        "low": None,
        "acc": 0.5,
        "nonfinite": {"loss": "NaN", "grad": "Infinity", "low": "-Infinity"},
    }


def test_append_keeps_a_line_cut_short_by_a_kill_apart(tmp_path):
    run = make_run(tmp_path)
    os.makedirs(run.path)
    path = tmp_path / "run" / "metrics.jsonl"
    path.write_text('{"step": 1, "loss": 0.5}\n{"step": 2, "lo')
    run.append("metrics.jsonl", {"step": 3, "loss": 0.25})
    assert (
        path.read_text() == '{"step": 1, "loss": 0.5}\n{"step": 2, "lo\n{"step": 3, "loss": 0.25}\n'
    )


def test_an_append_the_disk_refuses_leaves_the_file_as_it_was_and_names_it(tmp_path):
    run = make_run(tmp_path)
    os.makedirs(run.path)
    path = tmp_path / "run" / "metrics.jsonl"
    path.write_text('{"step": 1, "loss": 0.5}\n')
    with file_size_limit(path.stat().st_size + 10), pytest.raises(OSError) as refused:
        run.append("metrics.jsonl", {"step": 2, "loss": 0.25, "note": "x" * 100})
    assert refused.value.errno == errno.EFBIG
    assert refused.value.filename == str(path)
    assert path.read_text() == '{"step": 1, "loss": 0.5}\n'  # the part it took is taken back


def test_forget_logged_after_drops_the_records_past_the_step_and_cut_lines(tmp_path, capsys):
    run = make_run(tmp_path, csv_columns=("step", "epoch", "loss"))
    os.makedirs(run.path)
    jsonl, table = tmp_path / "run" / "metrics.jsonl", tmp_path / "run" / "metrics.csv"
    lines = [json.dumps({"step": step, "epoch": 1, "loss": 1 / step}) + "\n" for step in (1, 2, 3)]
    jsonl.write_text(lines[0] + lines[1] + '{"step": 3, "lo\n' + lines[2] + '{"step": 2')
    with open(table, "w", newline="") as f:
        f.write("step,epoch,loss\r\n1,1,1.0\r\n2,1,0.5\r\n3,1,0.33\r\n2\r\n12,2,0.1\r\n")
    run.forget_logged_after(2)
    assert jsonl.read_text() == lines[0] + lines[1]
    with open(table, newline="") as f:
        assert f.read() == "step,epoch,loss\r\n1,1,1.0\r\n2,1,0.5\r\n"
    assert capsys.readouterr().out == (
        f"Dropped from {jsonl} its 3 records after step 2: logged again\n"
        f"Dropped from {table} its 3 records after step 2: logged again\n"
    )
    run.forget_logged_after(2)  # nothing past it now: nothing rewritten
    assert capsys.readouterr().out == ""
    assert sorted(os.listdir(tmp_path / "run")) == ["metrics.csv", "metrics.jsonl"]


def test_log_writes_metrics_jsonl_and_csv_with_the_validation_values_named_apart(
    tmp_path, keras, capsys
):
    columns = ("step", "epoch", "loss", "steps_per_second", "val_loss", "val_accuracy")
    run = make_run(tmp_path, tensorboard=False, csv_columns=columns)
    os.makedirs(run.path)
    run.start_epoch(0, 2, 0, 10, [keras.metrics.Mean(name="loss")])
    assert capsys.readouterr().out.startswith("Epoch 1/2\n")
    run.log("train", 5, {"loss": 0.5}, 0)
    run.log("validation", 5, {"loss": 0.75, "accuracy": 0.5}, 0)
    assert capsys.readouterr().out.endswith("val_loss: 0.7500  val_accuracy: 0.5000\n")
    train, validation = read_jsonl(tmp_path / "run" / "metrics.jsonl")
    assert list(train) == ["step", "epoch", "loss", "steps_per_second"]
    assert (train["step"], train["epoch"], train["loss"]) == (5, 1, 0.5)
    assert train["steps_per_second"] > 0
    assert validation == {"step": 5, "epoch": 1, "val_loss": 0.75, "val_accuracy": 0.5}
    with open(tmp_path / "run" / "metrics.csv", newline="") as f:
        header, first, second = csv.reader(f)
    assert header == list(columns)
    assert first[:3] == ["5", "1", "0.5"] and first[4:] == ["", ""]
    assert second == ["5", "1", "", "", "0.75", "0.5"]


def test_log_of_training_values_needs_start_epoch_first(tmp_path):
    run = make_run(tmp_path, tensorboard=False)
    os.makedirs(run.path)
    with pytest.raises(AttributeError, match="timer"):
        run.log("train", 1, {"loss": 1.0}, 0)


def test_log_writes_tensorboard_events_of_each_split(tmp_path, tf):
    run = make_run(tmp_path, jsonl=False)
    os.makedirs(run.path)
    run.log("validation", 4, {"loss": 0.5}, 0)
    run.writer("validation").flush()
    events = os.listdir(tmp_path / "run" / "logs" / "validation")
    assert len(events) == 1 and events[0].startswith("events.out.tfevents.")
    assert not (tmp_path / "run" / "metrics.jsonl").exists()


def test_start_epoch_continues_the_checkpointed_means_of_an_epoch_resumed_in_its_middle(
    tmp_path, keras, capsys
):
    mean = keras.metrics.Mean(name="loss")
    mean.update_state(3.0)
    run = make_run(tmp_path, means_checkpointed=True)
    run.saved = 4  # resumed at step 4 of the epoch of steps 1 to 10
    run.start_epoch(0, 2, 0, 10, [mean])
    assert float(mean.result()) == 3.0
    run.start_epoch(1, 2, 10, 20, [mean])  # the next epoch starts at 0
    assert float(mean.count.numpy()) == 0.0
    mean.update_state(3.0)
    make_run(tmp_path).start_epoch(0, 2, 0, 10, [mean])  # means not in the checkpoint
    assert float(mean.count.numpy()) == 0.0
    capsys.readouterr()
    replaying = make_run(tmp_path, flags(tmp_path, step=3, epochs=3))
    replaying.start_epoch(0, 1, 0, 3, [mean])
    assert capsys.readouterr().out.startswith("Epoch 1/3\n")  # the run's epochs, not the replay's


def test_evaluated_appends_the_validation_values_to_evaluations_jsonl(tmp_path, capsys):
    run = make_run(tmp_path, flags(tmp_path, command="evaluate", data=None))
    os.makedirs(run.path)
    run.resumed_from, run.saved = f"{run.checkpoints}/ckpt-3", 3
    run.evaluated({"loss": 0.25, "accuracy": 0.875})
    assert capsys.readouterr().out == (
        f"{run.checkpoints}/ckpt-3 (step 3):\nval_loss: 0.2500  val_accuracy: 0.8750\n"
    )
    run.args.data = "other.npz"
    run.evaluated({"loss": 0.5})
    assert read_jsonl(tmp_path / "run" / "evaluations.jsonl") == [
        {
            "checkpoint": f"{run.checkpoints}/ckpt-3",
            "step": 3,
            "data": "validation",
            "val_loss": 0.25,
            "val_accuracy": 0.875,
        },
        {
            "checkpoint": f"{run.checkpoints}/ckpt-3",
            "step": 3,
            "data": "other.npz",
            "val_loss": 0.5,
        },
    ]


# --- Machine faults -----------------------------------------------------------------------------


def test_fault_says_a_full_disk_before_any_checkpoint(tmp_path):
    run = make_run(tmp_path)
    error = OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), "/data/run/metrics.jsonl")
    stopped = (
        "Stopped: cannot write /data/run/metrics.jsonl (No space left on device). The disk is "
        "full: free some space."
    )
    assert run.fault(error) == stopped
    run.run = "0a1b2c3d"  # started: it ran, and saved nothing yet
    assert run.fault(error) == (
        f"{stopped}\nNo checkpoint was saved yet: once there is room, run the script again."
    )
    unnamed = run.fault(OSError(errno.ENOSPC, os.strerror(errno.ENOSPC)))
    assert unnamed.startswith(f"Stopped: cannot write into {run.path} (No space left on device).")


def test_fault_names_the_intact_checkpoint_after_a_full_disk_or_a_read_only_one(tmp_path, tf):
    run = make_run(tmp_path)
    write_state(Path(run.checkpoints), (2, 4))
    intact = f"The newest checkpoint, {run.checkpoints}/ckpt-4 (step 4), is intact"
    full = run.fault(OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), "/x"))
    assert full == (
        "Stopped: cannot write /x (No space left on device). The disk is full: free some space."
        f"\n{intact}: once there is room, run the script again with the same --output-dir to "
        "resume."
    )
    read_only = run.fault(OSError(errno.EROFS, os.strerror(errno.EROFS), "/x"))
    assert read_only == (
        "Stopped: cannot write /x (Read-only file system). The file system is read-only."
        f"\n{intact}: to resume from it, run the script again with the same --output-dir once it "
        f"can be written, or copy {run.path} to a place that can and pass that as --output-dir."
    )


def test_fault_of_a_read_only_file_system_without_a_checkpoint(tmp_path):
    run = make_run(tmp_path)
    run.run = "0a1b2c3d"
    error = OSError(errno.EROFS, os.strerror(errno.EROFS), "/x/run.lock")
    assert run.fault(error) == (
        "Stopped: cannot write /x/run.lock (Read-only file system). The file system is "
        "read-only: pass an --output-dir on a writable one."
    )


def test_fault_reads_tensorflows_file_errors_naming_the_file_not_its_temporary_name(tmp_path, tf):
    run = make_run(tmp_path)
    checkpoint = f"{run.checkpoints}/ckpt-3"
    message = (
        f"{checkpoint}_temp/part-00000-of-00001.data-00000-of-00001.tempstate8231; No space left "
        "on device [Op:SaveV2]"
    )
    assert run.fault(tf.errors.ResourceExhaustedError(None, None, message)) == (
        f"Stopped: cannot write {checkpoint} (No space left on device). The disk is full: free "
        "some space."
    )
    state = f"{run.checkpoints}/checkpoint.tmp5f2e1d; Read-only file system"
    assert run.fault(tf.errors.UnknownError(None, None, state)).startswith(
        f"Stopped: cannot write {run.checkpoints}/checkpoint (Read-only file system). "
    )


def test_fault_is_none_for_other_errors(tmp_path, tf):
    run = make_run(tmp_path)
    assert run.fault(ValueError("x; No space left on device")) is None
    assert run.fault(FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), "/x")) is None
    shapes = tf.errors.InvalidArgumentError(None, None, "Incompatible shapes [Op:MatMul]")
    assert run.fault(shapes) is None


# --- Whole directories, checksums and digests --------------------------------------------------


def test_written_whole_replaces_the_directory_whole(tmp_path):
    export = tmp_path / "export"
    with rt.written_whole(str(export)) as partial:  # none before: made
        Path(partial, "first.txt").write_text("first")
    assert os.listdir(export) == ["first.txt"]
    with rt.written_whole(str(export)) as partial:
        assert partial == f"{export}.partial"
        Path(partial, "second.txt").write_text("second")
        assert os.listdir(export) == ["first.txt"]  # the old one, until the new one is whole
    assert os.listdir(export) == ["second.txt"]
    assert os.listdir(tmp_path) == ["export"]


def test_a_written_whole_that_fails_leaves_the_old_directory_and_no_partial(tmp_path):
    export = tmp_path / "export"
    export.mkdir()
    (export / "old.txt").write_text("old")
    with pytest.raises(OSError, match="No space"), rt.written_whole(str(export)) as partial:
        Path(partial, "new.txt").write_text("new")
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
    assert os.listdir(export) == ["old.txt"]
    assert os.listdir(tmp_path) == ["export"]
    with pytest.raises(KeyboardInterrupt), rt.written_whole(str(tmp_path / "fresh")):
        raise KeyboardInterrupt
    assert os.listdir(tmp_path) == ["export"]


def test_settle_whole_puts_back_the_old_directory_a_kill_left_aside(tmp_path, capsys):
    export = tmp_path / "export"
    Path(f"{export}.old").mkdir()
    Path(f"{export}.old", "model.keras").write_text("weights")
    Path(f"{export}.partial").mkdir()  # the new one, never finished
    rt.settle_whole(str(export))
    assert (export / "model.keras").read_text() == "weights"
    assert os.listdir(tmp_path) == ["export"]
    assert capsys.readouterr().out == (
        f"Put back {export}: a replacement of it was cut short\n"
        f"Removed {export}.partial: left by an interrupted export\n"
    )
    Path(f"{export}.old").mkdir()  # the new one was in place: the old one is stale
    rt.settle_whole(str(export))
    assert (export / "model.keras").read_text() == "weights"
    assert os.listdir(tmp_path) == ["export"]


def test_exchange_swaps_two_directories_in_one_step(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    (a / "from_a").write_text("a")
    (b / "from_b").write_text("b")
    assert rt.exchange(str(a), str(b)) is True
    assert os.listdir(a) == ["from_b"] and os.listdir(b) == ["from_a"]
    with pytest.raises(FileNotFoundError):
        rt.exchange(str(a), str(tmp_path / "missing"))


def test_checksums_tell_an_edited_script_from_an_unedited_one(tmp_path):
    digest = hashlib.sha256(SCRIPT.encode()).hexdigest()[:16]
    script = tmp_path / "train.py"
    script.write_text(SCRIPT.replace("0" * 16, digest))  # as loopgen renders it
    assert rt.checksums(str(script)) == (digest, digest)
    script.write_text(script.read_text() + "# my edit\n")
    edited = hashlib.sha256((SCRIPT + "# my edit\n").encode()).hexdigest()[:16]
    assert rt.checksums(str(script)) == (digest, edited)
    whole = hashlib.sha256(script.read_bytes()).hexdigest()[:16]
    assert rt.checksums(str(script), "runtime") == (None, whole)  # no such field: None


def test_file_record_of_a_file_a_directory_and_an_absent_path(tmp_path):
    data = tmp_path / "a.bin"
    data.write_bytes(b"12345")
    os.utime(data, (1_700_000_000, 1_700_000_000))
    assert rt.file_record(str(data)) == "5 bytes, modified 2023-11-14T22:13:20Z"
    images = tmp_path / "images"
    (images / "cat").mkdir(parents=True)
    (images / "cat" / "1.png").write_bytes(b"ab")
    (images / "2.png").write_bytes(b"cde")
    os.utime(images / "cat" / "1.png", (1_700_000_000, 1_700_000_000))
    os.utime(images / "2.png", (1_700_000_100, 1_700_000_100))
    record = rt.file_record(str(images))
    assert re.fullmatch(
        r"2 files, 5 bytes, newest modified 2023-11-14T22:15:00Z, times [0-9a-f]{12}", record
    )
    os.utime(images / "cat" / "1.png", (1_600_000_000, 1_600_000_000))  # older than the newest
    assert rt.file_record(str(images)) != record
    assert rt.file_record(str(tmp_path / "gone")) == "absent"


def test_file_digest_of_a_directory_changes_when_a_file_is_renamed(tmp_path):
    data = tmp_path / "a.bin"
    data.write_bytes(b"12345")
    assert rt.file_digest(str(data)) == hashlib.sha256(b"\0" + b"12345").hexdigest()
    images = tmp_path / "images"
    images.mkdir()
    (images / "a.txt").write_text("one")
    (images / "b.txt").write_text("two")
    before = rt.file_digest(str(images))
    (images / "a.txt").rename(images / "a2.txt")  # the same contents, in the same order
    assert rt.file_digest(str(images)) != before


def test_with_digests_adds_each_files_sha256_up_to_the_limit(tmp_path):
    data = tmp_path / "data.bin"
    data.write_bytes(b"0123456789")
    record = {"examples": 10, "files": {str(data): rt.file_record(str(data))}}
    digests = {str(data): rt.file_digest(str(data))}
    assert rt.with_digests(record) == {**record, "digests": digests}
    assert rt.with_digests(record, limit=10) == {**record, "digests": digests}
    assert rt.with_digests(record, limit=9) == record


def test_weights_fingerprint_follows_names_shapes_and_dtypes(keras):
    expected = [["kernel", [3, 2], "float32"], ["bias", [2], "float32"]]
    fingerprint = hashlib.sha256(json.dumps(expected).encode()).hexdigest()[:16]
    assert rt.weights_fingerprint(dense(keras)) == fingerprint  # not the values
    assert rt.weights_fingerprint(dense(keras)) == fingerprint
    assert rt.weights_fingerprint(dense(keras, 3)) != fingerprint
    assert rt.weights_fingerprint(dense(keras), dense(keras, 3)) != rt.weights_fingerprint(
        dense(keras, 3), dense(keras)
    )


# --- Downloads ----------------------------------------------------------------------------------


INSTEAD = "Offline? Put mnist.npz in ~/.keras/datasets instead."


def test_a_failed_download_stops_with_one_message_and_the_alternative():
    with (
        pytest.raises(rt.DownloadFailed) as failed,
        rt.downloading("MNIST", INSTEAD),
    ):
        raise urllib.error.URLError("[Errno -3] Temporary failure in name resolution")
    assert str(failed.value) == (
        f"Cannot download MNIST: <urlopen error [Errno -3] Temporary failure in name resolution>. "
        f"{INSTEAD}"
    )
    assert isinstance(failed.value, SystemExit)
    assert failed.value.__cause__ is None and failed.value.__suppress_context__


def test_a_download_failure_is_found_where_the_error_was_raised_from():
    def get_file():  # as keras.utils.get_file raises it
        try:
            raise urllib.error.URLError("timed out")
        except urllib.error.URLError as error:
            raise Exception(
                "URL fetch failure on https://example.org/mnist.npz: None -- timed out\nmore"
            ) from error

    with pytest.raises(rt.DownloadFailed) as failed, rt.downloading("MNIST", INSTEAD):
        get_file()
    assert str(failed.value) == (
        f"Cannot download MNIST: URL fetch failure on https://example.org/mnist.npz: None -- "
        f"timed out. {INSTEAD}"
    )


def test_a_download_that_needs_a_module_says_which():
    with pytest.raises(rt.DownloadFailed) as failed, rt.downloading("mnist (TFDS)", INSTEAD):
        raise ModuleNotFoundError(
            "No module named 'importlib_resources'", name="importlib_resources"
        )
    assert str(failed.value) == (
        "Cannot download mnist (TFDS): it needs the module importlib_resources (pip install "
        f"importlib_resources). {INSTEAD}"
    )


def test_other_errors_pass_through_downloading():
    error = ValueError("a bad shape")
    with pytest.raises(ValueError) as raised, rt.downloading("MNIST", INSTEAD):
        raise error
    assert raised.value is error


def context_error(cause: BaseException) -> ValueError:
    """A ValueError raised while handling `cause` (its __context__)."""
    try:
        try:
            raise cause
        except BaseException:
            raise ValueError("while parsing")  # noqa: B904
    except ValueError as error:
        return error


@pytest.mark.parametrize(
    "error, failed",
    [
        (socket.gaierror(-2, "Name or service not known"), True),
        (TimeoutError("timed out"), True),
        (ConnectionRefusedError(111, "Connection refused"), True),
        (type("DownloadError", (Exception,), {})("tfds"), True),
        (type("ReadTimeout", (OSError,), {})("requests"), True),
        (context_error(ConnectionResetError()), True),
        (context_error(KeyError("x")), False),
        (ValueError("Connection refused"), False),
    ],
    ids=repr,
)
def test_download_failure_tells_a_failed_download_from_other_errors(error, failed):
    assert rt.download_failure(error) is failed


PETS = {
    "https://thor.robots.ox.ac.uk/~vgg/data/pets/images.tar.gz": "UrlInfo",
    "https://thor.robots.ox.ac.uk/~vgg/data/pets/annotations.tar.gz": "UrlInfo",
}


def tfds_builder(tmp_path: Path, prepared: bool = False, urls: dict | None = PETS):
    """What tfds_reachable reads of a TFDS builder: its data folder, and its checksums' URLs."""
    data_path = tmp_path / "tensorflow_datasets" / "oxford_iiit_pet" / "4.0.0"
    if prepared:
        data_path.mkdir(parents=True)
    return types.SimpleNamespace(data_path=data_path, data_dir=str(data_path), url_infos=urls)


@pytest.fixture
def dns(monkeypatch):
    """socket.getaddrinfo answering for the hosts in `dns.up`, failing as offline for the
    others (a host in `dns.hung` never answers); `dns.asked` the hosts looked up."""
    state = types.SimpleNamespace(up=set(), hung=set(), asked=[], released=threading.Event())

    def getaddrinfo(host, port, *args, **kwargs):
        state.asked.append(host)
        if host in state.hung:
            state.released.wait(30)
        if host not in state.up:
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("192.0.2.1", port))]

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    for name in ("https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY", "no_proxy", "NO_PROXY"):
        monkeypatch.delenv(name, raising=False)
    yield state
    state.released.set()


def test_an_unprepared_tfds_dataset_offline_is_one_message_at_once(tmp_path, dns):
    """Not prepared, and neither its files' host nor TFDS's GCS resolves: refused before TFDS's
    downloader (which retries each file for minutes), naming the folder and the hosts."""
    builder = tfds_builder(tmp_path)
    with pytest.raises(rt.DownloadFailed) as failed, rt.downloading("pets (TFDS)", INSTEAD):
        rt.tfds_reachable(builder)
    assert str(failed.value) == (
        f"Cannot download pets (TFDS): it is not prepared in {builder.data_dir}, and no host "
        "TFDS downloads it from resolves, as offline (thor.robots.ox.ac.uk, "
        f"storage.googleapis.com: [Errno -2] Name or service not known). {INSTEAD}"
    )
    assert sorted(dns.asked) == ["storage.googleapis.com", "thor.robots.ox.ac.uk"]


@pytest.mark.parametrize("up", ["thor.robots.ox.ac.uk", "storage.googleapis.com"])
def test_an_unprepared_tfds_dataset_downloads_when_a_host_of_it_resolves(tmp_path, dns, up):
    dns.up.add(up)
    rt.tfds_reachable(tfds_builder(tmp_path))  # TFDS downloads it, as it does


def test_a_prepared_tfds_dataset_is_read_without_a_lookup(tmp_path, dns):
    rt.tfds_reachable(tfds_builder(tmp_path, prepared=True))
    assert dns.asked == []


def test_tfds_downloads_as_it_does_behind_a_proxy_or_without_checksums(tmp_path, dns, monkeypatch):
    """A dataset whose checksums name no URL: no host to look up. An https proxy resolves the
    names itself (the local resolver may not): no lookup, unless no_proxy exempts them all."""
    rt.tfds_reachable(tfds_builder(tmp_path, urls=None))
    rt.tfds_reachable(tfds_builder(tmp_path, urls={}))
    monkeypatch.setenv("https_proxy", "http://proxy.internal:3128")
    rt.tfds_reachable(tfds_builder(tmp_path))
    assert dns.asked == []
    monkeypatch.setenv("no_proxy", "thor.robots.ox.ac.uk,storage.googleapis.com")
    with pytest.raises(ConnectionError):
        rt.tfds_reachable(tfds_builder(tmp_path))


def test_a_name_resolver_that_does_not_answer_is_given_up_on_in_time(tmp_path, dns):
    dns.hung.update({"thor.robots.ox.ac.uk", "storage.googleapis.com"})
    start = time.monotonic()
    with pytest.raises(ConnectionError) as failed:
        rt.tfds_reachable(tfds_builder(tmp_path), timeout=0.3)
    assert time.monotonic() - start < 5
    assert (
        "(thor.robots.ox.ac.uk, storage.googleapis.com: no answer from the name resolver "
        "within 0.3 s)" in str(failed.value)
    )


# --- The debugging flags ------------------------------------------------------------------------


def debug_flags(**changes) -> argparse.Namespace:
    """The debugging flags as argparse gives them (strings), before check_debugging_flags."""
    values = {
        "command": "train",
        "output_dir": "runs/tiny",
        "deterministic": False,
        "check_numerics": False,
        "dump_debug_info": False,
        "profile": None,
        "fast_dev_run": None,
        "overfit_batches": None,
        "step": None,
    }
    return argparse.Namespace(**{**values, **changes})


@pytest.mark.parametrize("flag", ["--fast-dev-run", "--step", "--overfit-batches"])
@pytest.mark.parametrize("count", ["0", "-1", "two", "1.5"])
def test_a_count_that_is_not_a_whole_number_from_1_is_refused(flag, count):
    args = debug_flags(**{flag[2:].replace("-", "_"): count})
    with pytest.raises(SystemExit) as refused:
        rt.check_debugging_flags(args)
    assert str(refused.value) == f"{flag} {count}: give a whole number, 1 or more"


def test_counts_become_numbers():
    args = debug_flags(fast_dev_run="3")
    rt.check_debugging_flags(args)
    assert (args.fast_dev_run, args.overfit_batches, args.step) == (3, None, None)


def test_profile_becomes_a_pair_of_steps_and_a_bad_range_is_refused():
    args = debug_flags(profile="3:5")
    rt.check_debugging_flags(args)
    assert args.profile == (3, 5)
    for bad in ("5:3", "0:2", "3", "a:b", "3:"):
        with pytest.raises(SystemExit) as refused:
            rt.check_debugging_flags(debug_flags(profile=bad))
        assert str(refused.value) == (
            f"--profile {bad}: give the first and last step to trace, START:STOP with "
            "1 <= START <= STOP (3:5, say)"
        )
    with pytest.raises(SystemExit, match="give the first and last update to trace"):
        rt.check_debugging_flags(debug_flags(profile="2:1"), unit="updates")


@pytest.mark.parametrize(
    "flag, why",
    [
        ("dump_debug_info", "--dump-debug-info do not combine (TensorFlow 2.21 then fails with a "),
        ("deterministic", "--deterministic do not combine (its deterministic cross-entropy makes "),
    ],
)
def test_check_numerics_is_refused_with_the_flags_it_cannot_run_with(flag, why):
    with pytest.raises(SystemExit) as refused:
        rt.check_debugging_flags(debug_flags(check_numerics=True, **{flag: True}))
    assert str(refused.value).startswith(f"--check-numerics and {why}")
    rt.check_debugging_flags(debug_flags(check_numerics=True))  # alone, it runs


def test_overfit_batches_runs_in_a_directory_of_its_own():
    args = debug_flags(overfit_batches="4", output_dir="runs/tiny/")
    rt.check_debugging_flags(args)
    assert (args.overfit_batches, args.output_dir) == (4, "runs/tiny-overfit-4")
    with pytest.raises(SystemExit) as refused:
        rt.check_debugging_flags(debug_flags(overfit_batches="4", fast_dev_run="2"))
    assert str(refused.value) == (
        "--overfit-batches and --fast-dev-run are runs of their own: pass one"
    )


def test_the_training_flags_are_refused_for_the_other_commands():
    with pytest.raises(SystemExit) as refused:
        rt.check_debugging_flags(debug_flags(command="evaluate", profile="1:2"))
    assert (
        str(refused.value)
        == "--fast-dev-run, --overfit-batches, --profile: for training, not evaluate"
    )
    without_overfit = debug_flags(command="predict", fast_dev_run="2")
    del without_overfit.overfit_batches
    with pytest.raises(SystemExit) as refused:
        rt.check_debugging_flags(without_overfit)
    assert str(refused.value) == "--fast-dev-run, --profile: for training, not predict"


def test_replay_takes_step_and_the_other_commands_none():
    for args in (debug_flags(command="replay"), debug_flags(step="3")):
        with pytest.raises(SystemExit) as refused:
            rt.check_debugging_flags(args)
        assert str(refused.value) == (
            "replay takes --step N, the step to replay; the other commands take none"
        )
    args = debug_flags(command="replay", step="3")
    rt.check_debugging_flags(args)
    assert args.step == 3
    with pytest.raises(SystemExit, match=r"^replay takes --step N, the update to replay;"):
        rt.check_debugging_flags(debug_flags(command="replay"), unit="updates")


def test_a_multi_worker_replay_under_tf_config_is_refused(monkeypatch):
    monkeypatch.setenv("TF_CONFIG", '{"cluster": {"worker": ["a:1", "b:1"]}}')
    with pytest.raises(SystemExit) as refused:
        rt.check_debugging_flags(debug_flags(command="replay", step="3"), multi_worker=True)
    assert str(refused.value) == "replay runs on one device, in one process: unset TF_CONFIG"
    rt.check_debugging_flags(
        debug_flags(command="replay", step="3")
    )  # one device: TF_CONFIG unread
    monkeypatch.delenv("TF_CONFIG")
    rt.check_debugging_flags(debug_flags(command="replay", step="3"), multi_worker=True)


def test_add_debugging_flags_adds_the_flags_a_script_asks_for():
    parser = argparse.ArgumentParser()
    rt.add_debugging_flags(parser, unit="updates", replay=True)
    args = parser.parse_args(["--fast-dev-run", "--profile", "2:4", "--step", "7", "--eager"])
    assert (args.fast_dev_run, args.profile, args.step) == ("2", "2:4", "7")
    assert args.eager and not args.check_numerics and not args.dump_debug_info
    assert not hasattr(args, "overfit_batches")
    text = " ".join(parser.format_help().split())
    assert "trace these updates" in text and "every stage on N updates" in text
    assert "replay: the update to replay" in text
    parser = argparse.ArgumentParser()
    rt.add_debugging_flags(parser, overfit=True)
    args = parser.parse_args(["--overfit-batches", "3", "--fast-dev-run", "5", "--check-numerics"])
    assert (args.overfit_batches, args.fast_dev_run, args.check_numerics) == ("3", "5", True)
    assert not hasattr(args, "step")


def run_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="train.py")
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--output-dir", default="runs/x")
    return parser


def test_parse_run_flags_adds_the_commands_and_flags_a_script_asks_for():
    args = rt.parse_run_flags(
        run_parser(), ["predict", "a.png", "--checkpoint", "best", "b.npy", "--no-lock"],
        commands=["evaluate", "predict", "replay"], inputs="predict: images",
        best=True, init_from=True, new_data=True, overfit=True,
    )  # fmt: skip
    assert (args.command, args.inputs, args.checkpoint) == ("predict", ["a.png", "b.npy"], "best")
    assert args.no_lock and not args.deterministic and not args.new_data
    assert (args.init_from, args.overfit_batches, args.step) == (None, None, None)
    parser = run_parser()
    rt.parse_run_flags(parser, [], commands=["evaluate", "predict", "replay"], inputs="x")
    text = " ".join(parser.format_help().split())
    assert (
        "train (the default; resumes from the newest checkpoint), evaluate a checkpoint on the "
        "validation data, predict on raw inputs with a checkpoint, or replay a step" in text
    )
    assert "evaluate, predict: 'latest' or a checkpoint's path" in text
    bare = rt.parse_run_flags(run_parser(), ["--epochs", "2"])  # no checkpoints: no commands
    assert bare.epochs == 2 and not hasattr(bare, "command") and not hasattr(bare, "checkpoint")
    assert not any(hasattr(bare, name) for name in ("init_from", "new_data", "step", "inputs"))


def test_parse_run_flags_describes_a_command_as_the_script_says():
    parser = run_parser()
    rt.parse_run_flags(
        parser, [], commands=["evaluate", "replay"], unit="updates",
        evaluate="evaluate a greedy policy", replay="replay an update",
    )  # fmt: skip
    text = " ".join(parser.format_help().split())
    assert "newest checkpoint), evaluate a greedy policy, or replay an update (none" in text
    assert "replay: the update to replay" in text


@pytest.mark.parametrize(
    "argv, error",
    [
        (["predict"], "predict takes the paths of its inputs; train and evaluate take none"),
        (["train", "a.png"], "predict takes the paths of its inputs; train and evaluate take none"),
        (["--profile", "30:10"], "--profile 30:10: give the first and last step to trace"),
        (["replay"], "replay takes --step N, the step to replay; the other commands take none"),
    ],
)
def test_parse_run_flags_refuses_a_mistake_of_the_flags(argv, error, capsys):
    with pytest.raises(SystemExit) as refused:
        rt.parse_run_flags(
            run_parser(), argv, commands=["evaluate", "predict", "replay"], inputs="x"
        )
    said = str(refused.value) if refused.value.code != 2 else capsys.readouterr().err
    assert error in " ".join(said.split())


# --- predict's readers ------------------------------------------------------------------------


def save(path: Path, array=None, **arrays) -> None:
    """An .npy file of `array`, or an .npz file of `arrays`, at `path` whatever its suffix."""
    with open(path, "wb") as f:
        np.save(f, array) if array is not None else np.savez(f, **arrays)


def png(tf, height: int, width: int, channels: int = 1) -> bytes:
    return tf.io.encode_png(tf.zeros([height, width, channels], tf.uint8)).numpy()


def test_read_array_inputs_reads_arrays_npz_files_and_images_in_the_order_named(tmp_path, tf):
    like = np.zeros((5, 4, 4), np.uint8)
    np.save(tmp_path / "one.npy", np.full((4, 4), 3, np.uint8))  # one example
    np.savez(tmp_path / "two.npz", x=np.ones((2, 4, 4), np.uint8), y=np.zeros(2))
    (tmp_path / "dir").mkdir()
    (tmp_path / "dir" / "a.png").write_bytes(png(tf, 4, 4))
    paths = [str(tmp_path / "one.npy"), str(tmp_path / "two.npz"), str(tmp_path / "dir")]
    names, examples = rt.read_array_inputs(paths, like, images=True)
    assert names == [paths[0], f"{paths[1]}[0]", f"{paths[1]}[1]", f"{tmp_path}/dir/a.png"]
    assert examples.dtype == np.uint8 and examples.shape == (4, 4, 4)
    assert examples[:, 0, 0].tolist() == [3, 1, 1, 0]


@pytest.mark.parametrize(
    "write, error",
    [
        (lambda p, tf: save(p, np.zeros((2, 3, 3), np.uint8)),
         "holds uint8 examples of shape (3, 3); the model takes uint8 examples of shape (4, 4)"),
        (lambda p, tf: save(p, np.zeros((2, 4, 4), np.float32)),
         "holds float32 examples of shape (4, 4); the model takes uint8 examples"),
        (lambda p, tf: save(p, images=np.zeros((2, 4, 4), np.uint8)),
         "has no array 'x' (its arrays: ['images'])"),
        (lambda p, tf: p.write_bytes(b"not numpy"), "is not an .npy or .npz file, nor an image"),
        (lambda p, tf: p.write_bytes(png(tf, 5, 4)),
         "is 4x5 pixels; the model takes 4x4 images and does not resize them: resize it first"),
        (lambda p, tf: p.write_bytes(png(tf, 4, 4)[:30]), "predict: "),
    ],
)  # fmt: skip
def test_read_array_inputs_refuses_a_file_naming_it_and_why(tmp_path, tf, write, error):
    path = tmp_path / "input.npz"
    write(path, tf)
    with pytest.raises(SystemExit) as refused:
        rt.read_array_inputs([str(path)], np.zeros((1, 4, 4), np.uint8), images=True)
    assert str(refused.value).startswith(f"predict: {path}") and error in str(refused.value)


@pytest.mark.parametrize(
    "like, shape",
    [(np.zeros((1, 4, 4), np.float32), "(4, 4)"), (np.zeros((1, 4, 4, 2), np.uint8), "(4, 4, 2)")],
    ids=["floats", "two_channels"],
)
def test_read_array_inputs_refuses_an_image_for_a_model_of_other_examples_than_pixels(
    tmp_path, tf, like, shape
):
    """An .npz model's examples may be floats, or uint8 arrays of no image's channels: an
    image file's pixels are not its examples (cast, 0-255 would go to a model trained on 0-1)."""
    (tmp_path / "a.png").write_bytes(png(tf, 4, 4))
    with pytest.raises(SystemExit) as refused:
        rt.read_array_inputs([str(tmp_path / "a.png")], like, images=True)
    assert str(refused.value) == (
        f"predict: {tmp_path / 'a.png'} is an image; the model takes {like.dtype} examples of "
        f"shape {shape}, not an image's uint8 pixels: save the examples as the training data "
        "holds them, in an .npy or .npz file"
    )


def test_read_array_inputs_of_a_model_without_images_reads_no_image(tmp_path, tf):
    (tmp_path / "a.png").write_bytes(png(tf, 4, 4))
    with pytest.raises(SystemExit, match=r"a.png is not an .npy or .npz file$"):
        rt.read_array_inputs([str(tmp_path / "a.png")], np.zeros((1, 4, 4), np.uint8))


def test_read_image_files_checks_every_file_before_reading_any(tmp_path, tf):
    (tmp_path / "a.png").write_bytes(png(tf, 4, 4, 3))
    (tmp_path / "b.txt").write_text("no image")
    files, images = rt.read_image_files([str(tmp_path / "a.png")])
    assert files == [str(tmp_path / "a.png")] and images.shape == (1,)
    with pytest.raises(SystemExit, match=r"b.txt is not a PNG, JPEG, BMP or GIF image"):
        rt.read_image_files([str(tmp_path)])


def test_read_decoded_images_decodes_each_to_the_signatures_channels_at_its_own_size(tmp_path, tf):
    """TFDS's images (predict): each file decoded to the served signature's channels and
    dtype, a batch of one at its own size; a signature of one size refuses another."""
    pixels = np.arange(2 * 3 * 3, dtype=np.uint8).reshape(2, 3, 3)
    (tmp_path / "a.png").write_bytes(tf.io.encode_png(pixels).numpy())
    (tmp_path / "b.png").write_bytes(png(tf, 5, 4, 1))
    paths = [str(tmp_path / "a.png"), str(tmp_path / "b.png")]
    signature = tf.TensorSpec((None, None, None, 3), tf.uint8)
    files, images = rt.read_decoded_images(paths, signature)
    assert files == paths and [tuple(i.shape) for i in images] == [(1, 2, 3, 3), (1, 5, 4, 3)]
    assert images[0].dtype == tf.uint8 and np.array_equal(images[0][0].numpy(), pixels)
    assert np.all(images[1].numpy() == 0)  # grayscale to RGB
    with pytest.raises(SystemExit) as refused:
        rt.read_decoded_images(paths, tf.TensorSpec((None, 2, 3, 3), tf.uint8))
    assert str(refused.value) == (
        f"predict: {paths[1]} is 4x5 pixels; the model takes 3x2 images and does not resize "
        "them: resize it first"
    )
    (tmp_path / "c.txt").write_text("no image")
    with pytest.raises(SystemExit, match=r"c.txt is not a PNG, JPEG, BMP or GIF image"):
        rt.read_decoded_images([str(tmp_path)], signature)


def test_write_predictions_serves_inputs_of_their_own_shapes_one_at_a_time(tmp_path, tf):
    """A list of inputs (images of their own sizes) is served one call each, in order; an
    array is served in batches of batch_size."""
    calls = []

    def serve(inputs):
        calls.append(tuple(inputs.shape))
        return {"pixels": tf.reduce_sum(tf.cast(inputs, tf.int32), axis=[1, 2])}

    images = [tf.ones((1, 2, 3), tf.uint8), tf.ones((1, 4, 1), tf.uint8)]
    args = types.SimpleNamespace(predictions=str(tmp_path / "p.jsonl"), output_dir=str(tmp_path))
    rt.write_predictions(serve, args, lambda: (["a", "b"], images), batch_size=8)
    assert calls == [(1, 2, 3), (1, 4, 1)]
    lines = [json.loads(line) for line in (tmp_path / "p.jsonl").read_text().splitlines()]
    assert lines == [{"input": "a", "pixels": 6}, {"input": "b", "pixels": 4}]
    calls.clear()
    arrays = np.ones((5, 2, 2), np.uint8)
    rt.write_predictions(serve, args, lambda: (list("vwxyz"), arrays), batch_size=2)
    assert calls == [(2, 2, 2), (2, 2, 2), (1, 2, 2)]


def test_read_csv_inputs_reads_the_columns_the_model_reads_naming_each_row(tmp_path, tf):
    (tmp_path / "a.csv").write_bytes(b"id,size,rooms\r\n1,2.5,3\r\n\r\n2,4.0,5\r\n")
    names, columns = rt.read_csv_inputs(
        [str(tmp_path / "a.csv")], {"rooms": tf.float32, "size": tf.float32}, ","
    )
    assert names == [f"{tmp_path}/a.csv:2", f"{tmp_path}/a.csv:4"]
    assert list(columns) == ["rooms", "size"]
    assert columns["rooms"].numpy().tolist() == [3, 5] and columns["size"].numpy()[1] == 4.0


@pytest.mark.parametrize(
    "content, error",
    [
        (b"id,size\n1,2\n", ": no column 'rooms', which the model reads; its columns are"),
        (b"rooms,size\n1,x\n", ":2: column 'size': Field 1 in record 0 is not a valid float"),
        (b"rooms,size\n\xff,1\n", " is not UTF-8 text"),
    ],
)
def test_read_csv_inputs_refuses_a_file_naming_its_row_and_column(tmp_path, tf, content, error):
    (tmp_path / "a.csv").write_bytes(content)
    with pytest.raises(SystemExit) as refused:
        rt.read_csv_inputs([str(tmp_path / "a.csv")], dict(rooms=tf.float32, size=tf.float32), ",")
    assert f"predict: {tmp_path}/a.csv{error}" in str(refused.value)


def test_read_tfrecord_inputs_parses_the_features_and_names_a_bad_file(tmp_path, tf):
    example = tf.train.Example(features=tf.train.Features(feature={
        "x": tf.train.Feature(float_list=tf.train.FloatList(value=[1.0, 2.0])),
    }))  # fmt: skip
    with tf.io.TFRecordWriter(str(tmp_path / "a.tfrecord")) as writer:
        writer.write(example.SerializeToString())
        writer.write(example.SerializeToString())
    (tmp_path / "empty.tfrecord").write_bytes(b"")
    features = {"x": tf.io.FixedLenFeature([2], tf.float32)}
    paths = [str(tmp_path / "a.tfrecord"), str(tmp_path / "empty.tfrecord")]
    names, parsed = rt.read_tfrecord_inputs(paths, features)
    assert names == [f"{paths[0]}[0]", f"{paths[0]}[1]"]
    assert parsed["x"].numpy().tolist() == [[1.0, 2.0], [1.0, 2.0]]
    (tmp_path / "bad.tfrecord").write_bytes(b"not a record file at all")
    with pytest.raises(SystemExit, match=r"bad.tfrecord is not a TFRecord file of records with"):
        rt.read_tfrecord_inputs([str(tmp_path / "bad.tfrecord")], features)


def test_read_text_inputs_reads_a_column_of_each_line_and_skips_empty_lines(tmp_path, tf):
    (tmp_path / "a.txt").write_text("1\tgood film\n\n0\tbad\n")
    names, texts = rt.read_text_inputs([str(tmp_path / "a.txt")], "\t", column=1)
    assert names == [f"{tmp_path}/a.txt:1", f"{tmp_path}/a.txt:3"]
    assert texts.numpy().tolist() == [b"good film", b"bad"]
    _, first = rt.read_text_inputs([str(tmp_path / "a.txt")], "\t")
    assert first.numpy().tolist() == [b"1", b"0"]
    (tmp_path / "b.txt").write_text("no tab here\n")
    with pytest.raises(SystemExit, match=r"b.txt:1: 1 column\(s\), but the text is in column 1"):
        rt.read_text_inputs([str(tmp_path / "b.txt")], "\t", column=1)


# --- Data: read_records ---------------------------------------------------------------------


def test_read_records_reads_json_lines_and_csv_fields_as_string_arrays(tmp_path):
    (tmp_path / "a.jsonl").write_text('{"q": "1+1", "a": 2}\n\n{"q": "2+2", "a": 4}\n')
    (tmp_path / "a.csv").write_text("q,a\n1+1,2\n2+2,4\n")
    for name, file_format in [("a.jsonl", "jsonl"), ("a.csv", "csv")]:
        fields = rt.read_records(
            str(tmp_path / name), file_format, {"prompt": "q", "response": "a"}, "data.train"
        )
        assert {k: v.tolist() for k, v in fields.items()} == {
            "prompt": ["1+1", "2+2"], "response": ["2", "4"]
        }  # fmt: skip


@pytest.mark.parametrize(
    "content, file_format, error",
    [
        (b'{"q": "x"}\n{"q": "\xff"}\n', "jsonl",
         "a:2: not UTF-8 text (byte b'\\xff' at column 8): save the file as UTF-8"),
        (b'{"q": "x"}\nnot json\n', "jsonl", "a:2: not a JSON object"),
        (b"q\n\xff\n", "csv", "a: not UTF-8 text (byte b'\\xff' at offset 2)"),
        (b'{"q": "x", "a": 1}\n{"a": 2}\n', "jsonl",
         "data.train.prompt: record 2 of {a} has no 'q' (1 record(s) lack it)"),
        (b'{"question": "x"}\n', "jsonl",
         "data.train.prompt: {a} has no field 'q' (its fields: question); set data.train.prompt"),
    ],
)  # fmt: skip
def test_read_records_refuses_a_file_naming_the_field_or_the_line(
    tmp_path, content, file_format, error
):
    path = tmp_path / "a"
    path.write_bytes(content)
    fields = {"prompt": "q"} if "record 2" not in error else {"prompt": "q", "response": "a"}
    with pytest.raises(SystemExit) as refused:
        rt.read_records(str(path), file_format, fields, "data.train")
    expected = error.format(a=path) if "{a}" in error else f"{tmp_path}/{error}"
    assert expected in str(refused.value)


def test_read_records_of_a_missing_path_or_a_folder_without_state_json(tmp_path):
    with pytest.raises(SystemExit, match=r"^data.train.path: no file or folder '.*nothing'$"):
        rt.read_records(str(tmp_path / "nothing"), "jsonl", {"prompt": "q"}, "data.train")
    with pytest.raises(SystemExit, match=r"is no datasets folder \(no state.json\)"):
        rt.read_records(str(tmp_path), "datasets", {"prompt": "q"}, "data.train")


# --- Debugging in the loop ----------------------------------------------------------------------


def test_bound_ends_a_call_at_each_step_with_check_numerics(tmp_path):
    run = make_run(tmp_path, flags(tmp_path, check_numerics=True))
    run.bounds = ()
    assert [run.bound(step) for step in (0, 7)] == [1, 8]
    plain = make_run(tmp_path)
    plain.bounds = ()
    assert plain.bound(0) == math.inf


def test_bound_runs_each_profiled_step_in_a_call_of_its_own(tmp_path, tf):
    run = started(tmp_path, tf, flags(tmp_path, profile=(3, 5)))
    assert run.bounds == (2, 5)
    assert [run.bound(step) for step in range(7)] == [2, 2, 3, 4, 5, math.inf, math.inf]


def test_bound_runs_each_step_of_a_replay_alone(tmp_path, tf):
    run = started(tmp_path, tf, flags(tmp_path, step=5))
    assert run.bounds == (4, 5)
    assert [run.bound(step) for step in range(5)] == [1, 2, 3, 4, 5]


def test_bound_runs_each_inspected_step_alone(tmp_path):
    run = make_run(tmp_path, inspect_every=10)
    run.bounds = ()
    assert [run.bound(step) for step in (0, 8, 9, 10, 19)] == [9, 9, 10, 19, 20]


def test_diverged_while_replaying_names_the_step_to_replay(tmp_path):
    run = make_run(tmp_path, flags(tmp_path, step=9))
    assert run.diverged(4, "The loss became NaN or Inf") == (
        "The loss became NaN or Inf at step 4, before step 9: replay --step 4"
    )


def test_diverged_in_a_script_without_replay(tmp_path):
    args = flags(tmp_path)
    del args.step, args.overfit_batches
    run = make_run(tmp_path, args)
    run.manager = types.SimpleNamespace(latest_checkpoint=None)
    advice = "Lower the learning rate, clip the gradients, or look for NaN in the data."
    assert run.diverged(4, "The loss became NaN or Inf") == (
        f"The loss became NaN or Inf at step 4: stopped without saving (newest checkpoint: none "
        f"yet). {advice}"
    )
    without_checkpoints = make_run(tmp_path, args, setup=None)
    assert without_checkpoints.diverged(4, "The loss became NaN or Inf") == (
        f"The loss became NaN or Inf at step 4: stopped without saving. {advice}"
    )


def test_an_overfit_runs_batch_of_a_step_is_one_of_its_first_batches(tmp_path):
    run = make_run(
        tmp_path, flags(tmp_path, overfit_batches=3),
        batch_of_step=staticmethod(lambda examples, step: (len(examples), step)),
    )  # fmt: skip
    run.examples = EXAMPLES
    assert [run.batch_of(step)[1] for step in (1, 3, 4, 8)] == [1, 3, 1, 2]
    plain = make_run(tmp_path, batch_of_step=staticmethod(lambda examples, step: step))
    plain.examples = EXAMPLES
    assert plain.batch_of(8) == 8


def test_make_inspected_step_reports_each_layers_outputs_gradients_and_weights(tf, keras):
    """logging.inspect's statistics of one step, against what Keras computes from the same
    weights and batch: the layers' outputs before the step, the gradients the optimizer is
    handed, the weights after it; and the step trains as the uninspected one does."""
    keras.utils.set_random_seed(1)
    model = keras.Sequential([
        keras.Input((3,)), keras.layers.Dense(4, activation="relu", name="hidden"),
        keras.layers.Dense(1, activation="sigmoid", name="out"),
    ])  # fmt: skip
    optimizer = keras.optimizers.SGD(0.5)
    optimizer.build(model.trainable_variables)
    x = tf.constant(np.random.default_rng(0).normal(size=(8, 3)), tf.float32)
    y = tf.constant(np.random.default_rng(1).uniform(size=(8, 1)), tf.float32)

    @tf.function
    def train_step(x, y):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean((model(x, training=True) - y) ** 2)
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables, strict=True))

    before = [w.numpy() for w in model.trainable_variables]
    hidden = np.maximum(x.numpy() @ before[0] + before[1], 0)
    out = 1 / (1 + np.exp(-(hidden @ before[2] + before[3])))
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean((model(x) - y) ** 2)
    grads = [g.numpy() for g in tape.gradient(loss, model.trainable_variables)]

    step = rt.make_inspected_step(
        train_step, {"model": model}, [optimizer],
        inputs=lambda networks, batch: {"model": batch[0]},
    )  # fmt: skip
    statistics, histograms = step(iter(tf.data.Dataset.from_tensors((x, y)).repeat()))
    got = {k: float(v) for k, v in statistics.items()}
    after = [w.numpy() for w in model.trainable_variables]
    np.testing.assert_allclose(after[0], before[0] - 0.5 * grads[0], rtol=1e-5, atol=1e-6)
    assert got["model/hidden/zero_fraction"] == pytest.approx(np.mean(hidden == 0))
    assert got["model/hidden/activation_mean"] == pytest.approx(hidden.mean(), rel=1e-5)
    assert got["model/out/activation_std"] == pytest.approx(out.std(), rel=1e-4)
    saturated = np.mean((out < 0.01) | (out > 0.99))
    assert got["model/out/saturated_fraction"] == pytest.approx(saturated)
    assert "model/hidden/saturated_fraction" not in got  # relu does not saturate
    norm = lambda arrays: float(np.sqrt(sum(np.sum(a.astype(np.float64) ** 2) for a in arrays)))  # noqa: E731
    assert got["model/hidden/gradient_norm"] == pytest.approx(norm(grads[:2]), rel=1e-5)
    assert got["model/out/weight_norm"] == pytest.approx(norm(after[2:]), rel=1e-5)
    moved = [a - b for a, b in zip(after[:2], before[:2], strict=True)]
    ratio = norm(moved) / norm(before[:2])
    assert got["model/hidden/update_ratio"] == pytest.approx(ratio, rel=1e-4)
    assert histograms["model/hidden/weights"].shape == (3 * 4 + 4,)
    bare = rt.make_inspected_step(train_step, {"model": model}, [optimizer], weights=False)
    statistics, _ = bare(iter(tf.data.Dataset.from_tensors((x, y)).repeat()))
    assert sorted(statistics) == ["model/hidden/gradient_norm", "model/out/gradient_norm"]


def graph_nan_error(tf, script: Path, last=None):
    """TensorFlow's --check-numerics error of a graph op (check_numerics_callback's format),
    made by the script's loss_of under a Keras layer's call, and by `last` if given (a frame of
    a module of yours: (path, line, function))."""
    text = script.read_text()

    def frame(path, line, function, user=True):
        shortened = str(path) if len(str(path)) <= 50 else "..." + str(path)[-50:]
        return f"    + {shortened} (L{line}) {function}\n{' -> ' if user else '    '}|   code\n"

    trace = frame(script, line_of(text, "loss = loss_of(x)"), "train_step")
    trace += frame(inspect.getsourcefile(rt.keras.layers.Layer), 900, "__call__")
    trace += frame(script, line_of(text, "return tf.math.log(x)"), "loss_of")
    if last is not None:
        trace += frame(*last)
    trace += frame(inspect.getsourcefile(tf.math.log), 1000, "log", user=False)
    message = (
        '\n\n!!! Detected Infinity or NaN in output 0 of graph op "Log" (# of outputs: 1) !!!\n'
        "  dtype: <dtype: 'float32'>\n  shape: (4,)\n\n"
        '  Input tensor: Tensor("x:0", shape=(4,), dtype=float32)\n  Graph name: "train_step"\n\n'
        '  Stack trace of op\'s creation ("->": inferred user code):\n'
        f"{trace}\n : Tensor had NaN values"
    )
    return tf.errors.InvalidArgumentError(None, None, message)


def test_nonfinite_op_names_the_op_and_the_scripts_line_that_made_it(tmp_path, tf, keras):
    run = make_run(tmp_path)
    line = line_of(SCRIPT, "return tf.math.log(x)")
    assert rt.nonfinite_op(graph_nan_error(tf, Path(run.script)), run.script) == (
        f'output 0 of op "Log", created at\n  train.py:{line}, in loss_of: return tf.math.log(x)'
    )


def test_nonfinite_op_names_your_modules_line_and_the_scripts(tmp_path, tf, keras, monkeypatch):
    run = make_run(tmp_path)
    module = tmp_path / "layers_of_mine" / "losses.py"
    module.parent.mkdir()
    module.write_text("import tensorflow as tf\n\n\ndef safe_log(x):\n    return tf.math.log(x)\n")
    mine = types.ModuleType("layers_of_mine.losses")
    mine.__file__ = str(module)
    monkeypatch.setitem(sys.modules, mine.__name__, mine)  # the script imported it
    error = graph_nan_error(tf, Path(run.script), last=(module, 5, "safe_log"))
    line = line_of(SCRIPT, "return tf.math.log(x)")
    assert rt.nonfinite_op(error, run.script) == (
        'output 0 of op "Log", created at\n  losses.py:5, in safe_log: return tf.math.log(x)\n'
        f"  train.py:{line}, in loss_of: return tf.math.log(x)"
    )


EAGER_NAN = '\n\n!!! Detected Infinity or NaN in output 1 of eagerly-executing op "Div" !!!\n'


def _raise_eager_nan(tf):
    raise tf.errors.InvalidArgumentError(None, None, EAGER_NAN)


def test_nonfinite_op_of_an_eager_op_names_the_frame_that_ran_it(tmp_path, tf):
    with pytest.raises(tf.errors.InvalidArgumentError) as raised:
        _raise_eager_nan(tf)
    line = _raise_eager_nan.__code__.co_firstlineno + 1
    assert rt.nonfinite_op(raised.value, str(tmp_path / "train.py")) == (
        'output 1 of op "Div", created at\n  test_runtime.py:'
        f"{line}, in _raise_eager_nan: raise tf.errors.InvalidArgumentError(None, None, EAGER_NAN)"
    )


def test_nonfinite_op_is_none_for_other_errors(tmp_path, tf):
    script = str(tmp_path / "train.py")
    shapes = tf.errors.InvalidArgumentError(None, None, "Incompatible shapes: [2] vs. [3]")
    assert rt.nonfinite_op(shapes, script) is None
    assert rt.nonfinite_op(ValueError(EAGER_NAN), script) is None


def test_nonfinite_op_names_the_line_of_a_script_in_a_folder_with_a_space(tmp_path, tf, keras):
    folder = tmp_path / "My Projects"
    run = make_run(folder)
    line = line_of(SCRIPT, "return tf.math.log(x)")
    found = rt.nonfinite_op(graph_nan_error(tf, Path(run.script)), run.script)
    assert f"train.py:{line}, in loss_of: return tf.math.log(x)" in found


def test_nonfinite_says_where_check_numerics_stopped(tmp_path, tf, keras):
    args = flags(tmp_path)
    del args.step, args.overfit_batches
    run = make_run(tmp_path, args, setup=None)
    run.call = 6
    line = line_of(SCRIPT, "return tf.math.log(x)")
    assert run.nonfinite(graph_nan_error(tf, Path(run.script))) == (
        'A NaN or Inf at step 6: stopped without saving.\nThe first: output 0 of op "Log", '
        f"created at\n  train.py:{line}, in loss_of: return tf.math.log(x) Lower the learning "
        "rate, clip the gradients, or look for NaN in the data."
    )
    assert run.nonfinite(ValueError("x")) is None


def test_innermost_layer_names_the_layer_nearest_the_failing_op(tf, keras):
    class Inner(keras.layers.Layer):
        def call(self, x):
            raise tf.errors.InvalidArgumentError(None, None, EAGER_NAN)

    class Outer(keras.layers.Layer):
        def __init__(self):
            super().__init__(name="outer")
            self.inner = Inner(name="inner")

        def call(self, x):
            return self.inner.call(x)

    class Network(keras.Model):
        def __init__(self):
            super().__init__(name="network")
            self.block = Outer()

        def call(self, x):
            return self.block.call(x)

    network = Network()
    with pytest.raises(tf.errors.InvalidArgumentError) as raised:
        network.call(1.0)
    assert rt.innermost_layer(raised.value) is network.block.inner
    with pytest.raises(tf.errors.InvalidArgumentError) as raised:  # the loss: in no layer
        _raise_eager_nan(tf)
    assert rt.innermost_layer(raised.value) is None


def test_running_sums_and_step_values_tell_one_steps_mean_from_the_epochs(keras):
    loss, accuracy = keras.metrics.Mean(name="loss"), keras.metrics.Mean(name="accuracy")
    seen = keras.metrics.Sum(name="seen")  # not a mean: not shown
    loss.update_state(2.0)
    accuracy.update_state(1.0)
    before = rt.running_sums([loss, accuracy, seen])
    assert before == {"loss": [2.0, 1.0], "accuracy": [1.0, 1.0]}
    loss.update_state(10.0, sample_weight=3)
    after = rt.running_sums([loss, accuracy, seen])
    assert after["loss"] == [32.0, 4.0]
    assert rt.step_values(before, after) == {"loss": 10.0}  # accuracy: not updated by the step


def test_global_norm64_does_not_overflow_where_float32_would(tf):
    big = np.full((2, 2), 1e30, np.float32)
    norm = rt.global_norm64([big, tf.constant([1e30], tf.float32)])
    assert norm == pytest.approx(math.sqrt(5) * 1e30, rel=1e-6)
    assert rt.global_norm64([big], minus=[np.full((2, 2), -1e30, np.float32)]) == pytest.approx(
        4e30, rel=1e-6
    )
    sparse = tf.IndexedSlices(tf.constant([[3.0, 4.0]]), tf.constant([1]), tf.constant([3, 2]))
    assert rt.global_norm64([sparse]) == 5.0
    assert math.isinf(rt.global_norm64([np.array([np.inf], np.float32)]))
    assert math.isnan(rt.global_norm64([np.array([np.nan, 1.0], np.float32)]))


def test_was_logged_reads_the_training_records_of_metrics_jsonl(tmp_path):
    assert rt.was_logged(str(tmp_path), 3) is True  # no metrics.jsonl: nothing to tell
    records = [
        {"step": 3, "epoch": 1, "loss": 0.5, "steps_per_second": 10.0},
        {"step": 4, "epoch": 1, "val_loss": 0.4},
        {"step": 5, "epoch": 1, "inspect/model/dense/weight_norm": 1.0},
    ]
    text = "".join(json.dumps(record) + "\n" for record in records) + '{"step": 6, "loss": 0.\n'
    (tmp_path / "metrics.jsonl").write_text(text)
    assert [rt.was_logged(str(tmp_path), step) for step in (3, 4, 5, 6, 7)] == [
        True, False, False, False, False,
    ]  # fmt: skip


# --- The run's start and end --------------------------------------------------------------------


def test_start_writes_the_start_record_with_the_script_and_runtime_checksums(tmp_path, tf):
    run = started(tmp_path, tf, done=4)
    [record] = read_jsonl(tmp_path / "run" / "runs.jsonl")
    runtime_rendered, runtime_current = rt.checksums(rt.__file__, "runtime")
    assert record["event"] == "start" and record["run"] == run.run
    assert re.fullmatch("[0-9a-f]{8}", run.run)
    assert (record["loopgen"], record["spec"]) == ("0.1.0", "examples/tiny.py")
    assert record["script"] == str(tmp_path / "train.py")
    assert record["script_sha256"] == hashlib.sha256(SCRIPT.encode()).hexdigest()[:16]
    assert record["script_edited"] is True  # its header says 0000000000000000
    assert record["runtime"] == os.path.abspath(rt.__file__)
    assert record["runtime_sha256"] == runtime_current
    assert record["runtime_edited"] is (runtime_current != runtime_rendered)
    assert record["flags"] == json.loads(json.dumps(vars(run.args)))
    assert (record["step"], record["resumed_from"], record["init_from"]) == (4, None, None)
    assert (record["strategy"], record["replicas"]) == (None, 1)
    assert (record["tensorflow"], record["pid"]) == (tf.__version__, os.getpid())
    assert any("CPU" in device for device in record["devices"])


def test_start_refuses_a_profile_range_outside_the_run(tmp_path, tf, capsys):
    cases = [
        ((3, 4), 5, "--profile 3:4: this run trains steps 6 to 10; give START:STOP within them"),
        ((8, 12), 0, "--profile 8:12: this run trains steps 1 to 10; give START:STOP within them"),
        ((3, 4), 10, "--profile 3:4: this run is at step 10 of 10, with none left to trace"),
    ]
    for profile, done, message in cases:
        with pytest.raises(SystemExit) as refused:
            started(tmp_path, tf, flags(tmp_path, profile=profile), done=done)
        assert str(refused.value) == message
    assert "Already at step 10 of 10: nothing left to train." in capsys.readouterr().out
    assert not (tmp_path / "run" / "runs.jsonl").exists()


def test_a_sigterm_after_start_marks_a_preemptible_run_preempted(tmp_path, tf):
    previous = signal.getsignal(signal.SIGTERM)
    try:
        started(tmp_path, tf)  # not preemptible: SIGTERM is left as it was
        assert signal.getsignal(signal.SIGTERM) is previous
        run = started(tmp_path, tf, preemptible=True)
        assert run.preempted is False
        os.kill(os.getpid(), signal.SIGTERM)
        deadline = time.monotonic() + 5
        while not run.preempted and time.monotonic() < deadline:
            time.sleep(0.01)
        assert run.preempted is True
    finally:
        signal.signal(signal.SIGTERM, previous)


def test_a_sigterm_is_a_multi_worker_jobs_vote_and_only_the_chief_records_the_start(tmp_path, tf):
    previous = signal.getsignal(signal.SIGTERM)
    try:
        run = make_run(tmp_path, preemptible=True, multi_worker=True)
        run.chief = False
        os.makedirs(run.path)
        run.start(tf.Variable(0, dtype=tf.int64), tf.Variable(-1, dtype=tf.int64), 10)
        assert run.sigterm is False
        os.kill(os.getpid(), signal.SIGTERM)
        deadline = time.monotonic() + 5
        while not run.sigterm and time.monotonic() < deadline:
            time.sleep(0.01)
        assert (run.sigterm, run.preempted) == (True, False)
        assert run.run is None and os.listdir(run.path) == []
    finally:
        signal.signal(signal.SIGTERM, previous)


def test_end_records_a_finished_run(tmp_path, tf):
    run = started(tmp_path, tf, done=3)
    run.step.assign(10)
    run.end()
    start, end = read_jsonl(tmp_path / "run" / "runs.jsonl")
    assert set(end) == {"event", "run", "time", "step", "exit"}
    assert (end["event"], end["run"], end["step"], end["exit"]) == (
        "end",
        start["run"],
        10,
        "finished",
    )


def test_end_records_a_nan_loss_with_its_step(tmp_path, tf):
    run = started(tmp_path, tf)
    run.nonfinite_step.assign(7)
    run.end(SystemExit("The loss became NaN or Inf at step 7"))
    end = read_jsonl(tmp_path / "run" / "runs.jsonl")[-1]
    assert (end["exit"], end["nan_step"]) == ("nan", 7)


def test_end_records_an_error_with_its_traceback(tmp_path, tf):
    run = started(tmp_path, tf)
    try:
        raise ValueError("a bad batch")
    except ValueError as error:
        run.end(error)
    end = read_jsonl(tmp_path / "run" / "runs.jsonl")[-1]
    assert (end["exit"], end["error"]) == ("error", "ValueError: a bad batch")
    assert end["traceback"].startswith("Traceback (most recent call last):\n")
    assert 'raise ValueError("a bad batch")' in end["traceback"]
    assert end["traceback"].endswith("ValueError: a bad batch\n")


def test_end_records_a_sigterm_and_a_check_numerics_nan(tmp_path, tf):
    previous = signal.getsignal(signal.SIGTERM)
    try:
        run = started(tmp_path, tf, preemptible=True)
        run.end(SystemExit(128 + signal.SIGTERM))
    finally:
        signal.signal(signal.SIGTERM, previous)
    assert read_jsonl(tmp_path / "run" / "runs.jsonl")[-1]["exit"] == "sigterm"
    run = started(tmp_path, tf)
    run.call = 4  # the train_loop call --check-numerics stopped
    run.end(graph_nan_error(tf, Path(run.script)))
    end = read_jsonl(tmp_path / "run" / "runs.jsonl")[-1]
    assert (end["exit"], end["nan_step"]) == ("nan", 4)
    assert end["op"].startswith('output 0 of op "Log", created at\n  train.py:')


def test_end_of_a_run_that_never_started_writes_nothing(tmp_path):
    run = make_run(tmp_path)
    os.makedirs(run.path)
    (tmp_path / "run" / "kept.txt").write_text("x")
    assert run.end(ValueError("before the start")) is None
    assert run.end(SystemExit("refused")) is None
    assert os.listdir(tmp_path / "run") == ["kept.txt"]


# --- Replay -------------------------------------------------------------------------------------


def replay_directory(tmp_path: Path, records: list, setup=SETUP) -> Path:
    checkpoints = tmp_path / "run" / "checkpoints"
    write_state(checkpoints, (20, 30))
    (checkpoints / "setup.json").write_text(json.dumps({**setup, "weights": "w"}))
    lines = [json.dumps(r) if isinstance(r, dict) else r for r in records]
    (tmp_path / "run" / "runs.jsonl").write_text("\n".join(lines) + "\n")
    return checkpoints


def test_replayable_reads_the_last_step_reached_and_the_runs_flags(tmp_path, tf):
    first = {"epochs": 3, "overfit_batches": None, "init_from": "/other/run", "steps": 7}
    checkpoints = replay_directory(tmp_path, [
        {"event": "start", "flags": first},
        {"event": "end", "exit": "error", "step": 40},
        '{"event": "end", "step": 90',  # cut short by a kill
        {"event": "start", "flags": {"epochs": 5, "overfit_batches": 2, "init_from": None}},
        {"event": "end", "exit": "nan", "step": 50, "nan_step": 55},
    ])  # fmt: skip
    run = make_run(tmp_path, flags(tmp_path, command="replay", step=3))
    last, replayed_flags = run.replayable()
    assert last == 55
    # The newest start's flags (those the replay has), and the first start's --init-from.
    assert replayed_flags == {"epochs": 5, "overfit_batches": 2, "init_from": "/other/run"}
    assert run.checkpoint_before(25) == str(checkpoints / "ckpt-20")
    assert run.checkpoint_before(31) == str(checkpoints / "ckpt-30")
    assert run.checkpoint_before(20) is None


def test_replay_refuses_a_directory_without_a_start_or_of_another_setup(tmp_path, tf):
    run = make_run(tmp_path, flags(tmp_path, command="replay", step=3))
    replay_directory(tmp_path, ['{"event": "start", "fl'])
    with pytest.raises(SystemExit) as refused:
        run.replayable()
    assert str(refused.value) == f"Nothing to replay: {run.path} holds no run's start (runs.jsonl)."
    replay_directory(tmp_path, [{"event": "start", "flags": {}}], setup={**SETUP, "model": "x"})
    with pytest.raises(SystemExit) as refused:
        run.replayable()
    assert str(refused.value).startswith(f"Refusing to replay {run.checkpoints}: ")
    assert "\n  model: 'x' in the checkpoints, '0123456789abcdef' in this run\n" in str(
        refused.value
    )


def test_gradients_applied_watches_each_optimizers_gradients_then_lets_go(tf):
    class Optimizer:
        def apply_gradients(self, grads_and_vars):
            return [variable for _, variable in grads_and_vars]

    optimizer = Optimizer()
    v, w, gradient = tf.Variable(1.0), tf.Variable(2.0), tf.constant(0.5)
    with rt.gradients_applied(optimizer) as seen:
        applied = optimizer.apply_gradients(iter([(gradient, v), (None, w)]))
    assert applied == [v, w]  # a generator, read once: the optimizer still gets all of it
    assert list(seen) == [id(v)] and seen[id(v)] is gradient
    assert "apply_gradients" not in vars(optimizer)


def test_native_stderr_silenced_drops_writes_to_file_descriptor_2(capfd):
    with rt.native_stderr_silenced():
        os.write(2, b"dropped by the test\n")
    os.write(2, b"kept by the test\n")
    err = capfd.readouterr().err
    assert "kept by the test" in err and "dropped by the test" not in err


def test_layers_of_flattens_nested_models(keras):
    inner = keras.Sequential([keras.layers.Dense(2, name="d1"), keras.layers.Dense(2, name="d2")])
    outer = keras.Sequential([keras.Input((3,)), inner, keras.layers.Dense(1, name="head")])
    assert [layer.name for layer in rt.layers_of(outer)] == ["d1", "d2", "head"]


# --- Multi-worker, --fast-dev-run, MLflow -------------------------------------------------------


def resolver(task_type, task_id, cluster):
    spec = types.SimpleNamespace(as_dict=lambda: cluster)
    return types.SimpleNamespace(task_type=task_type, task_id=task_id, cluster_spec=lambda: spec)


@pytest.mark.parametrize(
    "task_type, task_id, cluster, chief",
    [
        (None, None, {}, True),
        ("chief", 0, {"chief": ["a:1"], "worker": ["b:1"]}, True),
        ("worker", 0, {"worker": ["a:1", "b:1"]}, True),
        ("worker", 0, {"chief": ["a:1"], "worker": ["b:1"]}, False),
        ("worker", 1, {"worker": ["a:1", "b:1"]}, False),
        ("evaluator", 0, {"worker": ["a:1"], "evaluator": ["c:1"]}, False),
    ],
)
def test_is_chief_is_the_chief_task_or_else_worker_0(task_type, task_id, cluster, chief):
    assert rt.is_chief(resolver(task_type, task_id, cluster)) is chief


def test_fast_dev_stages_runs_each_stage_as_a_run_of_its_own_in_a_scratch_directory_removed_after(
    tmp_path, keras, monkeypatch, capsys
):
    monkeypatch.setattr(keras.Model, "summary", keras.Model.summary)  # put back after the test
    seen, scratches = [], []

    def train(args, run):
        seen.append((args.command, args.epochs, args.no_lock, run.args is args))
        scratches.append(args.output_dir)
        os.makedirs(os.path.join(args.output_dir, "export"), exist_ok=True)
        if args.command == "predict":
            raise ValueError("predict failed")

    def serve(export):
        seen.append(("serve", export == os.path.join(scratches[0], "export")))
        assert os.path.isdir(export)  # served before the scratch directory goes

    args = flags(tmp_path, fast_dev_run=2)
    stages = [({"epochs": 1}, "training"), ({"command": "evaluate"}, "evaluate")]
    after = lambda: seen.append("after")  # noqa: E731
    rt.fast_dev_stages(args, stages, train, run_class(tmp_path), serve=serve, after_stage=after)
    assert seen == [
        "after", ("train", 1, True, True), "after", ("evaluate", 3, True, True), "after",
        ("serve", True),
    ]  # fmt: skip
    assert args.no_lock is False and args.output_dir == str(tmp_path / "run")  # copies
    assert len(set(scratches)) == 1 and not os.path.exists(scratches[0])
    assert not os.path.exists(args.output_dir)  # --output-dir not touched
    out = capsys.readouterr().out
    assert out.startswith("--fast-dev-run: training ...\n--fast-dev-run: training: OK (")
    assert out.endswith(f"--fast-dev-run: every stage ran (in {scratches[0]}, removed)\n")
    with pytest.raises(ValueError, match="predict failed"):
        rt.fast_dev_stages(args, [({"command": "predict"}, "predict")], train, run_class(tmp_path))
    assert capsys.readouterr().out.endswith("--fast-dev-run: predict: FAILED\n")
    assert not os.path.exists(scratches[-1])  # removed after a failure too


def test_fast_dev_stages_makes_predicts_inputs_in_the_scratch_after_the_stages_before(tmp_path):
    made, seen = [], []

    def train(args, run):
        seen.append((args.command, getattr(args, "inputs", None), args.output_dir))

    def inputs(directory):
        made.append((len(seen), directory))  # how many stages ran before the inputs were made
        return [os.path.join(directory, "inputs.npy")]

    args = flags(tmp_path, fast_dev_run=2)
    stages = [({}, "training"), ({"command": "predict", "inputs": inputs}, "predict")]
    rt.fast_dev_stages(args, stages, train, run_class(tmp_path))
    scratch = seen[0][2]
    assert seen == [("train", None, scratch), ("predict", [f"{scratch}/inputs.npy"], scratch)]
    assert made == [(1, scratch)]


@pytest.mark.parametrize(
    "uri, store",
    [
        (None, True),
        ("sqlite:///mlflow.db", True),
        ("postgresql+psycopg2://user@host/db", True),
        ("http://127.0.0.1:5000", False),
        ("file:///tmp/mlruns", False),
        ("databricks", False),
    ],
)
def test_start_mlflow_process_code_compiles_for_each_tracking_uri(monkeypatch, uri, store):
    calls = []

    def popen(*args, **kwargs):
        calls.append((args, kwargs))
        return "the process"

    monkeypatch.setattr(rt.subprocess, "Popen", popen)
    assert rt.start_mlflow_process(uri) == "the process"
    [((command,), options)] = calls
    assert command[:2] == [sys.executable, "-c"]
    assert options == {"stdin": subprocess.PIPE, "text": True}
    code = command[2]
    assert "STORE" not in code
    assert ("import mlflow.store.tracking.sqlalchemy_store" in code) is store
    compile(code, "<MLflow's process>", "exec")
    compile(rt.MLFLOW_TRACKER, "<MLFLOW_TRACKER>", "exec")


def fake_mlflow(monkeypatch) -> dict:
    """An mlflow module that records what MLFLOW_TRACKER asks of it."""
    calls = {"batches": [], "artifacts": [], "ended": []}

    class Client:
        def log_batch(self, run_id, metrics):
            calls["batches"].append([(m.key, m.value, m.step) for m in metrics])

    class Metric:
        def __init__(self, key, value, timestamp, step):
            self.key, self.value, self.step = key, value, step

    run = types.SimpleNamespace(info=types.SimpleNamespace(run_id="new-run"))
    mlflow = types.ModuleType("mlflow")
    mlflow.set_tracking_uri = lambda uri: None
    mlflow.set_experiment = lambda name: None
    mlflow.start_run = lambda run_id=None: run
    mlflow.log_params = lambda params: calls.setdefault("params", params)
    mlflow.set_tags = lambda tags: calls.setdefault("tags", tags)
    mlflow.log_artifacts = lambda path, folder: calls["artifacts"].append((path, folder))
    mlflow.log_artifact = lambda path: calls["artifacts"].append((path, None))
    mlflow.end_run = lambda status: calls["ended"].append(status)
    mlflow.get_tracking_uri = lambda: "file:///nowhere"
    mlflow.MlflowClient = Client
    mlflow.entities = types.SimpleNamespace(Metric=Metric)
    monkeypatch.setitem(sys.modules, "mlflow", mlflow)
    return calls


def run_tracker(requests: list, timeout: float = 3.0) -> bool:
    """Runs MLFLOW_TRACKER on `requests` (what MLflow's process read from its stdin, None once
    closed) in a thread, as MLflow's process runs it; whether it ended within `timeout`."""
    queued = queue.Queue()
    for request in requests:
        queued.put(request)
    thread = threading.Thread(
        target=exec, args=(rt.MLFLOW_TRACKER, {"requests": queued, "sys": sys}), daemon=True
    )
    thread.start()
    thread.join(timeout)
    ended = not thread.is_alive()
    queued.put(None)  # a hung tracker takes it and ends
    thread.join(timeout)
    return ended


def tracking_settings(tmp_path: Path, run_id=None) -> dict:
    return {
        "tracking_uri": None, "experiment": "tiny", "run_id": run_id,
        "run_id_file": str(tmp_path / "mlflow_run_id"), "params": {"lr": 0.1},
        "tags": {"loopgen.spec": "examples/tiny.py"},
    }  # fmt: skip


def test_mlflow_tracker_logs_the_values_and_ends_the_run(tmp_path, monkeypatch):
    calls = fake_mlflow(monkeypatch)
    (tmp_path / "export").mkdir()
    end = {"end": "FINISHED", "artifacts": [[str(tmp_path / "export"), "export"]]}
    assert run_tracker([
        tracking_settings(tmp_path),
        {"step": 1, "values": {"loss": 0.5}, "time": 1000},
        {"step": 2, "values": {"loss": 0.25, "val_loss": 0.3}, "time": 2000},
        end,
        None,
    ])  # fmt: skip
    assert calls["batches"] == [[("loss", 0.5, 1), ("loss", 0.25, 2), ("val_loss", 0.3, 2)]]
    assert (calls["params"], calls["tags"]) == ({"lr": 0.1}, {"loopgen.spec": "examples/tiny.py"})
    assert (tmp_path / "mlflow_run_id").read_text() == "new-run"
    assert calls["artifacts"] == [(str(tmp_path / "export"), "export")]
    assert calls["ended"] == ["FINISHED"]


def test_mlflow_tracker_ends_when_training_closes_its_stdin_without_an_end(tmp_path, monkeypatch):
    calls = fake_mlflow(monkeypatch)
    ended = run_tracker([
        tracking_settings(tmp_path, run_id="resumed"),
        {"step": 1, "values": {"loss": 0.5}, "time": 1000},
        None,  # the training process killed: its end of the pipe closed
    ], timeout=1.0)  # fmt: skip
    assert calls["batches"] == [[("loss", 0.5, 1)]]
    assert calls["ended"] == []  # the MLflow run left as it is, for the next run to continue
    assert ended, "MLflow's process would never exit"


def test_the_names_a_render_imports_are_the_runtimes_own():
    """render/runtime.py reads the runtime's names from its source, not by importing it: they
    are the module's functions, classes and constants, none of a string's (MLflow's code)."""
    import types

    from loopgen.render import runtime

    own = {
        name
        for name, value in vars(rt).items()
        if not name.startswith("_")
        and not isinstance(value, types.ModuleType)
        and (getattr(value, "__module__", None) == rt.__name__ or name.isupper())
    }
    assert runtime.public_names() == own - runtime.NOT_IMPORTED
    assert "read" not in runtime.public_names()  # MLFLOW_PROCESS's own function


# --- Reward functions (GRPO) ------------------------------------------------------------------


def test_reward_scores_says_a_reward_functions_mistake_in_one_line():
    def lengths(prompts, completions):
        return [len(c) for c in completions]

    def strict(prompts, completions):
        return [int(c) for c in completions]

    def one(prompts, completions):
        return [1.0]

    def nan(prompts, completions):
        return [float("nan")] * len(completions)

    scores = rt.reward_scores(lengths, ["p", "p"], ["ab", "c"])
    assert scores.dtype == np.float32 and scores.tolist() == [2.0, 1.0]
    name = f"{__name__}.strict"
    with pytest.raises(SystemExit) as raised:
        rt.reward_scores(strict, ["p"], ["x"])
    said = str(raised.value)
    assert said.startswith(f"training.reward_funcs: {name} raised ValueError: invalid literal")
    assert f"(at {__file__}:" in said and "scoring 1 completions): fix the function" in said
    with pytest.raises(SystemExit, match=r"returned an array of shape \(1,\) for 2 completions"):
        rt.reward_scores(one, ["p", "p"], ["a", "b"])
    with pytest.raises(SystemExit, match=r"\.nan returned NaN or Inf"):
        rt.reward_scores(nan, ["p"], ["a"])


def test_traced_call_runs_one_trace_with_the_inputs_flat_and_is_the_function_under_eager(tf):
    """DQN's train step is called through traced_call at every train cadence: the same
    updates and outputs as the tf.function, from one trace whatever the structure of the
    arguments, and under --eager the tf.function itself, run as Python (breakpoints stop)."""
    total = tf.Variable(0.0)
    traced = []

    @tf.function
    def step(batch, scale):
        traced.append(1)  # runs once a trace (once a call, eagerly)
        total.assign_add(scale * tf.reduce_sum(batch["x"]) + tf.reduce_sum(batch["y"]))
        return total * 2.0, batch["y"] + 1.0

    batch = {"y": tf.constant([1.0, 2.0]), "x": tf.constant([3.0])}  # flattened by key
    call = rt.traced_call(step)
    for _ in range(3):
        doubled, y = call(batch, tf.constant(10.0))
    assert float(total.numpy()) == 3 * (30.0 + 3.0) and len(traced) == 1
    assert float(doubled.numpy()) == 2 * 99.0 and y.numpy().tolist() == [2.0, 3.0]
    assert float(step(batch, tf.constant(10.0))[0].numpy()) == 2 * 132.0  # the same function
    # Turned on after the first trace, as replay does for its step: each call runs as Python.
    tf.config.run_functions_eagerly(True)
    try:
        eagerly = call(batch, tf.constant(1.0))
        call(batch, tf.constant(1.0))
    finally:
        tf.config.run_functions_eagerly(False)
    assert len(traced) == 3 and float(total.numpy()) == 132.0 + 2 * 6.0
    assert float(eagerly[0].numpy()) == 2 * 138.0  # the structure the function returns
    call(batch, tf.constant(0.0))  # and through the trace again
    assert len(traced) == 3 and float(total.numpy()) == 144.0 + 3.0
