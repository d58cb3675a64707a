"""Stable-Baselines3's PPO on CartPole-v1 with the settings bench/rl_peer.py gives it (those of
examples/cartpole_ppo.py), logging what loopgen's script logs: every LOG environment steps, the
mean return of the episodes that finished since the last log. Run by a Python that has
stable-baselines3 and torch (loopgen does not depend on them):

    PEER_PYTHON docs/figures/sb3_returns.py STEPS SEED OUT.jsonl
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import torch
from stable_baselines3.common.callbacks import BaseCallback

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
import rl_peer

LOG = 10_240  # examples/cartpole_ppo.py's log_every_steps


class Returns(BaseCallback):
    def __init__(self) -> None:
        super().__init__()
        self.episodes: list[tuple[int, float]] = []

    def _on_step(self) -> bool:
        for info in self.locals["infos"]:
            if "episode" in info:
                self.episodes.append((self.num_timesteps, float(info["episode"]["r"])))
        return True


def main(steps: int, seed: int, out: Path) -> None:
    torch.set_num_threads(1)
    model = rl_peer.ppo(seed)
    returns = Returns()
    model.learn(total_timesteps=steps, callback=returns)
    lines = []
    for end in range(LOG, steps + 1, LOG):
        window = [r for step, r in returns.episodes if end - LOG < step <= end]
        if window:
            mean = sum(window) / len(window)
            lines.append({"step": end, "episode_return": mean, "episodes": len(window)})
    out.write_text("".join(json.dumps(line) + "\n" for line in lines))


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]), Path(sys.argv[3]))
