"""Checks of KerasHub runs that the tests run in a process of their own: `python hub_checks.py
CHECK ...`. Each prints one JSON object on its last line of stdout. The references come from
KerasHub itself (the preset loaded anew) and from NumPy, not from the script's code."""

from __future__ import annotations

import json
import sys

import numpy as np
import tensorflow as tf
from tf_checks import load_script, training_examples


def restored(script: str, out: str):
    """The script's module and its model with the weights of the run's newest checkpoint."""
    module = load_script(script)
    model = module.build_model()
    path = tf.train.latest_checkpoint(f"{out}/checkpoints")
    tf.train.Checkpoint(model=model).restore(path).expect_partial()
    return module, model


def lora(script: str, out: str) -> dict:
    """What LoRA trained and what it left: the trainable variables (their names), whether each
    base kernel of the checkpoint's backbone equals the preset's as loaded (bit for bit), and
    how far the adapters moved."""
    import keras_hub

    module, model = restored(script, out)
    fresh = keras_hub.models.Backbone.from_preset(module.PRESET)
    loaded = {v.path: v.numpy() for v in fresh.weights}
    # The backbone's own weights (the adapters and the projections' biases train).
    base = [v for v in model.backbone.non_trainable_weights if "seed_generator" not in v.path]
    return {
        "trainable": sorted(v.path for v in model.trainable_variables),
        "trainable_count": int(sum(np.prod(v.shape) for v in model.trainable_variables)),
        "total_count": int(sum(np.prod(v.shape) for v in model.weights)),
        "base_checked": len(base),
        "base_same": [v.path for v in base if np.array_equal(v.numpy(), loaded[v.path])],
        "adapter_b_norm": float(
            sum(np.abs(v.numpy()).sum() for v in model.trainable_variables
                if "lora_kernel_b" in v.path)
        ),
    }  # fmt: skip


def served_against_model(script: str, out: str, texts: str) -> dict:
    """The exported SavedModel (LoRA merged) on raw strings, against the checkpoint's model
    (adapters unmerged) on the same strings through the preset's preprocessor; in a process
    that imported tensorflow_text for the tokenizer's ops, as a server must."""
    import tensorflow_text  # noqa: F401

    module, model = restored(script, out)
    batch = json.loads(texts)
    logits = model(module.preprocessor()(tf.constant(batch)), training=False).numpy()
    served = tf.saved_model.load(f"{out}/export/saved_model/1").signatures["serving_default"]
    outputs = served(texts=tf.constant(batch))
    probabilities = tf.nn.softmax(logits).numpy()
    return {
        "scores_diff": float(np.abs(outputs["scores"].numpy() - logits).max()),
        "probabilities_diff": float(np.abs(outputs["probabilities"].numpy() - probabilities).max()),
        "class_ids": outputs["class_ids"].numpy().tolist(),
        "expected_ids": probabilities.argmax(-1).tolist(),
        "lora_layers": sum(
            bool(getattr(layer, "lora_enabled", False)) for layer in model._flatten_layers()
        ),
    }


def served_with_sizable_adapters(script: str, out: str, texts: str, folder: str) -> dict:
    """The script's export() into `folder` of the checkpoint's model with its LoRA adapters
    (A and B) set to sizable values, N(0, 2): the trained adapters' effect on the scores is
    below float32's rounding of them (2.7e-6 on the test's texts), an export of the base
    kernels would serve the same. Returns the served scores against the model's (adapters
    unmerged), the adapters' effect (against the same model with them off) and the model's
    scores after the export against before (adapted again)."""
    import tensorflow_text  # noqa: F401

    module, model = restored(script, out)
    rng = np.random.default_rng(0)
    for variable in model.trainable_variables:
        if "lora_kernel" in variable.path:
            variable.assign(rng.normal(scale=2.0, size=variable.shape).astype(np.float32))
    inputs = module.preprocessor()(tf.constant(json.loads(texts)))
    logits = model(inputs, training=False).numpy()
    adapted = [layer for layer in model._flatten_layers() if getattr(layer, "lora_enabled", 0)]
    for layer in adapted:
        layer.lora_enabled = False
    base_logits = model(inputs, training=False).numpy()
    for layer in adapted:
        layer.lora_enabled = True
    module.export(model, folder, None)
    after = model(inputs, training=False).numpy()
    served = tf.saved_model.load(f"{folder}/saved_model/1").signatures["serving_default"]
    scores = served(texts=tf.constant(json.loads(texts)))["scores"].numpy()
    return {
        "scores_diff": float(np.abs(scores - logits).max()),
        "adapters_effect": float(np.abs(logits - base_logits).max()),
        "after_diff": float(np.abs(after - logits).max()),
        "lora_layers": len(adapted),
    }


def first_batch(module):
    """The raw examples of the run's first training batch: epoch 0's order, from the script's
    own epoch_order (a permutation of the example indices), applied here to its examples."""
    examples = training_examples(module)
    count = module.num_examples(examples)
    order = module.epoch_order(tf.constant(0, tf.int64), count).numpy()[: module.BATCH_SIZE]
    return tuple(np.asarray(part)[order] for part in examples)


def sft_reference(module, model, prompts, responses, masked: bool = True) -> float:
    """The SFT loss of a batch, in NumPy from the model's logits: each text is the start token,
    the tokens of prompt + response and the end token (cut to SEQUENCE_LENGTH + 1); position t
    predicts token t + 1; the targets counted are the response's (from the prompt's own token
    count on), or every one but padding (`masked` False); their mean over the batch."""
    inputs, targets, counted = tokenized(module, prompts, responses)
    if not masked:
        counted = inputs["padding_mask"].numpy()
    logits = model(inputs, training=False).numpy().astype(np.float64)
    shifted = logits - logits.max(-1, keepdims=True)
    log_probs = shifted - np.log(np.exp(shifted).sum(-1, keepdims=True))
    picked = np.take_along_axis(log_probs, targets[..., None], -1)[..., 0]
    return float(-(picked * counted).sum() / counted.sum())


def sft_first_loss(script: str, out: str) -> dict:
    """The loss the run logged at step 1 against the NumPy SFT loss of its first batch on the
    model as loaded (LoRA's B is zero: the preset's function), masked and unmasked."""
    module = load_script(script)
    model = module.build_model()
    prompts, responses = first_batch(module)
    logged = [json.loads(line) for line in open(f"{out}/metrics.jsonl")]
    return {
        "logged": next(r["loss"] for r in logged if r.get("step") == 1 and "loss" in r),
        "expected": sft_reference(module, model, prompts, responses),
        "unmasked": sft_reference(module, model, prompts, responses, masked=False),
    }


def tokenized(module, prompts, responses):
    """Each prompt + response as the script's preprocessor packs it, in NumPy terms: token ids
    and padding mask (the inputs), the next tokens, and which targets are the response's."""
    tokenizer = module.preprocessor().tokenizer
    length = module.SEQUENCE_LENGTH
    ids, masks, targets, counted = [], [], [], []
    for prompt, response in zip(prompts, responses, strict=True):
        whole = np.asarray(tokenizer(str(prompt) + str(response))).tolist()
        text = [tokenizer.start_token_id, *whole, tokenizer.end_token_id][: length + 1]
        first = len(np.asarray(tokenizer(str(prompt))))  # the prompt's tokens, its start's after
        pad = length + 1 - len(text)
        ids.append((text + [0] * pad)[:length])
        masks.append([t < len(text) - 1 for t in range(length)])
        targets.append((text[1:] + [0] * pad)[:length])
        counted.append([first <= t < len(text) - 1 for t in range(length)])
    inputs = {"token_ids": tf.constant(ids), "padding_mask": tf.constant(masks)}
    return inputs, np.array(targets), np.array(counted)


def response_logps(model, module, prompts, responses) -> np.ndarray:
    """Each response's log-probability under `model`, in NumPy from its logits: the sum over the
    response's tokens of log softmax at the next token."""
    inputs, targets, counted = tokenized(module, prompts, responses)
    logits = model(inputs, training=False).numpy().astype(np.float64)
    shifted = logits - logits.max(-1, keepdims=True)
    log_probs = shifted - np.log(np.exp(shifted).sum(-1, keepdims=True))
    picked = np.take_along_axis(log_probs, targets[..., None], -1)[..., 0]
    return (picked * counted).sum(-1)


def dpo_values(module, policy, reference, prompts, chosen, rejected) -> dict:
    """DPO's loss and TRL's logged values of one batch, in NumPy from the two models' logits."""
    beta, smoothing = module.BETA, module.LABEL_SMOOTHING
    texts = {"chosen": chosen, "rejected": rejected}
    logps = {key: response_logps(policy, module, prompts, t) for key, t in texts.items()}
    ref = {key: response_logps(reference, module, prompts, t) for key, t in texts.items()}
    rewards = {key: beta * (logps[key] - ref[key]) for key in logps}
    margins = rewards["chosen"] - rewards["rejected"]
    log_sigmoid = lambda x: -np.logaddexp(0, -x)  # noqa: E731
    losses = -(1 - smoothing) * log_sigmoid(margins) - smoothing * log_sigmoid(-margins)
    return {
        "loss": losses.mean(),
        "rewards/chosen": rewards["chosen"].mean(),
        "rewards/rejected": rewards["rejected"].mean(),
        "rewards/margins": margins.mean(),
        "rewards/accuracies": (rewards["chosen"] > rewards["rejected"]).mean(),
        "logps/chosen": logps["chosen"].mean(),
        "logps/rejected": logps["rejected"].mean(),
    }


def dpo_two_steps(script: str, out: str) -> dict:
    """What the run logged at step 2 (the mean of its first two steps' values) against DPO's
    formulas in NumPy on its first two batches: the policy as loaded for the first (LoRA's B
    is zero) and with the weights of the checkpoint after step 1 for the second; the
    reference the preset as loaded anew (nothing of the run's)."""
    import keras_hub

    module = load_script(script)
    reference = keras_hub.models.CausalLM.from_preset(module.PRESET, preprocessor=None)
    policy = module.build_model()
    examples = training_examples(module)
    count = module.num_examples(examples)
    order = module.epoch_order(tf.constant(0, tf.int64), count).numpy()
    steps = []
    for step in (1, 2):
        if step == 2:
            path = f"{out}/checkpoints/ckpt-1"
            tf.train.Checkpoint(model=policy).restore(path).expect_partial()
        batch = order[(step - 1) * module.BATCH_SIZE : step * module.BATCH_SIZE]
        prompts = np.asarray(examples[0])[batch]
        chosen, rejected = (np.asarray(examples[1][k])[batch] for k in ("chosen", "rejected"))
        steps.append(dpo_values(module, policy, reference, prompts, chosen, rejected))
    logged = [json.loads(line) for line in open(f"{out}/metrics.jsonl")]
    step2 = next(r for r in logged if r.get("step") == 2 and "loss" in r)
    return {
        "logged": {key: step2[key] for key in steps[0]},
        "expected": {key: float((steps[0][key] + steps[1][key]) / 2) for key in steps[0]},
        "second": {key: float(value) for key, value in steps[1].items()},
    }


def served_completions(script: str, out: str, prompts: str) -> dict:
    """The exported causal LM (export/saved_model/1) on raw prompts, against KerasHub's own
    generate() of the checkpoint's model with greedy sampling and the preset's preprocessor
    (the text after each prompt), in a process that imported tensorflow_text."""
    import tensorflow_text  # noqa: F401

    module, model = restored(script, out)
    batch = json.loads(prompts)
    model.preprocessor = module.preprocessor()
    model.compile(sampler="greedy")
    expected = model.generate(batch, max_length=module.SEQUENCE_LENGTH, strip_prompt=True)
    served = tf.saved_model.load(f"{out}/export/saved_model/1").signatures["serving_default"]
    completions = served(prompts=tf.constant(batch))["completions"].numpy()
    return {
        "served": [c.decode() for c in completions],
        "expected": [str(e) for e in np.asarray(expected).tolist()],
    }


def trainable_norms(script: str, checkpoint: str) -> dict:
    """The norm of the model's trainable variables with the weights of `checkpoint`, in
    float64, grouped by the layer of the backbone they are in (the first part of their path:
    `transformer_layer_0/self_attention/query/lora_kernel_a` is transformer_layer_0's)."""
    module = load_script(script)
    model = module.build_model()
    tf.train.Checkpoint(model=model).restore(checkpoint).expect_partial()
    squares: dict[str, float] = {}
    for variable in model.trainable_variables:
        layer = variable.path.split("/")[0]
        value = np.asarray(variable.numpy(), np.float64)
        squares[layer] = squares.get(layer, 0.0) + float(np.sum(np.square(value)))
    return {layer: float(np.sqrt(total)) for layer, total in squares.items()}


if __name__ == "__main__":
    check, *args = sys.argv[1:]
    print(json.dumps(globals()[check](*args)))
