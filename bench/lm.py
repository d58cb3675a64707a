"""The lm part of the bench: the generated SFT loop (examples/sums_sft.py) against KerasHub's own
`CausalLM.fit` (lm_peer.py) on the same small GPT-2 and the same records, in the same
invocation, alternating which runs first each round.

Both start from a GPT-2 preset the bench saves itself (`save_to_preset`, random weights, PRESET
below) and train every weight (the example's LoRA set off: both sides train the same
variables) with Adam at the example's learning rate, batch BATCH_SIZE, SEQUENCE_LENGTH tokens an
example, on JSON Lines of sums (prompt "3 + 4 =", completion " 7"). The loop is rendered with
`loopgen render --set ...` and run as a user runs it (`python train.py --epochs N --output-dir
...`); its epoch times come from the `steps_per_second` it logs to metrics.jsonl. The peer's
come from a callback around each epoch of `fit`. Throughput is in tokens/s, counted as batch
size x sequence length per step (the padded length both compute on), over the median of the
epochs after the first (which traces); a round's ratio is the loop's tokens/s over the peer's in
that round, and the figure is the median of the rounds' ratios."""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np

from .report import logged_epoch_seconds, median
from .report import run_checked as _run
from .workload import EXAMPLES

SEQUENCE_LENGTH = 32
BATCH_SIZE = 16
LEARNING_RATE = 2e-4  # the example's
CONFIG = {"num_layers": 2, "num_heads": 4, "hidden_dim": 128, "intermediate_dim": 512,
          "max_sequence_length": 64}  # fmt: skip
"""The GPT-2 both train: big enough that a step, not Python, takes the time."""

PRESET = """
import json
import sys

import keras
import keras_hub

symbols = [*"0123456789", "+", "=", "?"]
vocabulary = {"<|endoftext|>": 0, "\\u0120": 1}
for symbol in symbols:
    vocabulary[symbol] = len(vocabulary)
    vocabulary["\\u0120" + symbol] = len(vocabulary)
merges = ["\\u0120 " + symbol for symbol in symbols]
keras_hub.models.GPT2Tokenizer(vocabulary=vocabulary, merges=merges).save_to_preset(sys.argv[1])
keras.utils.set_random_seed(0)
backbone = keras_hub.models.GPT2Backbone(
    vocabulary_size=len(vocabulary), dropout=0.0, **json.loads(sys.argv[2])
)
backbone.save_to_preset(sys.argv[1])
"""
"""A GPT-2 of CONFIG saved as a KerasHub preset (as tests/data.py's GPT2_PRESET, larger): a
byte-level BPE vocabulary of digits, '+', '=' and '?', each alone and after a space."""


def sums_jsonl(path: Path, count: int, seed: int = 0) -> Path:
    """Sums of two digits as prompt and completion records (tests/data.py's sums_jsonl)."""
    rng = np.random.default_rng(seed)
    lines = []
    for _ in range(count):
        a, b = (int(x) for x in rng.integers(0, 10, 2))
        answer = " ".join(str(a + b))
        lines.append(json.dumps({"prompt": f"{a} + {b} =", "completion": f" {answer}"}))
    path.write_text("\n".join(lines) + "\n")
    return path


def overrides(preset: Path | str, records: Path) -> list[str]:
    """What the bench sets in examples/sums_sft.py: the local preset and records, no LoRA (the
    peer trains every weight), no validation, checkpoints, export or TensorBoard, for
    throughput alone (metrics.jsonl stays: its steps_per_second is the loop's timing)."""
    return [
        f"model.preset={preset}",
        f"model.sequence_length={SEQUENCE_LENGTH}",
        "model.lora_rank=null",
        f"data.train.path={records.as_posix()}",
        "data.validation=null",
        f"data.batch_size={BATCH_SIZE}",
        f"optimizer.learning_rate={LEARNING_RATE}",
        "checkpoint=null",
        "export.saved_model=false",
        "export.keras=false",
        "logging.tensorboard=false",
        "logging.jsonl=true",
    ]


def loop_run(python: str, script: Path, epochs: int, folder: Path, env: dict) -> list[float]:
    out = folder / f"loop-{time.monotonic_ns()}"
    _run([python, str(script), "--epochs", str(epochs), "--output-dir", str(out)], folder, env)
    lines = (out / "metrics.jsonl").read_text().splitlines()
    return logged_epoch_seconds([json.loads(line) for line in lines])


def peer_run(python: str, preset: Path, records: Path, epochs: int, seed: int, repeat: bool,
             folder: Path, env: dict) -> list[float]:  # fmt: skip
    out = folder / f"peer-{time.monotonic_ns()}.json"
    _run([python, str(Path(__file__).with_name("lm_peer.py")), str(preset), str(records),
          str(out), "--sequence-length", str(SEQUENCE_LENGTH), "--batch-size", str(BATCH_SIZE),
          "--learning-rate", str(LEARNING_RATE), "--epochs", str(epochs), "--seed", str(seed),
          *(["--repeat"] if repeat else [])], folder, env)  # fmt: skip
    return json.loads(out.read_text())["epoch_seconds"]


def lm_rows(python: str, records: int, epochs: int, rounds: int, folder: Path, env: dict,
            preset: Path | str | None = None) -> dict:  # fmt: skip
    """Both runs each round, alternating which goes first: their epoch times, tokens/s and the
    rounds' ratios. On `preset` (a causal LM's preset: a local directory, a name or a handle)
    if given, else on a GPT-2 of CONFIG saved here."""
    folder = folder / "lm"
    folder.mkdir()
    if preset is None:
        preset = folder / "gpt2_preset"
        _run([python, "-c", PRESET, str(preset), json.dumps(CONFIG)], folder, env)
    data = sums_jsonl(folder / "sums.jsonl", records)
    script = folder / "train.py"
    sets = [word for value in overrides(preset, data) for word in ("--set", value)]
    _run([str(Path(python).with_name("loopgen")), "render", str(EXAMPLES / "sums_sft.py"),
          *sets, "-o", str(script)], folder, env)  # fmt: skip
    steps_per_epoch = -(-records // BATCH_SIZE)
    # An epoch's tokens: every example's padded SEQUENCE_LENGTH, what both compute on
    # (steps x batch x sequence length when the batch divides the records).
    tokens = records * SEQUENCE_LENGTH
    runs = {
        "loop": lambda round_: loop_run(python, script, epochs, folder, env),
        "fit": lambda round_: peer_run(python, preset, data, epochs, round_, False, folder, env),
        "fit_repeat": lambda round_: peer_run(python, preset, data, epochs, round_, True, folder,
                                              env),
    }  # fmt: skip
    seconds: dict[str, list[list[float]]] = {who: [] for who in runs}
    for round_ in range(rounds):
        # Every other round the other way round: no run always follows the same one.
        for who in list(runs) if round_ % 2 == 0 else list(reversed(runs)):
            seconds[who].append(runs[who](round_))
        rates = {who: tokens / median(s[-1][1:]) for who, s in seconds.items()}
        print(f"  lm round {round_ + 1}: "
              + ", ".join(f"{who} {rate:,.0f} tokens/s" for who, rate in rates.items())
              + f"; loop ÷ fit {rates['loop'] / rates['fit']:.2f}, "
              f"loop ÷ fit one iterator {rates['loop'] / rates['fit_repeat']:.2f}",
              flush=True)  # fmt: skip
    found = {
        who: {
            "tokens_per_second": [tokens / median(epochs_[1:]) for epochs_ in rounds_],
            "epoch_seconds": rounds_,
        }
        for who, rounds_ in seconds.items()
    }
    loop_rates = found["loop"]["tokens_per_second"]
    ratios = {
        peer: [lo / f for lo, f in zip(loop_rates, found[peer]["tokens_per_second"], strict=True)]
        for peer in ("fit", "fit_repeat")
    }
    return {
        "config": CONFIG if preset == folder / "gpt2_preset" else None,
        "preset": str(preset),
        "sequence_length": SEQUENCE_LENGTH,
        "batch_size": BATCH_SIZE,
        "records": records,
        "steps_per_epoch": steps_per_epoch,
        "epochs": epochs,
        "rounds": rounds,
        "runs": found,
        "ratios": ratios,
        "ratio": {peer: median(each) for peer, each in ratios.items()},
    }


def lm_table(lm: dict) -> str:
    config = lm["config"]
    runs = lm["runs"]

    def row(name: str, who: str) -> str:
        rates = runs[who]["tokens_per_second"]
        each = ", ".join(f"{r:,.0f}" for r in rates)
        return f"| {name} | {median(rates):,.0f} ({each}) |"

    def ratio_row(name: str, peer: str) -> str:
        each = ", ".join(f"{r:.2f}" for r in lm["ratios"][peer])
        return f"| {name} (median of the rounds' ratios) | **{lm['ratio'][peer]:.2f}** ({each}) |"

    model = (
        f"a GPT-2 of {config['num_layers']} layers, {config['hidden_dim']} wide "
        f"({config['num_heads']} heads, MLP {config['intermediate_dim']})"
        if config
        else f"the preset {lm['preset']}"
    )
    return "\n".join([
        f"Measured {lm['date']} by `python -m bench --parts lm` on {lm['cpus']} CPUs: {model}, "
        "every weight trained, batch "
        f"{lm['batch_size']} x {lm['sequence_length']} tokens, {lm['records']:,} records "
        f"({lm['steps_per_epoch']} steps an epoch). Tokens/s = steps x batch x sequence length "
        f"over the median of {lm['epochs'] - 1} epochs after a warm-up epoch, in each of "
        f"{lm['rounds']} rounds (the three runs in the opposite order every other round); a "
        "ratio is the median of the rounds' own ratios.",
        "",
        "| | tokens/s (median; each round) |",
        "|---|---|",
        row("loopgen SFT loop (`sums_sft`, rendered)", "loop"),
        row("KerasHub `CausalLM.fit(dataset, epochs=N)`", "fit"),
        row("KerasHub `CausalLM.fit`, one iterator (`dataset.repeat()`, `steps_per_epoch`)",
            "fit_repeat"),
        ratio_row("**loop ÷ fit**", "fit"),
        ratio_row("**loop ÷ fit, one iterator**", "fit_repeat"),
    ])  # fmt: skip
