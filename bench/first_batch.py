"""Times a generated script's training pipeline, in a process of its own:

    python bench/first_batch.py SCRIPT seek STEP       seconds from load_examples() to the
                                                       first batch of a run resumed at STEP
    python bench/first_batch.py SCRIPT stream BATCHES  examples/s of the pipeline alone over
                                                       BATCHES batches, after one warm-up batch

Prints one JSON object. The script is imported, not run: its data functions are what a resumed
run calls before its first step (the model and the checkpoint take the same time at any step).
"""

from __future__ import annotations

import json
import sys
import time

from fit_baseline import load_script  # bench/ is on the path: this file runs as a script


def main() -> None:
    path, mode, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
    module = load_script(path)
    if mode == "seek":
        start = time.perf_counter()
        examples = module.load_examples()
        next(iter(module.training_batches(examples, count)))
        print(json.dumps({"seconds": time.perf_counter() - start}))
        return
    batches = iter(module.training_batches(module.load_examples(), 0))
    next(batches)  # traces the pipeline's functions and fills the prefetch buffer
    examples, start = 0, time.perf_counter()
    for _ in range(count):
        features, _labels = next(batches)
        examples += int(features.shape[0])
    print(json.dumps({"examples_per_second": examples / (time.perf_counter() - start)}))


if __name__ == "__main__":
    main()
