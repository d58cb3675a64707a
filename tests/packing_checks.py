"""Checks of SFT's packing (training=SFT(packing=True)) that the tests run in a process of their
own: `python packing_checks.py CHECK ...`, one JSON object on the last line of stdout, as
hub_checks.py's. The packing is done again here in plain Python (best-fit decreasing, each
example whole), from the preset's tokenizer: nothing of the script's pack_examples."""

from __future__ import annotations

import json
import math
import sys

import numpy as np
import tensorflow as tf
from hub_checks import first_batch, restored, sft_reference
from tf_checks import load_script


def example_tokens(module, prompt: str, response: str) -> tuple[list[int], list[int], list[bool]]:
    """One example as the preset's preprocessor makes it, as lists: its tokens (start, the
    tokens of prompt + response, end; the middle cut to SEQUENCE_LENGTH - 1 when too long,
    the end token kept), each token's next one (0 after the last) and whether that target is
    the response's (the prompt's own tokens' targets are not)."""
    tokenizer = module.preprocessor().tokenizer
    length = module.SEQUENCE_LENGTH
    whole = np.asarray(tokenizer(prompt + response)).tolist()[: length - 1]
    text = [tokenizer.start_token_id, *whole, tokenizer.end_token_id]
    first = len(np.asarray(tokenizer(prompt)))  # the target of the response's first token
    tokens = text[:length]
    targets = [text[t + 1] if t + 1 < len(text) else 0 for t in range(len(tokens))]
    counted = [first <= t < len(text) - 1 for t in range(len(tokens))]
    return tokens, targets, counted


def best_fit_decreasing(lengths: list[int], capacity: int) -> tuple[list[tuple[int, int]], int]:
    """Each item's (row, first column) and the count of rows: the longest first (ties in their
    order), each into the row it leaves the least room in (the first of those), else a new
    row."""
    used: list[int] = []
    placed = [(0, 0)] * len(lengths)
    for item in sorted(range(len(lengths)), key=lambda i: -lengths[i]):
        fits = [(capacity - u - lengths[item], row) for row, u in enumerate(used)
                if u + lengths[item] <= capacity]  # fmt: skip
        row = min(fits)[1] if fits else len(used)
        if not fits:
            used.append(0)
        placed[item] = (row, used[row])
        used[row] += lengths[item]
    return placed, len(used)


def packed_rows(module, prompts, responses):
    """The examples packed into rows of SEQUENCE_LENGTH: the model's inputs, the targets and
    which of them count, and the count of rows."""
    length = module.SEQUENCE_LENGTH
    examples = [example_tokens(module, str(p), str(r)) for p, r in zip(prompts, responses,
                                                                       strict=True)]  # fmt: skip
    placed, count = best_fit_decreasing([len(tokens) for tokens, _, _ in examples], length)
    ids = np.zeros((count, length), np.int32)
    mask = np.zeros((count, length), bool)
    targets = np.zeros((count, length), np.int64)
    counted = np.zeros((count, length), bool)
    for (tokens, example_targets, example_counted), (row, start) in zip(examples, placed,
                                                                        strict=True):  # fmt: skip
        end = start + len(tokens)
        ids[row, start:end], mask[row, start:end] = tokens, True
        targets[row, start:end], counted[row, start:end] = example_targets, example_counted
    inputs = {"token_ids": tf.constant(ids), "padding_mask": tf.constant(mask)}
    return inputs, targets, counted, count


def packed_loss(model, inputs, targets, counted) -> float:
    """The mean over the counted targets of the rows of the next-token cross-entropy, from the
    model's logits in float64."""
    logits = model(inputs, training=False).numpy().astype(np.float64)
    shifted = logits - logits.max(-1, keepdims=True)
    log_probs = shifted - np.log(np.exp(shifted).sum(-1, keepdims=True))
    picked = np.take_along_axis(log_probs, targets[..., None], -1)[..., 0]
    return float(-(picked * counted).sum() / counted.sum())


def packed_first_loss(script: str, out: str) -> dict:
    """The loss the run logged at step 1 against the NumPy loss of its first batch packed
    here, on the model as loaded (LoRA's B is zero: the preset's function); the same batch
    unpacked, for contrast; the rows it packed into; and, when the run validated, its logged
    validation values against the NumPy loss of the validation examples each alone (never
    packed) on the checkpoint's weights."""
    module = load_script(script)
    model = module.build_model()
    prompts, responses = first_batch(module)
    inputs, targets, counted, rows = packed_rows(module, prompts, responses)
    logged = [json.loads(line) for line in open(f"{out}/metrics.jsonl")]
    result = {
        "logged": next(r["loss"] for r in logged if r.get("step") == 1 and "loss" in r),
        "expected": packed_loss(model, inputs, targets, counted),
        "unpacked": sft_reference(module, model, prompts, responses),
        "rows": rows,
        "examples": len(prompts),
        "padding": float(1 - inputs["padding_mask"].numpy().mean()),
    }
    validated = [r for r in logged if "val_loss" in r]
    if validated:
        module, model = restored(script, out)
        _, examples = module.load_examples()
        prompts, responses = (np.asarray(part) for part in examples)
        assert len(prompts) <= module.BATCH_SIZE  # one validation batch: its mean is the loss
        result["val_loss"] = validated[-1]["val_loss"]
        result["val_perplexity"] = validated[-1]["val_perplexity"]
        result["val_expected"] = sft_reference(module, model, prompts, responses)
        result["val_exp"] = math.exp(validated[-1]["val_loss"])
    return result


def packed_lengths(script: str, lengths: str) -> dict:
    """The script's pack_examples() on a made-up batch of examples of `lengths` tokens (JSON):
    token t of example e is (e + 1) * 100 + t, padding 0, so the rows it returns show where each
    example went and that it went whole."""
    module = load_script(script)
    lengths = np.asarray(json.loads(lengths))
    positions = np.arange(module.SEQUENCE_LENGTH)
    mask = positions[np.newaxis] < lengths[:, np.newaxis]
    ids = np.where(mask, (np.arange(len(lengths))[:, np.newaxis] + 1) * 100 + positions, 0)
    features = {"token_ids": tf.constant(ids, tf.int32), "padding_mask": tf.constant(mask)}
    packed, _ = module.pack_examples(features, {"weights": tf.constant(mask, tf.float32)})
    return {"capacity": module.SEQUENCE_LENGTH, "rows": packed["token_ids"].numpy().tolist()}


if __name__ == "__main__":
    check, *args = sys.argv[1:]
    print(json.dumps(globals()[check](*args)))
