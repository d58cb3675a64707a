"""Environments of yours, a package beside the spec (corridor_ppo imports envs.corridor)."""
