"""Medians, ratios and the tables the benchmark prints and writes into the README."""

from __future__ import annotations

import statistics

START, END = "<!-- bench:start -->", "<!-- bench:end -->"


def median(values: list[float]) -> float:
    return statistics.median(values)


def ratios(throughput: dict[str, dict]) -> dict[str, float]:
    """Loop ÷ fit samples/s: at matched settings, at each tool's defaults, and with the loop
    at fit's defaults (one step per call, no XLA)."""
    speed = {run: t["samples_per_second"] for run, t in throughput.items()}
    return {
        "matched": speed["loop_defaults"] / speed["fit_matched"],
        "defaults": speed["loop_defaults"] / speed["fit_defaults"],
        "plain": speed["loop_plain"] / speed["fit_defaults"],
    }


def table(examples: dict[str, dict]) -> str:
    """The results as a Markdown table: samples/s per run, ratios, render time."""
    header = (
        "| example | K | XLA | loop | fit matched | **ratio** | fit defaults | **ratio** "
        "| loop K=1 | ratio | render |"
    )
    lines = [header, "|" + "---|" * 11]
    warning = " (imported TensorFlow!)"
    for name, result in examples.items():
        speed = {run: t["samples_per_second"] for run, t in result["runs"].items()}
        ratio = result["ratios"]
        render = result["render"]
        lines.append(
            f"| {name} | {result['steps_per_loop']} | {'on' if result['xla'] else 'off'} "
            f"| {speed['loop_defaults']:,.0f} | {speed['fit_matched']:,.0f} "
            f"| **{ratio['matched']:.2f}** | {speed['fit_defaults']:,.0f} "
            f"| **{ratio['defaults']:.2f}** | {speed['loop_plain']:,.0f} | {ratio['plain']:.2f} "
            f"| {render['seconds']:.2f} s{warning if render['imports_tensorflow'] else ''} |"
        )
    return "\n".join(lines)


def readme_table(results: dict) -> str:
    machine = results["machine"]
    return (
        f"Measured {results['date']} by `python -m bench` on {machine['cpus']} CPUs "
        f"(Python {machine['python']}): samples/s, median of {results['epochs'] - 1} epochs "
        f"after a warm-up epoch, in each of {results['rounds']} interleaved rounds; K = steps "
        "per call.\n\n" + table(results["examples"])
    )


def replace_table(text: str, new: str) -> str:
    """`text` with what lies between the bench markers replaced by `new`."""
    if START not in text or END not in text:
        raise SystemExit(f"README.md has no {START} ... {END} section to update")
    head, rest = text.split(START, 1)
    _, tail = rest.split(END, 1)
    return f"{head}{START}\n{new}\n{END}{tail}"
