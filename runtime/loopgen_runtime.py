"""The run's machinery of the training scripts loopgen renders, beside them: the output
directory kept sound (lock, setup.json, whole checkpoints, runs.jsonl, the logged values,
SIGTERM, machine faults), and the debugging flags and replay. A script passes in what its spec
decides, as the class attributes of its RunDirectory; this file never imports the script, and
the same file serves every script of a folder. It is yours to read and edit too: `loopgen
render` merges your edits here as in the script.

Written by loopgen (runtime sha256 0000000000000000).
"""

import argparse
import contextlib
import csv
import ctypes
import errno
import fcntl
import glob
import hashlib
import importlib
import json
import math
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import urllib.parse
import urllib.request

# What a script checks that it was rendered with: loopgen's version and this file's sha256.
RUNTIME = None


class _Module:
    """A module imported when first used: the script checks its flags (--help, a mistyped
    flag) before TensorFlow loads, which takes seconds."""

    def __init__(self, name):
        self._name = name

    def __getattr__(self, attribute):
        return getattr(importlib.import_module(self._name), attribute)


tf, keras, np = _Module("tensorflow"), _Module("keras"), _Module("numpy")


# --- Flags ------------------------------------------------------------------------------


def add_debugging_flags(parser, unit="steps", overfit=False, replay=False):
    """The debugging flags: how the run executes, never what it trains. `unit`: what a step
    counts (updates, in reinforcement learning)."""
    for flag, purpose in [
        ("--eager", "run the steps as plain Python: pdb and print() work in them"),
        ("--check-numerics", "stop at the first op that makes a NaN or Inf (slow)"),
        ("--dump-debug-info", "record every op's outputs in logs/debugger (slow)"),
    ]:
        parser.add_argument(flag, action="store_true", help=purpose)
    parser.add_argument("--profile", metavar="START:STOP", help=f"trace these {unit}")
    parser.add_argument(
        "--fast-dev-run", nargs="?", const="2", metavar="N", help=f"every stage on N {unit}"
    )
    if overfit:
        parser.add_argument("--overfit-batches", metavar="N", help="N batches, again and again")
    if replay:
        parser.add_argument("--step", metavar="N", help=f"replay: the {unit[:-1]} to replay")


def check_debugging_flags(args, unit="steps", multi_worker=False):
    """The debugging flags' mistakes stop the script before TensorFlow loads; --profile's
    range becomes a pair of steps, and --overfit-batches's run gets a directory of its own."""
    overfit, replay = hasattr(args, "overfit_batches"), hasattr(args, "step")
    # Counts of steps or batches.
    counts = ["--fast-dev-run"] + ["--step"] * replay + ["--overfit-batches"] * overfit
    for flag in counts:
        name = flag[2:].replace("-", "_")
        count = getattr(args, name)
        if count is not None and not (count.isdigit() and int(count) >= 1):
            raise SystemExit(f"{flag} {count}: give a whole number, 1 or more")
        setattr(args, name, count and int(count))
    for flag, why in [
        ("--dump-debug-info", "TensorFlow 2.21 then fails with a RecursionError"),
        ("--deterministic", "its deterministic cross-entropy makes a NaN it drops"),
    ]:
        if args.check_numerics and getattr(args, flag[2:].replace("-", "_")):
            raise SystemExit(f"--check-numerics and {flag} do not combine ({why})")
    if args.profile:
        start, _, stop = args.profile.partition(":")
        if not (start.isdigit() and stop.isdigit() and 0 < int(start) <= int(stop)):
            raise SystemExit(
                f"--profile {args.profile}: give the first and last {unit[:-1]} to trace, "
                "START:STOP with 1 <= START <= STOP (3:5, say)"
            )
        args.profile = int(start), int(stop)
    command = getattr(args, "command", "train")
    if command != "train" and (
        args.fast_dev_run or getattr(args, "overfit_batches", None) or args.profile
    ):
        flags = (
            "--fast-dev-run, --overfit-batches, --profile"
            if overfit
            else ("--fast-dev-run, --profile")
        )
        raise SystemExit(f"{flags}: for training, not {command}")
    if replay:
        if (command == "replay") != (args.step is not None):
            raise SystemExit(
                f"replay takes --step N, the {unit[:-1]} to replay; the other commands take none"
            )
        if multi_worker and command == "replay" and "TF_CONFIG" in os.environ:
            raise SystemExit("replay runs on one device, in one process: unset TF_CONFIG")
    if overfit and args.overfit_batches and args.fast_dev_run:
        raise SystemExit("--overfit-batches and --fast-dev-run are runs of their own: pass one")
    if overfit and args.overfit_batches:  # a run of its own, never mixed into the real one
        args.output_dir = f"{args.output_dir.rstrip('/')}-overfit-{args.overfit_batches}"


# The commands beside train, as --help describes them.
COMMANDS = {
    "evaluate": "evaluate a checkpoint on the validation data",
    "predict": "predict on raw inputs with a checkpoint",
    "replay": "replay a step",
}


def parse_run_flags(
    parser,
    argv=None,
    commands=(),
    inputs=None,
    best=False,
    init_from=False,
    new_data=False,
    unit="steps",
    overfit=False,
    multi_worker=False,
    **described,
):
    """The flags every script takes beside its own (how long it trains, where it writes): the
    command and what it reads, resuming, determinism, the lock and the debugging flags, parsed
    and checked before TensorFlow loads. `commands`: those beside train (evaluate, predict,
    replay; `described`: another description of one, evaluate=...); `inputs`: predict's help
    for its paths; `best`: --checkpoint best names the best validation's weights;
    `init_from`, `new_data`: the run checkpoints, and may start from another's or resume on
    other data."""
    if commands:
        said = [{**COMMANDS, **described}[command] for command in commands]
        said = ", ".join([*said[:-1], f"or {said[-1]}"])
        parser.add_argument(
            "command",
            nargs="?",
            choices=["train", *commands],
            default="train",
            help=f"train (the default; resumes from the newest checkpoint), {said} (none of "
            "them writes checkpoints)",
        )
    readers = [command for command in commands if command != "replay"]
    if readers:
        parser.add_argument(
            "--checkpoint",
            default="latest",
            help=f"{', '.join(readers)}: 'latest'"
            + (", 'best' (the best validation's weights)" if best else "")
            + " or a checkpoint's path",
        )
    if inputs:
        parser.add_argument("inputs", nargs="*", metavar="PATH", help=inputs)
        parser.add_argument(
            "--predictions",
            metavar="FILE",
            help="predict: where the predictions go, a JSON line each (default: "
            "predictions.jsonl in the output directory)",
        )
    if init_from:
        parser.add_argument(
            "--init-from",
            metavar="DIR",
            help="start a new run from the weights of the newest checkpoint in DIR (another "
            "run's --output-dir)",
        )
    if new_data:
        parser.add_argument(
            "--new-data",
            action="store_true",
            help="resume on training data other than the checkpoints' (setup.json records "
            "it): an epoch then has another length and order",
        )
    parser.add_argument(
        "--deterministic", action="store_true", help="make TensorFlow ops deterministic"
    )
    parser.add_argument(
        "--no-lock",
        action="store_true",
        help="do not lock the output directory (for file systems without locks)",
    )
    add_debugging_flags(parser, unit, overfit=overfit, replay="replay" in commands)
    if inputs:
        # Intermixed: `predict --checkpoint best a.png b.png` gives the paths after an option.
        args = parser.parse_intermixed_args(argv)
        if (args.command == "predict") != bool(args.inputs):
            others = "train and evaluate take" if "evaluate" in commands else "train takes"
            parser.error(f"predict takes the paths of its inputs; {others} none")
    else:
        args = parser.parse_args(argv)
    check_debugging_flags(args, unit, multi_worker=multi_worker)
    return args


# --- MLflow's process: started before TensorFlow loads ---------------------------------

# What MLflow's process (start_mlflow_process) runs once the run starts: it reads the run's
# settings, each log point's values, then how the run ended. Closed without an end (this
# process killed), it leaves the MLflow run as it is, for the next run to continue.
MLFLOW_TRACKER = """
import os

settings = requests.get()
try:
    import mlflow
except ImportError as error:
    sys.exit(f"{error}: the run is not tracked in MLflow (pip install mlflow)")
try:
    if settings["tracking_uri"]:
        mlflow.set_tracking_uri(settings["tracking_uri"])
    mlflow.set_experiment(settings["experiment"])
    # None continues the run MLFLOW_RUN_ID names, if set (a sweep's trial: the sweep made it
    # a child of its own run), else MLflow starts one.
    run = mlflow.start_run(run_id=settings["run_id"])
    if settings["run_id"] is None:
        mlflow.log_params(settings["params"])
        mlflow.set_tags(settings["tags"])
        with open(settings["run_id_file"] + ".tmp", "w") as f:
            f.write(run.info.run_id)
        os.replace(settings["run_id_file"] + ".tmp", settings["run_id_file"])
except Exception as error:
    sys.exit(f"MLflow at {mlflow.get_tracking_uri()} failed, the run is not tracked: {error}")
client = mlflow.MlflowClient()
request = requests.get()
while request is not None and "end" not in request:
    # The log points queued meanwhile go in one batch (MLflow takes 1000 values at most). The
    # None that says the training process closed its end (killed) ends the run as it is.
    metrics, drained = [], False
    while request is not None and "end" not in request and len(metrics) < 900:
        for name, value in request["values"].items():
            metrics.append(mlflow.entities.Metric(name, value, request["time"], request["step"]))
        drained = requests.empty()
        if drained:
            break
        request = requests.get()
    try:
        client.log_batch(run.info.run_id, metrics=metrics)
    except Exception as error:  # training goes on: metrics.jsonl has the values
        print(f"MLflow could not log steps {metrics[0].step} to {metrics[-1].step}: {error}",
              file=sys.stderr)
    if drained:
        request = requests.get()
if request is not None:
    try:
        for path, folder in request["artifacts"]:
            if os.path.isdir(path):
                mlflow.log_artifacts(path, folder)
            elif os.path.exists(path):
                mlflow.log_artifact(path)
        mlflow.end_run(request["end"])
    except Exception as error:
        print(f"MLflow could not end the run: {error}", file=sys.stderr)
"""

# MLflow keeps the run from a process of its own (RunDirectory.start_tracking): importing
# MLflow and opening its store take seconds of CPU, which training would wait for in this
# process (Python runs one thread at a time). It reads a JSON object a line on its stdin: the
# code it runs (MLFLOW_TRACKER), then the run's settings, each log point's values, and how the
# run ended.
MLFLOW_PROCESS = """
import json, queue, signal, sys, threading

# A Ctrl-C or a scheduler's SIGTERM reaches the whole process group: the training process
# says how the run ended.
signal.signal(signal.SIGINT, signal.SIG_IGN)
signal.signal(signal.SIGTERM, signal.SIG_IGN)
requests = queue.Queue()


def read():
    # Read at once, while mlflow is imported: the training process never waits to write.
    for line in sys.stdin:
        requests.put(json.loads(line))
    requests.put(None)  # closed


threading.Thread(target=read, daemon=True).start()
try:
    import mlflow
    STORE
except ImportError:
    pass  # MLFLOW_TRACKER says so
code = requests.get()  # None: the run ended before it started tracking
if code is not None:
    exec(code)
"""

mlflow_process = None
"""MLflow's process when the script started it before TensorFlow loaded (its main block)."""


def start_mlflow_process(tracking_uri=None):
    """MLflow's process (MLFLOW_PROCESS); a database's store (MLflow's default, SQLite) is
    imported at once, a second more."""
    database = ("sqlite", "postgresql", "mysql", "mssql")
    store = not tracking_uri or tracking_uri.split(":")[0].split("+")[0] in database
    line = "import mlflow.store.tracking.sqlalchemy_store  # the database's store" if store else ""
    code = MLFLOW_PROCESS.replace("STORE", line)
    return subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, text=True)


# --- The run directory ------------------------------------------------------------------

# The system's reasons for failing a write that no fix of this script would help: what
# happened, and what to do.
MACHINE_FAULTS = {
    errno.ENOSPC: ("The disk is full", "free some space"),
    errno.EDQUOT: ("The disk quota is used up", "free some space"),
    errno.EFBIG: ("The file grew beyond the size this process may write", "raise ulimit -f"),
    errno.EROFS: ("The file system is read-only", "pass an --output-dir on a writable one"),
    errno.EACCES: ("This user may not write there", "pass an --output-dir it can write"),
    errno.EPERM: ("This user may not write there", "pass an --output-dir it can write"),
    errno.EEXIST: ("--output-dir names a file", "pass a directory"),
    errno.ENOTDIR: ("A part of --output-dir is a file", "pass a directory"),
}


class RunDirectory:
    """The output directory, kept sound: one run at a time (run.lock), how each run started and
    ended (runs.jsonl), checkpoints of one training setup only (checkpoints/setup.json) and
    saved whole, and the logged values (TensorBoard's logs/, metrics.jsonl, metrics.csv).
    In a multi-worker job only the chief writes it: the other workers write what they must
    (saving is collective) into workers/worker-<i>, which nobody reads.

    A script's RunDirectory subclasses this one and sets what its spec decides: the class
    attributes below (their defaults are a spec's that does not use the feature)."""

    script = None
    """The script's path (its __file__): runs.jsonl records it and its checksum."""
    rendered_from = {}
    """What the script was rendered from (RENDERED_FROM): runs.jsonl records it."""
    unit = "steps"
    """What the loop counts: "updates" in a script that acts (reinforcement learning)."""
    setup = None
    """SETUP, the fields that decide what a checkpoint means; None: no checkpoints."""
    keep_checkpoints = 3
    train_files = None
    """The training data's file or folder, as the spec names it (a glob pattern: train_glob)."""
    train_glob = False
    num_examples = None
    """The script's num_examples(examples), for setup.json's record of the data."""
    readers = ()
    """The commands that read the checkpoints and write none (evaluate, predict, replay)."""
    multi_worker = False
    strategy = None
    """The strategy's name (MirroredStrategy, ...); None on one device."""
    preemptible = False
    """SIGTERM ends the train_loop call, saves a checkpoint and exits."""
    means_checkpointed = False
    """The epoch's running means are in the checkpoint: a resumed epoch continues them."""
    best_model = False
    """The best validation's weights are kept in checkpoints/best."""
    tensorboard = jsonl = True
    csv_columns = None
    """metrics.csv's columns; None: no metrics.csv."""
    comet = None
    """Comet's settings: project_name, workspace, offline; None: no Comet."""
    mlflow = None
    """MLflow's settings: tracking_uri, experiment, params, spec_file (artifacts); None: none."""
    inspect_every = None
    """logging.inspect's cadence in steps; None: nothing inspected."""
    replayed_networks = ("model",)
    """replay: the checkpoint's networks whose layers it reports."""
    optimizers = ("optimizer",)
    """replay: the checkpoint's optimizers it watches."""
    batch_names = ()
    """debug/step-N/batch.npz: the names of a batch's parts."""
    results = None
    """The script's results(metrics): their values as floats (replay prints them)."""
    batch_of_step = None
    """The script's batch_of_step(examples, step): the batch of a step, read again."""
    updates_at = step_of_update = update_of = None
    """A script that acts: updates done by an environment step, and back (its functions)."""

    def __init__(self, args):
        self.args, self.path = args, args.output_dir
        self.acts = self.unit == "updates"
        self.checkpoints = os.path.join(self.path, "checkpoints")
        self.run = self.resumed_from = self.init_from = self.saved = None
        self.writers, self.preempted = {}, False
        self.overfit_losses = []  # --overfit-batches: the training loss at each log
        self.tracker = None  # the MLflow process, once the run starts (start_tracking)
        self.chief, self.scratch = True, None  # set by train() once the cluster is known
        # The data's digests (copied files are the same data) where its files are named.
        self.digested = self.train_files is not None and not self.acts

    def lock(self):
        """Takes the directory's lock, or stops (a multi-worker job: returns why not, or
        None): two runs writing one directory would overwrite each other's checkpoints. An
        flock: the OS drops it when the process ends, even by SIGKILL. run.lock names the run
        that holds it."""
        reader = bool(self.readers) and self.args.command != "train"
        if reader and not os.path.isdir(self.checkpoints):
            raise SystemExit(f"Nothing to {self.args.command}: {self.path} holds no checkpoints.")
        if (
            getattr(self.args, "overfit_batches", None)
            and os.path.isdir(self.checkpoints)
            and not getattr(self.args, "step", None)
        ):
            raise SystemExit(
                f"--overfit-batches: {self.path} holds a run already; remove it to overfit again "
                "(an overfitting run starts from the initial weights)"
            )
        # The directories this run makes, the deepest first: a failed download removes them.
        self.made_folders, folder = [], os.path.abspath(self.path)
        while not os.path.exists(folder):
            self.made_folders.append(folder)
            folder = os.path.dirname(folder)
        made = not os.path.isdir(self.path)
        os.makedirs(self.path, exist_ok=True)
        if not self.multi_worker:
            # undo() removes it again if the run is refused before it starts.
            self.made = made
        if self.args.no_lock:
            if not self.args.fast_dev_run:  # whose scratch directory is its own
                print(f"Not locking {self.path} (--no-lock): no other run may use it.")
            return None
        existed = os.path.exists(os.path.join(self.path, "run.lock"))
        self.lock_file = open(os.path.join(self.path, "run.lock"), "a+")
        try:
            # Readers read any number at once, but not while a run trains.
            shared = fcntl.LOCK_SH if reader else fcntl.LOCK_EX
            fcntl.flock(self.lock_file, shared | fcntl.LOCK_NB)
        except BlockingIOError:
            self.lock_file.seek(0)
            holder = self.lock_file.read().strip() or "it has not written its pid yet"
            if self.readers:
                try:  # open to a reader: readers hold it, and run.lock names the last run to train
                    fcntl.flock(self.lock_file, fcntl.LOCK_SH | fcntl.LOCK_NB)
                    holder = f"{' or '.join(self.readers)} reads it"
                except BlockingIOError:
                    pass
            return self.refuse(
                f"{self.path} is in use by another run ({holder}). Wait for it to end, or "
                "pass another --output-dir."
            )
        except OSError as error:  # ENOLCK, ENOSYS: a file system that refuses locks
            return self.refuse(
                f"Cannot lock {self.lock_file.name}: {error.strerror}. This file system does "
                f"not support locks; if no other run uses {self.path}, run again with --no-lock."
            )
        if reader:
            return None
        # What run.lock said before this run: a run that stops before it wrote anything else
        # (a failed download) puts it back.
        self.lock_file.seek(0)
        self.found = self.lock_file.read()
        if not self.multi_worker:
            # What it said before this run (None: no file), for undo().
            self.lock_text = self.found if existed else None
        # Often the first write of a run: the one a full disk fails.
        try:
            with writing(self.lock_file.name):
                self.lock_file.truncate(0)
                self.lock_file.write(
                    f"pid {os.getpid()} on {socket.gethostname()}, started {now()}\n"
                )
                self.lock_file.flush()
        except OSError:
            # Nothing of it was written: no empty run.lock is left (nor the directory this run
            # made), as if the run had never started.
            if os.path.getsize(self.lock_file.name) == 0:
                os.remove(self.lock_file.name)
                if made:
                    os.rmdir(self.path)
            raise
        # What a run killed mid-export left.
        settle_whole(os.path.join(self.path, "export"))
        return None

    def refuse(self, message):
        """Why the lock was not taken: a multi-worker job's chief returns it (every worker
        stops), one process stops."""
        if self.multi_worker:
            return message
        raise SystemExit(message) from None

    def unlock(self):
        """Leaves the directory as this run found it, when the run stopped before it wrote
        anything there but run.lock (a download failed): run.lock holds what it held (or is
        removed, with the directories this run made if nothing else is in them), and the lock
        is released."""
        text = getattr(self, "found", None)
        if text is None:
            return  # not locked by this run (--no-lock, another run's, a reader's)
        if text:
            self.lock_file.truncate(0)
            self.lock_file.write(text)
            self.lock_file.flush()
        else:  # (end() may have removed it already: undo())
            with contextlib.suppress(FileNotFoundError):
                os.remove(self.lock_file.name)
        self.lock_file.close()  # the flock goes with it
        self.found = None
        for folder in self.made_folders:
            if not os.path.isdir(folder):
                continue  # removed by undo() already
            if os.listdir(folder):
                break
            os.rmdir(folder)

    # --- Checkpoints --------------------------------------------------------------------

    def restore(self, checkpoint, examples, **networks):
        """Resumes from the newest checkpoint that restores (a damaged one is reported and the
        one before it used), if setup.json says they are this setup's: SETUP, the network's
        weights (a hand edit of build_model) and the training data (`examples`, its files). A
        new run records its setup there, and may start from the weights of another run
        (--init-from)."""
        setup = {**self.setup, "weights": weights_fingerprint(*networks.values())}
        self.data = self.data_record(examples)
        self.examples = examples  # a diverged step's batch is read again from them
        self.checkpoint = checkpoint  # replay watches its networks and optimizers
        setup_path = os.path.join(self.checkpoints, "setup.json")
        if self.readers and self.args.command != "train":
            return self.restore_to_read(checkpoint, setup, networks)
        if self.best_model:
            self.keep_best(**networks)
        if self.multi_worker:
            # Saving is collective: every worker calls save(), but only the chief's are kept.
            directory = (
                self.checkpoints if self.chief else os.path.join(self.scratch, "checkpoints")
            )
            keep = self.keep_checkpoints if self.chief else 1
            # Every worker resumes from the chief's checkpoints: the output directory must be
            # storage that all workers read (NFS, GCS, ...). Only the chief repairs its state.
            paths = checkpoint_paths(self.checkpoints, repair=self.chief)
            self.manager = tf.train.CheckpointManager(checkpoint, directory, keep)
        else:
            # Before the manager reads the state file, which may be damaged.
            paths = checkpoint_paths(self.checkpoints)
            self.manager = tf.train.CheckpointManager(
                checkpoint, self.checkpoints, self.keep_checkpoints
            )
        self.remove_partial_checkpoints(self.manager.directory)
        if not paths:
            # What a run killed before its first checkpoint logged.
            self.forget_logged_after(0)
            if self.args.init_from:
                self.init_from = load_weights(self.args.init_from, **networks)
            recorded = with_digests(self.data) if self.digested else self.data
            if self.multi_worker:
                if self.chief:
                    os.makedirs(self.checkpoints, exist_ok=True)
                    with open(setup_path, "w") as f:
                        json.dump({**setup, "data": recorded}, f, indent=2)
                return None
            os.makedirs(self.checkpoints, exist_ok=True)
            self.wrote_setup = True  # undo() removes it again if the run is refused
            with open(setup_path, "w") as f:
                return json.dump({**setup, "data": recorded}, f, indent=2)
        if self.args.init_from:
            raise SystemExit(
                f"--init-from {self.args.init_from}: {self.checkpoints} already holds this run's "
                "checkpoints. Run without --init-from to resume it, or pass a new --output-dir."
            )
        self.check_setup(setup)
        if not self.acts:
            self.check_data(setup_path)
        for path in reversed(paths):
            try:
                restore_whole(checkpoint, path)
            except Exception as error:  # damaged files raise OpError, IndexError, MemoryError
                print(f"Cannot restore {path}: {checkpoint_damage(error)}")
                continue
            self.resumed_from, self.saved = path, int(checkpoint.step.numpy())
            print(f"Resumed from {path} at step {self.saved}")
            return self.forget_logged_after(self.saved)
        raise SystemExit(
            f"None of the checkpoints restores ({', '.join(paths)}): see the errors above. "
            "Move them away (or pass another --output-dir) to start from scratch."
        )

    def check_setup(self, setup, doing="resume from"):
        """Stops unless setup.json says the checkpoints are of this setup."""
        with open(os.path.join(self.checkpoints, "setup.json")) as f:
            saved = json.load(f)
        differences = [
            f"  {key}: {saved.get(key)!r} in the checkpoints, {setup.get(key)!r} in this run"
            for key in {**setup, **saved}
            if key != "data" and saved.get(key) != setup.get(key)  # data: check_data()
        ]
        if differences:
            raise SystemExit(
                f"Refusing to {doing} {self.checkpoints}: its checkpoints come from another "
                "training setup (SETUP in this script; weights: the names, shapes and dtypes "
                "of the network's variables). What differs:\n" + "\n".join(differences) + "\n"
                "Undo the change, or train in a new --output-dir (with --init-from "
                f"{self.path} to start from those weights)."
            )

    def data_record(self, examples):
        """The training data, cheaply (not a hash of it all, which would read it at every
        start): how many examples, and each file's size and modification time (a directory:
        its files' count, total size and newest time). setup.json keeps it: a resume on other
        data stops. A script that acts has none: its environment is in SETUP."""
        if self.acts:
            return None
        if self.train_files is None:
            paths = []
        elif self.train_glob:
            paths = sorted(glob.glob(self.train_files))
        else:
            paths = [self.train_files]
        return {
            "examples": self.num_examples(examples),
            "files": {path: file_record(path) for path in paths},
        }

    def check_data(self, setup_path):
        """Stops unless the training data is the one setup.json records, or --new-data accepts
        other data (then setup.json records it). An epoch's length and order follow from the
        data: on other data, a resumed run continues a run that never was. A setup.json that
        records no data (an earlier script's) is not checked. A file copied again (a new time)
        is the same data if its sha256, which setup.json holds for data up to a gigabyte, is."""
        with open(setup_path) as f:
            saved = json.load(f)
        recorded = saved.get("data")
        if recorded is None or (not self.digested and recorded == self.data):
            return
        differences, copied, digests = [], [], recorded.get("digests", {})
        if recorded["examples"] != self.data["examples"]:
            differences.append(
                f"  data.train: {recorded['examples']} examples in the checkpoints, "
                f"{self.data['examples']} in this run"
            )
        files = {**recorded["files"], **self.data["files"]}
        for path in files:
            before, now = recorded["files"].get(path), self.data["files"].get(path)
            if before == now:
                continue
            # Copied again (a new time)? The same data if its contents' sha256 is the same;
            # another sha256 is said first: equal sizes must not read as a new time alone.
            contents = ""
            if self.digested and path in digests and os.path.exists(path):
                if digests[path] == file_digest(path):
                    copied.append(path)
                    continue
                contents = "its contents changed (another sha256); "
            differences.append(
                f"  {path}: {contents}{before or 'absent'} in the checkpoints, "
                f"{now or 'absent'} in this run"
            )
        if not differences:
            if copied:  # setup.json takes their new times
                print(f"The same training data, copied again: {', '.join(copied)}")
                self.record_data(setup_path, saved, {**self.data, "digests": digests})
            return
        if not self.args.new_data:
            digest = ", and the sha256 of data up to a gigabyte" if self.digested else ""
            raise SystemExit(
                f"Refusing to resume from {self.checkpoints}: its checkpoints were trained on "
                "other data (setup.json records the number of examples and each file's size and "
                f"time{digest}). What differs:\n" + "\n".join(differences) + "\n"
                "Put the data back; or resume on this data on purpose with --new-data (an epoch "
                "then has another length and order); or train in a new --output-dir (with "
                f"--init-from {self.path} to start from those weights)."
            )
        print("Resuming on other training data (--new-data):\n" + "\n".join(differences))
        self.record_data(setup_path, saved, with_digests(self.data) if self.digested else self.data)

    def record_data(self, setup_path, saved, data):
        """Records in setup.json the training data this run resumes on."""
        if self.chief:
            with open(setup_path, "w") as f:
                json.dump({**saved, "data": data}, f, indent=2)

    def restore_to_read(self, checkpoint, setup, networks):
        """evaluate, predict, replay: the weights of --checkpoint (latest, best or a path), of
        this setup. Nothing in the directory is written."""
        self.check_setup(setup, f"{self.args.command} with")
        path = self.args.checkpoint
        if path == "latest":
            path = (checkpoint_paths(self.checkpoints, repair=False) or [None])[-1]
        elif path == "best" and self.best_model:
            # The best validation's weights: the networks alone.
            checkpoint = tf.train.Checkpoint(**networks)
            best = os.path.join(self.checkpoints, "best")
            path = (checkpoint_paths(best, repair=False) or [None])[-1]
        if path is None:
            raise SystemExit(f"--checkpoint {self.args.checkpoint}: none in {self.checkpoints}")
        try:
            restore_whole(checkpoint, path)
        except Exception as error:  # a path that is no checkpoint, damaged files
            raise SystemExit(
                f"--checkpoint: cannot restore {path}: {checkpoint_damage(error)}"
            ) from None
        number = re.search(r"-(\d+)$", path)  # ckpt-<step>
        self.resumed_from, self.saved = path, int(number[1]) if number else None

    # --- Replay -------------------------------------------------------------------------

    def replayable(self):
        """replay: the last step it can replay (that a run of this directory reached), and the
        flags of the run's newest start that decide what a step trains."""
        records = []
        if os.path.exists(os.path.join(self.path, "runs.jsonl")):
            with open(os.path.join(self.path, "runs.jsonl")) as f:
                for line in f:
                    with contextlib.suppress(ValueError):  # a line a kill cut short
                        records.append(json.loads(line))
        starts = [r for r in records if r.get("event") == "start"]
        if not starts:
            raise SystemExit(f"Nothing to replay: {self.path} holds no run's start (runs.jsonl).")
        # The network's fingerprint is checked when the checkpoint restores.
        with open(os.path.join(self.checkpoints, "setup.json")) as f:
            saved = json.load(f)
        self.check_setup({**self.setup, "weights": saved.get("weights")}, "replay")
        ends = [r for r in records if r.get("event") == "end"]
        saved = [
            int(path.rsplit("-", 1)[1]) for path in checkpoint_paths(self.checkpoints, repair=False)
        ]
        if self.acts:
            # Counted in updates: the environment steps of the ends and checkpoints.
            reached = [
                self.update_of(r["nan_step"]) if "nan_step" in r else self.updates_at(r["step"])
                for r in ends
            ]
            reached += [self.updates_at(step) for step in saved]
            flags = {}
        else:
            reached = [r.get("nan_step", r.get("step", 0)) for r in ends] + saved
            flags = {
                name: starts[-1]["flags"][name]
                # An --overfit-batches run trains on its batches alone: so does its replay.
                for name in ("epochs", "steps", "overfit_batches")
                if name in starts[-1]["flags"] and hasattr(self.args, name)
            }
        # Not the run's --deterministic: TensorFlow's deterministic sparse cross-entropy makes
        # a NaN for each label out of range, kept for those alone, and the replayed step's
        # check would stop at it. Its values without it are the run's within rounding.
        flags["init_from"] = starts[0]["flags"].get("init_from")
        return max([*reached, 0]), flags

    def checkpoint_before(self, step):
        """replay: the newest checkpoint of a step before `step` (None: none is left)."""
        paths = checkpoint_paths(self.checkpoints, repair=False)
        before = [path for path in paths if int(path.rsplit("-", 1)[1]) < step]
        return before[-1] if before else None

    def link_checkpoint(self, path, directory):
        """replay: `path` as the one checkpoint of `directory`: its files hard-linked (copied
        where the file system cannot link; TensorFlow never writes into a checkpoint's files),
        setup.json copied."""
        os.makedirs(directory)
        for file in glob.glob(path + ".*"):
            target = os.path.join(directory, os.path.basename(file))
            try:
                os.link(file, target)
            except OSError:
                shutil.copyfile(file, target)
        shutil.copyfile(
            os.path.join(self.checkpoints, "setup.json"), os.path.join(directory, "setup.json")
        )
        name = os.path.basename(path)
        with open(os.path.join(directory, "checkpoint"), "w") as f:
            f.write(f'model_checkpoint_path: "{name}"\nall_model_checkpoint_paths: "{name}"\n')

    def write_batch(self, step, rollout=None):
        """debug/step-<step>/batch.npz: the batch step `step` trained on, as the step received
        it (a function of the step alone: read again); debug/update-<update>/rollout.npz in a
        script that acts: the rollout the update trained on. Returns the folder."""
        if self.acts:
            folder = os.path.join(self.path, "debug", f"update-{step}")
            parts, name = rollout, "rollout.npz"
        else:
            folder = os.path.join(self.path, "debug", f"step-{step}")
            parts, name = dict(zip(self.batch_names, self.batch_of(step), strict=True)), "batch.npz"
        flat = keras.tree.flatten_with_path(parts)
        arrays = {"/".join(map(str, path)): np.asarray(v) for path, v in flat}
        os.makedirs(folder, exist_ok=True)
        path = os.path.join(folder, name)
        with open(path + ".partial", "wb") as f:  # written aside, then renamed: whole or not
            np.savez(f, **arrays)
        os.replace(path + ".partial", path)
        return folder

    def batch_of(self, step):
        """The batch step `step` trained on (a function of the step alone: read again)."""
        # --overfit-batches N: step k trained on batch (k - 1) % N + 1 of the first N.
        if getattr(self.args, "overfit_batches", None):
            step = (step - 1) % self.args.overfit_batches + 1
        return self.batch_of_step(self.examples, step)

    def train_again(self):
        """replay: step N once more, unchecked, when its checked run stopped at a NaN or Inf:
        the loss it makes."""
        self.train_step(*self.batch_of(self.args.step))

    def evaluated(self, values):
        """evaluate: prints the validation values and appends them to evaluations.jsonl."""
        values = {"val_" + name: value for name, value in values.items()}
        print(f"{self.resumed_from} (step {self.saved}):")
        print("  ".join(f"{name}: {value:.4f}" for name, value in values.items()))
        record = {"checkpoint": self.resumed_from, "step": self.saved}
        if hasattr(self.args, "data"):  # evaluate --data PATH
            record["data"] = self.args.data or "validation"
        self.append("evaluations.jsonl", {**record, **values})

    def keep_best(self, **networks):
        """Where the weights of the best validation go: checkpoints/best, apart from the
        periodic checkpoints."""
        directory = os.path.join(self.path if self.chief else self.scratch, "checkpoints", "best")
        checkpoint_paths(directory)  # a damaged state file would stop the manager
        self.best = tf.train.CheckpointManager(tf.train.Checkpoint(**networks), directory, 1)

    def save_best(self, step):
        """Saves the weights of the best validation so far; returns where."""
        try:
            return self.best.save(checkpoint_number=step)
        except BaseException:
            self.remove_partial_checkpoints(self.best.directory)
            raise

    def restore_best(self):
        """Restores the weights of the best validation; False when none was saved."""
        if self.best.latest_checkpoint:
            restored = self.best.checkpoint.restore(self.best.latest_checkpoint)
            restored.assert_existing_objects_matched()
        return self.best.latest_checkpoint is not None

    # --- The run's start and its logs ---------------------------------------------------

    def start(self, step, nonfinite_step, total_steps, strategy=None, train_step=None, values=()):
        """Writes the run's start record to runs.jsonl (main() writes its end record), once the
        steps it trains are known to hold those --profile names; a script that acts also
        starts its progress bar (`values`: the means the run logs, which replay prints)."""
        self.step, self.nonfinite_step = step, nonfinite_step
        self.bounds, self.call = (), None
        unit = self.unit
        if self.acts:
            self.train_values = values
            self.start_progress(int(step.numpy()), total_steps)
            # --profile and replay count updates.
            done, total_steps = self.updates_at(int(step.numpy())), self.updates_at(total_steps)
        else:
            self.train_step = train_step  # replay: runs a step stopped at a NaN again
            done = int(step.numpy())
            if done >= total_steps:
                print(f"Already at step {done} of {total_steps}: nothing left to train.")
            if getattr(self.args, "step", None):  # replay: step N runs alone
                self.bounds = (self.args.step - 1, self.args.step)
        if self.args.profile:
            first, last = self.args.profile
            if done >= total_steps:
                raise SystemExit(
                    f"--profile {first}:{last}: this run is at {unit[:-1]} {done} of "
                    f"{total_steps}, with none left to trace"
                )
            if not done < first <= last <= total_steps:
                raise SystemExit(
                    f"--profile {first}:{last}: this run trains {unit} {done + 1} to "
                    f"{total_steps}; give START:STOP within them"
                )
            self.bounds = (first - 1, last)
        if self.preemptible:
            # Schedulers (Slurm, Kubernetes, spot VMs) preempt with SIGTERM, then SIGKILL after
            # a grace period: the loop ends its train_loop call, saves a checkpoint and exits.
            # A multi-worker job's worker's own SIGTERM is its vote: the workers stop together.
            vote = "sigterm" if self.multi_worker else "preempted"
            if self.multi_worker:
                self.sigterm = False
            signal.signal(signal.SIGTERM, lambda signum, frame: setattr(self, vote, True))
        if not self.chief:
            return
        rendered, current = checksums(self.script)
        runtime_rendered, runtime_current = checksums(__file__, "runtime")
        if os.path.abspath(__file__) == os.path.abspath(self.script):  # --single-file's
            runtime_rendered, runtime_current = rendered, current
        self.run = os.urandom(4).hex()
        record = {
            "event": "start", "run": self.run, "time": now(), **self.rendered_from,
            "script": os.path.abspath(self.script), "script_sha256": current,
            "script_edited": current != rendered, "runtime": os.path.abspath(__file__),
            "runtime_sha256": runtime_current,
            "runtime_edited": runtime_current != runtime_rendered,
            "command": sys.argv, "flags": vars(self.args),
            "python": sys.version.split()[0], "tensorflow": tf.__version__,
            "keras": keras.__version__, "host": socket.gethostname(), "pid": os.getpid(),
            "strategy": self.strategy,
            "replicas": strategy.num_replicas_in_sync if strategy is not None else 1,
            "devices": [device.name for device in tf.config.list_logical_devices()],
        }  # fmt: skip
        if self.multi_worker:
            record["cluster"] = strategy.cluster_resolver.cluster_spec().as_dict()
        if self.setup is not None:
            record.update(resumed_from=self.resumed_from, init_from=self.init_from)
        record["step"] = int(step.numpy())
        self.append("runs.jsonl", record)
        if self.comet is not None:
            self.start_comet()
        if self.mlflow is not None:
            self.start_tracking()

    def comet_parameters(self):
        """The run's hyperparameters for Comet (the script's RunDirectory says them)."""
        return {}

    def start_comet(self):
        """The Comet experiment the logged values go to, as comet.offline says: a zip in
        <output-dir>/comet (`comet upload` sends it), or Comet's server (its API key from
        COMET_API_KEY, or ~/.comet.config)."""
        # comet_ml patches Keras when imported unless told not to (this script logs to it
        # itself): the variable first, then the import.
        os.environ.setdefault("COMET_DISABLE_AUTO_LOGGING", "1")
        import comet_ml

        where = {"project_name": self.comet["project_name"]}
        if self.comet.get("workspace"):
            where["workspace"] = self.comet["workspace"]
        if self.comet.get("offline"):
            offline = os.path.join(self.path, "comet")
            self.experiment = comet_ml.OfflineExperiment(**where, offline_directory=offline)
        else:
            self.experiment = comet_ml.Experiment(**where)
        self.experiment.log_parameters(self.comet_parameters())

    def start_tracking(self):
        """Starts the MLflow run, or continues this directory's (its id is kept in
        mlflow_run_id, so a resumed run logs on in the same MLflow run), from a process of
        its own (MLFLOW_TRACKER), which training does not wait for."""
        global mlflow_process
        path = os.path.join(self.path, "mlflow_run_id")
        run_id = None
        if os.path.exists(path):
            with open(path) as f:
                run_id = f.read().strip()
        uri = self.mlflow.get("tracking_uri")
        self.tracker = mlflow_process or start_mlflow_process(uri)
        mlflow_process = None
        self.track(MLFLOW_TRACKER)
        self.track({
            # None: MLFLOW_TRACKING_URI if set, else MLflow's local store in the working directory.
            "tracking_uri": uri,
            "experiment": self.mlflow["experiment"],
            "run_id": run_id,
            "run_id_file": path,
            "params": self.mlflow["params"],
            "tags": {f"loopgen.{key}": value for key, value in self.rendered_from.items()},
        })  # fmt: skip

    def track(self, request):
        """Sends a request to the MLflow process. One that has ended (it said why) takes none:
        the run trains on, untracked (metrics.jsonl holds every value)."""
        try:
            self.tracker.stdin.write(json.dumps(request) + "\n")
            self.tracker.stdin.flush()
        except (BrokenPipeError, ValueError):
            pass

    def end_tracking(self, exit):
        """Ends the MLflow run: FINISHED (with mlflow's artifacts: its export, script and spec
        file uploaded), KILLED (a SIGTERM: the next run resumes it) or FAILED. Waits for the
        MLflow process to send the values still queued."""
        artifacts = []
        if exit == "finished" and self.mlflow.get("spec_file"):
            artifacts = [
                [os.path.join(self.path, "export"), "export"],
                [os.path.abspath(self.script), None],
                [self.mlflow["spec_file"], None],
            ]
        status = {"finished": "FINISHED", "sigterm": "KILLED"}.get(exit, "FAILED")
        self.track({"end": status, "artifacts": artifacts})
        with contextlib.suppress(BrokenPipeError):
            self.tracker.stdin.close()
        self.tracker.wait()

    def writer(self, split):
        """The TensorBoard writer of logs/<split>: tensorboard --logdir <output-dir>/logs."""
        if split not in self.writers:
            logdir = os.path.join(self.path, "logs", split)
            # Only the chief writes summaries.
            writer = tf.summary.create_file_writer(logdir) if self.chief else None
            self.writers[split] = writer or tf.summary.create_noop_writer()
        return self.writers[split]

    def start_progress(self, first_step, end_step):
        """Starts the progress bar, in environment steps, and the throughput timer (it runs
        from log point to log point)."""
        self.progbar = keras.utils.Progbar(end_step, stateless_metrics=(), verbose=int(self.chief))
        self.progbar.update(first_step)
        self.epoch_start, self.timer = 0, (time.perf_counter(), first_step)

    def start_epoch(self, epoch, epochs, first_step, end_step, metrics):
        """Starts an epoch: its running means from zero (resumed in its middle, it continues
        the means the checkpoint holds), its progress bar, and the throughput timer
        (validation and checkpoints are not counted: it runs from log point to log point)."""
        self.train_values = metrics  # replay prints them
        resumed_at = first_step
        if self.means_checkpointed:
            # Resumed in this epoch's middle (the newest checkpoint is past its first step).
            resumed_at = max(first_step, self.saved or 0)
        if resumed_at == first_step:
            for metric in metrics:
                metric.reset_state()
        # A replay stops at its step: the run's own epochs are what it counts up to.
        replaying = getattr(self.args, "step", None) and hasattr(self.args, "epochs")
        print(f"Epoch {epoch + 1}/{self.args.epochs if replaying else epochs}")
        # The logged values are running means already: all shown as they are, none averaged.
        steps = end_step - first_step
        self.progbar = keras.utils.Progbar(steps, stateless_metrics=(), verbose=int(self.chief))
        self.epoch_start, self.timer = first_step, (time.perf_counter(), resumed_at)

    def log(self, split, step, values, epoch=None):
        """Writes logged values: to TensorBoard, and to metrics.jsonl, metrics.csv, Comet and
        MLflow (those the spec logs to) with the validation values named apart (val_loss,
        val_...), which are also printed."""
        if split == "train" and getattr(self.args, "overfit_batches", None):
            self.overfit_losses.append(values["loss"])
        if split == "train":
            # Timed after the values were read, which waited for the device.
            start, start_step = self.timer
            self.timer = time.perf_counter(), step
            values["steps_per_second"] = (step - start_step) / (self.timer[0] - start)
            self.progbar.update(step - self.epoch_start, list(values.items()))
        if self.tensorboard:
            with self.writer(split).as_default(step=step):
                for name, value in values.items():
                    tf.summary.scalar(name, value)
        if not self.chief:
            return
        prefix = "val_" if split == "validation" else ""
        values = {prefix + name: value for name, value in values.items()}
        if split == "validation":
            print("  ".join(f"{name}: {value:.4f}" for name, value in values.items()))
        record = {"step": step, **({} if self.acts else {"epoch": epoch + 1}), **values}
        if self.jsonl:
            self.append("metrics.jsonl", record)
        if self.csv_columns is not None:
            path = os.path.join(self.path, "metrics.csv")
            new = not os.path.exists(path)
            with writing(path), open(path, "a", newline="") as f:
                # A fixed column per value: those a record lacks stay empty.
                writer = csv.DictWriter(f, fieldnames=self.csv_columns, restval="")
                if new:
                    writer.writeheader()
                writer.writerow(record)
        if self.comet is not None:
            self.experiment.log_metrics(values, step=step, epoch=None if self.acts else epoch + 1)
        if self.mlflow is not None:
            # To the MLflow process, which sends them: training does not wait for MLflow.
            self.track({"step": step, "values": values, "time": int(time.time() * 1000)})

    def log_weights(self, step, variables, gradient_norms):
        """Each weight's values as a histogram, and the norm of its gradient in the last step:
        which layers learn, and where gradients vanish or explode."""
        with self.writer("train").as_default(step=step):
            for variable, norm in zip(variables, gradient_norms.numpy(), strict=True):
                tf.summary.histogram(variable.path, variable)
                tf.summary.scalar(f"gradient_norm/{variable.path}", norm)

    def log_inspection(self, step, epoch, inspected):
        """logging.inspect: a step's per-layer statistics (and histograms), under
        inspect/<network>/<layer>/."""
        statistics, histograms = inspected
        values = {f"inspect/{name}": float(value) for name, value in statistics.items()}
        if self.tensorboard:
            with self.writer("train").as_default(step=step):
                for name, value in values.items():
                    tf.summary.scalar(name, value)
                for name, value in histograms.items():
                    tf.summary.histogram(f"inspect/{name}", value)
        if self.jsonl:
            self.append("metrics.jsonl", {"step": step, "epoch": epoch + 1, **values})

    # --- The debugging flags, in the loop -----------------------------------------------

    def bound(self, step):
        """The first step after `step` that ends a train_loop call for the debugging flags:
        --profile's first and last; each with --check-numerics (a NaN then names its step),
        in a replay (each one's loss printed) and while --profile traces (the profiler counts
        a call as a step)."""
        first, last = self.args.profile or (0, 0)
        if self.args.check_numerics or getattr(self.args, "step", None) or first - 1 <= step < last:
            return step + 1
        bounds = self.bounds
        if self.inspect_every:
            # logging.inspect: an inspected step runs alone, after a call that ends before it.
            inspected = (step // self.inspect_every + 1) * self.inspect_every
            bounds = [*bounds, inspected - 1 if inspected - 1 > step else inspected]
        return min((bound for bound in bounds if bound > step), default=math.inf)

    @contextlib.contextmanager
    def debugged(self, first_step, num_steps, rollout=None):
        """A train_loop call of steps first_step + 1 on (a script that acts: update
        first_step + 1, num_steps 1): --profile START:STOP has TensorFlow's profiler trace
        those calls into logs/profile (TensorBoard's Profile tab); replay watches its step."""
        self.call = first_step + 1  # what --check-numerics's NaN stopped
        step = getattr(self.args, "step", None)
        if step == first_step + 1:  # replay: step N, alone (see bound)
            networks = {name: getattr(self.checkpoint, name) for name in self.replayed_networks}
            optimizers = [getattr(self.checkpoint, name) for name in self.optimizers]
            if self.acts:
                replaying = replayed(
                    step, networks, optimizers, self.train_values, results=self.results,
                    script=self.script, unit=self.unit,
                )  # fmt: skip
            else:
                logged = was_logged(self.args.replay_of, step)
                replaying = replayed(
                    step, networks, optimizers, self.train_values, logged, self.train_again,
                    results=self.results, script=self.script,
                )  # fmt: skip
            with replaying:
                yield
            return
        if step and not self.acts:  # replay: a step before N, alone, and its loss
            sums = running_sums(self.train_values)
            yield
            values = step_values(sums, running_sums(self.train_values)).items()
            print(f"\nStep {first_step + 1}: " + "  ".join(f"{k}: {v:.9g}" for k, v in values))
            return
        first, last = self.args.profile or (0, 0)
        if first_step + 1 == first:
            tf.profiler.experimental.start(os.path.join(self.path, "logs", "profile"))
        # Marks the step in a trace (nothing when the profiler is not running).
        with tf.profiler.experimental.Trace("train", step_num=first_step + 1, _r=1):
            yield
        if first_step + num_steps == last:
            tf.profiler.experimental.stop()
            print()  # after the progress bar's line
            profile = os.path.join(self.path, "logs", "profile")
            print(f"--profile: {self.unit} {first} to {last} traced into {profile}")
        if rollout is not None:  # stopped at once, with the rollout, if its loss was not finite
            self.stop_if_diverged(rollout)

    def stop_if_diverged(self, rollout=None):
        """Ends the run at a NaN or Inf loss, before a checkpoint saves the weights it ruined
        (`rollout`: the one a script that acts trained on, kept in debug/)."""
        if int(self.nonfinite_step.numpy()) >= 0:
            step = int(self.nonfinite_step.numpy())
            if self.acts:
                step = self.update_of(step)
                raise SystemExit(self.diverged(step, "The loss became NaN or Inf", rollout=rollout))
            raise SystemExit(self.diverged(step, "The loss became NaN or Inf"))

    def diverged(self, step, what, detail="", rollout=None):
        """What to say of a NaN or Inf at `step` (an update, in a script that acts): the batch
        it trained on goes into debug/step-<step>/ (or its rollout, if given, into
        debug/update-<update>/) where replay can make it again."""
        print()  # after the progress bar's line
        replayable = hasattr(self.args, "step")
        advice = "Lower the learning rate, clip the gradients, or look for NaN in the data."
        if self.acts:
            where = f"update {step} (environment step {self.step_of_update(step)})"
            advice = advice.replace("the data", "the observations")
        else:
            where = f"step {step}"
        if replayable:
            if self.args.step:  # replaying: a step before the one asked for
                before = f"before {self.unit[:-1]} {self.args.step}"
                return f"{what} at {where.split(' (')[0]}, {before}: replay --step {step}"
            if self.acts and rollout is not None:
                kept = f"The rollout it trained on is in {self.write_batch(step, rollout)}"
            elif self.acts:
                kept = "Replay makes its batch again from the checkpoint before it"
            else:
                kept = f"The batch it trained on is in {self.write_batch(step)}"
            command = f"python {sys.argv[0]} replay --step {step} --output-dir {self.path}"
            newest = self.manager.latest_checkpoint or "none yet"
            return (
                f"{what} at {where}: stopped without saving (newest checkpoint: {newest})."
                f"{detail}\n{kept}; replay the {self.unit[:-1]}, eagerly with every op checked:\n"
                f"  {command}\n{advice}"
            )
        if self.setup is not None and not self.acts:
            newest = self.manager.latest_checkpoint or "none yet"
            return (
                f"{what} at {where}: stopped without saving (newest checkpoint: {newest})."
                f"{detail} {advice}"
            )
        return f"{what} at {where}: stopped without saving.{detail} {advice}"

    def nonfinite(self, error):
        """--check-numerics: what to say of the error of an op that made a NaN or Inf; None for
        another error."""
        found = nonfinite_op(error, self.script)
        if found is None:
            return None
        return self.diverged(self.call, "A NaN or Inf", f"\nThe first: {found}")

    # --- Saving, and the run's end ------------------------------------------------------

    def save(self, step):
        """Saves a checkpoint. One the disk cannot hold whole is removed again: the newest
        checkpoint on disk always restores."""
        self.stop_if_diverged()
        try:
            self.manager.save(checkpoint_number=step)
        except BaseException:
            self.remove_partial_checkpoints(self.manager.directory)
            raise
        self.saved = step

    def remove_partial_checkpoints(self, directory):
        """Removes what a save cut short left behind (a full disk, a kill): its _temp directory,
        the files of a checkpoint that the `checkpoint` file does not list, and that file's
        checkpoint.tmp<hex> copy (TensorFlow writes it there, then renames it)."""
        state = tf.train.get_checkpoint_state(directory)
        listed = [os.path.basename(p) for p in state.all_model_checkpoint_paths] if state else []
        for path in glob.glob(os.path.join(directory, "ckpt-*")):
            if re.match(r"ckpt-\d+", os.path.basename(path)).group(0) not in listed:
                shutil.rmtree(path) if os.path.isdir(path) else os.remove(path)
        for path in glob.glob(os.path.join(directory, "checkpoint.tmp*")):
            os.remove(path)
            print(f"Removed {path}: the state file of a save that was cut short")

    def finish(self, step):
        """Saves where training stopped, if no checkpoint is there yet (mid-epoch after
        --max-steps or a SIGTERM, or off the cadence), so that the next run continues from
        there; after a SIGTERM, exits."""
        if self.setup is not None and self.saved != step:
            self.save(step)
        if getattr(self.args, "overfit_batches", None) and self.overfit_losses:
            first, last = self.overfit_losses[0], self.overfit_losses[-1]
            verdict = (
                "it falls towards 0: the model and loss can learn"
                if last < first / 10
                else "it does not fall towards 0: a model and loss that cannot memorize "
                f"{self.args.overfit_batches} batches have a bug (or need more steps)"
            )
            print(
                f"--overfit-batches: the training loss went from {first:.4g} to {last:.4g}: "
                f"{verdict}"
            )
        if self.comet is not None and self.chief:
            self.experiment.end()  # sends the rest (offline: writes the zip)
        if self.preempted:
            print(f"Stopped by SIGTERM at step {step}; saved {self.manager.latest_checkpoint}.")
            raise SystemExit(128 + signal.SIGTERM)  # the status of a SIGTERM death

    def end(self, error=None):
        """Writes the run's end record: finished, sigterm, nan, or error (with its traceback).
        A run killed outright leaves a start record without an end."""
        if self.run is None:  # never started: refused, or stopped before training
            return self.undo() if isinstance(error, SystemExit) else None
        record = {"event": "end", "run": self.run, "time": now(), "step": int(self.step.numpy())}
        if error is None:
            record["exit"] = "finished"
        elif (
            self.preemptible
            and isinstance(error, SystemExit)
            and error.code == 128 + signal.SIGTERM
        ):
            record["exit"] = "sigterm"
        elif int(self.nonfinite_step.numpy()) >= 0:
            record.update(exit="nan", nan_step=int(self.nonfinite_step.numpy()))
        elif nonfinite_op(error, self.script):  # --check-numerics
            nan_step = self.step_of_update(self.call) if self.acts else self.call
            record.update(exit="nan", nan_step=nan_step, op=nonfinite_op(error, self.script))
        else:
            record.update(exit="error", error=f"{type(error).__name__}: {error}")
            record["traceback"] = "".join(traceback.format_exception(error))
        try:
            self.append("runs.jsonl", record)
        except OSError as failure:  # the disk that ended the run may refuse this too
            path = os.path.join(self.path, "runs.jsonl")
            print(f"Cannot write the end record to {path}: {failure.strerror}", file=sys.stderr)
        if self.tracker is not None:
            self.end_tracking(record["exit"])
        return None

    def forget_logged_after(self, step):
        """Drops the logged records of the steps after `step`, where training goes on: a run
        killed after its last checkpoint logged steps that this run logs again (TensorBoard,
        too, purges the events past a restart). A file is rewritten whole: aside, then renamed
        over it."""
        if not self.chief:
            return
        # Each record starts with its step: {"step": 7, ... in metrics.jsonl, 7,... in metrics.csv.
        logged = [("metrics.jsonl", r'\{"step": (\d+),')] * self.jsonl
        logged += [("metrics.csv", r"(\d+),")] * (self.csv_columns is not None)
        for name, pattern in logged:
            path = os.path.join(self.path, name)
            if not os.path.exists(path):
                continue
            with open(path, newline="") as f:
                lines = f.readlines()
            header = 1 if name == "metrics.csv" else 0  # the CSV's column names stay
            # A line whose step cannot be read is a record cut short: it goes too.
            kept = lines[:header] + [
                line
                for line in lines[header:]
                if (found := re.match(pattern, line)) and int(found[1]) <= step
            ]
            if len(kept) == len(lines):
                continue
            with writing(path + ".tmp"), open(path + ".tmp", "w", newline="") as f:
                f.writelines(kept)
            os.replace(path + ".tmp", path)
            dropped = len(lines) - len(kept)
            print(f"Dropped from {path} its {dropped} records after step {step}: logged again")

    def undo(self):
        """A run refused before it started (a --profile range, another setup's checkpoints, ...)
        leaves the directory as it was: the setup.json it wrote and the directory it made go
        again, and run.lock says what it said. What cannot be undone stays."""
        with contextlib.suppress(OSError):
            self.remove_what_it_made()

    def remove_what_it_made(self):
        if getattr(self, "wrote_setup", False):
            os.remove(os.path.join(self.checkpoints, "setup.json"))
            with contextlib.suppress(OSError):  # only if it is empty now
                os.rmdir(self.checkpoints)
        lock_text = getattr(self, "lock_text", False)
        if lock_text is None:
            os.remove(self.lock_file.name)
        elif lock_text:
            with open(self.lock_file.name, "w") as f:
                f.write(lock_text)
        if getattr(self, "made", False):
            with contextlib.suppress(OSError):  # only if it is empty now
                os.rmdir(self.path)

    def append(self, name, record):
        """Appends a JSON line, whole or not at all (a full disk would leave part of it), on a
        line of its own: a line an earlier run left cut short stays apart, and readers skip it
        (jq -R 'fromjson?')."""
        # Strict JSON has no NaN or Infinity (jq and JavaScript refuse them): such a value is
        # null, and "nonfinite" says which it was (a NaN is not less than inf either).
        nonfinite = {
            k: json.dumps(v)
            for k, v in record.items()
            if isinstance(v, float) and not abs(v) < float("inf")
        }
        if nonfinite:
            record = {**record, **dict.fromkeys(nonfinite), "nonfinite": nonfinite}
        line = (json.dumps(record) + "\n").encode()
        # Unbuffered: a buffered file's truncate() flushes first, and fails again on a full disk.
        with open(os.path.join(self.path, name), "ab+", buffering=0) as f:
            end = f.seek(0, os.SEEK_END)
            if end:  # a line cut short (a kill mid-write) must not swallow this record
                f.seek(end - 1)
                line = line if f.read(1) == b"\n" else b"\n" + line
            try:
                while line:  # a full disk may take part of it, then refuse the rest
                    line = line[f.write(line) :]
            except OSError as error:
                f.truncate(end)
                error.filename = f.name  # os-level write errors name no file
                raise

    def fault(self, error):
        """What to say when the machine failed the run: a full disk, a directory it may not
        write, a path that is not what it should be. None for other errors (their traceback,
        on stderr, says more)."""
        if isinstance(error, OSError) and error.errno in MACHINE_FAULTS:
            # A write that names no file (see writing()): at least the directory it was in.
            path, code = error.filename or f"into {self.path}", error.errno
        else:  # TensorFlow's file errors say "<path>; <the system's words> [Op:...]"
            words = {os.strerror(code): code for code in MACHINE_FAULTS}
            found = isinstance(error, tf.errors.OpError) and re.search(
                r"([^\s;{}]+); (" + "|".join(words) + ")", error.message
            )
            if not found:
                return None
            # The file being written, not TensorFlow's temporary name for it.
            path = re.sub(r"(_temp|\.tempstate\d+|\.tmp[0-9a-f]*)(/.*)?$", "", found.group(1))
            code = words[found.group(2)]
        what, fix = MACHINE_FAULTS[code]
        stopped = f"Stopped: cannot write {path} ({os.strerror(code)}). {what}"
        # Room to make (the same directory will do then), or another place to write.
        room = code in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)
        state = (
            self.setup is not None
            and os.path.isdir(self.checkpoints)
            and tf.train.get_checkpoint_state(self.checkpoints)
        )
        if state:
            newest = state.model_checkpoint_path
            step = newest.rsplit("-", 1)[1]
            intact = f"The newest checkpoint, {newest} (step {step}), is intact"
            if room:
                return (
                    f"{stopped}: {fix}.\n{intact}: once there is room, run the script again "
                    "with the same --output-dir to resume."
                )
            return (
                f"{stopped}.\n{intact}: to resume from it, run the script again with the same "
                f"--output-dir once it can be written, or copy {self.path} to a place that can "
                "and pass that as --output-dir."
            )
        if self.run and room:
            return (
                f"{stopped}: {fix}.\nNo checkpoint was saved yet: once there is room, run the "
                "script again."
            )
        return f"{stopped}: {fix}."


def run_and_record(args, train, run_directory):
    """Trains, and records in runs.jsonl how the run ended: finished, stopped by SIGTERM or a
    NaN loss, or an error. When the machine failed it (a full disk, ...), says so in a few
    lines: the traceback is in runs.jsonl. `run_directory`: the script's RunDirectory."""
    run = run_directory(args)
    try:
        train(args, run)
    except BaseException as error:  # SystemExit and KeyboardInterrupt too
        run.end(error)
        if isinstance(error, DownloadFailed):
            run.unlock()  # nothing of the run was written: the directory is as it was
        message = run.fault(error) or run.nonfinite(error)
        if message is None:
            raise
        raise SystemExit(message) from None
    run.end()


@contextlib.contextmanager
def writing(path):
    """Names `path` in the error of a write to it: the system's write errors (a full disk, a
    file size limit) name no file, and fault() would not know what could not be written."""
    try:
        yield
    except OSError as error:
        error.filename = error.filename or path
        raise


def now():
    """Local time with its UTC offset, to the second: 2026-11-23T14:05:09+0100."""
    return time.strftime("%Y-%m-%dT%H:%M:%S%z")


def checksums(path, field="script"):
    """The checksum the header of `path` records (loopgen's render) and that of the text now,
    computed as loopgen does (the field zeroed): they differ once the file is edited by hand."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    found = re.search(field + r" sha256 ([0-9a-f]{16})", text)
    if found:
        text = text[: found.start(1)] + "0" * 16 + text[found.end(1) :]
    return found and found.group(1), hashlib.sha256(text.encode()).hexdigest()[:16]


@contextlib.contextmanager
def written_whole(directory):
    """A directory written whole or not at all: the files go into <directory>.partial, which
    replaces `directory` once all are written (a full disk leaves no half export behind). The
    two are exchanged in one step where the system can (a server polling `directory` never
    finds it missing), else in two renames, the old one aside to <directory>.old and the new
    one into place (a kill between them leaves <directory>.old: settle_whole() puts it back).
    Then the old one is removed."""
    partial, old = directory + ".partial", directory + ".old"
    settle_whole(directory)
    try:
        with writing(partial):
            os.makedirs(partial)  # a .keras file alone (no SavedModel) needs it made
            yield partial
    except BaseException:
        shutil.rmtree(partial, ignore_errors=True)
        raise
    if os.path.exists(directory):
        if exchange(partial, directory):
            shutil.rmtree(partial, ignore_errors=True)  # the old one, now
            return
        os.rename(directory, old)
    os.rename(partial, directory)
    shutil.rmtree(old, ignore_errors=True)  # settle_whole() removes what is left


def exchange(a, b):
    """Swaps paths `a` and `b` in one step (Linux's renameat2 with RENAME_EXCHANGE); False
    where the system or its file system cannot, an OSError where it fails otherwise."""
    renameat2 = getattr(ctypes.CDLL(None, use_errno=True), "renameat2", None)
    if renameat2 is None:
        return False
    at_cwd, rename_exchange = -100, 2  # paths relative to the working directory
    if renameat2(at_cwd, os.fsencode(a), at_cwd, os.fsencode(b), rename_exchange) == 0:
        return True
    error = ctypes.get_errno()
    if error in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP):
        return False
    raise OSError(error, os.strerror(error), a, None, b)


def settle_whole(directory):
    """Undoes what a kill in written_whole() left: a <directory>.partial (never finished, or
    the old one exchanged out of place), and a <directory>.old, which is put back if the kill
    came before the new one was in place."""
    partial, old = directory + ".partial", directory + ".old"
    if os.path.exists(old) and not os.path.exists(directory):
        os.rename(old, directory)
        print(f"Put back {directory}: a replacement of it was cut short")
    for leftover in (partial, old):
        if os.path.exists(leftover):
            shutil.rmtree(leftover)
            print(f"Removed {leftover}: left by an interrupted export")


def checkpoint_paths(directory, repair=True):
    """The checkpoints in `directory`, oldest first, as its `checkpoint` file (TensorFlow's
    CheckpointState) lists them. A damaged one would make the run start over and overwrite
    them: then they are found from the ckpt-<step>.index files, and it is rewritten."""
    state_file = os.path.join(directory, "checkpoint")
    try:  # TensorFlow only warns of text it cannot parse, and returns None
        state = tf.train.get_checkpoint_state(directory)
    except (UnicodeDecodeError, ValueError):  # binary garbage; an emptied file
        state = None
    if state:
        return list(state.all_model_checkpoint_paths)
    missing = not os.path.exists(state_file)
    found = os.listdir(directory) if os.path.isdir(directory) else []
    steps = sorted(int(name[5:-6]) for name in found if re.fullmatch(r"ckpt-\d+\.index", name))
    if missing and not steps:
        return []  # no checkpoint yet
    # (A state file gone but its checkpoints there, deleted or never synced: the manager would
    # take them for a save cut short and remove them all.)
    names = [f"ckpt-{step}" for step in steps]
    if repair and names:
        # The CheckpointManager keeps (and later deletes) only the checkpoints saved after
        # last_preserved_timestamp: their save times, from the files.
        saved = [os.path.getmtime(os.path.join(directory, f"{name}.index")) for name in names]
        lines = [f'model_checkpoint_path: "{names[-1]}"']
        lines += [f'all_model_checkpoint_paths: "{name}"' for name in names]
        lines += [f"all_model_checkpoint_timestamps: {when!r}" for when in saved]
        lines.append(f"last_preserved_timestamp: {min(saved) - 1!r}")
        # Written aside, then renamed: never a half-written state file.
        with open(state_file + ".tmp", "w") as f:
            f.write("\n".join(lines) + "\n")
        os.replace(state_file + ".tmp", state_file)
    elif repair:
        os.remove(state_file)  # it lists nothing: no checkpoint was saved whole
    if repair:
        listed = ", ".join(names) or "none"
        what = "missing" if missing else "damaged"
        print(f"{state_file} was {what}: rebuilt from the checkpoint files ({listed})")
    return [os.path.join(directory, name) for name in names]


def checkpoint_damage(error):
    """What the error of a checkpoint that does not restore says of its files."""
    # std::bad_alloc: a garbled index file gave a size of terabytes to read.
    if isinstance(error, MemoryError):
        return "its index file is damaged (reading it asked for more memory than there is)"
    return f"its files are damaged or are no checkpoint's ({type(error).__name__}: {error})"


def restore_whole(checkpoint, path):
    """Restores every object of `checkpoint` from `path` (what else the file holds is left),
    but the running means, which a checkpoint written before they were saved lacks: they
    start at zero then."""
    restored = checkpoint.restore(path).expect_partial()
    saved = {name.split("/")[0] for name, _ in tf.train.list_variables(path)}
    if hasattr(checkpoint, "train_values") and "train_values" not in saved:
        return print(f"{path} holds no running means (an older script's): they start at 0")
    restored.assert_existing_objects_matched()
    return None


def file_record(path):
    """A file's size and modification time (UTC); a directory's count of files, their total
    size, the newest time and a digest of every file's time; "absent" when it is gone."""
    if os.path.isdir(path):
        stats = directory_files(path)
        newest = max((stat.st_mtime for stat in stats.values()), default=0)
        size = sum(stat.st_size for stat in stats.values())
        # Every file's time, not only the newest: a file rewritten at a time older than the
        # newest (copied back with its time kept, or before another's) is a change too.
        times = sorted((name, stat.st_mtime_ns) for name, stat in stats.items())
        times = hashlib.sha256(repr(times).encode()).hexdigest()[:12]
        return f"{len(stats)} files, {size} bytes, newest modified {utc(newest)}, times {times}"
    if not os.path.exists(path):
        return "absent"
    stat = os.stat(path)
    return f"{stat.st_size} bytes, modified {utc(stat.st_mtime)}"


def directory_files(path):
    """Each file below a directory, by its path relative to it: its os.stat."""
    return {
        os.path.relpath(os.path.join(folder, name), path): os.stat(os.path.join(folder, name))
        for folder, _, names in os.walk(path)
        for name in names
    }


def utc(seconds):
    """A file time, to the second: 2026-11-23T13:05:09Z."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(seconds))


def with_digests(data, limit=2**30):
    """The data record with the sha256 of each file's contents, if they hold at most `limit`
    bytes in all (a gigabyte takes a second or two to read, once for a new run): a resume
    then tells files copied again (new times, the same contents) from other data."""
    size = 0
    for path in data["files"]:
        if os.path.isdir(path):
            size += sum(stat.st_size for stat in directory_files(path).values())
        elif os.path.exists(path):
            size += os.path.getsize(path)
    if size > limit:
        return data
    return {**data, "digests": {path: file_digest(path) for path in data["files"]}}


def file_digest(path):
    """sha256 of a file's contents; of a directory's files' names and contents."""
    names = [""]
    if os.path.isdir(path):
        names = sorted(directory_files(path))
    digest = hashlib.sha256()
    for name in names:
        digest.update(name.encode() + b"\0")
        with open(os.path.join(path, name) if name else path, "rb") as f:
            while chunk := f.read(1 << 20):
                digest.update(chunk)
    return digest.hexdigest()


def weights_fingerprint(*networks):
    """sha256 of the name, shape and dtype of every weight: a hand edit of the network in the
    script changes it, where the spec sections in SETUP cannot see one."""
    weights = [[w.name, list(w.shape), str(w.dtype)] for net in networks for w in net.weights]
    return hashlib.sha256(json.dumps(weights).encode()).hexdigest()[:16]


def load_weights(source, **networks):
    """--init-from: the networks' weights from the newest checkpoint in `source` (another run's
    output directory), not its optimizer, step or data position. Returns its path."""
    path = tf.train.latest_checkpoint(os.path.join(source, "checkpoints"))
    path = path or tf.train.latest_checkpoint(source)  # the checkpoints folder itself
    if path is None:
        raise SystemExit(
            f"--init-from {source}: no checkpoint in {os.path.join(source, 'checkpoints')}. "
            "Give the --output-dir of a run that saved one."
        )
    try:
        status = tf.train.Checkpoint(**networks).restore(path)
        status.assert_existing_objects_matched().expect_partial()
    except Exception as error:  # another network: ValueError, AssertionError, ...
        raise SystemExit(
            f"--init-from {source}: cannot load {path} into this network "
            f"({type(error).__name__}: {error}). Both runs need the same network."
        ) from None
    print(f"Starting from the weights of {path}")
    return path


def is_chief(cluster_resolver):
    """Whether this worker is the chief: the `chief` task when TF_CONFIG has one, else worker 0
    (or the only process, when there is no TF_CONFIG)."""
    task_type, task_id = cluster_resolver.task_type, cluster_resolver.task_id
    if task_type is None or task_type == "chief":
        return True
    has_chief = "chief" in cluster_resolver.cluster_spec().as_dict()
    return task_type == "worker" and task_id == 0 and not has_chief


# --- Downloads --------------------------------------------------------------------------


class DownloadFailed(SystemExit):
    """A download the run needs failed: one message, and main() leaves the output directory
    as it found it (nothing of the run was written yet)."""


@contextlib.contextmanager
def downloading(what, instead):
    """Where the script downloads (keras.datasets, TFDS, keras.applications' weights): a
    failed download (offline, say) stops the run with one message naming `what` failed and
    the local alternative, `instead`. Other errors pass through as they are."""
    try:
        yield
    except ModuleNotFoundError as error:
        # TFDS prepares a dataset with importlib_resources, which it does not install (3.9+).
        missing = f"the module {error.name} (pip install {error.name})"
        raise DownloadFailed(f"Cannot download {what}: it needs {missing}. {instead}") from None
    except Exception as error:
        if not download_failure(error):
            raise
        text = str(error).strip()
        reason = text.splitlines()[0][:300] if text else type(error).__name__
        raise DownloadFailed(f"Cannot download {what}: {reason}. {instead}") from None


def download_failure(error):
    """Whether `error`, or one it was raised from, is a failed download: a URL that could not
    be fetched (urllib's URLError, behind keras.utils.get_file's "URL fetch failure"), a host
    name that did not resolve, a connection refused or timed out (requests' and TFDS's own
    errors too)."""
    failures = (
        "URLError", "HTTPError", "ConnectionError", "ConnectTimeout", "ReadTimeout",
        "DownloadError",
    )  # fmt: skip
    while error is not None:
        if isinstance(error, ConnectionError | TimeoutError | socket.gaierror):
            return True
        if type(error).__name__ in failures:
            return True
        error = error.__cause__ or error.__context__
    return False


TFDS_GCS_HOST = "storage.googleapis.com"  # TFDS's prepared copies (gs://tfds-data), tried first


def tfds_reachable(builder, timeout=10.0):
    """Before tfds.load prepares `builder`'s dataset: returns if it is prepared in its data_dir
    (tfds.load only reads it then), or if a host it downloads from resolves; raises
    ConnectionError (downloading() says it) if none does. Offline, TFDS's downloader retries
    each file 10 times over 3 minutes, urllib3 warning at each retry, and its download threads
    go on warning after the failure; a DNS lookup fails at once. The hosts: its files' (the
    dataset's checksums list their URLs) and TFDS's copies on GCS. With a proxy for https the
    proxy resolves them, and a dataset without checksums names none: TFDS downloads as it does."""
    if builder.data_path.exists():  # as download_and_prepare tells it reuses the dataset
        return
    urls = builder.url_infos or {}
    hosts = sorted({urllib.parse.urlsplit(url).hostname for url in urls} - {None})
    if not hosts:
        return
    hosts.append(TFDS_GCS_HOST)
    proxies = urllib.request.getproxies()
    if "https" in proxies or "all" in proxies:
        if not all(urllib.request.proxy_bypass(host) for host in hosts):
            return
    failures = lookup_failures(hosts, timeout)
    if len(failures) < len(hosts):
        return
    reasons = "; ".join(sorted({str(error) for error in failures.values()}))
    raise ConnectionError(
        f"it is not prepared in {builder.data_dir}, and no host TFDS downloads it from "
        f"resolves, as offline ({', '.join(hosts)}: {reasons})"
    )


def lookup_failures(hosts, timeout):
    """The hosts whose names did not resolve within `timeout` seconds, looked up together,
    each with why (socket.gaierror, or TimeoutError when the resolver did not answer)."""
    outcomes = {}

    def lookup(host):
        try:
            socket.getaddrinfo(host, 443, type=socket.SOCK_STREAM)
        except OSError as error:
            outcomes[host] = error
        else:
            outcomes[host] = None

    threads = [threading.Thread(target=lookup, args=(host,), daemon=True) for host in hosts]
    for thread in threads:
        thread.start()
    deadline = time.monotonic() + timeout
    for thread in threads:  # a lookup still going on is left to its daemon thread
        thread.join(max(0.0, deadline - time.monotonic()))
    late = TimeoutError(f"no answer from the name resolver within {timeout:g} s")
    failures = {host: outcomes.get(host, late) for host in hosts}
    return {host: error for host, error in failures.items() if error is not None}


def preset_download(preset):
    """What downloading() says of a KerasHub preset: what, and the alternative."""
    return (
        f"the KerasHub preset {preset!r}",
        "Offline? Give a local preset directory instead: the folder that save_to_preset writes "
        "(model.preset='path/to/preset'); or run once online: KerasHub keeps what it downloads "
        "in its cache.",
    )


def imagenet_weights(application, node):
    """What downloading() says of a Backbone's imagenet weights: what, and the alternative."""
    return (
        f"{application}'s imagenet weights (keras.applications)",
        f"Offline? Set weights=None on the Backbone of node {node!r} (random initial weights), "
        f"or weights='PATH', a local weights file of {application} without its top; or run "
        "once online: Keras keeps its download in ~/.keras/models.",
    )


# --- Data -----------------------------------------------------------------------------


def read_records(path, file_format, fields, field):
    """The fields of a file of records, each an array of strings held in memory: `fields` maps
    what the script calls a field to its name in the records. JSON Lines (an object a line),
    CSV (a header row), Parquet, or a Hugging Face `datasets` folder (save_to_disk's Arrow
    files, in its state.json's order)."""
    if not os.path.exists(path):
        raise SystemExit(f"{field}.path: no file or folder {path!r}")
    names = list(fields.values())
    if file_format == "jsonl":
        rows = []
        with open(path, "rb") as file:  # decoded a line at a time: a bad byte names its line
            for number, raw in enumerate(file, start=1):
                try:
                    line = raw.decode("utf-8")
                except UnicodeDecodeError as error:
                    raise SystemExit(
                        f"{path}:{number}: not UTF-8 text (byte {raw[error.start : error.end]!r} "
                        f"at column {error.start + 1}): save the file as UTF-8"
                    ) from None
                if not line.strip():
                    continue
                try:
                    rows.append(json.loads(line))
                except ValueError as error:
                    raise SystemExit(f"{path}:{number}: not a JSON object ({error})") from None
        found = set().union(*(row.keys() for row in rows)) if rows else set()
        columns = {name: [row.get(name) for row in rows] for name in names if name in found}
    elif file_format == "csv":
        try:
            with open(path, encoding="utf-8", newline="") as file:
                rows = list(csv.DictReader(file))
        except UnicodeDecodeError as error:
            raise SystemExit(
                f"{path}: not UTF-8 text (byte {error.object[error.start : error.end]!r} at "
                f"offset {error.start}): save the file as UTF-8"
            ) from None
        found = set(rows[0]) if rows else set()
        columns = {name: [row[name] for row in rows] for name in names if name in found}
    else:
        import pyarrow  # the `lm` extra: Parquet and datasets folders are Arrow tables

        if file_format == "parquet":
            import pyarrow.parquet

            table = pyarrow.parquet.read_table(path)
        else:
            state = os.path.join(path, "state.json")
            if not os.path.isfile(state):
                raise SystemExit(
                    f"{field}.path: {path} is no datasets folder (no state.json): save one with "
                    "Dataset.save_to_disk, or set format"
                )
            with open(state, encoding="utf-8") as file:
                files = [entry["filename"] for entry in json.load(file)["_data_files"]]
            tables = []
            for name in files:
                with pyarrow.memory_map(os.path.join(path, name)) as stream:
                    tables.append(pyarrow.ipc.open_stream(stream).read_all())
            table = pyarrow.concat_tables(tables)
        found = set(table.column_names)
        columns = {name: table.column(name).to_pylist() for name in names if name in found}
    for ours, name in fields.items():
        if name not in columns:
            raise SystemExit(
                f"{field}.{ours}: {path} has no field {name!r} (its fields: "
                f"{', '.join(sorted(found)) or 'none'}); set {field}.{ours} to the one that "
                f"holds the {ours}"
            )
    count = len(columns[names[0]])
    if count == 0:
        raise SystemExit(f"{field}.path: {path} holds no record")
    for ours, name in fields.items():
        blank = [i for i, value in enumerate(columns[name]) if value is None]
        if blank:
            raise SystemExit(
                f"{field}.{ours}: record {blank[0] + 1} of {path} has no {name!r} ({len(blank)} "
                "record(s) lack it)"
            )
    return {
        ours: np.array([str(value) for value in columns[name]]) for ours, name in fields.items()
    }


# --- Reward functions (GRPO) -----------------------------------------------------------------


def reward_scores(function, prompts, completions):
    """A reward function's scores of `completions` (float32, one each), called as TRL calls
    them, function(prompts=[...], completions=[...]); its error, an answer of another shape
    or a NaN stops the run with one line naming training.reward_funcs and the function."""
    name = f"{function.__module__}.{function.__name__}"
    try:
        scores = np.asarray(function(prompts=prompts, completions=completions), dtype=np.float32)
    except Exception as error:
        # Your function's error, as one line: where it was raised, and its last line.
        frame = error.__traceback__
        while frame.tb_next is not None:
            frame = frame.tb_next
        where = f"{frame.tb_frame.f_code.co_filename}:{frame.tb_lineno}"
        raise SystemExit(
            f"training.reward_funcs: {name} raised {type(error).__name__}: {error} (at "
            f"{where}, scoring {len(completions)} completions): fix the function"
        ) from None
    if scores.shape != (len(completions),):
        raise SystemExit(
            f"training.reward_funcs: {name} returned an array of shape {scores.shape} for "
            f"{len(completions)} completions: return one number per completion"
        )
    if not np.all(np.isfinite(scores)):
        raise SystemExit(f"training.reward_funcs: {name} returned NaN or Inf: {scores}")
    return scores


# --- predict ----------------------------------------------------------------------------

# The image formats a script's predict reads, by their files' first bytes.
IMAGE_SIGNATURES = (b"\x89PNG", b"\xff\xd8\xff", b"BM", b"GIF8")


def input_files(paths):
    """predict: the files named, and the files in the directories named (sorted by path; not
    hidden files, such as .DS_Store)."""
    files = []
    for path in paths:
        if os.path.isdir(path):
            found = [
                os.path.join(root, name)
                for root, _, names in os.walk(path)
                for name in names
                if not name.startswith(".")
            ]
            files += sorted(found)
        elif os.path.isfile(path):
            files.append(path)
        else:
            raise SystemExit(f"predict: {path}: no such file or directory")
    if not files:
        raise SystemExit(f"predict: no files in {', '.join(paths)}")
    return files


def read_image_files(paths):
    """predict: (paths, the files' bytes), in the order named. Every file is checked to be an
    image before any is predicted."""
    files = input_files(paths)
    for path in files:
        with open(path, "rb") as f:
            if not f.read(4).startswith(IMAGE_SIGNATURES):
                raise SystemExit(f"predict: {path} is not a PNG, JPEG, BMP or GIF image")
    return files, tf.stack([tf.io.read_file(path) for path in files])


def read_decoded_images(paths, signature):
    """predict: (paths, images), in the order named: each image file decoded as `signature`
    (the model to serve's input: TFDS's images, of its dtype and channels, of any size or of
    its own) takes it, a batch of one each (images of their own sizes are served one at a
    time). Every file is decoded and checked before any is predicted."""
    files, images = input_files(paths), []
    for path in files:
        with open(path, "rb") as f:
            content = f.read()
        if not content.startswith(IMAGE_SIGNATURES):
            raise SystemExit(f"predict: {path} is not a PNG, JPEG, BMP or GIF image")
        image = decoded_image(path, content, signature.shape[3], signature.shape[1:3])
        images.append(tf.cast(image, signature.dtype)[None])
    return files, images


def decoded_image(path, content, channels, size):
    """predict: the image file `path` (its bytes, `content`) decoded to uint8 pixels of
    `channels`, checked to be of `size` (height, width: None for any)."""
    try:
        image = tf.io.decode_image(content, channels=channels, expand_animations=False)
    except tf.errors.InvalidArgumentError as error:  # damaged, or a GIF for grayscale
        raise SystemExit(f"predict: {path}: {error.message.split(' [Op')[0]}") from None
    height, width = size
    if None not in (height, width) and tuple(image.shape[:2]) != (height, width):
        raise SystemExit(
            f"predict: {path} is {image.shape[1]}x{image.shape[0]} pixels; the model takes "
            f"{width}x{height} images and does not resize them: resize it first"
        )
    return image


def read_array_inputs(paths, like, key="x", images=False):
    """predict: (names, examples), of the training examples' (`like`) shape and dtype, in the
    order named (a file of several examples names them <path>[<i>]): .npy arrays of them (or
    of one), .npz files' array `key`, and image files if `images`. Every file is read and
    checked before any is predicted."""
    names, arrays = [], []
    for path in input_files(paths):
        array = read_array_file(path, like, key, images)
        if len(array) == 1:
            names.append(path)
        else:
            names += [f"{path}[{i}]" for i in range(len(array))]
        arrays.append(array)
    return names, np.concatenate(arrays)


def read_array_file(path, like, key, images):
    """predict: the examples in one file (read_array_inputs)."""
    shape = like.shape[1:]
    if images:
        with open(path, "rb") as f:
            content = f.read()
        if content.startswith(IMAGE_SIGNATURES):
            pixels = len(shape) == 2 or (len(shape) == 3 and shape[2] in (1, 3, 4))
            if like.dtype != np.uint8 or not pixels:
                raise SystemExit(
                    f"predict: {path} is an image; the model takes {like.dtype} examples of "
                    f"shape {shape}, not an image's uint8 pixels: save the examples as the "
                    "training data holds them, in an .npy or .npz file"
                )
            image = decoded_image(path, content, shape[2] if len(shape) == 3 else 1, shape[:2])
            return np.reshape(image.numpy(), (1, *shape)).astype(like.dtype)
    try:
        array = np.load(path)
    except (OSError, ValueError):  # not NumPy's format (nor pickles, which it refuses)
        nor = ", nor an image" if images else ""
        raise SystemExit(f"predict: {path} is not an .npy or .npz file{nor}") from None
    if isinstance(array, np.lib.npyio.NpzFile):
        if key not in array.files:
            raise SystemExit(f"predict: {path} has no array {key!r} (its arrays: {array.files})")
        array = array[key]
    if array.shape == shape:
        array = array[None]  # one example
    kind_ok = np.can_cast(array.dtype, like.dtype, "same_kind")  # no floats for uint8
    if array.shape[1:] != shape or not kind_ok:
        raise SystemExit(
            f"predict: {path} holds {array.dtype} examples of shape {array.shape[1:]}; the "
            f"model takes {like.dtype} examples of shape {shape}"
        )
    return array.astype(like.dtype)


def read_csv_inputs(paths, dtypes, delimiter):
    """predict: (names, columns), from CSV files with a header: the columns the model reads
    (`dtypes`: their dtypes by name), parsed as in training (<path>:<line> names a row). Every
    file is read and checked before any is predicted."""
    wanted = list(dtypes)
    names, parts = [], []
    for path in input_files(paths):
        try:
            # Lines end at "\n" alone (a "\r" before it is dropped), as in training.
            with open(path, encoding="utf-8", newline="") as f:
                header, *rows = [line.removesuffix("\r") for line in f.read().split("\n")]
        except UnicodeDecodeError:
            raise SystemExit(f"predict: {path} is not UTF-8 text") from None
        header = header.split(delimiter)
        missing = [column for column in wanted if column not in header]
        if missing:
            raise SystemExit(
                f"predict: {path}: no column {missing[0]!r}, which the model reads; its "
                f"columns are {header}"
            )
        lines = [(number, row) for number, row in enumerate(rows, start=2) if row]
        # decode_csv takes the selected columns in the file's order.
        order = sorted(wanted, key=header.index)
        try:
            values = tf.io.decode_csv(
                [row for _, row in lines],
                record_defaults=[tf.constant([], dtypes[column]) for column in order],
                field_delim=delimiter,
                select_cols=[header.index(column) for column in order],
            )
        except tf.errors.InvalidArgumentError as error:
            # "Field 1 in record 0 is not a valid float: x", "Field 1 is required but missing
            # in record 0!", "Expect 4 fields but have 2 in record 0"
            problem = str(error).split(" [Op")[0].split("}} ")[-1]
            record = re.search(r"record (\d+)", problem)
            field = re.search(r"Field (\d+)", problem)
            where = f"{path}:{lines[int(record[1])][0]}" if record else path
            column = f" column {order[int(field[1])]!r}:" if field else ""
            raise SystemExit(f"predict: {where}:{column} {problem}") from None
        names += [f"{path}:{number}" for number, _ in lines]
        parts.append(dict(zip(order, values, strict=True)))
    return names, {name: tf.concat([part[name] for part in parts], 0) for name in wanted}


def read_tfrecord_inputs(paths, features, compression=None):
    """predict: (names, features), from TFRecord files of tf.train.Example records: the
    `features` the model reads (their parsing specs by name), as the records hold them
    (<path>[<i>] names a record). Every file is read and checked before any is predicted."""
    names, parts = [], []
    for path in input_files(paths):
        try:
            dataset = tf.data.TFRecordDataset(path, compression_type=compression)
            records = [record.numpy() for record in dataset]
            if records:  # an empty file has none to predict
                parts.append(tf.io.parse_example(records, features))
        except (tf.errors.DataLossError, tf.errors.InvalidArgumentError) as error:
            raise SystemExit(
                f"predict: {path} is not a TFRecord file of records with the features "
                f"{list(features)}: {error.message.split(' [Op')[0]}"
            ) from None
        names += [f"{path}[{i}]" for i in range(len(records))]
    if not parts:  # empty files alone
        return [], {}
    return names, {name: tf.concat([part[name] for part in parts], 0) for name in features}


def read_text_inputs(paths, delimiter, column=0):
    """predict: (names, texts), from files of lines as the training file's: a line's text is
    its column `column` (split by `delimiter`; the first: a label after it is left out);
    <path>:<line> names it, and empty lines are skipped. Every file is read and checked before
    any is predicted."""
    names, texts = [], []
    for path in input_files(paths):
        try:
            with open(path, encoding="utf-8") as f:
                lines = f.read().split("\n")  # as training reads its lines
        except UnicodeDecodeError:
            raise SystemExit(f"predict: {path} is not UTF-8 text") from None
        for number, line in enumerate(lines, start=1):
            columns = line.split(delimiter)
            if columns == [""]:
                continue
            if len(columns) <= column:
                raise SystemExit(
                    f"predict: {path}:{number}: {len(columns)} column(s), but the text is in "
                    f"column {column}"
                )
            names.append(f"{path}:{number}")
            texts.append(columns[column])
    return names, tf.constant(texts, tf.string)


def write_predictions(serve, args, read, batch_size):
    """predict: the served model's outputs for each input, a JSON line each in input order
    ("input": its name, then the outputs), written whole to --predictions, `batch_size` inputs
    a call. `read()`: the script's inputs, (names, inputs), read once --predictions is known
    to be a file that can be written."""
    destination = args.predictions or os.path.join(args.output_dir, "predictions.jsonl")
    if os.path.isdir(destination) or not os.path.isdir(os.path.dirname(destination) or "."):
        raise SystemExit(f"--predictions {destination}: not a file in an existing directory")
    all_names, all_inputs = read()
    if isinstance(all_inputs, list):  # inputs of their own shapes: a batch of one each
        batches = [(all_names[i : i + 1], inputs) for i, inputs in enumerate(all_inputs)]
    else:
        batches = [
            (all_names[start : start + batch_size],
             tf.nest.map_structure(lambda values: values[start : start + batch_size], all_inputs))  # noqa: B023
            for start in range(0, len(all_names), batch_size)
        ]  # fmt: skip
    lines = []
    for names, inputs in batches:
        try:
            outputs = {name: output.numpy() for name, output in serve(inputs).items()}
        except tf.errors.InvalidArgumentError:
            # An input the model to serve cannot read (a damaged image): named, one by one.
            for i, name in enumerate(names):
                try:
                    serve(tf.nest.map_structure(lambda values: values[i : i + 1], inputs))  # noqa: B023
                except tf.errors.InvalidArgumentError as error:
                    problem = error.message.split("[[")[0].strip()
                    raise SystemExit(f"predict: {name}: {problem}") from None
            raise
        for i, name in enumerate(names):
            record = {"input": name}
            for key, values in outputs.items():
                value = values[i]
                # bytes: a class name; NumPy numbers and arrays: JSON numbers and lists (of
                # bytes too, class names in arrays: decoded by json.dumps's default).
                record[key] = value.decode() if isinstance(value, bytes) else value.tolist()
            lines.append(json.dumps(record, default=bytes.decode) + "\n")
    # Another predict may write the same file: each writes its own partial file.
    partial = f"{destination}.{os.getpid()}.partial"
    try:
        with open(partial, "w") as f:
            f.writelines(lines)
        os.replace(partial, destination)
    except BaseException:  # a full disk: no half file left behind
        if os.path.exists(partial):
            os.remove(partial)
        raise
    print(f"{len(lines)} predictions written to {destination}")


# --- Debugging --------------------------------------------------------------------------


def execution_modes(args):
    """How TensorFlow runs this process's ops, set before anything is traced: --deterministic
    and the debugging flags. Returns whether the steps may compile with XLA, which cannot run
    the numerics checks of --check-numerics and --dump-debug-info."""
    if args.deterministic:
        tf.config.experimental.enable_op_determinism()
    # The modules that only debugging needs are imported where it does.
    if args.eager:
        import warnings

        tf.config.run_functions_eagerly(True)
        # tf.data's functions stay compiled, which TensorFlow warns of at each: as meant.
        warnings.filterwarnings("ignore", "Even though the `tf.config.experimental_run_functions")
        print("--eager: the steps run as plain Python, slowly (print, breakpoint() and pdb work)")
    if args.check_numerics:
        tf.debugging.enable_check_numerics()
        print("--check-numerics: the first NaN or Inf stops the run; the steps run without XLA")
    if args.dump_debug_info:
        import atexit

        directory = os.path.join(args.output_dir, "logs", "debugger")
        tf.debugging.experimental.enable_dump_debug_info(
            directory, tensor_debug_mode="FULL_HEALTH", circular_buffer_size=-1
        )
        # Written out as the process ends, however it ends.
        atexit.register(tf.debugging.experimental.disable_dump_debug_info)
        print(
            f"--dump-debug-info: every op's outputs into {directory} (tensorboard --logdir "
            f"{directory}, then the Debugger V2 tab); the steps run without XLA"
        )
    return not (args.check_numerics or args.dump_debug_info)


def traced_call(function):
    """`function`, a tf.function of tensors, called through its one trace with its inputs flat:
    tf.function's matching of the arguments to its traces (and a concrete function's to its
    signature) costs more than a step this small, which is called thousands of times (a DQN
    train step on CartPole: 0.17 ms of CPU this way, 0.35 through the tf.function). It is traced
    at the first call, for the shapes and dtypes of that call's tensors, and returns the trace's
    outputs flat. While functions run eagerly (--eager, and replay's step, which turns it on
    for its step alone) a call is `function`'s own, run as Python."""
    traced = []

    def call(*args):
        if tf.config.functions_run_eagerly():
            return function(*args)
        if not traced:
            concrete = function.get_concrete_function(*args)
            traced.extend((concrete.inference_fn.call_flat, concrete.captured_inputs))
        call_flat, captured = traced
        return call_flat(*tf.nest.flatten(args), *captured)

    return call


def nonfinite_op(error, script):
    """--check-numerics: which op made the first NaN or Inf, and where `script` (or your
    module) created it, from TensorFlow's error; None for another error."""
    found = isinstance(error, tf.errors.InvalidArgumentError) and re.search(
        r'Infinity or NaN in output (\d+) of (graph|eagerly-executing) op "([^"]+)"',
        error.message,
    )
    if not found:
        return None
    import linecache

    # A graph op's creation is in TensorFlow's message, with "->" marking user code.
    if found[2] == "graph":
        # (A path may hold spaces: "My Projects/train.py".)
        frames = re.findall(r"\+ (.+?) \(L(\d+)\) (\S+)\n -> \|", error.message)
        # It shortens long paths from the left: the loaded file whose path ends so.
        modules = list(sys.modules.values())
        files = [script] + [getattr(module, "__file__", None) or "" for module in modules]
        frames = [
            (next((f for f in files if f.endswith(path.lstrip("."))), path), int(line), function)
            for path, line, function in frames
        ]
    else:  # an eager op's frames are the traceback's
        frames = [
            (frame.filename, frame.lineno, frame.name)
            for frame in traceback.extract_tb(error.__traceback__)
        ]
    # Not the libraries' frames: the script's, and those of your modules.
    frames = [
        frame
        for frame in frames
        if "-packages" not in frame[0]
        and not frame[0].startswith(sys.base_prefix)
        and (frame[0] != __file__ or frame[0] == script)  # a --single-file script holds this
    ]
    where = frames[-1:] + [frame for frame in frames if frame[0] == script][-1:]
    lines = [
        f"  {os.path.basename(p)}:{n}, in {f}: {linecache.getline(p, n).strip()}"
        for p, n, f in dict.fromkeys(where)
    ]
    return f'output {found[1]} of op "{found[3]}", created at\n' + "\n".join(lines)


@contextlib.contextmanager
def dev_stage(stage):
    """--fast-dev-run: one stage, announced, then OK and its time (or FAILED, and the error)."""
    print(f"--fast-dev-run: {stage} ...")
    started = time.perf_counter()
    try:
        yield
    except BaseException:
        print(f"--fast-dev-run: {stage}: FAILED")
        raise
    print(f"--fast-dev-run: {stage}: OK ({time.perf_counter() - started:.1f} s)")


def fast_dev_stages(args, stages, train, run_directory, serve=None, after_stage=None):
    """--fast-dev-run N: every stage of a run, on N steps, in a temporary directory removed
    after (--output-dir is not touched): a crash that a long run would meet only at its end
    (in a validation, a checkpoint, the export) shows in seconds. `stages`: (changes of the
    flags, what it does), each run as a run of its own; a stage's "inputs" (predict's) is a
    function of the directory, called once the stages before it ran. `after_stage()` after
    each; `serve(export)` last, on the export directory."""
    scratch = tempfile.mkdtemp(prefix="fast-dev-run-")
    if after_stage is not None:  # and before the first: the script's loads before this call
        after_stage()
    try:
        for changes, stage in stages:
            # The scratch directory is this process's alone: no lock to take again each stage.
            staged = argparse.Namespace(
                **{**vars(args), "output_dir": scratch, "no_lock": True, **changes}
            )
            if "inputs" in changes:
                staged.inputs = changes["inputs"](scratch)
            with dev_stage(stage):
                run = run_directory(staged)
                try:
                    train(staged, run)
                except BaseException as error:
                    run.end(error)
                    raise
                run.end()
            # The later stages build the same networks: one summary of them is enough.
            keras.Model.summary = lambda *args, **kwargs: None
            if after_stage is not None:
                after_stage()
        if serve is not None:
            with dev_stage("serve the export"):
                serve(os.path.join(scratch, "export"))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    print(f"--fast-dev-run: every stage ran (in {scratch}, removed)")


@contextlib.contextmanager
def gradients_applied(*optimizers):
    """replay: the gradients each optimizer is handed, by id of their variable. The step runs
    eagerly: its apply_gradients calls are plain Python calls, which this watches."""
    seen = {}

    def watching(apply):
        def apply_gradients(grads_and_vars, *args, **kwargs):
            grads_and_vars = list(grads_and_vars)
            seen.update({id(v): g for g, v in grads_and_vars if g is not None})
            return apply(grads_and_vars, *args, **kwargs)

        return apply_gradients

    for optimizer in optimizers:
        optimizer.apply_gradients = watching(optimizer.apply_gradients)
    try:
        yield seen
    finally:
        for optimizer in optimizers:
            del optimizer.apply_gradients


# The activations whose outputs saturate, and their bounds (logging.inspect).
SATURATED = {"sigmoid": (0.0, 1.0), "tanh": (-1.0, 1.0)}


def make_inspected_step(
    train_step,
    networks,
    optimizers,
    inputs=None,
    gradients=True,
    weights=True,
    xla=False,
    unpack=True,
):
    """logging.inspect: a train step that also returns what it computed, layer by layer: the
    train step traced once more, with its optimizers watched as it is traced (each gradient
    they are handed is kept); with `inputs(networks, batch)` (each network's input, by name),
    each layer's output on the batch in inference mode (no dropout drawn, no statistics
    updated: the step trains as it would uninspected). `unpack`: the step takes the batch's
    parts as its arguments (a GAN's takes the batch). Returns a function of the data iterator:
    one step, and (statistics, histograms) by name."""
    # Each network's layers' outputs in one call: a model of the same layers.
    probes = {
        name: keras.Model(net.inputs, [layer.output for layer in net.layers])
        for name, net in networks.items()
    } if inputs is not None else {}  # fmt: skip

    @tf.function(jit_compile=True if xla else None)
    def watched_step(*batch):
        statistics, histograms = {}, {}
        given = inputs(networks, batch) if inputs is not None else {}
        for name, probe in probes.items():
            outputs = probe(given[name], training=False)
            for layer, output in zip(networks[name].layers, outputs, strict=True):
                key, output = f"{name}/{layer.name}", tf.cast(output, tf.float32)
                statistics[f"{key}/activation_mean"] = tf.reduce_mean(output)
                statistics[f"{key}/activation_std"] = tf.math.reduce_std(output)
                zero = tf.cast(output == 0, tf.float32)
                statistics[f"{key}/zero_fraction"] = tf.reduce_mean(zero)
                activation = getattr(getattr(layer, "activation", None), "__name__", "")
                bounds = SATURATED.get(activation)
                if bounds:  # within 0.01 of a sigmoid's or tanh's bounds
                    saturated = (output < bounds[0] + 0.01) | (output > bounds[1] - 0.01)
                    saturated = tf.reduce_mean(tf.cast(saturated, tf.float32))
                    statistics[f"{key}/saturated_fraction"] = saturated
                histograms[f"{key}/activations"] = output
        trained = {
            f"{name}/{layer.name}": layer.trainable_weights
            for name, net in networks.items()
            for layer in net.layers
            if layer.trainable_weights
        }
        before = {key: [tf.identity(w) for w in values] for key, values in trained.items()}
        with gradients_applied(*optimizers) as applied:
            train_step.python_function(*batch)
        for key, values in trained.items():
            if gradients:
                grads = [applied[id(w)] for w in values if id(w) in applied]
                if grads:  # those of its weights that the step updates
                    statistics[f"{key}/gradient_norm"] = tf.linalg.global_norm(grads)
                    flat = [tf.reshape(g, [-1]) for g in grads]
                    histograms[f"{key}/gradients"] = tf.concat(flat, 0)
            if weights:
                statistics[f"{key}/weight_norm"] = tf.linalg.global_norm(values)
                moved = [w - b for w, b in zip(values, before[key], strict=True)]
                update = tf.linalg.global_norm(moved)
                statistics[f"{key}/update_ratio"] = update / tf.linalg.global_norm(before[key])
                flat = [tf.reshape(w, [-1]) for w in values]
                histograms[f"{key}/weights"] = tf.concat(flat, 0)
        return statistics, histograms

    @tf.function
    def inspected_step(iterator):
        batch = next(iterator)
        return watched_step(*batch) if unpack else watched_step(batch)

    return inspected_step


def replay(args, train, run_directory):
    """replay --step N: trains step N (an update, in a script that acts) again, exactly as
    the run trained it, and shows what it computed. The run's newest checkpoint before step N
    (before the first, the initial weights, which SEED fixes) is resumed in a scratch
    directory; the steps after it run as the run ran them (the batches, noise, actions and
    order are functions of the step), up to step N - 1; then step N runs eagerly, every op
    checked (replayed). The run's own directory is only read."""
    run = run_directory(args)
    run.lock()  # shared: no run may train there meanwhile
    last, flags = run.replayable()
    if args.step > last:
        raise SystemExit(
            f"replay --step {args.step}: {args.output_dir} can replay {run.unit} 1 to {last}"
        )
    # A script that acts: the environment step at which update N is done (the checkpoints
    # count environment steps).
    end = run.step_of_update(args.step) if run.acts else args.step
    path = run.checkpoint_before(end)
    # The run's own weights; its --init-from gives the start only before its first checkpoint.
    if path:
        flags["init_from"] = None
    scratch = tempfile.mkdtemp(prefix="replay-", dir=args.output_dir)
    try:
        if path:  # linked, not copied: a checkpoint may be large
            run.link_checkpoint(path, os.path.join(scratch, "checkpoints"))
        start = (
            f"{os.path.basename(path)} (step {path.rsplit('-', 1)[1]})"
            if path
            else "the initial weights"
        )
        print(f"Replaying {run.unit[:-1]} {args.step} of {args.output_dir} from {start}")
        # The run's own flags (its length decides the schedules), on one device.
        changes = {"command": "train", "output_dir": scratch, "max_steps": end}
        replaying = argparse.Namespace(
            **{**vars(args), **flags, **changes, "replay_of": args.output_dir}
        )
        train(replaying, run_directory(replaying))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


@contextlib.contextmanager
def replayed(
    step, networks, optimizers, train_values, logged=True, again=None, *, results, script,
    unit="steps",
):  # fmt: skip
    """replay: the train_loop call of step `step` alone (run.bound ends the calls around it),
    run eagerly with every op checked. Then prints what it computed: its loss (and the epoch's
    running values, as the run logs them, `logged` at this step), each layer's weight norm
    after it, gradient norm and update, and where a NaN or Inf first appeared; and the replay
    ends there. A check stops the step at its first NaN or Inf, before its loss is counted:
    `again` then runs it once more, unchecked, from the state before it: its loss."""
    acts = unit == "updates"
    tf.config.run_functions_eagerly(True)
    tf.debugging.enable_check_numerics()
    # Whole tracebacks: the innermost Keras layer in one names the layer that made a NaN.
    keras.config.disable_traceback_filtering()
    tf.debugging.disable_traceback_filtering()
    sums_before = running_sums(train_values)
    weights_before = {id(w): w.numpy() for net in networks.values() for w in net.trainable_weights}
    # What the step changes (weights, dropout's seeds, slots, means): `again` starts there.
    state = [v for net in networks.values() for v in net.variables]
    state += [v for optimizer in optimizers for v in optimizer.variables]
    state += [v for value in train_values for v in value.variables]
    state_before = [v.numpy() for v in state] if again else []
    failure = None
    # TensorFlow also logs a failing op's report, with its inputs' values, below Python on
    # stderr: kept off the console (the summary below names the op, its layer and line).
    with gradients_applied(*optimizers) as gradients, native_stderr_silenced():
        try:
            yield
        except tf.errors.InvalidArgumentError as error:
            failure = error
    # What follows is the replay's own arithmetic, not the step's: unchecked, and in float64
    # NumPy (the squares of the weights of a diverged run overflow float32).
    tf.debugging.disable_check_numerics()
    sums_after = running_sums(train_values)
    if failure is not None and again:
        checked = [v.numpy() for v in state]  # what the checked step left, shown below
        for variable, value in zip(state, state_before, strict=True):
            variable.assign(value)
        # Whatever it raises, the replay reports what the checked step found.
        with contextlib.suppress(Exception), native_stderr_silenced():
            again()
        sums_after = running_sums(train_values)
        for variable, value in zip(state, checked, strict=True):
            variable.assign(value)
    print(f"\n{unit[:-1].capitalize()} {step}, eagerly, every op checked:")
    values = step_values(sums_before, sums_after)
    for name, value in values.items():
        print(f"  {name}: {value:.9g}")
    if failure is not None and (acts or not values):
        print(f"  (its loss not counted: the {unit[:-1]} stopped at its first NaN or Inf, below)")
    elif failure is not None:
        print("  (run again unchecked: checked, the step stopped at its first NaN or Inf, below)")
    elif logged:
        logs = "the means since the last log" if acts else "the epoch's running values"
        shown = "  ".join(f"{k}: {v:.9g}" for k, v in results(train_values).items())
        print(f"  as logged ({logs}): {shown}")
    else:
        shown = "  ".join(f"{k}: {v:.9g}" for k, v in results(train_values).items())
        print(f"  the epoch's running values (this {unit[:-1]} was not logged): {shown}")
    print(f"  {'layer':<32} {'weight norm':>12} {'gradient norm':>14} {'update / weight':>16}")
    shown = set()  # a layer two models share (tied embeddings): one row
    for name, net in networks.items():
        for layer in layers_of(net):
            # The network's trainable weights in the layer, also where the layer itself is
            # frozen and parts of it train (LoRA's adapters in a backbone it froze).
            weights = [w for w in layer.weights if id(w) in weights_before]
            if not weights or id(layer) in shown:
                continue
            shown.add(id(layer))
            before = [weights_before[id(w)] for w in weights]
            after = [w.numpy() for w in weights]
            grads = [gradients[id(w)] for w in weights if id(w) in gradients]
            gradient = f"{global_norm64(grads):14.6g}" if grads else f"{'-':>14}"
            size = global_norm64(before)
            # ||after - before|| / ||before||, as logging.inspect's update_ratio.
            if failure is None and size > 0:
                ratio = f"{global_norm64(after, minus=before) / size:16.3g}"
            else:
                ratio = f"{'-':>16}"
            print(
                f"  {name + '/' + layer.name:<32} {global_norm64(after):12.6g} {gradient} {ratio}"
            )
    if failure is None:
        print("Every op's outputs were finite.")
        raise SystemExit(0)  # the steps after it are another replay's
    layer = innermost_layer(failure)
    where = f"layer {layer.name} ({type(layer).__name__}): " if layer is not None else ""
    print(f"The first NaN or Inf: {where}{nonfinite_op(failure, script)}")
    raise SystemExit(1)


def global_norm64(arrays, minus=None):
    """replay: the global norm of tensors (dense or sparse) or arrays (less `minus`'s), in
    float64: no overflow for weights up to 1e150, inf or nan where they are, never an error."""
    with np.errstate(all="ignore"):
        arrays = [np.asarray(tf.convert_to_tensor(a), np.float64) for a in arrays]
        if minus is not None:
            arrays = [a - b for a, b in zip(arrays, minus, strict=True)]
        return float(np.sqrt(sum(np.sum(np.square(a)) for a in arrays)))


def running_sums(train_values):
    """replay: each running mean's total and count, to tell one step's value from the mean."""
    return {
        value.name: [float(v.numpy()) for v in value.variables]
        for value in train_values
        if isinstance(value, keras.metrics.Mean)
    }


def was_logged(directory, step):
    """replay: whether the run in `directory` logged its training values at `step`
    (metrics.jsonl; True where it keeps none)."""
    path = os.path.join(directory, "metrics.jsonl")
    if not os.path.exists(path):
        return True
    with open(path) as f:
        for line in f:
            with contextlib.suppress(ValueError):  # a line a kill cut short
                record = json.loads(line)
                # Training's values (a validation's or an inspection's have no speed).
                if record.get("step") == step and "steps_per_second" in record:
                    return True
    return False


def step_values(before, after):
    """replay: each mean's value over the steps between two running_sums()."""
    return {
        name: (after[name][0] - before[name][0]) / (after[name][1] - before[name][1])
        for name in after
        if after[name][1] > before[name][1]
    }


@contextlib.contextmanager
def native_stderr_silenced():
    """Writes to the process's stderr (file descriptor 2, where TensorFlow's C++ logs go)
    dropped while it runs."""
    saved = os.dup(2)
    with open(os.devnull, "w") as devnull:
        os.dup2(devnull.fileno(), 2)
    try:
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def layers_of(network):
    """The layers of a network, those of the models nested in it too, in order."""
    for layer in network.layers:
        yield from layers_of(layer) if isinstance(layer, keras.Model) else [layer]


def innermost_layer(error):
    """The innermost Keras layer being called when an eager op raised `error` (None when no
    layer was: the loss, or the gradients)."""
    layer, trace = None, error.__traceback__
    while trace is not None:
        candidate = trace.tb_frame.f_locals.get("self")
        if isinstance(candidate, keras.layers.Layer) and not isinstance(candidate, keras.Model):
            layer = candidate
        trace = trace.tb_next
    return layer
