"""Benchmark: generated loops against model.fit, measured in the same run; render time; input.

    .venv/bin/python -m bench [--parts fit render data inspect rl lm] [--examples ...] [--docs]

fit: for each example it renders the loop script (synthetic data of the real shapes, see
workload.py) and trains, each in a fresh process:
  loop, defaults   the script as the spec renders it (steps_per_loop, xla auto)
  loop, plain      one step per call, no XLA: model.fit's defaults
  fit, matched     compile(steps_per_execution=steps_per_loop, jit_compile=the loop's choice)
  fit, defaults    compile() as most people call it
and prints samples/s (median over --rounds rounds of the epochs after the first, which traces
and compiles) and the ratios: each round runs the four in a new order, and a ratio is the
median of the rounds' own ratios (loop ÷ fit of the same round), so that a slow spell of a
shared machine, which a round's runs share, cancels out of it.
render: times `loopgen render` of every example in examples/, and of mnist_mlp with a
  description of 1 and 8 MB (its time should grow linearly), a new process each time (loopgen's
modules compiled to bytecode first, as an installed package has them), each run beside a
process that only imports the stack (STACK), and checks that TensorFlow was never imported.
data: time to the first batch of a resumed run, and the pipeline's speed against the loop's
(data_rows.py).
inspect: what logging.inspect costs at every 100 steps: the same workload trained with and
without it, alternating (inspection.py).
tracking: a run tracked in MLflow against the same run untracked; sweep: the per-trial overhead
of `loopgen sweep`, trials forked from its launcher and started anew (tracking.py).
rl: the generated PPO (cartpole_ppo), DQN (cartpole_dqn with CleanRL's settings) and SAC
(pendulum_sac) against Stable-Baselines3's on PyTorch with the same hyperparameters and budget
(rl.py; --peer-python names a Python with stable-baselines3 and torch; --rl-algorithms picks
some): environment steps per second and the greedy return over 100 episodes. Not in the
default parts: a round trains each twice for minutes.
generative: the generated flow-matching loop (shapes_flow) against keras.io's way, `train_step`
overridden and `fit`, on the same network and images, steps/s, rounds alternating (generative.py,
generative_peer.py). Not in the default parts either.
lm: the generated SFT loop (sums_sft on a small GPT-2 preset the bench saves) against KerasHub's
own CausalLM.fit on the same preset and records, tokens/s, rounds alternating which runs first
(lm.py, lm_peer.py; needs the `lm` extra). Not in the default parts either.
Results go to bench/results.json (a part not run keeps its previous figures) and, with
--docs, to the documentation's tables (docs/speed.md; the RL one in docs/guides/rl/speed.md,
the tracking and sweep ones in docs/guides/sweeps-tracking.md, the lm one in
docs/guides/language-models.md, the generative one in docs/guides/ways/diffusion.md).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from .data_rows import DATA_SOURCES, data_rows, data_table
from .generative import generative_rows, generative_table
from .inspection import inspect_rows, inspect_table
from .lm import lm_rows, lm_table
from .report import (
    fit_table,
    logged_epoch_seconds,
    median,
    ratios,
    render_table,
    replace_table,
    table,
)
from .rl import ALGORITHMS, algorithms_of, rl_rows, rl_table
from .tracking import sweep_rows, sweep_table, tracking_rows, tracking_table
from .workload import EXAMPLES, PLAIN, ROOT, STEPS_PER_EPOCH, Workload, render, workload

PYTHON = sys.executable
LOOPGEN = str(Path(PYTHON).with_name("loopgen"))
PARTS = ("fit", "render", "data", "inspect", "tracking", "sweep")
SPEED_PAGE = ROOT / "docs" / "speed.md"
"""Where --docs writes the tables of the fit, render and data parts."""
RL_PAGE = ROOT / "docs" / "guides" / "rl" / "speed.md"
"""Where --docs writes the table of the rl part."""
SWEEPS_PAGE = ROOT / "docs" / "guides" / "sweeps-tracking.md"
"""Where --docs writes the tables of the tracking and sweep parts."""
LM_PAGE = ROOT / "docs" / "guides" / "language-models.md"
GENERATIVE_PAGE = ROOT / "docs" / "guides" / "ways" / "diffusion.md"
"""Where --docs writes the table of the lm part."""
ENV = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2", "PYTHONUNBUFFERED": "1"}


def loop_epoch_seconds(script: Path, epochs: int, folder: Path) -> list[float]:
    """Trains the script and returns each epoch's training time, from the throughput it logs
    (steps since the previous log point / steps_per_second, summed per epoch)."""
    out = Path(tempfile.mkdtemp(prefix=f"{script.stem}-", dir=folder))
    _run([PYTHON, str(script), "--epochs", str(epochs), "--output-dir", str(out)], folder)
    records = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    return logged_epoch_seconds(records)


def fit_epoch_seconds(work: Workload, script: Path, mode: str, epochs: int, folder: Path):
    settings = folder / f"{work.name}-settings.json"
    settings.write_text(json.dumps(work.fit_settings()))
    out = folder / f"{work.name}-fit-{mode}.json"
    baseline = Path(__file__).with_name("fit_baseline.py")
    command = [PYTHON, str(baseline), str(script), str(settings), str(out)]
    _run([*command, "--mode", mode, "--epochs", str(epochs)], folder)
    return json.loads(out.read_text())["epoch_seconds"]


def compile_loopgen() -> None:
    """Bytecode for loopgen's own modules, as pip writes it when it installs a package: the
    render figures are those of an installed loopgen. An editable install in an environment
    with PYTHONDONTWRITEBYTECODE=1 (as on the CI machines) compiles every module again in each
    process, about 0.1 s more per render."""
    sources = [*ROOT.glob("*.py"), ROOT / "dsl", ROOT / "render", ROOT / "output"]
    subprocess.run([PYTHON, "-m", "compileall", "-q", *map(str, sources)], check=True)


STACK = """\
import gc
gc.disable()
import jinja2, typer
import loopgen.pydantic_plugins
from pydantic import BaseModel
class Model(BaseModel):
    x: int = 1
"""
"""A process that does what every `loopgen` command does before any of loopgen's own work:
start Python, import the dependencies the design card fixes (pydantic, typer, Jinja) as the
command does, and build one pydantic model (pydantic imports its schema machinery then)."""


def render_timing(name: str, folder: Path, repeats: int, spec: Path | None = None) -> dict:
    """Wall time of the `loopgen render` command on the real example (or the spec file
    `spec`; a new process each time, imports included), and whether it imported TensorFlow.
    Each run follows a run of STACK, so that the share of loopgen's own work (render minus
    stack, run by run) holds across the machine's fast and slow states."""
    spec = spec or EXAMPLES / f"{name}.py"
    command = [LOOPGEN, "render", str(spec), "-o", str(folder / "r.py")]
    times, stack = [], []
    for _ in range(repeats):
        stack.append(_timed([PYTHON, "-c", STACK], folder))
        times.append(_timed(command, folder))
    traced = subprocess.run(
        [PYTHON, "-X", "importtime", *command], capture_output=True, text=True, cwd=folder
    )
    imported = [line for line in traced.stderr.splitlines() if line.endswith(" tensorflow")]
    return {
        "seconds": median(times),
        "runs": times,
        "stack_seconds": median(stack),
        "stack_runs": stack,
        "own_seconds": median([t - s for t, s in zip(times, stack, strict=True)]),
        "imports_tensorflow": bool(imported),
    }


def described_spec(folder: Path, megabytes: int) -> Path:
    """mnist_mlp as JSON data, with a description of `megabytes` MB of words in paragraphs."""
    from loopgen.dsl.loader import load_spec

    data = load_spec(EXAMPLES / "mnist_mlp.py").model_dump(mode="json")
    paragraph = " ".join(["the", "gradient", "tape", "of", "each", "replica"] * 40) + "\n\n"
    data["description"] = paragraph * (megabytes * 2**20 // len(paragraph) + 1)
    path = folder / f"described_{megabytes}mb.json"
    path.write_text(json.dumps(data))
    return path


def _timed(command: list[str], cwd: Path) -> float:
    start = time.perf_counter()
    _run(command, cwd)
    return time.perf_counter() - start


def bench_example(name: str, args: argparse.Namespace, folder: Path) -> dict:
    work = workload(name, folder, args.steps_per_epoch)
    default_script = render(work, folder / f"{name}_defaults.py")
    plain_script = render(work, folder / f"{name}_plain.py", PLAIN)
    samples = work.steps_per_epoch * work.batch_size
    runs = {
        "loop_defaults": lambda: loop_epoch_seconds(default_script, args.epochs, folder),
        "loop_plain": lambda: loop_epoch_seconds(plain_script, args.epochs, folder),
        "fit_matched": lambda: fit_epoch_seconds(
            work, default_script, "matched", args.epochs, folder
        ),
        "fit_defaults": lambda: fit_epoch_seconds(
            work, default_script, "defaults", args.epochs, folder
        ),
    }
    # Each round runs the four in a new order (the same one on every machine): a run that
    # always followed another would always meet that one's after-effects (caches, the
    # scheduler), and one always first a machine just woken up.
    seconds: dict[str, list[list[float]]] = {run: [] for run in runs}
    for index in range(args.rounds):
        order = list(runs)
        random.Random(index).shuffle(order)
        for run in order:
            seconds[run].append(runs[run]())
    throughput = {}
    for run, rounds in seconds.items():
        measured = [s for epochs in rounds for s in epochs[1:]]  # the first epoch compiles
        throughput[run] = {
            "samples_per_second": samples / median(measured),
            "epoch_seconds": rounds,
        }
    return {
        "batch_size": work.batch_size,
        "steps_per_epoch": work.steps_per_epoch,
        "steps_per_loop": work.spec.performance.steps_per_loop,
        "xla": work.spec.uses_xla,
        "precision": work.spec.performance.precision,
        "runs": throughput,
        "ratios": ratios(throughput),
    }


def _run(command: list[str], cwd: Path) -> None:
    proc = subprocess.run(command, capture_output=True, text=True, cwd=cwd, env=ENV)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed:\n{proc.stderr[-3000:]}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__.split("\n")[0])
    parser.add_argument(
        "--parts", nargs="+", choices=(*PARTS, "rl", "lm", "generative"), default=list(PARTS)
    )
    parser.add_argument("--examples", nargs="+", default=list(STEPS_PER_EPOCH))
    parser.add_argument("--epochs", type=int, default=4, help="1 warm-up + the measured ones")
    parser.add_argument("--steps-per-epoch", type=int, default=None, help="instead of the table")
    parser.add_argument("--rounds", type=int, default=6, help="rounds of the four runs")
    parser.add_argument("--render-repeats", type=int, default=5)
    parser.add_argument("--render-examples", nargs="+", help="render: these (default: all)")
    parser.add_argument(
        "--described-mb", nargs="*", type=int, default=[1, 8],
        help="render: mnist_mlp with descriptions of these sizes (its time should grow linearly)",
    )  # fmt: skip
    parser.add_argument("--data-repeats", type=int, default=3, help="fresh processes per seek")
    parser.add_argument("--data-images", type=int, default=2000, help="images the data part uses")
    parser.add_argument("--data-sources", nargs="+", choices=DATA_SOURCES, default=DATA_SOURCES)
    parser.add_argument("--tracking-rounds", type=int, default=5, help="tracking: rounds")
    parser.add_argument("--sweep-trials", type=int, default=4, help="sweep: trials a sweep")
    parser.add_argument("--sweep-rounds", type=int, default=3, help="sweep: sweeps of each kind")
    parser.add_argument("--rl-algorithms", nargs="+", choices=list(ALGORITHMS),
                        default=list(ALGORITHMS), help="rl: which algorithms")  # fmt: skip
    parser.add_argument(
        "--rl-steps", type=int,
        help="rl: environment steps (default: CartPole 500,000, Pendulum 20,000)",
    )  # fmt: skip
    parser.add_argument("--rl-rounds", type=int, default=1, help="rl: rounds of both runs")
    parser.add_argument("--peer-python", help="rl: a Python with stable-baselines3 and torch")
    parser.add_argument("--lm-records", type=int, default=2048, help="lm: sums records")
    parser.add_argument("--lm-rounds", type=int, default=3, help="lm: rounds of both runs")
    parser.add_argument(
        "--lm-preset",
        help="lm: a causal LM's preset to train (a directory, a name or a handle) instead of the "
        "small GPT-2 the bench saves",
    )
    parser.add_argument("--generative-rounds", type=int, default=3, help="generative: rounds")
    parser.add_argument(
        "--generative-images", type=int, default=2000, help="generative: the shapes trained on"
    )
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results.json")
    parser.add_argument(
        "--docs",
        action="store_true",
        help="update the tables in docs/ (speed.md, guides/rl/speed.md, guides/language-models.md)",
    )
    args = parser.parse_args(argv)
    if args.epochs < 4:
        parser.error("--epochs must be at least 4: a warm-up epoch and 3 to take the median of")
    results = json.loads(args.out.read_text()) if args.out.exists() else {}
    results["machine"] = {
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "platform": platform.platform(),
    }
    today = time.strftime("%Y-%m-%d")
    with tempfile.TemporaryDirectory(prefix="loopgen-bench-") as tmp:
        if "fit" in args.parts:
            fit = {"date": today, "epochs": args.epochs, "rounds": args.rounds, "examples": {}}
            for name in args.examples:
                print(f"{name} ...", flush=True)
                fit["examples"][name] = bench_example(name, args, Path(tmp))
                print(table({name: fit["examples"][name]}), flush=True)
            results["fit"] = fit
        if "render" in args.parts:
            print("render ...", flush=True)
            compile_loopgen()
            examples = args.render_examples or sorted(p.stem for p in EXAMPLES.glob("*.py"))
            timings = {name: render_timing(name, Path(tmp), args.render_repeats)
                       for name in examples}  # fmt: skip
            for mb in args.described_mb:
                described = described_spec(Path(tmp), mb)
                timings[f"mnist_mlp, {mb} MB description"] = render_timing(
                    "mnist_mlp", Path(tmp), args.render_repeats, described
                )
            results["render"] = {"date": today, "repeats": args.render_repeats,
                                 "examples": timings}  # fmt: skip
            print(render_table(results["render"]), flush=True)
        if "data" in args.parts:
            print("data ...", flush=True)
            data = data_rows(Path(tmp), args.data_images, args.data_repeats, ENV, args.data_sources)
            results["data"] = {"date": today, "repeats": args.data_repeats, **data}
            print(data_table(results["data"]), flush=True)
        if "inspect" in args.parts:
            print("inspect ...", flush=True)
            found = inspect_rows(["mnist_mlp"], args.rounds, args.epochs, Path(tmp),
                                 loop_epoch_seconds, args.steps_per_epoch)  # fmt: skip
            results["inspect"] = {"date": today, "rounds": args.rounds, "examples": found}
            print(inspect_table(found), flush=True)
        if "tracking" in args.parts:
            print("tracking ...", flush=True)
            tracking = tracking_rows(PYTHON, args.tracking_rounds, Path(tmp), ENV)
            results["tracking"] = {"date": today, **tracking}
            print(tracking_table(results["tracking"]), flush=True)
        if "sweep" in args.parts:
            print("sweep ...", flush=True)
            sweep = sweep_rows(PYTHON, args.sweep_trials, args.sweep_rounds, Path(tmp), ENV)
            results["sweep"] = {"date": today, **sweep}
            print(sweep_table(results["sweep"]), flush=True)
        if "rl" in args.parts:
            print("rl ...", flush=True)
            rl = rl_rows(PYTHON, args.peer_python, args.rl_algorithms, args.rl_steps,
                         args.rl_rounds, Path(tmp), ENV)  # fmt: skip
            for found in rl["algorithms"].values():
                found["date"] = today
            # An algorithm not run keeps its previous figures.
            algorithms = {**algorithms_of(results.get("rl")), **rl["algorithms"]}
            results["rl"] = {"date": today, **rl, "algorithms": algorithms}
            print(rl_table(results["rl"]), flush=True)
        if "lm" in args.parts:
            print("lm ...", flush=True)
            lm = lm_rows(
                PYTHON, args.lm_records, args.epochs, args.lm_rounds, Path(tmp), ENV, args.lm_preset
            )
            results["lm"] = {"date": today, "cpus": os.cpu_count(), **lm}
            print(lm_table(results["lm"]), flush=True)
        if "generative" in args.parts:
            print("generative ...", flush=True)
            found = generative_rows(PYTHON, args.epochs, args.generative_rounds, Path(tmp), ENV,
                                    args.generative_images)  # fmt: skip
            results["generative"] = {"date": today, "cpus": os.cpu_count(), **found}
            print(generative_table(results["generative"]), flush=True)
    args.out.write_text(json.dumps(results, indent=2) + "\n")
    print(f"wrote {args.out}")
    if args.docs:
        tables = {
            "fit": (SPEED_PAGE, "bench", fit_table),
            "render": (SPEED_PAGE, "bench-render", lambda r: render_table(r["render"])),
            "data": (SPEED_PAGE, "bench-data", lambda r: data_table(r["data"])),
            "inspect": (
                SPEED_PAGE,
                "bench-inspect",
                lambda r: inspect_table(r["inspect"]["examples"]),
            ),
            "rl": (RL_PAGE, "bench-rl", lambda r: rl_table(r["rl"])),
            "tracking": (SWEEPS_PAGE, "bench-tracking", lambda r: tracking_table(r["tracking"])),
            "sweep": (SWEEPS_PAGE, "bench-sweep", lambda r: sweep_table(r["sweep"])),
            "lm": (LM_PAGE, "bench-lm", lambda r: lm_table(r["lm"])),
            "generative": (
                GENERATIVE_PAGE,
                "bench-generative",
                lambda r: generative_table(r["generative"]),
            ),
        }
        for part, (page, marker, write) in tables.items():
            if part in results:
                page.write_text(replace_table(page.read_text(), write(results), marker, page))
                print(f"updated {page.relative_to(ROOT)} ({marker})")


if __name__ == "__main__":
    main()
