"""The input benchmark: how long a resumed run waits for its first batch, and whether training
is input-bound.

On 2,000 PNG images (bench/images.py), as an image directory and as 8 TFRecord shards of the
same encoded images, the cifar10_resnet example (batch 64, its augmentation) is rendered with
that source and
  seek   the seconds from load_examples() to the first batch of a run resumed in the middle of
         epoch 0, 5, 20 and 50: a fresh process each time, median of --data-repeats;
  input  examples/s of the training pipeline alone (batches drawn and dropped) against the
         loop's examples/s training on it: a ratio under 1 means the run waits for its input.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
import tempfile
from pathlib import Path

from loopgen.dsl.loader import load_spec
from loopgen.render import render_runtime, render_script

from .report import median
from .workload import EXAMPLES, bench_overrides

PYTHON = sys.executable
EXAMPLE = "cifar10_resnet"
BATCH = 64
EPOCHS = (0, 5, 20, 50)
UNKEPT = ("data.train=", "checkpoint=")
FIRST_BATCH = Path(__file__).with_name("first_batch.py")
DATA_SOURCES = ["image_directory", "tfrecord"]


def sources(folder: Path) -> dict[str, dict]:
    return {
        "image_directory": {
            "kind": "image_directory",
            "path": (folder / "images").as_posix(),
            "image_size": [32, 32],
        },
        "tfrecord": {
            "kind": "tfrecord",
            "files": (folder / "images-*.tfrecord").as_posix(),
            "features": {
                "image": {"dtype": "string", "image": [32, 32]},
                "label": {"dtype": "int64"},
            },
        },
    }


def render(source: dict, path: Path) -> Path:
    # The benchmark's overrides but its data and checkpoint=null: a run that never saves one
    # has no resume, and its training_batches() no start_step.
    kept = [o for o in bench_overrides(Path("unused.npz")) if not o.startswith(UNKEPT)]
    overrides = [
        *kept,
        f"data.train={json.dumps(source)}",
        f"data.batch_size={BATCH}",
    ]
    spec = load_spec(EXAMPLES / f"{EXAMPLE}.py", overrides=overrides)
    path.write_text(render_script(spec, spec_file=f"examples/{EXAMPLE}.py"))
    (path.parent / "loopgen_runtime.py").write_text(render_runtime())  # the runtime beside it
    return path


def timed(script: Path, mode: str, count: int, env: dict, cwd: Path) -> dict:
    command = [PYTHON, str(FIRST_BATCH), str(script), mode, str(count)]
    proc = subprocess.run(command, capture_output=True, text=True, cwd=cwd, env=env)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def loop_examples_per_second(script: Path, env: dict, cwd: Path) -> float:
    """The loop's training examples/s over its second and third epochs (the first traces)."""
    out = Path(tempfile.mkdtemp(prefix="loop-", dir=cwd))
    command = [PYTHON, str(script), "--epochs", "3", "--output-dir", str(out)]
    proc = subprocess.run(command, capture_output=True, text=True, cwd=cwd, env=env)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed:\n{proc.stderr[-3000:]}")
    records = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    rates = [r["steps_per_second"] for r in records if "steps_per_second" in r and r["epoch"] > 1]
    return median(rates) * BATCH


def data_rows(folder: Path, count: int, repeats: int, env: dict, names: list[str]) -> dict:
    """The seek and input figures of the sources `names` (see the module's docstring)."""
    subprocess.run(
        [PYTHON, "-m", "bench.images", str(folder), "--count", str(count)],
        check=True, cwd=Path(__file__).resolve().parent.parent, env=env,
    )  # fmt: skip
    steps_per_epoch = math.ceil(count / BATCH)
    results = {"images": count, "batch_size": BATCH, "example": EXAMPLE, "sources": {}}
    made = sources(folder)
    for name in names:
        source = made[name]
        print(f"  {name} ...", flush=True)
        script = render(source, folder / f"{name}.py")
        seek = {}
        for epoch in EPOCHS:
            step = epoch * steps_per_epoch + steps_per_epoch // 2
            runs = [timed(script, "seek", step, env, folder)["seconds"] for _ in range(repeats)]
            seek[str(epoch)] = {"step": step, "seconds": median(runs), "runs": runs}
        streamed = timed(script, "stream", 3 * steps_per_epoch, env, folder)
        pipeline = streamed["examples_per_second"]
        loop = loop_examples_per_second(script, env, folder)
        results["sources"][name] = {
            "seek": seek,
            "seek_ratio": seek[str(EPOCHS[-1])]["seconds"] / seek[str(EPOCHS[0])]["seconds"],
            "pipeline_examples_per_second": pipeline,
            "loop_examples_per_second": loop,
            "input_ratio": pipeline / loop,
        }
    return results


def data_table(data: dict) -> str:
    header = "| source | " + " | ".join(f"seek, epoch {e}" for e in EPOCHS)
    header += " | epoch 50 ÷ 0 | pipeline ex/s | loop ex/s | pipeline ÷ loop |"
    lines = [header, "|" + "---|" * (len(EPOCHS) + 5)]
    for name, row in data["sources"].items():
        seeks = " | ".join(f"{row['seek'][str(e)]['seconds']:.2f} s" for e in EPOCHS)
        lines.append(
            f"| {name} | {seeks} | **{row['seek_ratio']:.2f}** "
            f"| {row['pipeline_examples_per_second']:,.0f} "
            f"| {row['loop_examples_per_second']:,.0f} | **{row['input_ratio']:.1f}** |"
        )
    return "\n".join(lines)
