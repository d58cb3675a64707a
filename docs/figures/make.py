"""The site's figures, made from real runs. The site's build never trains: it shows the files
this script wrote into docs/assets/figures/, each small and committed, and each page's caption
says the command that made it.

    python docs/figures/make.py                  # draw the curves and the sweep's plots again
                                                 # from the runs' files in docs/figures/data/
    python docs/figures/make.py runs --peer-python /path/to/sb3/python
                                                 # train the runs those files come from, then draw
    python docs/figures/make.py lm               # train the GRPO run alone, then draw
    python docs/figures/make.py generative       # train shapes_flow and shapes_vae, then draw
    python docs/figures/make.py gif RUN_DIR      # CartPole, from a trained cartpole_ppo run
    python docs/figures/make.py profile --tensorboard-python /path/to/tb/python
                                                 # TensorBoard's Profile tab, screenshot

`runs` trains examples/sums_grpo.py (`lm`: 32 steps on the tests' tiny Llama preset, no
download), examples/shapes_unet.py (6 epochs) and examples/cartpole_ppo.py (500,000 steps),
Stable-Baselines3's PPO with the same settings (docs/figures/sb3_returns.py, run by a Python
that has stable-baselines3 and torch; loopgen does not depend on them) and the sweep
examples/sweeps/shapes_plateau.py, and copies what the figures read into docs/figures/data/:
the runs' metrics.jsonl, SB3's returns logged the same way, the sweep's study.journal
(Optuna's, from which loopgen's own plotting code draws the sweep's plots again).

`generative` trains examples/shapes_flow.py and examples/shapes_vae.py as they are and keeps
the sample grids their validations wrote to TensorBoard (six steps' of each, from the event
files) in docs/figures/data/<example>.grids.npz, from which the figures are drawn.

`gif` runs `cartpole_ppo.py evaluate --episodes 1 --record` (the script two folders above
RUN_DIR, as `runs` lays them out: DIR/cartpole_ppo.py, DIR/runs/cartpole_ppo) and keeps the
GIF it writes (shrunk only if large).

`profile` trains 12 steps of shapes_unet with `--profile 5:10`, serves the run's logs with a
TensorBoard that has tensorboard-plugin-profile (on 127.0.0.1 only) and photographs the
Profile tab's trace viewer with headless Chromium (Debian's `chromium`).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace

ROOT = Path(__file__).resolve().parents[2]  # the loopgen package's folder
HERE = Path(__file__).resolve().parent
DATA = HERE / "data"
FIGURES = ROOT / "docs" / "assets" / "figures"
PYTHON = sys.executable


def records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    # Text stays text (a smaller file, sharp at any zoom); no date or random ids in the SVG, so
    # that drawing the same data again writes the same file.
    plt.rcParams.update({"svg.fonttype": "none", "svg.hashsalt": "loopgen", "font.size": 10})
    return plt


def save(figure, name: str) -> Path:
    path = FIGURES / name
    figure.savefig(path, bbox_inches="tight", facecolor="white", metadata={"Date": None})
    return path


# --- The curves ------------------------------------------------------------------------------


def draw_shapes_unet() -> Path:
    """The offline demo's loss and mean IoU by step: training's as logged (the epoch's running
    values, every 20 steps), validation's at each epoch's end."""
    plt = pyplot()
    rows = records(DATA / "shapes_unet.metrics.jsonl")
    train = [r for r in rows if "loss" in r]
    val = [r for r in rows if "val_loss" in r]
    figure, (left, right) = plt.subplots(1, 2, figsize=(8, 3), layout="constrained")
    left.plot([r["step"] for r in train], [r["loss"] for r in train], label="training")
    left.plot([r["step"] for r in val], [r["val_loss"] for r in val], "o-", label="validation")
    left.set(title="loss", xlabel="step", yscale="log")
    right.plot([r["step"] for r in train], [r["mean_iou"] for r in train], label="training")
    right.plot([r["step"] for r in val], [r["val_mean_iou"] for r in val], "o-",
               label="validation")  # fmt: skip
    right.set(title="mean IoU", xlabel="step", ylim=(0, 1))
    right.legend(loc="lower right")
    for axes in (left, right):
        axes.grid(alpha=0.3)
    path = save(figure, "shapes_unet_curves.svg")
    plt.close(figure)
    return path


def draw_cartpole_returns() -> Path:
    """Episodic return against environment steps: loopgen's PPO and, when its file is there,
    Stable-Baselines3's with the same settings."""
    plt = pyplot()
    figure, axes = plt.subplots(figsize=(6, 3.2), layout="constrained")
    ours = [r for r in records(DATA / "cartpole_ppo.metrics.jsonl") if "episode_return" in r]
    axes.plot([r["step"] for r in ours], [r["episode_return"] for r in ours],
              label="loopgen PPO (TensorFlow)")  # fmt: skip
    peer = DATA / "sb3_ppo_cartpole.jsonl"
    if peer.exists():
        theirs = records(peer)
        axes.plot([r["step"] for r in theirs], [r["episode_return"] for r in theirs],
                  label="Stable-Baselines3 PPO (PyTorch)")  # fmt: skip
    axes.set(xlabel="environment steps", ylabel="episodic return", ylim=(0, 520),
             title="CartPole-v1, PPO with CleanRL's settings, seed 1")  # fmt: skip
    axes.xaxis.set_major_formatter(plt.FuncFormatter(lambda x, _: f"{x / 1000:.0f}k"))
    axes.grid(alpha=0.3)
    axes.legend(loc="lower right")
    path = save(figure, "cartpole_ppo_returns.svg")
    plt.close(figure)
    return path


def draw_sweep() -> list[Path]:
    """The sweep's history and importances, drawn by `loopgen sweep`'s own code from the study
    it ran (the journal holds every trial's values and reports)."""
    sys.path.insert(0, str(ROOT.parent))
    import optuna
    from loopgen.sweep.report import write_plots

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    journal = DATA / "shapes_plateau.study.journal"
    # Opened from a copy: Optuna's journal storage takes a lock file beside the journal.
    with tempfile.TemporaryDirectory() as folder:
        copy = Path(folder) / "study.journal"
        shutil.copy(journal, copy)
        storage = optuna.storages.JournalStorage(
            optuna.storages.journal.JournalFileBackend(str(copy))
        )
        study = optuna.load_study(study_name="shapes_plateau", storage=storage)
        written = write_plots(SimpleNamespace(output=Path(folder)), study)
        paths = []
        for path in written:
            target = FIGURES / f"sweep_shapes_plateau_{path.name}"
            shutil.copy(path, target)
            paths.append(target)
    return paths


def draw_sums_grpo() -> Path:
    """GRPO's reward and its KL to the reference by step, as logged at every step (the epoch's
    running means, so each epoch starts afresh)."""
    plt = pyplot()
    rows = [r for r in records(DATA / "sums_grpo.metrics.jsonl") if "reward" in r]
    steps = [r["step"] for r in rows]
    figure, (left, right) = plt.subplots(1, 2, figsize=(8, 3), layout="constrained")
    left.plot(steps, [r["reward"] for r in rows], label="mean reward")
    left.plot(steps, [r["reward_std"] for r in rows], label="std within a group")
    left.set(title="reward (digits + correct, at most 2)", xlabel="step", ylim=(0, None))
    left.legend(loc="center right")
    right.plot(steps, [r["kl"] for r in rows])
    right.set(title="KL to the reference", xlabel="step")
    for axes in (left, right):
        axes.grid(alpha=0.3)
    path = save(figure, "sums_grpo_curves.svg")
    plt.close(figure)
    return path


def draw_sample_grids(example: str, title: str) -> Path:
    """The sample grids a generative run wrote to TensorBoard at its validations (kept in
    docs/figures/data/<example>.grids.npz by `generative`), one row per step."""
    import numpy as np

    plt = pyplot()
    with np.load(DATA / f"{example}.grids.npz") as kept:
        steps, tags = kept["steps"], [str(tag) for tag in kept["tags"]]
        grids = {tag: kept[tag] for tag in tags}
    figure, axes = plt.subplots(len(steps), len(tags), squeeze=False, layout="constrained",
                                figsize=(3.2 * len(tags), 0.95 * len(steps) + 0.3))  # fmt: skip
    for row, step in enumerate(steps):
        for column, tag in enumerate(tags):
            ax = axes[row][column]
            ax.imshow(grids[tag][row], interpolation="nearest")
            ax.set_xticks([])
            ax.set_yticks([])
            if column == 0:
                ax.set_ylabel(f"step {step:,}", rotation=0, ha="right", va="center")
            if row == 0:
                ax.set_title(tag)
    figure.suptitle(title)
    path = save(figure, f"{example}_samples.png")
    plt.close(figure)
    shrink_png(path, colors=128)
    return path


GENERATIVE = {
    "shapes_flow": "shapes_flow: guided samples (circles, squares, triangles in turn)",
    "shapes_vae": "shapes_vae: samples of the prior, and reconstructions",
}
"""The generative examples whose sample grids along training the guides show."""


def draw() -> list[Path]:
    FIGURES.mkdir(parents=True, exist_ok=True)
    grids = [draw_sample_grids(name, title) for name, title in GENERATIVE.items()
             if (DATA / f"{name}.grids.npz").exists()]  # fmt: skip
    return [draw_shapes_unet(), draw_cartpole_returns(), *draw_sweep(), draw_sums_grpo(), *grids]


# --- The runs ---------------------------------------------------------------------------------


def run(command: list[str], cwd: Path) -> None:
    print("$", " ".join(command), flush=True)
    env = {**os.environ, "PYTHONPATH": str(ROOT.parent)}
    subprocess.run(command, cwd=cwd, env=env, check=True)


def train(example: str, folder: Path) -> Path:
    script = folder / f"{example}.py"
    run([PYTHON, "-m", "loopgen", "render", str(ROOT / "examples" / f"{example}.py"), "-o",
         str(script)], folder)  # fmt: skip
    out = folder / "runs" / example
    run([PYTHON, str(script), "--output-dir", str(out)], folder)
    return out


# GRPO as tests/test_grpo.py trains it (every weight, a larger rate, every step logged), for
# more epochs, on the tests' own tiny Llama and sums: seconds a step on a CPU, no download.
SUMS_GRPO = [
    "data.batch_size=8", "training.num_generations=4", "training.max_completion_length=4",
    "training.beta=0.1", "model.lora_rank=null", "model.sequence_length=12",
    "optimizer.learning_rate=0.01", "loop.epochs=4", "loop.log_every_steps=1",
    "export.saved_model=false",
]  # fmt: skip


def sums_grpo(folder: Path) -> Path:
    """examples/sums_grpo.py with its reward functions, on the tests' tiny Llama preset (2
    layers, 32 wide, random weights, a SentencePiece vocabulary of digits, made by
    tests/data.py's code) and 64 prompts of sums: 4 epochs of 8 steps."""
    sys.path[:0] = [str(ROOT.parent), str(ROOT / "tests")]
    import data  # the tests' preset and records
    from loopgen.dsl.starters import companions

    preset = folder / "llama_preset"
    run([PYTHON, "-c", data.LLAMA_PRESET, str(preset)], folder)
    prompts = data.sums_jsonl(folder / "sums.jsonl", 64)
    for relative, text in companions("sums_grpo").items():  # rewards/sums.py
        (folder / relative).parent.mkdir(parents=True, exist_ok=True)
        (folder / relative).write_text(text)
    script = folder / "sums_grpo.py"
    overrides = [f"model.preset={preset}", f"data.train.path={prompts}", *SUMS_GRPO]
    run([PYTHON, "-m", "loopgen", "render", str(ROOT / "examples" / "sums_grpo.py"), "-o",
         str(script), *(arg for o in overrides for arg in ("--set", o))], folder)  # fmt: skip
    out = folder / "runs" / "sums_grpo"
    run([PYTHON, str(script), "--output-dir", str(out)], folder)
    shutil.copy(out / "metrics.jsonl", DATA / "sums_grpo.metrics.jsonl")
    return out


def kept_grids(run_dir: Path, rows: int = 6) -> Path:
    """The image grids `run_dir`'s validations wrote to TensorBoard (the PNGs in its event
    files, by tag), at up to `rows` of its validation steps, first and last among them, kept
    in docs/figures/data/<example>.grids.npz for draw()."""
    import numpy as np
    import tensorflow as tf

    found: dict[str, dict[int, np.ndarray]] = {}
    for path in sorted((run_dir / "logs" / "validation").glob("events.out.tfevents.*")):
        for event in tf.compat.v1.train.summary_iterator(str(path)):
            for value in event.summary.value:
                if value.metadata.plugin_data.plugin_name == "images":
                    png = value.tensor.string_val[2]  # width, height, then the PNG itself
                    image = tf.io.decode_png(png).numpy()
                    found.setdefault(value.tag, {})[event.step] = image
    tags = sorted(found)
    steps = sorted(found[tags[0]])
    picked = sorted({steps[round(i * (len(steps) - 1) / (rows - 1))] for i in range(rows)})
    path = DATA / f"{run_dir.name}.grids.npz"
    grids = {tag: np.stack([found[tag][step] for step in picked]) for tag in tags}
    np.savez_compressed(path, steps=np.array(picked), tags=np.array(tags), **grids)
    return path


def generative() -> None:
    """Trains shapes_flow (about 6,000 steps, some minutes on two CPU cores) and shapes_vae as
    the examples are, keeps their validations' sample grids, then draws."""
    DATA.mkdir(parents=True, exist_ok=True)
    folder = Path(tempfile.mkdtemp(prefix="loopgen-figures-"))
    for example in GENERATIVE:
        print("kept:", kept_grids(train(example, folder)))
    print("drawn:", *draw(), sep="\n  ")


def runs(peer_python: str | None) -> None:
    DATA.mkdir(parents=True, exist_ok=True)
    folder = Path(tempfile.mkdtemp(prefix="loopgen-figures-"))
    sums_grpo(folder)
    shutil.copy(train("shapes_unet", folder) / "metrics.jsonl",
                DATA / "shapes_unet.metrics.jsonl")  # fmt: skip
    cartpole = train("cartpole_ppo", folder)
    shutil.copy(cartpole / "metrics.jsonl", DATA / "cartpole_ppo.metrics.jsonl")
    if peer_python:
        run([peer_python, str(HERE / "sb3_returns.py"), "500000", "1",
             str(DATA / "sb3_ppo_cartpole.jsonl")], folder)  # fmt: skip
    sweep = ROOT / "examples" / "sweeps" / "shapes_plateau.py"
    output = sweep.parent / "sweeps" / "shapes_plateau"
    if output.exists():
        raise SystemExit(f"{output} holds an earlier sweep: remove it first")
    run([PYTHON, "-m", "loopgen", "sweep", str(sweep)], ROOT)
    shutil.copy(output / "study.journal", DATA / "shapes_plateau.study.journal")
    shutil.rmtree(output.parent)
    gif(cartpole)
    print("drawn:", *draw(), sep="\n  ")


# --- CartPole, played -------------------------------------------------------------------------


def gif(run_dir: Path, largest: int = 150_000, width: int = 300) -> Path:
    """`evaluate --episodes 1 --record` of the run: the GIF it writes, as it is when it is at
    most `largest` bytes, else each frame `width` pixels wide (their timing kept)."""
    from PIL import Image, ImageSequence

    script = run_dir.parent.parent / "cartpole_ppo.py"
    run([PYTHON, str(script), "evaluate", "--episodes", "1", "--record", "--output-dir",
         str(run_dir)], run_dir.parent.parent)  # fmt: skip
    recorded = max((run_dir / "videos").glob("*.gif"), key=lambda p: p.stat().st_mtime)
    path = FIGURES / "cartpole_ppo.gif"
    if recorded.stat().st_size <= largest:
        shutil.copy(recorded, path)
    else:
        with Image.open(recorded) as source:
            frames, durations = [], []
            for frame in ImageSequence.Iterator(source):
                durations.append(frame.info.get("duration", 40))
                small = frame.convert("RGB")
                frames.append(small.resize((width, round(small.height * width / small.width))))
        frames[0].save(path, save_all=True, append_images=frames[1:], duration=durations,
                       loop=0, optimize=True)  # fmt: skip
    print(f"{recorded} ({recorded.stat().st_size:,} bytes) -> {path} "
          f"({path.stat().st_size:,} bytes)")  # fmt: skip
    return path


# --- The profiler -----------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def profile(tensorboard_python: str, chromium: str = "chromium") -> Path:
    folder = Path(tempfile.mkdtemp(prefix="loopgen-profile-"))
    script = folder / "shapes_unet.py"
    run([PYTHON, "-m", "loopgen", "render", str(ROOT / "examples" / "shapes_unet.py"), "-o",
         str(script)], folder)  # fmt: skip
    out = folder / "runs" / "shapes_unet"
    run([PYTHON, str(script), "--max-steps", "12", "--profile", "5:10", "--output-dir",
         str(out)], folder)  # fmt: skip
    port = free_port()
    server = subprocess.Popen(
        [tensorboard_python, "-m", "tensorboard.main", "--logdir", str(out / "logs"), "--host",
         "127.0.0.1", "--port", str(port)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        time.sleep(15)  # TensorBoard reads the logs
        session = next((out / "logs" / "profile" / "plugins" / "profile").iterdir()).name
        path = FIGURES / "profile_trace_viewer.png"
        # The Profile tab's own page (TensorBoard shows it in a frame), at its trace viewer.
        url = (
            f"http://127.0.0.1:{port}/data/plugin/profile/index.html"
            f"?run=profile%2F{session}&tool=trace_viewer&host={socket.gethostname()}"
        )
        run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
             "--window-size=1280,800", "--virtual-time-budget=40000",
             f"--screenshot={path}", url], folder)  # fmt: skip
    finally:
        server.terminate()
        server.wait()
    shrink_png(path)
    return path


def shrink_png(path: Path, colors: int = 64) -> None:
    """A screenshot in a palette of `colors`: a page of flat colours loses nothing to see."""
    from PIL import Image

    with Image.open(path) as image:
        small = image.convert("RGB").quantize(colors=colors)
    small.save(path, optimize=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command")
    commands.add_parser("draw", help="draw from docs/figures/data/ (the default)")
    runs_parser = commands.add_parser("runs", help="train the runs, then draw")
    runs_parser.add_argument("--peer-python", help="a Python with stable-baselines3 and torch")
    commands.add_parser("lm", help="train the GRPO run alone, then draw")
    commands.add_parser("generative", help="train shapes_flow and shapes_vae, then draw")
    gif_parser = commands.add_parser("gif", help="CartPole played, from a cartpole_ppo run")
    gif_parser.add_argument("run_dir", type=Path)
    profile_parser = commands.add_parser("profile", help="TensorBoard's Profile tab")
    profile_parser.add_argument(
        "--tensorboard-python",
        required=True,
        help="a Python with tensorboard and tensorboard-plugin-profile",
    )
    profile_parser.add_argument("--chromium", default="chromium")
    args = parser.parse_args()
    if args.command == "runs":
        runs(args.peer_python)
    elif args.command == "lm":
        DATA.mkdir(parents=True, exist_ok=True)
        sums_grpo(Path(tempfile.mkdtemp(prefix="loopgen-figures-")))
        print("drawn:", *draw(), sep="\n  ")
    elif args.command == "generative":
        generative()
    elif args.command == "gif":
        gif(args.run_dir.resolve())
    elif args.command == "profile":
        print(profile(args.tensorboard_python, args.chromium))
    else:
        print("drawn:", *draw(), sep="\n  ")


if __name__ == "__main__":
    main()
