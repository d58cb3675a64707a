"""Rewards of answers to sums such as "3 + 4 =": TRL's signature, `function(prompts,
completions, **kwargs)`, one number per completion. Plain Python: GRPO calls them on the text
the model wrote."""

import re


def correct(prompts, completions, **kwargs):
    """1.0 for a completion whose digits read the sum of the prompt's two numbers (" 1 2" for
    "5 + 7 ="), else 0.0: the verifiable reward."""
    rewards = []
    for prompt, completion in zip(prompts, completions, strict=True):
        a, b = (int(n) for n in re.findall(r"\d+", prompt)[:2])
        digits = "".join(re.findall(r"\d", completion))
        rewards.append(1.0 if digits == str(a + b) else 0.0)
    return rewards


def digits(prompts, completions, **kwargs):
    """The share of a completion's characters (spaces aside) that are digits: a format reward,
    which pays for writing a number before the number is right."""
    rewards = []
    for completion in completions:
        written = completion.replace(" ", "")
        rewards.append(sum(c.isdigit() for c in written) / len(written) if written else 0.0)
    return rewards
