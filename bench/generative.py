"""The generative part of the bench: the generated flow-matching loop (examples/shapes_flow.py)
against keras.io's way of writing it, a `keras.Model` with `train_step` overridden and `fit`
(generative_peer.py), on the same network and the same images, in the same invocation,
alternating which runs first each round.

The loop is rendered with `loopgen render --set ...` (no validation, checkpoints, export or
TensorBoard: throughput alone) and run as a user runs it; its epoch times come from the
`steps_per_second` it logs to metrics.jsonl. The peer's come from a callback around each epoch
of `fit`, with compile's defaults and without XLA. Steps/s is the steps of an epoch over the
median of the epochs after the first (which traces); a round's ratio is the loop's steps/s over
the peer's in that round, and the figure is the median of the rounds' ratios. The machine's
one-minute load average is read before each round."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from .report import logged_epoch_seconds, median
from .report import run_checked as _run
from .workload import EXAMPLES

OVERRIDES = [
    "data.validation=null",
    "checkpoint=null",
    "export.saved_model=false",
    "logging.tensorboard=false",
    "logging.jsonl=true",
]
"""What the bench sets in examples/shapes_flow.py: throughput alone (metrics.jsonl stays: its
steps_per_second is the loop's timing). The example's EMA copy stays: the peer keeps one too."""


def generative_rows(
    python: str, epochs: int, rounds: int, folder: Path, env: dict, images: int = 2000
) -> dict:
    """The three runs each round, alternating which goes first, on `images` of the example's
    shapes (its 2,000 by default): their epoch times, steps/s, the rounds' ratios and the
    machine's load before each round."""
    folder = folder / "generative"
    folder.mkdir()
    script = folder / "train.py"
    overrides = [*OVERRIDES, f"data.train.count={images}"]
    sets = [word for value in overrides for word in ("--set", value)]
    _run([str(Path(python).with_name("loopgen")), "render", str(EXAMPLES / "shapes_flow.py"),
          *sets, "-o", str(script)], folder, env)  # fmt: skip
    count, batch = images, 64  # the example's batch
    steps = -(-count // batch)

    def loop(round_: int) -> list[float]:
        out = folder / f"loop-{time.monotonic_ns()}"
        _run([python, str(script), "--epochs", str(epochs), "--output-dir", str(out)], folder,
             env)  # fmt: skip
        lines = (out / "metrics.jsonl").read_text().splitlines()
        return logged_epoch_seconds([json.loads(line) for line in lines])

    def peer(round_: int, jit: bool) -> list[float]:
        out = folder / f"peer-{time.monotonic_ns()}.json"
        _run([python, str(Path(__file__).with_name("generative_peer.py")), str(script), str(out),
              "--epochs", str(epochs), "--seed", str(round_), *([] if jit else ["--no-jit"])],
             folder, env)  # fmt: skip
        return json.loads(out.read_text())["epoch_seconds"]

    runs = {
        "loop": loop,
        "fit": lambda round_: peer(round_, True),
        "fit_no_jit": lambda round_: peer(round_, False),
    }
    seconds: dict[str, list[list[float]]] = {who: [] for who in runs}
    loads = []
    for round_ in range(rounds):
        loads.append(os.getloadavg()[0])
        for who in list(runs) if round_ % 2 == 0 else list(reversed(runs)):
            seconds[who].append(runs[who](round_))
        rates = {who: steps / median(s[-1][1:]) for who, s in seconds.items()}
        print(f"  generative round {round_ + 1} (load {loads[-1]:.1f}): "
              + ", ".join(f"{who} {rate:.1f} steps/s" for who, rate in rates.items()),
              flush=True)  # fmt: skip
    found = {
        who: {
            "steps_per_second": [steps / median(each[1:]) for each in rounds_],
            "epoch_seconds": rounds_,
        }
        for who, rounds_ in seconds.items()
    }
    loop_rates = found["loop"]["steps_per_second"]
    ratios = {
        peer: [lo / f for lo, f in zip(loop_rates, found[peer]["steps_per_second"], strict=True)]
        for peer in ("fit", "fit_no_jit")
    }
    return {
        "example": "shapes_flow",
        "images": count,
        "batch_size": batch,
        "steps_per_epoch": steps,
        "epochs": epochs,
        "rounds": rounds,
        "loads": loads,
        "runs": found,
        "ratios": ratios,
        "ratio": {peer: median(each) for peer, each in ratios.items()},
    }


def generative_table(found: dict) -> str:
    runs = found["runs"]

    def row(name: str, who: str) -> str:
        rates = runs[who]["steps_per_second"]
        return f"| {name} | {median(rates):.1f} ({', '.join(f'{r:.1f}' for r in rates)}) |"

    def ratio_row(name: str, peer: str) -> str:
        each = ", ".join(f"{r:.2f}" for r in found["ratios"][peer])
        return (
            f"| {name} (median of the rounds' ratios) | **{found['ratio'][peer]:.2f}** ({each}) |"
        )

    loads = ", ".join(f"{load:.1f}" for load in found["loads"])
    return "\n".join([
        f"Measured {found['date']} by `python -m bench --parts generative` on {found['cpus']} "
        f"CPUs: `shapes_flow` (its U-Net and EMA copy, {found['images']:,} images of 16x16, "
        f"batch {found['batch_size']}, {found['steps_per_epoch']} steps an epoch). Steps/s over "
        f"the median of {found['epochs'] - 1} epochs after a warm-up epoch, in each of "
        f"{found['rounds']} rounds (the three runs in the opposite order every other round); a "
        f"ratio is the median of the rounds' own ratios. The one-minute load average before "
        f"each round: {loads}.",
        "",
        "| | steps/s (median; each round) |",
        "|---|---|",
        row("loopgen flow-matching loop (`shapes_flow`, rendered)", "loop"),
        row("keras.io style: `train_step` overridden, `fit` (compile's defaults)", "fit"),
        row("the same, `compile(jit_compile=False)`", "fit_no_jit"),
        ratio_row("**loop ÷ fit**", "fit"),
        ratio_row("**loop ÷ fit without XLA**", "fit_no_jit"),
    ])  # fmt: skip
