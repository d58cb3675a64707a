"""Medians, ratios and the tables the benchmark prints and writes into the documentation."""

from __future__ import annotations

import statistics
import subprocess
from pathlib import Path


def median(values: list[float]) -> float:
    return statistics.median(values)


PAIRS = {
    "matched": ("loop_defaults", "fit_matched"),
    "defaults": ("loop_defaults", "fit_defaults"),
    "plain": ("loop_plain", "fit_defaults"),
}
"""Loop ÷ fit: at matched settings, at each tool's defaults, and with the loop at fit's
defaults (one step per call, no XLA)."""


def ratios(throughput: dict[str, dict]) -> dict[str, float]:
    """Each ratio of PAIRS as the median of the rounds' own ratios: the loop's epoch time over
    fit's in the same round (the median of its epochs after the first), so that what slows a
    whole round slows both and cancels."""

    def round_medians(run: str) -> list[float]:
        return [median(epochs[1:]) for epochs in throughput[run]["epoch_seconds"]]

    return {
        name: median(
            [f / lo for lo, f in zip(round_medians(loop), round_medians(fit), strict=True)]
        )
        for name, (loop, fit) in PAIRS.items()
    }


def logged_epoch_seconds(records: list[dict]) -> list[float]:
    """Each epoch's training time from a generated script's metrics.jsonl records: the steps
    since the previous log point over the steps_per_second logged, summed per epoch."""
    seconds: dict[int, float] = {}
    previous = 0
    for record in records:
        if "steps_per_second" in record:
            steps = record["step"] - previous
            seconds[record["epoch"]] = seconds.get(record["epoch"], 0.0) + (
                steps / record["steps_per_second"]
            )
            previous = record["step"]
    return [seconds[e] for e in sorted(seconds)]


def table(examples: dict[str, dict]) -> str:
    """The results as a Markdown table: samples/s per run, ratios, render time."""
    header = (
        "| example | K | XLA | loop | fit matched | **ratio** | fit defaults | **ratio** "
        "| loop K=1 | ratio |"
    )
    lines = [header, "|" + "---|" * 10]
    for name, result in examples.items():
        speed = {run: t["samples_per_second"] for run, t in result["runs"].items()}
        ratio = result["ratios"]
        lines.append(
            f"| {name} | {result['steps_per_loop']} | {'on' if result['xla'] else 'off'} "
            f"| {speed['loop_defaults']:,.0f} | {speed['fit_matched']:,.0f} "
            f"| **{ratio['matched']:.2f}** | {speed['fit_defaults']:,.0f} "
            f"| **{ratio['defaults']:.2f}** | {speed['loop_plain']:,.0f} | {ratio['plain']:.2f} |"
        )
    return "\n".join(lines)


def fit_table(results: dict) -> str:
    machine, fit = results["machine"], results["fit"]
    return (
        f"Measured {fit['date']} by `python -m bench` on {machine['cpus']} CPUs "
        f"(Python {machine['python']}): samples/s, median of {fit['epochs'] - 1} epochs "
        f"after a warm-up epoch in each of {fit['rounds']} rounds (the four runs in a new order "
        "each round); a ratio is the median of the rounds' own ratios; K = steps per "
        "call.\n\n" + table(fit["examples"])
    )


def render_table(render: dict) -> str:
    """`loopgen render` wall time per example, with a warning where it imported TensorFlow, and
    how much of it importing the stack alone takes (bench/__main__.py STACK)."""
    lines = [
        "| example | render (median) | slowest | stack alone | render − stack |",
        "|---|---|---|---|---|",
    ]
    for name, timing in render["examples"].items():
        warning = " (imported TensorFlow!)" if timing["imports_tensorflow"] else ""
        slowest = max(timing["runs"])
        lines.append(
            f"| {name} | {timing['seconds']:.2f} s{warning} | {slowest:.2f} s "
            f"| {timing['stack_seconds']:.2f} s | {timing['own_seconds']:.2f} s |"
        )
    return "\n".join(lines)


def replace_table(text: str, new: str, marker: str, page: object = "the page") -> str:
    """`text` with what lies between the `marker` start and end comments replaced by `new`."""
    start, end = f"<!-- {marker}:start -->", f"<!-- {marker}:end -->"
    if start not in text or end not in text:
        raise SystemExit(f"{page} has no {start} ... {end} section to update")
    head, rest = text.split(start, 1)
    _, tail = rest.split(end, 1)
    return f"{head}{start}\n{new}\n{end}{tail}"


def run_checked(command: list[str], cwd: Path, env: dict) -> subprocess.CompletedProcess[str]:
    """Runs `command`, its output captured; a failure stops the bench with its stderr's end."""
    proc = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed:\n{proc.stderr[-3000:]}")
    return proc
