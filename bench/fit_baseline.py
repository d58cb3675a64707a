"""The model.fit baseline, run in its own process like the generated script it is compared with.

It imports the rendered script for its `build_model`, `load_examples` and `training_batches`
(the same model and input pipeline), compiles the spec's loss, optimizer and metrics, trains
with `model.fit`, and writes each epoch's wall time as JSON.

    python bench/fit_baseline.py SCRIPT SETTINGS_JSON OUT_JSON --mode matched|defaults --epochs N
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys
import time


def load_script(path: str):
    """Imports a rendered script (its main() does not run), its folder on the path as `python
    train.py` has it: the runtime beside it."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(path)))
    spec = importlib.util.spec_from_file_location("bench_script", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("script")
    parser.add_argument("settings")
    parser.add_argument("out")
    parser.add_argument("--mode", choices=["matched", "defaults"], required=True)
    parser.add_argument("--epochs", type=int, required=True)
    args = parser.parse_args()
    settings = json.loads(open(args.settings).read())

    import keras

    module = load_script(args.script)
    keras.utils.set_random_seed(module.SEED)
    compile_args = {}
    if args.mode == "matched":
        if settings["precision"] != "float32":
            keras.mixed_precision.set_global_policy(settings["precision"])
        # The loop ends a call at the epoch's end: fit's executions cannot span epochs either.
        compile_args = {
            "steps_per_execution": min(settings["steps_per_loop"], settings["steps_per_epoch"]),
            "jit_compile": settings["xla"],
        }
    namespace = {"keras": keras}
    if settings["schedule"]:
        namespace["learning_rate"] = eval(settings["schedule"], namespace)
    model = module.build_model()
    model.compile(
        optimizer=eval(settings["optimizer"], namespace),
        loss=eval(settings["loss"], namespace),
        metrics=[eval(m, namespace) for m in settings["metrics"]],
        **compile_args,
    )
    examples = module.load_examples()
    if hasattr(module, "validation_batches"):
        examples = examples[0]
    dataset = module.training_batches(examples)

    class EpochTimer(keras.callbacks.Callback):
        def on_epoch_begin(self, epoch, logs=None):
            self.start = time.perf_counter()

        def on_epoch_end(self, epoch, logs=None):
            seconds.append(time.perf_counter() - self.start)

    seconds: list[float] = []
    model.fit(
        dataset,
        epochs=args.epochs,
        steps_per_epoch=settings["steps_per_epoch"],
        callbacks=[EpochTimer()],
        verbose=2,
    )
    with open(args.out, "w") as f:
        json.dump({"epoch_seconds": seconds, "compile": compile_args}, f)


if __name__ == "__main__":
    main()
