"""Every generated script runs end to end on small data the tests make, in a process of its own
(mnist_mlp in a new interpreter): it trains, writes checkpoints, TensorBoard events, a metrics
log and an export."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from data import runnable, small_data_overrides
from helpers import (
    ACTING,
    ROOT,
    render_into,
    run_fresh,
    run_python,
    saved_models,
    serving_matches,
    tf_check,
)

pytestmark = pytest.mark.slow


# Reinforcement learning runs no epochs: test_rl runs those end to end, in a fresh process.
EXAMPLES = sorted(p.stem for p in (ROOT / "examples").glob("*.py") if p.stem not in ACTING)


PACKED = ["training.packing=true", "model.sequence_length=32"]
"""SFT's packing in rows of 32 tokens: 4 sums (7 or 8 tokens each, start and end included) to
a row, where the examples' 12 would hold one."""
LM_RUNS = {
    "sums_sft": ("sums_sft", ["data.batch_size=16"]),
    "sums_sft_packed": ("sums_sft", ["data.batch_size=16", *PACKED]),
    # A checkpoint every step and label smoothing: test_hub's formulas of its first two steps.
    "sums_dpo": (
        "sums_dpo",
        [
            "data.batch_size=16",
            'checkpoint={"every_steps": 1, "keep": 50}',
            "training.label_smoothing=0.1",
        ],
    ),
    "sums_grpo": ("sums_grpo", ["data.batch_size=8"]),
}
"""The causal LM ways' runs (their example, and what they set beyond its small data), which
the LM tests share: test_hub replays them step by step and runs --fast-dev-run on SFT's,
test_faults kills and resumes their scripts and compares with them, the twins on two replicas
(test_distributed's, test_packing's) compare with their checkpoints, test_packing computes the
packed run's first loss. Every step logged, a checkpoint every 2 steps, all kept, at a
learning rate at which LoRA's adapters move the weights each step (each step's values differ
from the preset's), 6 to 8 steps an epoch; --deterministic, as the matrices run. No export:
SFT's, DPO's and GRPO's are one code (test_hub); test_grpo's run serves GRPO's against
KerasHub's generate() (and --fast-dev-run serves it), test_distributed's SFT twin exports it
from two replicas."""
LM_RUN_OVERRIDES = ["loop.log_every_steps=1", 'checkpoint={"every_steps": 2, "keep": 50}',
                    "optimizer.learning_rate=0.05", "export.saved_model=false"]  # fmt: skip
UNEXPORTED = {"sums_sft", "sums_dpo", "sums_grpo"}


def trained_example(shared, name: str) -> tuple[Path, Path, str]:
    """The example (or LM_RUNS' run of that name) rendered on its small data and trained 2
    epochs, once for the whole run (test_controls, test_hub, test_faults, test_distributed and
    test_packing read the same runs): its script, output directory and stdout."""
    example, lm = LM_RUNS.get(name, (name, None))

    def make(folder: Path) -> None:
        overrides = small_data_overrides(example, folder)
        if lm is not None:
            overrides += [*LM_RUN_OVERRIDES, *lm]
        (folder / "overrides.json").write_text(json.dumps(overrides))
        script = render_into(folder / "train.py", example, *overrides)
        # One in a new interpreter, as users run it; the others, as the other tests do,
        # forked from one that has imported TensorFlow (3 s sooner).
        run = run_fresh if example == "mnist_mlp" else run_python
        flags = ["--epochs", "2", *(["--deterministic"] if lm is not None else [])]
        proc = run(runnable(example, script), *flags, "--output-dir", str(folder / "run"),
                   cwd=folder)  # fmt: skip
        (folder / "stdout.txt").write_text(proc.stdout)

    folder = shared(f"trained-{name}", make)
    return folder / "train.py", folder / "run", (folder / "stdout.txt").read_text()


def trained_overrides(shared, name: str) -> list[str]:
    """The --set overrides trained_example's script was rendered with (its data and preset in
    its shared folder, which a twin reads too)."""
    script, _, _ = trained_example(shared, name)
    return json.loads((script.parent / "overrides.json").read_text())


@pytest.mark.parametrize("example", EXAMPLES)
def test_example_trains_end_to_end(example, shared, tmp_path):
    script, out, stdout = trained_example(shared, example)

    assert "Epoch 2/2" in stdout
    checkpoints = sorted(p.name for p in (out / "checkpoints").glob("ckpt-*.index"))
    assert checkpoints, "no checkpoint written"
    gan = "gan" in example
    source = script.read_text()
    if example in UNEXPORTED:
        assert "\ndef export(" not in source and not (out / "export").exists()
    else:
        exported = saved_models(out / "export", script)
        assert all((saved / "saved_model.pb").is_file() for saved in exported), exported
    # A causal LM's export answers prompts with text: test_grpo checks it against generate().
    if "def serving_function(" in source and 'name="prompts"' not in source:
        assert_serves_raw_examples(script, out, tmp_path)

    records = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    loss = "generator_loss" if gan else "loss"
    steps = [r["step"] for r in records if loss in r]
    assert steps == sorted(steps) and steps[-1] == 2 * steps_per_epoch(records, loss)
    # A Wasserstein generator's loss is minus the critic's score of its images, GRPO's minus
    # the advantages' mean (its groups' rewards against their means): any sign.
    low = -math.inf if "wgan" in example or "grpo" in example else 0
    assert all(r[loss] == r[loss] and r[loss] > low for r in records if loss in r)

    train_logs, validation_logs = str(out / "logs" / "train"), str(out / "logs" / "validation")
    logged = tf_check("scalar_tags_of", train_logs, validation_logs, cwd=tmp_path)
    tags = logged[train_logs]
    rates = {"generator_learning_rate", "discriminator_learning_rate"} if gan else {"learning_rate"}
    assert {loss, *rates} <= set(tags), tags
    if gan:  # sample images after every epoch
        assert tags.get("samples") == 2, tags
    if (out / "logs" / "validation").exists():
        val_tags = logged[validation_logs]
        assert val_tags.get("loss") == 2, val_tags  # one validation pass per epoch
        assert any("val_loss" in r for r in records)


def assert_serves_raw_examples(script, out, cwd):
    """The run's model to serve, fed raw training examples in a process of its own, answers
    what the script's network answers on them as the training pipeline prepares them."""
    served = serving_matches(script, out, cwd)
    assert served["scores"] <= 1e-6, served
    if "RESCALE = " in script.read_text():
        # The check sees a preprocessing the export would leave out.
        assert served["unprepared"] > 1e-3, served
    if "probabilities" in served:  # a classifier (a multi-task network: its worst head)
        assert served["probabilities"] <= 1e-6 and served["class_ids"], served
    if "class_names" in served["outputs"]:
        assert served["class_names"], served
    return served


def steps_per_epoch(records: list[dict], loss: str = "loss") -> int:
    first_epoch = [r["step"] for r in records if r["epoch"] == 1 and loss in r]
    return max(first_epoch)
