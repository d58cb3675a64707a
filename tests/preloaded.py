"""Runs the tests' Python programs (generated scripts, tf_checks.py, probes given as `-c` code) in
processes forked from this one, which has imported TensorFlow, Keras and NumPy and run no
TensorFlow op (Grappler's graph rewrites switched off, below).

Each program is a process of its own that runs as `python ARGV` would, with its own TensorFlow
runtime, devices and random state, and ends as Python ends (threads joined, atexit handlers run,
output flushed; only its objects are not torn down one by one), but starts in 0.15 s instead of the
2.5 s an import of TensorFlow takes: several hundred programs a suite. What only a process started
by hand shows (flags answered before TensorFlow is imported, SIGKILL, locks, one two-worker job) the
tests check on `python train.py` itself.

`preloaded.py cli` imports loopgen's command instead (and no TensorFlow) for `-m loopgen ...`:
a command that starts in 0.02 s instead of 0.3 s, about a thousand of them a suite. What only a
new interpreter shows (the modules a command imports, pydantic's plugins) the tests check on a
`python -m loopgen` of their own.

Protocol, one JSON object a line: a request on stdin {"argv", "cwd", "stdout", "stderr"} (the
last two are files the program's output goes to; an optional "env" replaces os.environ);
replies on stdout {"pid"}, then {"returncode"}."""

from __future__ import annotations

import atexit
import gc
import importlib
import json
import os
import runpy
import sys
import threading
import traceback

if sys.argv[1:] == ["cli"]:
    # What a render, validate or check imports, up to black (which only formats a piece of
    # script that is not in loopgen's cache yet).
    for module in ("loopgen.cli", "loopgen.dsl.loader", "loopgen.render", "loopgen.output",
                   "loopgen.output.check", "black"):  # fmt: skip
        importlib.import_module(module)
else:
    import autograph_cache
    import keras  # noqa: F401
    import numpy  # noqa: F401
    import tensorflow

    try:  # KerasHub (and tensorflow-text), which the KerasHub examples' scripts import
        import keras_hub  # noqa: F401
    except ImportError:  # installed without the lm extra
        pass

    if os.environ.get("LOOPGEN_TESTS_AUTOGRAPH_CACHE"):
        autograph_cache.install(os.environ["LOOPGEN_TESTS_AUTOGRAPH_CACHE"])
    # Grappler's rewrites of each function graph take a sixth of a small program's time (its
    # first step mostly). The programs started as users start them (`python train.py`: the
    # demo, mnist_mlp's and cartpole_ppo's runs, the SIGKILLed ones, the supervised two-worker
    # test's first job, bench, sweeps) keep them, and end with the same weights as the forked
    # runs they are compared with (test_faults' SIGKILL of `python train.py`: max_diff 0).
    tensorflow.config.optimizer.set_experimental_options({"disable_meta_optimizer": True})
gc.freeze()  # what was imported stays shared with the programs, not copied by the collector


def run(argv: list[str]) -> int:
    """Runs `argv` as `python ARGV` would, in this (forked) process; returns its exit status."""
    try:
        if argv[0] == "-c":
            sys.argv = ["-c", *argv[2:]]
            exec(compile(argv[1], "<string>", "exec"), {"__name__": "__main__"})
        elif argv[0] == "-m":
            sys.argv = ["-m", *argv[2:]]
            sys.path[0] = os.getcwd()  # as `python -m` sets it
            runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
        else:
            sys.argv = list(argv)
            sys.path[0] = os.path.dirname(os.path.abspath(argv[0]))  # as `python FILE` sets it
            runpy.run_path(argv[0], run_name="__main__")
    except SystemExit as stop:
        code = stop.code
        if code is None or isinstance(code, int):
            return code or 0
        print(code, file=sys.stderr)
        return 1
    except BaseException:
        traceback.print_exc()
        return 1
    return 0


def serve() -> None:
    replies = sys.stdout
    for line in sys.stdin:
        request = json.loads(line)
        replies.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            try:
                os.setpgid(0, 0)  # a timed-out program is killed with all it started
                os.chdir(request["cwd"])
                if "env" in request:
                    os.environ.clear()
                    os.environ.update(request["env"])
                for fd, path, flags in (
                    (0, os.devnull, os.O_RDONLY),
                    (1, request["stdout"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC),
                    (2, request["stderr"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC),
                ):
                    os.dup2(os.open(path, flags, 0o644), fd)
                sys.stdin = open(0, closefd=False)
                sys.stdout = open(1, "w", closefd=False)
                sys.stderr = open(2, "w", closefd=False)
            except BaseException:
                os._exit(70)
            code = run(request["argv"])
            # Ends as Python ends a program (its threads joined, its atexit handlers run, its
            # output flushed), less the interpreter's teardown of every object one by one: a
            # tenth of a small run's time (0.2 s), six times a tf_check's own. The programs
            # started as users start them (`python train.py`) show the whole teardown.
            threading._shutdown()
            atexit._run_exitfuncs()
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)
        replies.write(json.dumps({"pid": pid}) + "\n")
        replies.flush()
        _, status = os.waitpid(pid, 0)
        replies.write(json.dumps({"returncode": os.waitstatus_to_exitcode(status)}) + "\n")
        replies.flush()


if __name__ == "__main__":
    serve()
