"""Reward functions of yours, a package beside the spec (sums_grpo imports rewards.sums)."""
