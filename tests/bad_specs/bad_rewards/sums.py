"""A reward function of the kind GRPO calls."""


def correct(prompts, completions, **kwargs):
    return [1.0 if c.strip() else 0.0 for c in completions]
