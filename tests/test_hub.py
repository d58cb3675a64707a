"""Pretrained KerasHub models: a LoRA fine-tune of a text classifier, SFT and DPO of a causal
LM, on tiny BERT and Llama presets the tests save themselves (no network); and the guarantees
of every loopgen script for SFT and DPO runs: `replay --step N` (a healthy step's values as
logged, a diverged run to a report), --fast-dev-run, a sweep of their fields. Resume after
SIGKILL and two replicas against one device are in the matrices of test_faults and
test_distributed; the bad specs in tests/bad_specs/keras_hub_*."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import data
import pytest
from helpers import ROOT, records, render_into, run_preloaded, run_python, script_env, tree
from test_grpo import exported_grpo_run
from test_runs import trained_example


@pytest.fixture
def lora_run(shared):
    """reviews_bert_lora trained 2 epochs on its small data (test_runs' run of it)."""
    script, out, _ = trained_example(shared, "reviews_bert_lora")
    return script, out


def hub_check(check: str, *args: str, cwd) -> dict:
    proc = run_preloaded(str(ROOT / "tests" / "hub_checks.py"), check, *args, cwd=cwd)
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.slow
def test_lora_trains_the_adapters_and_the_head_and_leaves_the_base_kernels_as_loaded(lora_run):
    script, out = lora_run
    result = hub_check("lora", str(script), str(out), cwd=script.parent)
    trainable = result["trainable"]
    # Two layers, each with an adapted query and value (A, B and the projection's bias), and
    # the head's kernel and bias: nothing else of the backbone trains.
    adapters = [p for p in trainable if "lora_kernel" in p]
    assert len(adapters) == 2 * 2 * 2, trainable
    head = {p for p in trainable if p.startswith("logits/")}
    assert head == {"logits/kernel", "logits/bias"}, trainable
    assert all("lora_kernel" in p or p.endswith("/bias") for p in set(trainable) - head), trainable
    assert result["trainable_count"] < result["total_count"] / 5, result
    # Every frozen weight of the backbone (embeddings, kernels, norms) bit for bit as loaded
    # from the preset; the adapters moved from B = 0.
    assert result["base_checked"] > 20 and len(result["base_same"]) == result["base_checked"]
    assert result["adapter_b_norm"] > 0, result


@pytest.mark.slow
def test_the_export_serves_strings_with_lora_merged_as_the_checkpoint_answers(lora_run, tmp_path):
    script, out = lora_run
    texts = ["the film was superb and moving", "a dull and tedious plot", "the story"]
    result = hub_check("served_against_model", str(script), str(out), json.dumps(texts),
                       cwd=script.parent)  # fmt: skip
    # The adapters merged into the kernels compute what the two projections did (float32
    # rounding), and the model trained on is adapted again after the export.
    assert result["scores_diff"] <= 1e-5 and result["probabilities_diff"] <= 1e-5, result
    assert result["class_ids"] == result["expected_ids"]
    assert result["lora_layers"] == 4, result
    # The trained adapters change these scores by less than the tolerance (2.7e-6): the
    # script's export() again, of the adapters set to sizable values, where serving the base
    # kernels would be off by their effect.
    result = hub_check("served_with_sizable_adapters", str(script), str(out), json.dumps(texts),
                       str(tmp_path / "export"), cwd=script.parent)  # fmt: skip
    assert result["adapters_effect"] > 1e-3 and result["lora_layers"] == 4, result
    assert result["scores_diff"] <= 1e-5 and result["after_diff"] == 0, result


@pytest.mark.slow
def test_sft_loss_is_the_mean_over_the_response_tokens_of_the_batch(shared):
    """The first step's logged loss, from the preset's weights, against the NumPy loss of the
    same batch from the model's logits: the prompts' tokens masked out, the mean taken over
    the response tokens of the whole batch (TRL's). (test_runs' SFT run.)"""
    script, out = lm_run(shared, "sums_sft")
    result = hub_check("sft_first_loss", str(script), str(out), cwd=script.parent)
    assert abs(result["logged"] - result["expected"]) <= 1e-5 * result["expected"], result
    # The prompts' tokens would change it: the check tells masked from unmasked.
    assert abs(result["unmasked"] - result["expected"]) > 1e-3, result


@pytest.mark.slow
def test_dpo_logs_trls_values_computed_as_the_formulas_say(shared):
    """The loss, rewards, margins, accuracies and log-probabilities logged at step 2 (the mean
    of steps 1 and 2) against DPO's formulas in NumPy: the policy as loaded, then with the
    weights after step 1; the reference the preset as loaded; each response's log-probability
    summed over its own tokens; label smoothing 0.1. (test_runs' DPO run.)"""
    script, out = lm_run(shared, "sums_dpo")
    result = hub_check("dpo_two_steps", str(script), str(out), cwd=script.parent)
    logged, expected = result["logged"], result["expected"]
    for key, value in expected.items():
        assert abs(logged[key] - value) <= 1e-5 * max(1.0, abs(value)), (key, result)
    # The policy moved from the reference after one step: its rewards are not zero, so a
    # reference that trained along (rewards 0, loss log 2) would fail above.
    assert abs(result["second"]["rewards/chosen"]) > 1e-4, result


WAYS = ["sums_sft", "sums_dpo"]
SAMPLING = [*WAYS, "sums_grpo"]
"""With GRPO, whose replayed step samples its completions again from its step and rows."""
RUN_STAGES = ["sums_sft", "sums_grpo"]
"""--fast-dev-run's stages are the script's own machinery, whatever the way's step: SFT's
(with validation; test_runs' run) and GRPO's (its step samples; test_grpo's run, whose export,
SFT's and DPO's code, is served). DPO's step is replay's and the matrices'."""

LOGGED = {
    "sums_sft": ["loss", "mean_token_accuracy"],
    "sums_dpo": ["loss", "rewards/chosen", "rewards/rejected", "rewards/accuracies",
                 "rewards/margins", "logps/chosen", "logps/rejected"],
    "sums_grpo": ["loss", "reward", "reward_std", "frac_reward_zero_std",
                  "completions/mean_length", "kl", "clip_ratio/region_mean"],
}  # fmt: skip
"""The training values each way logs (TRL's names)."""


def lm_run(shared, example: str) -> tuple[Path, Path]:
    """`example` (LoRA of rank 8) trained 2 epochs on its small data, every step logged, a
    checkpoint every 2 steps: test_runs' run of it, made once for the whole run."""
    script, out, _ = trained_example(shared, example)
    return script, out


def printed_values(text: str) -> dict[str, float]:
    """`loss: 0.693  rewards/chosen: -1.2e-05` as {name: value}."""
    return {name: float(value) for name, value in re.findall(r"(\S+): (\S+)", text)}


def as_logged(proc) -> dict[str, float]:
    found = re.search(r"^  as logged \([^)]*\): (.*)$", proc.stdout, re.M)
    assert found, proc.stdout[-3000:]
    return printed_values(found[1])


def table(proc) -> list[tuple[str, float, str]]:
    """replay's table: (layer, weight norm, gradient norm) of each row."""
    rows = re.findall(r"^  (model/\S+) +(\S+) +(\S+) +\S+$", proc.stdout, re.M)
    return [(layer, float(norm), gradient) for layer, norm, gradient in rows]


def assert_values(printed: dict, logged: dict, names: list[str]) -> None:
    assert set(names) <= printed.keys(), (printed, names)
    for name in names:
        assert printed[name] == pytest.approx(logged[name], rel=1e-6, abs=1e-7), (name, printed)


@pytest.mark.slow
@pytest.mark.parametrize("example", SAMPLING)
def test_replay_of_an_lm_step_prints_the_values_the_run_logged(shared, example):
    """replay --step 3 (from ckpt-2) prints every training value the run logged at that step
    within 1e-6 (the epoch's running means). SFT's also --step 2 (from the preset as loaded,
    LoRA's adapters as the seed makes them; step 1 before it), and step 1's own values; its
    table has a row for each backbone layer whose adapters train (the backbone's layers are
    frozen, their adapters not), each weight norm the one after the step: for step 2, ckpt-2's,
    from the model's own trainable variables. (The start from the preset and the table are
    one code for the three ways, LoRA on the same causal LM: DPO's and GRPO's step differ, and
    --step 3 replays it.) The run's directory is only read."""
    script, out = lm_run(shared, example)
    names = LOGGED[example]
    logged = {r["step"]: r for r in records(out) if "steps_per_second" in r}
    before = tree(out)

    proc = run_python(script, "replay", "--step", "3", "--output-dir", str(out),
                      cwd=script.parent)  # fmt: skip
    assert f"Replaying step 3 of {out} from ckpt-2 (step 2)" in proc.stdout, proc.stdout[-3000:]
    assert "Every op's outputs were finite." in proc.stdout
    assert_values(as_logged(proc), logged[3], names)
    if example != "sums_sft":
        assert tree(out) == before
        return

    proc = run_python(script, "replay", "--step", "2", "--output-dir", str(out),
                      cwd=script.parent)  # fmt: skip
    assert "from the initial weights" in proc.stdout, proc.stdout[-3000:]
    assert_values(as_logged(proc), logged[2], names)
    first = re.search(r"^Step 1: (.*)$", proc.stdout, re.M)
    assert first, proc.stdout[-3000:]
    assert_values(printed_values(first[1]), logged[1], names)  # the first of its epoch

    rows = table(proc)
    expected = hub_check("trainable_norms", str(script), str(out / "checkpoints" / "ckpt-2"),
                         cwd=script.parent)  # fmt: skip
    assert sorted(expected) == ["transformer_layer_0", "transformer_layer_1"], expected
    assert [layer for layer, _, _ in rows] == [f"model/{layer}" for layer in expected], rows
    for layer, norm, gradient in rows:
        assert norm == pytest.approx(expected[layer.removeprefix("model/")], rel=1e-5), rows
        assert float(gradient) > 0, rows
    assert tree(out) == before


def failing(script: Path, *args: str, cwd: Path):
    """Runs a script that must stop with a message: exit 1, no traceback."""
    proc = run_preloaded(str(script), *args, cwd=cwd, check=False)
    assert proc.returncode == 1, (proc.returncode, proc.stdout[-2000:], proc.stderr[-3000:])
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    return proc


@pytest.mark.slow
@pytest.mark.parametrize("example", ["sums_sft"])  # DPO's step diverges alike (its table too)
def test_a_diverged_lm_run_replays_to_a_report(tmp_path, example):
    """Every weight trained (LoRA off: adapters at a learning rate of 1e30 left this model's
    loss finite) at 1e30: the loss is NaN at some step k, the run stops naming the replay
    command, and `replay --step k` reports, exit 1 and no traceback: the layer whose output
    first was not finite, each layer's weight norm once (the causal LM's token embedding is
    its backbone's: one row, not two), finite in float64. The run's directory is only
    read."""
    script = render_into(tmp_path / "train.py", example,
                         *data.small_data_overrides(example, tmp_path), "data.validation=null",
                         "loop.log_every_steps=1", 'checkpoint={"every_steps": 1}',
                         "model.lora_rank=null", "optimizer.learning_rate=1e30",
                         "export.saved_model=false")  # fmt: skip
    out = tmp_path / "run"
    proc = failing(script, "--max-steps", "6", "--output-dir", str(out), cwd=tmp_path)
    end = json.loads((out / "runs.jsonl").read_text().splitlines()[-1])
    assert end["exit"] == "nan", end
    k = end["nan_step"]
    assert f"replay --step {k} --output-dir {out}" in proc.stderr, proc.stderr[-2000:]
    before = tree(out)

    replayed = failing(script, "replay", "--step", str(k), "--output-dir", str(out),
                       cwd=tmp_path)  # fmt: skip
    assert re.search(r"^The first NaN or Inf: layer \w+ \(\w+\): ", replayed.stdout, re.M), (
        replayed.stdout[-3000:]
    )
    # Run again unchecked from the state before it, the step's loss is printed: NaN.
    assert re.search(r"^  loss: nan\n(.*\n)*  \(run again unchecked: ", replayed.stdout, re.M), (
        replayed.stdout[-3000:]
    )
    rows = table(replayed)
    layers = [layer for layer, _, _ in rows]
    assert "model/transformer_layer_0" in layers and layers.count("model/token_embedding") == 1
    assert len(set(layers)) == len(layers), layers
    assert all(1e20 < norm < float("inf") for _, norm, _ in rows), rows
    assert tree(out) == before


@pytest.mark.slow
@pytest.mark.parametrize("example", RUN_STAGES)
def test_fast_dev_run_of_an_lm_script_runs_every_stage_and_leaves_the_run_alone(
    shared, tmp_path, example
):
    """--fast-dev-run of an SFT and a GRPO script: each stage says OK (training, resuming;
    evaluating where the script validates, SFT's; serving the export where the script
    exports, GRPO's), in a directory of its own that it removes; it exits 0, and the run
    directory it was given (a copy of a real run's) is byte for byte as it was."""
    grpo = example == "sums_grpo"
    script, trained = exported_grpo_run(shared) if grpo else lm_run(shared, example)
    out = tmp_path / "run"
    shutil.copytree(trained, out, ignore=shutil.ignore_patterns("replay-*"))
    before = tree(out)
    proc = run_python(script, "--fast-dev-run", "--output-dir", str(out), cwd=tmp_path)
    stages = re.findall(r"^--fast-dev-run: (.+): OK \(", proc.stdout, re.M)
    wanted = ["train 2 steps", "resume from the checkpoint"]
    wanted += ["serve the export"] if grpo else ["evaluate the checkpoint"]  # no validation
    for stage in wanted:
        assert any(found.startswith(stage) for found in stages), (stage, stages)
    assert tree(out) == before
    scratch = re.search(r"every stage ran \(in (\S+), removed\)", proc.stdout)
    assert scratch and not Path(scratch[1]).exists(), proc.stdout[-3000:]


@pytest.mark.parametrize("variant", ["", "mirrored", "multi_worker", "tpu"])
def test_sft_dpo_and_grpo_render_one_export(variant):
    """A causal LM's export is one code whatever its way, in each strategy's script: test_grpo's
    run proves that the export answers as generate() does, and test_distributed's SFT twin
    that it is written from two replicas, for SFT and DPO too only while they render it
    alike."""

    def export_code(example: str) -> str:
        source = (ROOT / "generated" / variant / f"{example}.py").read_text()
        start = source.index("\ndef export(")
        return source[start : source.index("\n# --- ", start)]

    codes = {example: export_code(example) for example in SAMPLING}
    assert "def serving_function(" in codes["sums_grpo"] and "generate_step" in codes["sums_grpo"]
    assert len(set(codes.values())) == 1, [len(code) for code in codes.values()]


EXAMPLE_SWEEP = ROOT / "examples" / "sweeps" / "sums_dpo_beta.py"


def test_the_lm_example_sweep_checks_and_renders_its_trials_offline(tmp_path):
    """examples/sweeps/sums_dpo_beta.py is checked against sums_dpo (its Llama preset by the
    catalog, no download) and its trials render, in a process that imports neither
    TensorFlow nor KerasHub: each trial's script sets its beta, LoRA rank and learning
    rate."""
    code = f"""
import json, sys
from pathlib import Path
from loopgen.render import render_script
from loopgen.sweep.space import load_sweep

loaded = load_sweep(Path({str(EXAMPLE_SWEEP)!r}))
values = [*loaded.sweep.first, {{"training.beta": 0.5, "model.lora_rank": 16,
                                  "optimizer.learning_rate": 1e-3}}]
scripts = [render_script(loaded.trial_spec(v), spec_file="sums_dpo.py",
                         overrides=loaded.overrides(v)) for v in values]
print(json.dumps({{"objective": loaded.sweep.objective, "per_epoch": loaded.per_epoch,
                  "values": values, "scripts": scripts,
                  "imported": sorted({{"tensorflow", "keras_hub", "keras"}} & set(sys.modules))}}))
"""
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=tmp_path, env=script_env(), timeout=300)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["imported"] == [], result["imported"]
    # Judged by a value beta does not scale, at each epoch's validation.
    assert result["objective"] == "val_rewards/accuracies" and result["per_epoch"]
    assert result["values"][0] == {
        "training.beta": 0.1,
        "model.lora_rank": 8,
        "optimizer.learning_rate": 5e-5,
    }  # the example's own
    for values, script in zip(result["values"], result["scripts"], strict=True):
        assert f"\nBETA = {values['training.beta']}\n" in script
        assert f"\nLORA_RANK = {values['model.lora_rank']}\n" in script
        assert f"Adam(learning_rate={values['optimizer.learning_rate']})" in script
        assert 'PRESET = "llama3.2_instruct_1b"' in script


@pytest.mark.slow
def test_a_sweep_of_dpos_beta_lora_rank_and_learning_rate_runs_and_scores_each_trial(tmp_path):
    """The example sweep (sums_dpo_beta) over sums_dpo on the tiny Llama and 16 preference
    pairs, 2 trials of one epoch (2 steps) each: each trial's script has its values, runs to
    the end and scores the last val_rewards/accuracies its own metrics.jsonl logged; the
    sweep says each trial's value and ends with the table and the best trial's spec."""
    spec = data.small_data_overrides("sums_dpo", tmp_path)
    spec[0] = f"data.train.path={data.sum_pairs_jsonl(tmp_path / 'pairs.jsonl', 16)}"
    spec += ["loop.epochs=1", "export.saved_model=false"]
    example = ROOT / "examples" / "sums_dpo.py"
    (tmp_path / "sums_dpo.py").write_text(
        "from loopgen.dsl.loader import load_spec\n\n"
        f"spec = load_spec({str(example)!r}, 'spec', {spec!r})\n"
    )
    text = EXAMPLE_SWEEP.read_text()
    for old, new in (('spec="../sums_dpo.py"', 'spec="sums_dpo.py"'), ("trials=8", "trials=2")):
        assert old in text, old
        text = text.replace(old, new)
    (tmp_path / "sweep.py").write_text(text)
    command = [sys.executable, "-m", "loopgen", "sweep", "sweep.py"]
    proc = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=1200,
                          env=script_env())  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]

    import optuna
    from optuna.storages import JournalStorage
    from optuna.storages.journal import JournalFileBackend

    journal = JournalFileBackend(str(tmp_path / "sweeps" / "sweep" / "study.journal"))
    trials = optuna.load_study(study_name="sweep", storage=JournalStorage(journal)).get_trials()
    assert [(t.number, t.state.name) for t in trials] == [(0, "COMPLETE"), (1, "COMPLETE")]
    for trial in trials:
        folder = tmp_path / "sweeps" / "sweep" / "trials" / f"{trial.number:03d}"
        script = (folder / "train.py").read_text()
        params = trial.params
        assert f"\nBETA = {params['training.beta']}\n" in script
        assert f"\nLORA_RANK = {params['model.lora_rank']}\n" in script
        assert f"Adam(learning_rate={params['optimizer.learning_rate']})" in script
        logged = [r for r in records(folder / "run") if "val_rewards/accuracies" in r]
        assert logged and logged[-1]["epoch"] == 1, logged
        assert trial.value == pytest.approx(logged[-1]["val_rewards/accuracies"])
        said = f"trial {trial.number}: val_rewards/accuracies {trial.value:g} at epoch 1"
        assert said in proc.stdout, proc.stdout[-3000:]
    assert trials[0].params == {"training.beta": 0.1, "model.lora_rank": 8,
                                "optimizer.learning_rate": 5e-5}  # fmt: skip
    assert "Best: trial " in proc.stdout and (tmp_path / "sweeps/sweep/best_spec.py").exists()


BPE_EAGER_AND_TRACED = """
import json

import keras_hub
import tensorflow as tf

# A byte-level BPE of a few symbols, each alone and after a space (as bench/lm.py's GPT-2),
# with two merges more: "q" ":" and "2" "4".
symbols = list("0123456789:+=?qa")
vocabulary = {"<|endoftext|>": 0, "\\u0120": 1}
for symbol in symbols:
    vocabulary[symbol] = len(vocabulary)
    vocabulary["\\u0120" + symbol] = len(vocabulary)
merges = ["\\u0120 " + symbol for symbol in symbols] + ["q :", "2 4"]
vocabulary["q:"], vocabulary["24"] = len(vocabulary), len(vocabulary) + 1
tokenizer = keras_hub.models.GPT2Tokenizer(vocabulary=vocabulary, merges=merges)
names = {i: token for token, i in vocabulary.items()}
found = {}
for text in ["q:245 a:", "3 + 4 ="]:
    eager = tokenizer(tf.constant([text]))
    eager = eager if isinstance(eager, list) else eager.to_list()
    traced = tf.function(tokenizer)(tf.constant([text])).to_list()
    found[text] = [[names[i] for i in ids[0]] for ids in (eager, traced)]
print(json.dumps(found))
"""


@pytest.mark.slow
def test_kerashubs_byte_pair_tokenizer_splits_a_string_otherwise_eagerly_than_traced(tmp_path):
    """What the language-models guide says of the export and `generate()`: KerasHub's
    byte-pair tokenizer (GPT-2's, Llama 3's) gives other ids for "q:245 a:" called in Python
    than traced, where the export and the training pipeline call it (the traced call leaves the
    merge "q" ":" out), and the same for a sum's prompt. The day KerasHub makes them agree, this
    fails, and the guide's caveat can go."""
    proc = run_preloaded("-c", BPE_EAGER_AND_TRACED, cwd=tmp_path)
    found = json.loads(proc.stdout.strip().splitlines()[-1])
    eager, traced = found["q:245 a:"]
    assert eager == ["q:", "24", "5", "\u0120a", ":"], found
    assert traced == ["q", ":", "24", "5", "\u0120a", ":"], found
    eager, traced = found["3 + 4 ="]
    assert eager == traced, found


def symbols(count: int, start: int = 0) -> str:
    """`count` tokens of the tiny Llama's vocabulary, each a digit after a space (each symbol is
    one token: the reference counts tokens as the spaced symbols, not with the tokenizer)."""
    return "".join(f" {(start + i) % 10}" for i in range(count))


def lm_script(tmp_path: Path, example: str, rows: list[dict]) -> Path:
    """`example` on the tiny Llama with model.sequence_length=12 (the packer's 13 tokens: a
    record keeps 11 of its own besides the start and end tokens) and `rows` as its training
    records, no validation, no export."""
    path = tmp_path / "records.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    overrides = [o for o in data.small_data_overrides(example, tmp_path)
                 if not o.startswith("data.train.path=")]  # fmt: skip
    return render_into(tmp_path / "train.py", example, *overrides, f"data.train.path={path}",
                       "data.validation=null", "export.saved_model=false", "data.batch_size=4",
                       cwd=tmp_path)  # fmt: skip


@pytest.mark.slow
def test_records_that_sequence_length_cuts_are_counted_before_sft_trains(tmp_path):
    """SFT records of 4 prompt tokens and 1 to 9 response tokens, with sequence_length 12: a
    record keeps 11 tokens of its own, so those of 8 and 9 response tokens lose their ends but
    keep a response token, and the script says how many, once, before its first step: 2 of 9
    (the one of exactly 11 tokens is whole)."""
    rows = [{"prompt": "1 + 2 =", "completion": symbols(n)} for n in range(1, 10)]
    script = lm_script(tmp_path, "sums_sft", rows)
    proc = run_preloaded(str(script), "--max-steps", "1", "--output-dir", str(tmp_path / "run"),
                         cwd=tmp_path)  # fmt: skip
    said = [line for line in proc.stdout.splitlines() if "lost their ends" in line]
    assert said == [
        f"{tmp_path / 'records.jsonl'}: 2 of 9 records longer than model.sequence_length=12 "
        "tokens lost their ends (the packer keeps each record's start and cuts its end); raise "
        "model.sequence_length to keep them whole"
    ], proc.stdout[-3000:]
    said_at = proc.stdout.find("lost their ends")
    assert 0 <= said_at < proc.stdout.find("Epoch 1/1"), proc.stdout[-3000:]


@pytest.mark.parametrize(
    ("example", "field"),
    [("sums_sft", "response"), ("sums_dpo", "chosen"), ("sums_grpo", "prompt")],
)
def test_a_record_whose_prompt_leaves_its_response_no_token_is_refused(tmp_path, example, field):
    """A prompt of 11 tokens (with sequence_length 12, all a record keeps besides its start and
    end tokens; for GRPO's generation, all but the start token's place less one) among
    records that fit: SFT's and DPO's response would train nothing but the end token after
    the cut prompt, GRPO's completions would be empty. One message naming the field, the
    record (the first of two) and the fix, exit 1, no traceback, nothing trained; a prompt of
    10 tokens before them is not refused."""
    long_prompt = symbols(11)
    short = {"prompt": "1 + 2 =", "completion": " 3", "chosen": " 3", "rejected": " 4"}
    rows = [short, {**short, "prompt": symbols(10), "completion": " 5"}, short,
            {**short, "prompt": long_prompt}, short, {**short, "prompt": long_prompt}]  # fmt: skip
    if example == "sums_dpo":
        rows = [{k: v for k, v in row.items() if k != "completion"} for row in rows]
    script = lm_script(tmp_path, example, rows)
    proc = failing(script, "--output-dir", str(tmp_path / "run"), cwd=tmp_path)
    path = tmp_path / "records.jsonl"
    if example == "sums_grpo":
        wanted = (f"data.train.prompt: record 4 of {path} leaves no room for a completion: its "
                  "prompt has 11 tokens, and model.sequence_length=12 holds 11 besides the start "
                  "token (2 record(s) so); raise model.sequence_length or shorten the "
                  "prompts")  # fmt: skip
    else:
        what = "response" if example == "sums_sft" else "chosen response"
        wanted = (f"data.train.{field}: record 4 of {path} keeps no token of its {what}: its "
                  "prompt has 11 tokens, and model.sequence_length=12 holds 11 besides the start "
                  "and end tokens (2 record(s) so); raise model.sequence_length or shorten the "
                  "prompts")  # fmt: skip
    assert wanted in proc.stderr, proc.stderr[-3000:]
    assert "lost their ends" not in proc.stdout
    assert not any((tmp_path / "run" / "checkpoints").glob("ckpt-*"))
