"""Reward functions beside the bad GRPO specs."""
