"""What logging.inspect costs: the same workload trained with and without per-layer statistics
every 100 steps, in the same invocation, the order alternating by round; the ratio of their
epoch times (the inspected step traced, its statistics written to metrics.jsonl, all
included: the loop's timer runs from log point to log point)."""

from __future__ import annotations

from pathlib import Path

from .report import median
from .workload import render, workload

EVERY_STEPS = 100
"""logging.inspect.every_steps: the issue's setting, its goal under 5 % of the step time."""


def inspect_rows(
    examples: list[str], rounds: int, epochs: int, folder: Path, timed, steps: int | None = None
) -> dict:
    """For each example: the median epoch seconds of the plain and the inspected script, and
    the median of the rounds' ratios (inspected / plain). `timed(script, epochs, folder)`
    trains a script and returns its epochs' seconds (the first, which traces, is left out);
    `steps`: an epoch's (the workload's own by default)."""
    found = {}
    for name in examples:
        work = workload(name, folder, steps)
        scripts = {
            "plain": render(work, folder / f"{name}_plain_inspect.py"),
            "inspected": render(
                work,
                folder / f"{name}_inspected.py",
                [f'logging.inspect={{"every_steps": {EVERY_STEPS}}}'],
            ),
        }
        seconds: dict[str, list[float]] = {"plain": [], "inspected": []}
        for index in range(rounds):
            order = ["plain", "inspected"] if index % 2 == 0 else ["inspected", "plain"]
            for which in order:
                seconds[which].append(median(timed(scripts[which], epochs, folder)[1:]))
        found[name] = {
            "every_steps": EVERY_STEPS,
            "steps_per_epoch": work.steps_per_epoch,
            "epoch_seconds": seconds,
            "ratio": median(
                [i / p for i, p in zip(seconds["inspected"], seconds["plain"], strict=True)]
            ),
        }
    return found


def inspect_table(found: dict) -> str:
    """A Markdown table of inspect_rows' figures."""
    lines = [
        "| example | steps an epoch | plain epoch (s) | inspected every 100 (s) | cost |",
        "|---|---|---|---|---|",
    ]
    for name, row in found.items():
        plain, inspected = (median(row["epoch_seconds"][k]) for k in ("plain", "inspected"))
        lines.append(
            f"| {name} | {row['steps_per_epoch']} | {plain:.2f} | {inspected:.2f} | "
            f"{(row['ratio'] - 1) * 100:+.1f} % |"
        )
    return "\n".join(lines)
