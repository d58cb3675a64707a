"""The RL part of the bench: each generated script against Stable-Baselines3 on PyTorch
(rl_peer.py) with the same hyperparameters, environments and budget, in the same invocation,
alternating which runs first each round: environment steps per second over training (updates
included), per second of wall-clock time and per CPU-second (every thread's), and the greedy
policy's return over 100 evaluation episodes. Both train for the budget as their whole run
(loopgen's script is rendered with loop.steps set to it), so that exploration schedules and
learning-rate annealing span the same steps.

- PPO: examples/cartpole_ppo.py (CleanRL's ppo.py settings) on CartPole-v1.
- DQN: examples/cartpole_dqn.py with CleanRL's dqn.py settings on CartPole-v1: its double DQN
  and Huber loss set to CleanRL's plain DQN and squared error (OVERRIDES), and SB3's DQN given
  the squared error and no gradient clipping (rl_peer.py).
- SAC: examples/pendulum_sac.py (RL Baselines3 Zoo's Pendulum-v1 settings) on Pendulum-v1."""

from __future__ import annotations

import json
import os
import resource
import subprocess
import time
from pathlib import Path

from .report import median
from .report import run_checked as _run
from .workload import ROOT

EPISODES = 100
ALGORITHMS = {
    # name: (example, environment, steps when --rl-steps does not say)
    "ppo": ("cartpole_ppo", "CartPole-v1", 500_000),
    "dqn": ("cartpole_dqn", "CartPole-v1", 500_000),
    "sac": ("pendulum_sac", "Pendulum-v1", 20_000),
}
OVERRIDES = {"dqn": ["training.double=false", 'training.loss="mse"']}
"""What the bench sets in an example's spec so that it trains what the peer trains."""
NAMES = {"ppo": "PPO", "dqn": "DQN", "sac": "SAC"}


def ours(python: str, algorithm: str, steps: int, folder: Path, env: dict) -> dict:
    example = ALGORITHMS[algorithm][0]
    script = folder / f"{example}-{steps}.py"
    if not script.exists():
        overrides = [*OVERRIDES.get(algorithm, []), f"loop.steps={steps}"]
        sets = [word for value in overrides for word in ("--set", value)]
        subprocess.run([str(Path(python).with_name("loopgen")), "render",
                        str(ROOT / "examples" / f"{example}.py"), *sets, "-o", str(script)],
                       check=True, capture_output=True)  # fmt: skip
    out = folder / f"run-{time.monotonic_ns()}"
    # CPU-seconds of training: the run's, less those of a run that starts, builds, saves and
    # exports but takes no step (as the peer's count only its learn()).
    idle = _cpu_seconds([python, str(script), "--max-steps", "0", "--output-dir", f"{out}-0"],
                        folder, env)  # fmt: skip
    start = time.perf_counter()
    cpu = _cpu_seconds([python, str(script), "--max-steps", str(steps), "--output-dir", str(out)],
                       folder, env)  # fmt: skip
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
        "steps_per_cpu_second": done / (cpu - idle),
        "process_seconds": seconds,
        "return_mean": evaluation["return_mean"],
        "return_std": evaluation["return_std"],
    }


def peer(peer_python: str, algorithm: str, steps: int, seed: int, folder: Path,
         env: dict) -> dict:  # fmt: skip
    proc = _run([peer_python, str(Path(__file__).with_name("rl_peer.py")), algorithm, str(steps),
                 str(seed), str(EPISODES)], folder, env)  # fmt: skip
    return json.loads(proc.stdout.strip().splitlines()[-1])


def rl_rows(python: str, peer_python: str | None, algorithms: list[str], steps: int | None,
            rounds: int, folder: Path, env: dict) -> dict:  # fmt: skip
    """Each algorithm's rounds, ours and the peer's alternating which runs first."""
    found: dict[str, dict] = {}
    for algorithm in algorithms:
        _, environment, default_steps = ALGORITHMS[algorithm]
        budget = steps or default_steps
        name = NAMES[algorithm]
        runs: dict[str, list[dict]] = {f"loopgen {name} (TensorFlow)": [],
                                       f"SB3 {name} (PyTorch)": []}  # fmt: skip
        for round_ in range(rounds):
            order = ["ours", "peer"] if round_ % 2 == 0 else ["peer", "ours"]
            for who in order:
                # The machine's load as each run starts (1-minute average): the figures of a
                # shared machine are comparable only beside it.
                load = os.getloadavg()[0]
                if who == "ours":
                    runs[f"loopgen {name} (TensorFlow)"].append(
                        {**ours(python, algorithm, budget, folder, env), "load": load}
                    )
                elif peer_python:
                    runs[f"SB3 {name} (PyTorch)"].append(
                        {**peer(peer_python, algorithm, budget, round_, folder, env), "load": load}
                    )
            print(f"  {name} round {round_ + 1}: "
                  + ", ".join(f"{who} {r[-1]['steps_per_second']:,.0f}/s "
                              f"{r[-1].get('steps_per_cpu_second', 0):,.0f}/CPU-s "
                              f"{r[-1]['return_mean']:.0f} (load {r[-1]['load']:.1f})"
                              for who, r in runs.items() if r),
                  flush=True)  # fmt: skip
        found[algorithm] = {
            "environment": environment,
            "steps": budget,
            "rounds": rounds,
            "rows": {
                who: {
                    "steps_per_second": median([r["steps_per_second"] for r in done]),
                    "rates": [r["steps_per_second"] for r in done],
                    "cpu_rates": [r.get("steps_per_cpu_second") for r in done],
                    "return_mean": median([r["return_mean"] for r in done]),
                    "returns": [r["return_mean"] for r in done],
                    "loads": [r["load"] for r in done],
                }
                for who, done in runs.items()
                if done
            },
        }
    return {"rounds": rounds, "episodes": EPISODES, "algorithms": found}


def algorithms_of(rl: dict | None) -> dict:
    """The figures of each algorithm in results.json's rl part. Results written before the
    bench ran more than PPO have its rows at the top level."""
    if not rl:
        return {}
    if "algorithms" in rl:
        return rl["algorithms"]
    return {"ppo": {"environment": "CartPole-v1", "steps": rl["steps"], "rounds": rl["rounds"],
                    "date": rl["date"], "rows": rl["rows"]}}  # fmt: skip


def rl_table(rl: dict) -> str:
    algorithms = algorithms_of(rl)
    lines = [
        "| | environment, steps, rounds | env steps/s (median; each round) "
        "| env steps per CPU-second (median; each round) "
        f"| greedy return over {rl['episodes']} episodes (median; each round) "
        "| the machine's load as each round's run started |",
        "|---|---|---|---|---|---|",
    ]
    for found in algorithms.values():
        rounds = found.get("rounds", rl["rounds"])
        for name, row in found["rows"].items():
            # Each round's rate: results written before they were kept have none.
            rates = ", ".join(f"{r:,.0f}" for r in row.get("rates", []))
            each = ", ".join(f"{r:.0f}" for r in row["returns"])
            # Per CPU-second: results written before the bench measured it have none.
            cpu = [r for r in row.get("cpu_rates", []) if r]
            per_cpu = (f"{median(cpu):,.0f} ({', '.join(f'{r:,.0f}' for r in cpu)})"
                       if cpu else "not measured")  # fmt: skip
            lines.append(
                f"| {name} | {found['environment']}, {found['steps']:,}, {rounds} "
                f"| {row['steps_per_second']:,.0f}{f' ({rates})' if rates else ''} "
                f"| {per_cpu} | {row['return_mean']:.0f} ({each}) "
                # Results written before the bench noted the load have none.
                f"| {', '.join(f'{load:.1f}' for load in row.get('loads', [])) or 'not noted'} |"
            )
    return "\n".join(lines)


def _cpu_seconds(command: list[str], cwd: Path, env: dict) -> float:
    """Runs `command`; the CPU-seconds (user and system, every thread's) it took."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    _run(command, cwd, env)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
