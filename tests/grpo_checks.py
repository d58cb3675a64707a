"""Checks of GRPO runs that the tests run in a process of their own: `python grpo_checks.py
CHECK ...`. Each prints one JSON object on its last line of stdout. The references are NumPy
computations of GRPO's formulas from the models' own logits (the policy from the run's
checkpoints, the reference the preset loaded anew), not the script's code: the completions
too are sampled again here, token by token, from the seeds the script documents (a
completion's key, its step and row; the token's position)."""

from __future__ import annotations

import json
import os
import sys

import numpy as np
import tensorflow as tf
from tf_checks import load_script, training_examples


def log_softmax(logits: np.ndarray) -> np.ndarray:
    shifted = logits - logits.max(-1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(-1, keepdims=True))


def log_softmax_picked(model, sequences) -> np.ndarray:
    """log pi(token t + 1 | tokens <= t) for every position t, in float64 NumPy from the
    model's logits."""
    logits = model(sequences, training=False).numpy().astype(np.float64)[:, :-1]
    log_probs = log_softmax(logits)
    targets = sequences["token_ids"].numpy()[:, 1:]
    return np.take_along_axis(log_probs, targets[..., None], -1)[..., 0]


def sampled_again(module, model, prompts: dict, step: int, end_token: int) -> tuple:
    """The completions GRPO samples at `step` (1, 2, ...) from `prompts` (generate_preprocess'
    token ids and padding mask), from its definition: each prompt repeated for its
    NUM_GENERATIONS completions; row r's key (step - 1) * 2**24 + r; each token drawn, by
    TensorFlow's stateless categorical of seed (key, SEED * 2**20 + position), from the
    softmax of the model's logits over the tokens before it at TEMPERATURE (the model called
    on the whole sequence so far, no cache); a completion ends with its end token (kept) or
    after MAX_COMPLETION_LENGTH tokens. Returns the sequences (token ids, padding mask), the
    mask of the completions' tokens and each completion's token ids without its end token."""
    groups, limit = module.NUM_GENERATIONS, module.MAX_COMPLETION_LENGTH
    ids = np.repeat(prompts["token_ids"].numpy(), groups, axis=0)
    mask = np.repeat(prompts["padding_mask"].numpy(), groups, axis=0).astype(bool)
    rows, length = ids.shape
    starts = mask.sum(axis=1)
    keys = (step - 1) * 2**24 + np.arange(rows)
    completion = np.zeros_like(mask)
    ended = np.zeros(rows, bool)
    for position in range(starts.min(), length):
        writing = ~ended & (position >= starts) & (position < starts + limit)
        if not writing.any():
            continue
        inputs = {"token_ids": tf.constant(ids), "padding_mask": tf.constant(mask)}
        logits = model(inputs, training=False).numpy().astype(np.float64)[:, position - 1]
        for row in np.flatnonzero(writing):
            log_probs = log_softmax(logits[row] / module.TEMPERATURE)
            seed = tf.constant([keys[row], module.SEED * 2**20 + position], tf.int64)
            drawn = tf.random.stateless_categorical(
                tf.constant(log_probs[np.newaxis], tf.float32), 1, seed=seed
            )
            ids[row, position] = int(drawn[0, 0])
            mask[row, position] = completion[row, position] = True
            ended[row] = ids[row, position] == end_token
    sequences = {"token_ids": tf.constant(ids), "padding_mask": tf.constant(mask)}
    texts = [ids[row][completion[row] & (ids[row] != end_token)] for row in range(rows)]
    return sequences, completion, texts


def grpo_two_steps(script: str, out: str) -> dict:
    """What the run logged at step 2 (the means over its first two steps) against GRPO's
    formulas in NumPy. Each step's completions are sampled again (sampled_again(), not the
    script's sampler) with the step's weights (the preset's for step 1, checkpoint 1's for step
    2) and checked against the texts the run's reward function recorded; then the completions'
    lengths (their tokens with the end token, at most MAX_COMPLETION_LENGTH), the advantages
    (per group, sample std), the KL (k3) to the reference loaded anew, and the loss (dapo: the
    mean over the completion tokens; one update per step, so the ratio is 1) are NumPy's."""
    import keras_hub

    module = load_script(script)
    folder = os.path.dirname(os.path.abspath(script))
    recorded = [json.loads(line) for line in open(os.path.join(folder, "completions.jsonl"))]
    recorded = recorded[1:]  # the first: score()'s check of the functions before training
    policy = module.build_model()
    reference = keras_hub.models.CausalLM.from_preset(module.PRESET, preprocessor=None)
    preprocessor = keras_hub.models.CausalLMPreprocessor.from_preset(
        module.PRESET, sequence_length=module.SEQUENCE_LENGTH
    )
    tokenizer = preprocessor.tokenizer
    examples = training_examples(module)
    order = module.epoch_order(tf.constant(0, tf.int64), module.num_examples(examples)).numpy()
    size, groups = module.BATCH_SIZE, module.NUM_GENERATIONS
    steps, same = [], []
    for step in (1, 2):
        if step == 2:
            path = f"{out}/checkpoints/ckpt-1"
            tf.train.Checkpoint(model=policy).restore(path).expect_partial()
        prompts = np.asarray(examples[0])[order[(step - 1) * size : step * size]]
        inputs = preprocessor.generate_preprocess(tf.constant(prompts))
        sequences, completion, tokens = sampled_again(
            module, policy, inputs, step, tokenizer.end_token_id
        )
        texts = [tokenizer.detokenize(tf.constant(t, tf.int32)) for t in tokens]
        texts = [t.numpy().decode() if isinstance(t, tf.Tensor) else t for t in texts]
        same.append(texts == recorded[step - 1]["completions"])
        rewards = np.asarray(recorded[step - 1]["rewards"], np.float64).reshape(-1, groups)
        std = rewards.std(axis=1, ddof=1)
        advantages = (rewards - rewards.mean(1, keepdims=True)) / (std[:, None] + 1e-4)
        mask = completion[:, 1:].astype(np.float64)
        logps = log_softmax_picked(policy, sequences)
        ref = log_softmax_picked(reference, sequences)
        kl = np.exp(ref - logps) - (ref - logps) - 1
        # ratio 1: min(ratio A, clip(ratio) A) is A.
        token_losses = -advantages.reshape(-1)[:, None] + module.BETA * kl
        steps.append({
            "loss": (token_losses * mask).sum() / mask.sum(),
            "rewards": rewards.reshape(-1), "std": std, "mask": mask, "kl": kl,
        })  # fmt: skip
    masks = np.concatenate([s["mask"] for s in steps])
    expected = {
        "loss": np.mean([s["loss"] for s in steps]),
        "reward": np.concatenate([s["rewards"] for s in steps]).mean(),
        "reward_std": np.concatenate([s["std"] for s in steps]).mean(),
        "frac_reward_zero_std": (np.concatenate([s["std"] for s in steps]) == 0).mean(),
        "completions/mean_length": masks.sum(1).mean(),
        "kl": (np.concatenate([s["kl"] for s in steps]) * masks).sum() / masks.sum(),
        "clip_ratio/region_mean": 0.0,
    }
    logged = [json.loads(line) for line in open(f"{out}/metrics.jsonl")]
    step2 = next(r for r in logged if r.get("step") == 2 and "loss" in r)
    return {
        "same_completions": same,
        "logged": {key: step2[key] for key in expected},
        "expected": {key: float(value) for key, value in expected.items()},
        "second_kl": float((steps[1]["kl"] * steps[1]["mask"]).sum() / steps[1]["mask"].sum()),
    }


def formulas(script: str, epsilon: str, epsilon_high: str) -> dict:
    """The script's group_advantages() and grpo_token_losses() on made-up values against
    NumPy: rewards with groups of other means and spreads (one group all equal), and ratios on
    both sides of the clipping range [1 - epsilon, 1 + epsilon_high] (the spec's, given here,
    not read from the script) with advantages of both signs."""
    module = load_script(script)
    rng = np.random.default_rng(0)
    groups = module.NUM_GENERATIONS
    rewards = rng.normal(size=(3, groups)) * np.array([[1.0], [5.0], [0.0]]) + [[0], [3], [2]]
    advantages, std = module.group_advantages(tf.constant(rewards.reshape(-1), tf.float32))
    expected_std = rewards.std(axis=1, ddof=1)
    expected = (rewards - rewards.mean(1, keepdims=True)) / (expected_std[:, None] + 1e-4)
    rows, length = 6, 5
    logps = rng.normal(size=(rows, length)) - 2
    old = logps + rng.normal(scale=0.4, size=(rows, length))  # ratios of 0.5 to 2
    ref = logps + rng.normal(scale=0.3, size=(rows, length))
    signs = rng.normal(size=rows)
    losses, logged = module.grpo_token_losses(
        *(tf.constant(v, tf.float32) for v in (logps, old, ref, signs))
    )
    ratio = np.exp(logps - old)
    low, high = 1 - float(epsilon), 1 + float(epsilon_high)
    a = signs[:, None]
    reference = -np.minimum(ratio * a, np.clip(ratio, low, high) * a)
    reference += module.BETA * (np.exp(ref - logps) - (ref - logps) - 1)
    clipped = ((ratio < low) & (a < 0)) | ((ratio > high) & (a > 0))
    return {
        "advantages_diff": float(np.abs(advantages.numpy() - expected.reshape(-1)).max()),
        "std_diff": float(np.abs(std.numpy() - expected_std).max()),
        "losses_diff": float(np.abs(losses.numpy() - reference).max()),
        "clipped_same": bool((logged["clip_ratio/region_mean"].numpy() == clipped).all()),
        "clipped_share": float(clipped.mean()),
        "outside_share": float(((ratio < low) | (ratio > high)).mean()),
    }


def greedy_again(model, prompts: dict, end_token: int) -> list[list[int]]:
    """Each prompt's greedy completion (generate_preprocess' token ids and padding mask), from
    its definition: the most likely next token of the model called on the whole sequence so
    far (no cache), until the end token (not kept) or the sequence's end."""
    ids = prompts["token_ids"].numpy().copy()
    mask = prompts["padding_mask"].numpy().astype(bool).copy()
    starts = mask.sum(axis=1)
    written = [[] for _ in ids]
    ended = np.zeros(len(ids), bool)
    for position in range(starts.min(), ids.shape[1]):
        writing = ~ended & (position >= starts)
        if not writing.any():
            continue
        inputs = {"token_ids": tf.constant(ids), "padding_mask": tf.constant(mask)}
        logits = model(inputs, training=False).numpy()[:, position - 1]
        for row in np.flatnonzero(writing):
            ids[row, position] = int(logits[row].argmax())
            mask[row, position] = True
            ended[row] = ids[row, position] == end_token
            if not ended[row]:
                written[row].append(int(ids[row, position]))
    return written


def as_texts(values) -> list[str]:
    """Strings from a detokenizer's output (a tensor, a list of tensors, bytes or str)."""
    if isinstance(values, tf.Tensor):
        values = values.numpy().tolist()
    values = [v.numpy() if isinstance(v, tf.Tensor) else v for v in values]
    return [v.decode() if isinstance(v, bytes) else str(v) for v in values]


def end_is_padding(script: str) -> dict:
    """On a preset whose end token is the id its tokenizer pads with: the script's
    sample_completions() of the first prompts (step 1's keys) against sampled_again(), and its
    export's serving function (greedy) against greedy_again(), each from the preset's
    weights; and the completions' mean length (tokens, the end token's too)."""
    import keras_hub

    module = load_script(script)
    preprocessor = keras_hub.models.CausalLMPreprocessor.from_preset(
        module.PRESET, sequence_length=module.SEQUENCE_LENGTH
    )
    tokenizer = preprocessor.tokenizer
    model = module.build_model()
    model.sampler = module.GroupSampler(temperature=module.TEMPERATURE)
    prompts = np.asarray(training_examples(module)[0])[: module.BATCH_SIZE]
    fresh = preprocessor.generate_preprocess(tf.constant(prompts))  # padded with the pad id
    inputs = module.preprocess(tf.constant(prompts), tf.constant(prompts))[0]
    rows = len(prompts) * module.NUM_GENERATIONS
    keys = module.completion_keys(tf.constant(0, tf.int64), 0, rows)
    sequences, completion = module.sample_completions(model, inputs, keys)
    texts = as_texts(module.completion_texts(sequences, completion))
    _, expected_completion, tokens = sampled_again(module, model, fresh, 1, tokenizer.end_token_id)
    expected_texts = [tokenizer.detokenize(tf.constant(t, tf.int32)) for t in tokens]
    serve = module.serving_function(model)
    served = as_texts(serve(tf.constant(prompts))["completions"])
    greedy = greedy_again(model, fresh, tokenizer.end_token_id)
    return {
        "end_token": int(tokenizer.end_token_id),
        "pad_token": int(tokenizer.pad_token_id),
        "padded": int((~fresh["padding_mask"].numpy()).sum()),
        "same_completions": bool(np.array_equal(completion.numpy(), expected_completion)),
        "texts": texts,
        "expected_texts": as_texts(expected_texts),
        "mean_length": float(completion.numpy().sum(axis=1).mean()),
        "served": served,
        "expected_served": as_texts(
            [tokenizer.detokenize(tf.constant(t, tf.int32)) for t in greedy]
        ),
    }


if __name__ == "__main__":
    check, *args = sys.argv[1:]
    print(json.dumps(globals()[check](*args)))
