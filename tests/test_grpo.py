"""GRPO of a causal LM (training=GRPO()) on the tiny Llama preset the tests save themselves
and sums as prompts: its formulas against NumPy, its completions sampled again from the step
and the place in the batch, its reward rising, and bad reward functions. Resume after SIGKILL
and two replicas against one device are in the matrices of test_faults and test_distributed;
its pitfalls' mutants in tests/mutants.py."""

from __future__ import annotations

import json
import re
from pathlib import Path

import data
import pytest
from helpers import ROOT, render_into, run_cli, run_preloaded, run_python

pytestmark = pytest.mark.slow

RECORDER = '''"""The example's rewards (the answer's digits, and whether it is the sum),
recording what they scored for the test's NumPy reference."""

import json
import re

from rewards.sums import correct, digits


def recorded(prompts, completions, **kwargs):
    rewards = [a + b for a, b in zip(digits(prompts, completions), correct(prompts, completions))]
    with open("completions.jsonl", "a") as file:
        record = {"prompts": list(prompts), "completions": list(completions), "rewards": rewards}
        file.write(json.dumps(record) + "\\n")
    return rewards
'''


def grpo_check(check: str, *args: str, cwd) -> dict:
    proc = run_preloaded(str(ROOT / "tests" / "grpo_checks.py"), check, *args, cwd=cwd)
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.fixture
def grpo_run(shared):
    return exported_grpo_run(shared)


def exported_grpo_run(shared) -> tuple[Path, Path]:
    """sums_grpo on the tiny Llama, all its weights (no LoRA), 2 epochs of 8 steps, with the
    example's reward functions (recorded), every step logged and checkpointed, and its
    export; trained once for the whole run (test_hub's --fast-dev-run serves its export)."""

    def make(folder):
        (folder / "recorder.py").write_text(RECORDER)
        script = render_into(folder / "train.py", "sums_grpo",
                             *data.small_data_overrides("sums_grpo", folder), "data.batch_size=8",
                             'training.reward_funcs=["recorder:recorded"]', "training.beta=0.1",
                             "model.lora_rank=null", "optimizer.learning_rate=0.01",
                             "loop.log_every_steps=1",
                             'checkpoint={"every_steps": 1, "keep": 30}', cwd=folder)  # fmt: skip
        run_python(script, "--epochs", "2", "--output-dir", str(folder / "run"), cwd=folder)

    folder = shared("grpo", make)
    return folder / "train.py", folder / "run"


def test_grpo_logs_trls_values_computed_as_the_formulas_say(grpo_run):
    """Two steps' logged loss, rewards, their groups' spread, the completions' lengths and the
    KL to the reference, against NumPy: the completions sampled again by the check itself
    from the step's and the row's seeds, each to its end token (counted in its length) or
    max_completion_length's cut (the same texts the reward function was given), advantages
    normalized within each group, the KL (k3) to the preset loaded anew."""
    script, out = grpo_run
    result = grpo_check("grpo_two_steps", str(script), str(out), cwd=script.parent)
    assert result["same_completions"] == [True, True], result
    logged, expected = result["logged"], result["expected"]
    for key, value in expected.items():
        assert abs(logged[key] - value) <= 1e-5 * max(1.0, abs(value)), (key, result)
    # The policy moved from the reference after step 1: KL against the policy itself (0)
    # would fail above.
    assert result["second_kl"] > 1e-6, result
    # Groups whose rewards differ, so the per-group normalization is what the loss used.
    assert 0 < expected["reward_std"] and expected["frac_reward_zero_std"] < 1, result


def test_grpo_advantages_and_clipped_objective_equal_numpy(tmp_path):
    """The script's group advantages (sample std, + 1e-4) and token losses (the smaller of
    the ratio and the clipped ratio times the advantage, plus beta k3) on made-up values
    where ratios fall on both sides of [1 - epsilon, 1 + epsilon_high]: an epsilon other than
    the default 0.2, so a lower clip fixed at 0.2 fails."""
    script = render_into(tmp_path / "train.py", "sums_grpo",
                         *data.small_data_overrides("sums_grpo", tmp_path),
                         "training.epsilon=0.1", "training.epsilon_high=0.28",
                         cwd=tmp_path)  # fmt: skip
    result = grpo_check("formulas", str(script), "0.1", "0.28", cwd=tmp_path)
    assert result["advantages_diff"] <= 1e-3 and result["std_diff"] <= 1e-4, result
    assert result["losses_diff"] <= 1e-5, result
    # Ratios outside the range, some clipped (those where clipping changes the objective).
    assert result["outside_share"] > 0.2 and result["clipped_share"] > 0.05, result
    assert result["clipped_same"], result


def test_grpo_raises_the_mean_reward_and_exports_a_model_that_answers_prompts(grpo_run):
    script, out = grpo_run
    logged = [json.loads(line) for line in open(out / "metrics.jsonl")]
    rewards = {r["step"]: r["reward"] for r in logged if "reward" in r}
    assert len(rewards) == 16, logged
    # The first step's mean reward against the last epoch's: the model learnt to write
    # numbers (the logged values are each epoch's running means).
    assert rewards[16] > rewards[1] + 0.1, rewards
    assert all("kl" in r and r["kl"] >= 0 for r in logged if "reward" in r), logged
    # Its export takes prompts and answers them as KerasHub's generate() does (greedy) from
    # the checkpoint's weights.
    prompts = ["3 + 4 =", "9 + 9 =", "0 + 2 ="]
    proc = run_preloaded(str(ROOT / "tests" / "hub_checks.py"), "served_completions",
                         str(script), str(out), json.dumps(prompts), cwd=script.parent)  # fmt: skip
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["served"] == result["expected"], result
    assert any(completion.strip() for completion in result["served"]), result


def test_on_a_preset_whose_end_token_is_its_padding_id_grpo_samples_and_the_export_answers(
    tmp_path,
):
    """A tiny Llama whose end token </s> is id 0, the id its tokenizer pads with: KerasHub's
    sampler would find the end token in the padding before writing a token, every completion
    empty (length 1, the "end token" at the first padding), the export answering "" to every
    prompt. The script's sampling of the first prompts is sampled_again()'s, token for token,
    and its export's answers greedy_again()'s, each from the model's logits without KerasHub's
    sampler."""
    folder = tmp_path / "end_is_pad"
    preset = data.llama_preset(folder, end_is_pad=True)
    overrides = [o for o in data.small_data_overrides("sums_grpo", tmp_path)
                 if not o.startswith("model.preset=")]  # fmt: skip
    script = render_into(tmp_path / "train.py", "sums_grpo", *overrides,
                         f"model.preset={preset}", "model.lora_rank=null",
                         cwd=tmp_path)  # fmt: skip
    result = grpo_check("end_is_padding", str(script), cwd=tmp_path)
    assert result["end_token"] == result["pad_token"] == 0 and result["padded"] > 0, result
    assert result["same_completions"], result
    assert result["texts"] == result["expected_texts"], result
    assert result["mean_length"] > 1.5, result
    assert result["served"] == result["expected_served"], result
    assert any(text.strip() for text in result["served"]), result


WRONG_SHAPE = """def one_number(prompts, completions, **kwargs):
    return sum(len(c) for c in completions)
"""


def test_a_reward_function_of_the_wrong_shape_is_named_before_training(tmp_path):
    """A reward function that returns one number for the batch, not one per completion: one
    message naming it and the fix, exit 1, before anything trains."""
    (tmp_path / "wrong.py").write_text(WRONG_SHAPE)
    script = render_into(tmp_path / "train.py", "sums_grpo",
                         *data.small_data_overrides("sums_grpo", tmp_path),
                         'training.reward_funcs=["wrong:one_number"]', cwd=tmp_path)  # fmt: skip
    out = tmp_path / "run"
    proc = run_preloaded(str(script), "--output-dir", str(out), cwd=tmp_path, check=False)
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    assert (
        "training.reward_funcs: wrong.one_number returned an array of shape () for 8 "
        "completions: return one number per completion"
    ) in proc.stderr, proc.stderr[-2000:]
    assert not (tmp_path / "run" / "checkpoints").exists() or not any(
        (tmp_path / "run" / "checkpoints").glob("ckpt-*")
    )


RAISES = """def strict(prompts, completions, **kwargs):
    return [float(int(c)) for c in completions]
"""


def test_a_reward_function_that_raises_is_one_message_before_training(tmp_path):
    """A reward function that raises on the completions (int("") on the empty ones the
    pre-training check scores): one message naming training.reward_funcs, the function, its
    error's last line and where it was raised, exit 1, no traceback, before anything trains."""
    (tmp_path / "raising.py").write_text(RAISES)
    script = render_into(tmp_path / "train.py", "sums_grpo",
                         *data.small_data_overrides("sums_grpo", tmp_path),
                         'training.reward_funcs=["rewards.sums:digits", "raising:strict"]',
                         cwd=tmp_path)  # fmt: skip
    out = tmp_path / "run"
    proc = run_preloaded(str(script), "--output-dir", str(out), cwd=tmp_path, check=False)
    assert proc.returncode == 1, (proc.stdout[-2000:], proc.stderr[-3000:])
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    message = [line for line in proc.stderr.splitlines() if "training.reward_funcs" in line]
    assert len(message) == 1, proc.stderr[-3000:]
    assert message[0].startswith(
        "training.reward_funcs: raising.strict raised ValueError: invalid literal for int() "
        "with base 10: '' (at "
    ), message
    assert f"{tmp_path / 'raising.py'}:2, scoring 8 completions): fix the function" in message[0]
    assert not any((out / "checkpoints").glob("ckpt-*"))


def test_a_reward_module_that_does_not_parse_is_a_message_at_its_line(tmp_path):
    """validate reads the reward functions' module without running it: one that does not
    parse is named with its error, at the spec's training line, exit 1, no traceback."""
    (tmp_path / "spec.py").write_text((ROOT / "examples" / "sums_grpo.py").read_text())
    (tmp_path / "rewards").mkdir()
    (tmp_path / "rewards" / "__init__.py").write_text("")
    (tmp_path / "rewards" / "sums.py").write_text("def digits(prompts, completions:\n    pass\n")
    proc = run_cli("validate", "spec.py", cwd=tmp_path)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
    wanted = "training.reward_funcs[0]='rewards.sums:digits': module rewards.sums (sums.py) does"
    assert f"{wanted} not parse" in proc.stderr, proc.stderr
    assert re.search(r"^error: spec\.py:\d+: ", proc.stderr), proc.stderr
