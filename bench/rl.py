"""The RL part of the bench: the generated PPO (examples/cartpole_ppo.py) against
Stable-Baselines3's PPO on PyTorch (rl_peer.py) with the same hyperparameters, environments
and budget, in the same invocation, alternating which runs first each round: environment
steps per second over training (updates included) and the greedy policy's return over 100
evaluation episodes."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

from .report import median
from .workload import ROOT

EPISODES = 100


def ours(python: str, steps: int, folder: Path, env: dict) -> dict:
    script = folder / "cartpole_ppo.py"
    if not script.exists():
        subprocess.run([str(Path(python).with_name("loopgen")), "render",
                        str(ROOT / "examples" / "cartpole_ppo.py"), "-o", str(script)],
                       check=True, capture_output=True)  # fmt: skip
    out = folder / f"run-{time.monotonic_ns()}"
    start = time.perf_counter()
    _run([python, str(script), "--max-steps", str(steps), "--output-dir", str(out)], folder, env)
    seconds = time.perf_counter() - start
    records = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    done = records[-1]["step"]
    # Training time: the logged windows' steps over their rates (no TensorFlow start-up, no
    # first trace: as the peer's learn() is timed).
    trained = sum(
        (r["step"] - p) / r["steps_per_second"]
        for p, r in zip([0] + [r["step"] for r in records], records, strict=False)
    )
    _run([python, str(script), "evaluate", "--episodes", str(EPISODES), "--output-dir", str(out)],
         folder, env)  # fmt: skip
    evaluation = json.loads((out / "evaluations.jsonl").read_text().splitlines()[-1])
    return {
        "steps_per_second": done / trained,
        "process_seconds": seconds,
        "return_mean": evaluation["return_mean"],
        "return_std": evaluation["return_std"],
    }


def peer(peer_python: str, steps: int, seed: int, folder: Path, env: dict) -> dict:
    proc = _run([peer_python, str(Path(__file__).with_name("rl_peer.py")), str(steps), str(seed),
                 str(EPISODES)], folder, env)  # fmt: skip
    return json.loads(proc.stdout.strip().splitlines()[-1])


def rl_rows(python: str, peer_python: str | None, steps: int, rounds: int, folder: Path,
            env: dict) -> dict:  # fmt: skip
    runs: dict[str, list[dict]] = {"loopgen PPO (TensorFlow)": [], "SB3 PPO (PyTorch)": []}
    for round_ in range(rounds):
        order = ["ours", "peer"] if round_ % 2 == 0 else ["peer", "ours"]
        for who in order:
            if who == "ours":
                runs["loopgen PPO (TensorFlow)"].append(ours(python, steps, folder, env))
            elif peer_python:
                runs["SB3 PPO (PyTorch)"].append(peer(peer_python, steps, round_, folder, env))
    rows = {
        name: {
            "steps_per_second": median([r["steps_per_second"] for r in found]),
            "rates": [r["steps_per_second"] for r in found],
            "return_mean": median([r["return_mean"] for r in found]),
            "returns": [r["return_mean"] for r in found],
        }
        for name, found in runs.items()
        if found
    }
    return {"steps": steps, "rounds": rounds, "episodes": EPISODES, "rows": rows}


def rl_table(rl: dict) -> str:
    lines = [
        f"| CartPole-v1, {rl['steps']:,} steps, {rl['rounds']} round(s) | env steps/s "
        f"(median; each round) | greedy return over {rl['episodes']} episodes (median; each "
        "round) |",
        "|---|---|---|",
    ]
    for name, row in rl["rows"].items():
        # Each round's rate: results written before they were kept have none.
        rates = ", ".join(f"{r:,.0f}" for r in row.get("rates", []))
        each = ", ".join(f"{r:.0f}" for r in row["returns"])
        lines.append(f"| {name} | {row['steps_per_second']:,.0f}{f' ({rates})' if rates else ''} "
                     f"| {row['return_mean']:.0f} ({each}) |")  # fmt: skip
    return "\n".join(lines)


def _run(command: list[str], cwd: Path, env: dict) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed:\n{proc.stderr[-3000:]}")
    return proc
