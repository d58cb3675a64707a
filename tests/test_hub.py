"""Pretrained KerasHub models: a LoRA fine-tune of a text classifier, SFT and DPO of a causal
LM, on tiny BERT and GPT-2 presets the tests save themselves (no network). Resume after SIGKILL
and two replicas against one device are in the matrices of test_faults and test_distributed;
the bad specs in tests/bad_specs/keras_hub_*."""

from __future__ import annotations

import json

import data
import pytest
from helpers import ROOT, render_into, run_preloaded, run_python
from test_runs import trained_example

pytestmark = pytest.mark.slow


@pytest.fixture
def lora_run(shared):
    """reviews_bert_lora trained 2 epochs on its small data (test_runs' run of it)."""
    script, out, _ = trained_example(shared, "reviews_bert_lora")
    return script, out


def hub_check(check: str, *args: str, cwd) -> dict:
    proc = run_preloaded(str(ROOT / "tests" / "hub_checks.py"), check, *args, cwd=cwd)
    return json.loads(proc.stdout.strip().splitlines()[-1])


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


def test_the_export_serves_strings_with_lora_merged_as_the_checkpoint_answers(lora_run):
    script, out = lora_run
    texts = ["the film was superb and moving", "a dull and tedious plot", "the story"]
    result = hub_check("served_against_model", str(script), str(out), json.dumps(texts),
                       cwd=script.parent)  # fmt: skip
    # The adapters merged into the kernels compute what the two projections did (float32
    # rounding), and the model trained on is adapted again after the export.
    assert result["scores_diff"] <= 1e-5 and result["probabilities_diff"] <= 1e-5, result
    assert result["class_ids"] == result["expected_ids"]
    assert result["lora_layers"] == 4, result


def test_sft_loss_is_the_mean_over_the_response_tokens_of_the_batch(tmp_path):
    """The first step's logged loss, from the preset's weights, against the NumPy loss of the
    same batch from the model's logits: the prompts' tokens masked out, the mean taken over
    the response tokens of the whole batch (TRL's)."""
    script = render_into(tmp_path / "train.py", "sums_sft",
                         *data.small_data_overrides("sums_sft", tmp_path),
                         "loop.log_every_steps=1", "data.validation=null")  # fmt: skip
    out = tmp_path / "run"
    run_python(script, "--max-steps", "1", "--output-dir", str(out), cwd=tmp_path)
    result = hub_check("sft_first_loss", str(script), str(out), cwd=tmp_path)
    assert abs(result["logged"] - result["expected"]) <= 1e-5 * result["expected"], result
    # The prompts' tokens would change it: the check tells masked from unmasked.
    assert abs(result["unmasked"] - result["expected"]) > 1e-3, result


def test_dpo_logs_trls_values_computed_as_the_formulas_say(tmp_path):
    """The loss, rewards, margins, accuracies and log-probabilities logged at step 2 (the mean
    of steps 1 and 2) against DPO's formulas in NumPy: the policy as loaded, then with the
    weights after step 1; the reference the preset as loaded; each response's log-probability
    summed over its own tokens."""
    script = render_into(tmp_path / "train.py", "sums_dpo",
                         *data.small_data_overrides("sums_dpo", tmp_path),
                         "loop.log_every_steps=1", "data.validation=null",
                         'checkpoint={"every_steps": 1}', "optimizer.learning_rate=0.05",
                         "training.label_smoothing=0.1")  # fmt: skip
    out = tmp_path / "run"
    run_python(script, "--max-steps", "2", "--output-dir", str(out), cwd=tmp_path)
    result = hub_check("dpo_two_steps", str(script), str(out), cwd=tmp_path)
    logged, expected = result["logged"], result["expected"]
    for key, value in expected.items():
        assert abs(logged[key] - value) <= 1e-5 * max(1.0, abs(value)), (key, result)
    # The policy moved from the reference after one step: its rewards are not zero, so a
    # reference that trained along (rewards 0, loss log 2) would fail above.
    assert abs(result["second"]["rewards/chosen"]) > 1e-4, result


def test_a_causal_lms_export_answers_prompts_as_keras_hub_generates_from_the_checkpoint(tmp_path):
    """SFT trained 4 epochs on sums (all weights: enough to answer something): its export
    takes prompts and returns what KerasHub's generate() (greedy) writes after them with the
    checkpoint's weights."""
    script = render_into(tmp_path / "train.py", "sums_sft",
                         *data.small_data_overrides("sums_sft", tmp_path),
                         "data.validation=null", "optimizer.learning_rate=0.01",
                         "model.lora_rank=null", "export.saved_model=true")  # fmt: skip
    out = tmp_path / "run"
    run_python(script, "--epochs", "4", "--output-dir", str(out), cwd=tmp_path)
    prompts = ["3 + 4 =", "9 + 9 =", "0 + 2 ="]
    result = hub_check("served_completions", str(script), str(out), json.dumps(prompts),
                       cwd=tmp_path)  # fmt: skip
    assert result["served"] == result["expected"], result
    assert any(completion.strip() for completion in result["served"]), result
