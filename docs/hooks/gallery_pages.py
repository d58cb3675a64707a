"""The gallery, written at every build of the site from the repository: each example's spec
(`examples/<name>.py`) beside the script loopgen renders from it (`generated/<name>.py`, the
golden file the tests compare with a fresh render), what it shows (the spec's docstring) and
how long its tests train it here (`tests/durations.json`, the suite's measured test times)."""

from __future__ import annotations

import ast
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
"""The repository."""

VARIANTS = ("mirrored", "multi_worker", "tpu")

RL_TEST = "tests/test_rl.py::test_training_improves_the_return_and_the_export_serves_the_networks"
RUN_TEST = "tests/test_runs.py::test_example_trains_end_to_end"

FULL_RUNS = {
    "shapes_unet": "the whole run as rendered, 6 epochs of 2,000 images, took 73 s on this "
    "2-core CPU and reached a validation pixel accuracy of 0.998 and a mean IoU of 0.988 "
    "(`test_offline_demo_reaches_the_accuracy_the_readme_states` holds it to 0.99 and 0.95)",
    "cartpole_ppo": "the whole run as rendered, 500,000 environment steps, trains at 11,316 "
    "environment steps a second here (about 45 s) and its greedy policy scores 500, the most "
    "an episode can, in all 100 evaluation episodes (`python -m bench --parts rl`, "
    "[measured against Stable-Baselines3](../guides/rl/speed.md#against-stable-baselines3))",
    "corridor_ppo": "its greedy policy walks to every goal by a shortest way after about "
    "5,000 environment steps (a return of 0.98 over 32 episodes; a random policy's is about "
    "0.6)",
    "pendulum_ppo": "the return climbs from about -1,400 to -250 in 61,000 environment steps",
}
"""Runs at full size, measured on this machine (the README's figures before the site)."""


def examples() -> list[str]:
    return sorted(p.stem for p in (ROOT / "examples").glob("*.py"))


def docstring(name: str) -> str:
    source = (ROOT / "examples" / f"{name}.py").read_text(encoding="utf-8")
    return ast.get_docstring(ast.parse(source)) or ""


def durations() -> dict[str, float]:
    return json.loads((ROOT / "tests" / "durations.json").read_text(encoding="utf-8"))


def test_time(name: str, measured: dict[str, float]) -> str:
    """What the test that trains the example took, from the suite's measured durations."""
    for test, what in (
        (RUN_TEST, "2 epochs on the tests' small data, a checkpoint, TensorBoard and the export"),
        (RL_TEST, "a short run of the real environment, then `evaluate` and the export served"),
    ):
        seconds = measured.get(f"{test}[{name}]")
        if seconds is not None:
            short = test.split("::")[1]
            return f"`{short}[{name}]` ({what}) took {seconds:.1f} s of test time"
    return (
        "`tests/durations.json` has no time for the test that trains it (it lists the tests of "
        "1 s or more; this example's run is shared with `tests/test_controls.py`, which reads it)"
    )


def page(name: str, measured: dict[str, float]) -> str:
    doc = docstring(name)
    lead, _, rest = doc.partition("\n\n")
    script = ROOT / "generated" / f"{name}.py"
    lines = script.read_text(encoding="utf-8").count("\n")
    twins = [v for v in VARIANTS if (ROOT / "generated" / v / f"{name}.py").exists()]
    # Out of the search index: indexing the whole highlighted script took half of the build;
    # the overview's table carries what each example shows.
    out = [
        "---",
        "search:",
        "  exclude: true",
        "---",
        "",
        f"# {name}",
        "",
        " ".join(lead.split()),
        "",
    ]
    if rest:
        out += [rest, ""]
    out += [
        "**How long it trains here.** In the test suite, " + test_time(name, measured) + ".",
    ]
    if name in FULL_RUNS:
        out += ["", "At full size: " + FULL_RUNS[name] + "."]
    out += [
        "",
        f"**Render it.** `loopgen init my_run.py --from {name}` copies the spec; "
        f"`loopgen render examples/{name}.py -o train.py` writes the script below.",
    ]
    if twins:
        variants = ", ".join(f"`generated/{v}/{name}.py`" for v in twins)
        out += ["", f"Its other strategies (`--variant`): {variants}."]
    out += [
        "",
        '<div class="grid gallery" markdown>',
        "",
        f'```python title="examples/{name}.py"',
        f'--8<-- "examples/{name}.py"',
        "```",
        "",
        f'```python title="generated/{name}.py ({lines} lines)"',
        f'--8<-- "generated/{name}.py"',
        "```",
        "",
        "</div>",
        "",
    ]
    return "\n".join(out)


def index(measured: dict[str, float]) -> str:
    out = [
        "# Gallery",
        "",
        "Every example of `examples/`, its spec beside the script loopgen writes from it "
        "(`generated/`, the golden files the tests compare with a fresh render, run and "
        "resume). The times are those of the tests that train each example on this 2-core "
        "CPU, from the suite's measured durations (`tests/durations.json`): small data and "
        "2 epochs for the supervised examples, a short run of the real environment for the "
        "reinforcement-learning ones; runs at full size are given where they were measured.",
        "",
        "| Example | What it shows | Its test trains it in |",
        "|---|---|---|",
    ]
    for name in examples():
        lead = " ".join(docstring(name).partition("\n\n")[0].split()).replace("|", "\\|")
        seconds = next(
            (measured[k] for k in (f"{RUN_TEST}[{name}]", f"{RL_TEST}[{name}]") if k in measured),
            None,
        )
        took = f"{seconds:.1f} s" if seconds is not None else "not recorded"
        out.append(f"| [{name}]({name}.md) | {lead} | {took} |")
    out.append("")
    return "\n".join(out)


def pages() -> dict[str, str]:
    measured = durations()
    out = {"gallery/index.md": index(measured)}
    for name in examples():
        out[f"gallery/{name}.md"] = page(name, measured)
    return out


def nav() -> list[dict[str, str]]:
    return [{"Overview": "gallery/index.md"}] + [
        {name: f"gallery/{name}.md"} for name in examples()
    ]
