"""The mutants: each guard of the generated scripts (the templates) and of loopgen itself, undone
one at a time, with the tests that must fail when it is (issue 47). A guard the README calls
proven is proven only if some test fails without it: `python -m tests.mutants` checks that for
every mutant listed here.

    python -m tests.mutants                   # every mutant; exit 1 if one survives or errs
    python -m tests.mutants --only ID ...     # some of them (ids, or parts of ids)
    python -m tests.mutants --list            # the list, with each mutant's tests
    python -m tests.mutants --baseline        # their tests on the unmutated code: all pass
    python -m tests.mutants --jobs 2 --report mutants.json

Each mutant replaces one exact text of one file (found exactly once: a mutant whose text is not
there, or is there twice, is an error, never skipped: the code changed and the mutant must be
written again) in a scratch copy of the repository (the working tree's files that git tracks or
does not ignore; never the working tree itself), then runs its tests there with `pytest -x`,
loopgen imported from the copy. Killed: a test failed. Survived: they all passed, and the guard is
not proven. A new guard adds its mutant here; test_mutants.py (quick tier) checks that every text
is found once and every test named exists.

It takes about an hour on 2 cores (the tests of a mutant run the scripts they name): it runs by
hand and nightly, not in the 25-minute suite."""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Mutant:
    id: str
    file: str
    """The file changed, relative to the repository's root."""
    find: str
    """The exact text replaced: it must occur exactly once in the file."""
    replace: str
    tests: tuple[str, ...]
    """pytest node ids, relative to the root: at least one must fail."""
    why: str
    """What the guard keeps from going wrong (and the issue or claim it comes from)."""


def mutant(id: str, file: str, find: str, replace: str, tests: list[str], why: str) -> Mutant:
    return Mutant(id, file, find, replace, tuple(tests), why)


PPO = "templates/partials/ways/ppo.jinja"
DQN = "templates/partials/ways/dqn.jinja"
ENVIRONMENT = "templates/partials/rl/environment.jinja"
WIRING = "tests/test_rl_wiring.py::test_a_rollout_bootstraps_each_cut_episode_from_its_last_observation"
DQN_STORES = "tests/test_rl_wiring.py::test_dqn_stores_each_transition_as_the_environment_made_it"
ENDLESS = "tests/test_rl_wiring.py::test_dqn_learns_the_endless_tasks_value_by_double_dqn"

MUTANTS: list[Mutant] = [
    # --- Reinforcement learning: what the loop feeds the formulas (issue 47's survivors 1-10)
    mutant(
        "ppo_bootstraps_the_next_episodes_first_observation", PPO,
        'reward[cut] += GAMMA * value_of({{ inputs("reached[cut]") }}).numpy()',
        'reward[cut] += GAMMA * value_of({{ inputs("environments.observations[cut]") }}).numpy()',
        [f"{WIRING}[ppo]", f"{WIRING}[a2c]"],
        "#4: a cut episode bootstrapped from the next episode's first observation",
    ),
    mutant(
        "ppo_dict_bootstraps_the_next_episodes_first_observation", PPO,
        "ends = {name: part[cut] for name, part in reached.items()}",
        "ends = {name: part[cut] for name, part in environments.observations.items()}",
        [f"{WIRING}[ppo_dict]"],
        "#5: a Dict's cut episode bootstrapped from the next episode's first observation",
    ),
    mutant(
        "ppo_bootstraps_raw_observations", PPO,
        'value_of({{ inputs("reached[cut]") }})',
        "value_of(reached[cut])",
        [f"{WIRING}[ppo_normalized]"],
        "#6: with normalized observations, the cut's bootstrap takes raw observations",
    ),
    mutant(
        "ppo_bootstraps_a_terminated_cut", PPO,
        "cut = truncated & ~terminated",
        "cut = truncated",
        [f"{WIRING}[ppo]"],
        "#7: a step both terminated and truncated bootstrapped as if the task went on",
    ),
    mutant(
        "statistics_lose_chans_between_batch_term", PPO,
        "var * count + batch_var * batch_count + delta**2 * count * batch_count / total",
        "var * count + batch_var * batch_count",
        [f"{WIRING}[ppo_normalized]"],
        "#8: the running variance without the spread between the batches' means",
    ),
    mutant(
        "rollout_end_not_bootstrapped", PPO,
        'last_values = value_of({{ inputs("environments.observations") }}).numpy()',
        'last_values = 0 * value_of({{ inputs("environments.observations") }}).numpy()',
        [f"{WIRING}[a2c]", f"{WIRING}[ppo]"],
        "#10: the rollout's end not bootstrapped (only a learning threshold noticed, for A2C)",
    ),
    mutant(
        "dqn_stores_a_time_limit_as_termination", DQN,
        "buffer.add(observations, actions, rewards, reached, terminated)",
        "buffer.add(observations, actions, rewards, reached, terminated | _)",
        [f"{DQN_STORES}[box]", f"{ENDLESS}[single_device]"],
        "#1: a time limit stored as the episode's end (bootstrapped as termination)",
    ),
    mutant(
        "dqn_stores_the_next_episodes_first_observation", DQN,
        "buffer.add(observations, actions, rewards, reached, terminated)",
        "buffer.add(observations, actions, rewards, environments.observations, terminated)",
        [f"{DQN_STORES}[box]", f"{DQN_STORES}[dict]"],
        "#2: the next episode's first observation stored as s' instead of the last",
    ),
    mutant(
        "dqn_plain_under_the_name_of_double", DQN,
        '''targets = dqn_targets(rewards, terminated, {{ "model(reached), " if way.double }}target_network(reached))
        with tf.GradientTape() as tape:
            values = tf.gather(model(observations, training=True), actions, batch_dims=1)
            loss = loss_fn(targets, values)''',
        '''targets = dqn_targets(rewards, terminated, {{ "target_network(reached), " if way.double }}target_network(reached))
        with tf.GradientTape() as tape:
            values = tf.gather(model(observations, training=True), actions, batch_dims=1)
            loss = loss_fn(targets, values)''',
        [f"{ENDLESS}[single_device]"],
        "#3: the target network picks the next action too: plain DQN under double DQN's name",
    ),
    mutant(
        "dqn_replicas_plain_under_the_name_of_double", DQN,
        '''targets = dqn_targets(rewards, terminated, {{ "model(reached), " if way.double }}target_network(reached))
        with tf.GradientTape() as tape:
            values = tf.gather(model(observations, training=True), actions, batch_dims=1)
            # A Keras loss''',
        '''targets = dqn_targets(rewards, terminated, {{ "target_network(reached), " if way.double }}target_network(reached))
        with tf.GradientTape() as tape:
            values = tf.gather(model(observations, training=True), actions, batch_dims=1)
            # A Keras loss''',
        [f"{ENDLESS}[mirrored]"],
        "#3 on replicas (their own train step): plain DQN under double DQN's name",
    ),
    mutant(
        "evaluation_seeded_as_training", ENVIRONMENT,
        "np.random.SeedSequence([SEED, int(evaluation), first_index + i])",
        "np.random.SeedSequence([SEED, 0, first_index + i])",
        ["tests/test_rl_wiring.py::test_evaluation_plays_environments_seeded_apart_from_training"],
        "#9: evaluate's environments seeded as training's (README: seeded apart)",
    ),
]


# --- The runner ---------------------------------------------------------------------------------


def occurrences(m: Mutant, root: Path = ROOT) -> int:
    path = root / m.file
    return path.read_text().count(m.find) if path.is_file() else 0


def repository_files(root: Path) -> list[str]:
    """The working tree's files that git tracks or does not ignore."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=root, capture_output=True, check=True,
    ).stdout.decode()  # fmt: skip
    return [name for name in listed.split("\0") if name and (root / name).is_file()]


def scratch_copy(root: Path, into: Path) -> Path:
    """A copy of the repository at into/loopgen: with `into` first on PYTHONPATH, `import
    loopgen` is the copy (before the editable install's finder)."""
    copy = into / "loopgen"
    for name in repository_files(root):
        target = copy / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(root / name, target)
    return copy


def run_tests(copy: Path, tests: list[str], work: Path, timeout: float) -> tuple[int | None, str]:
    """pytest -x on `tests` in the copy; (exit status or None if it timed out, output)."""
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(copy.parent), os.environ.get("PYTHONPATH", "")]),
        # black's and the spaces' caches of the mutated renders stay in the scratch folder.
        "XDG_CACHE_HOME": str(work / "cache"),
        # pytest cuts the short summary of a failure at the width of the terminal.
        "COLUMNS": "400",
    }
    command = [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider",
               "--basetemp", str(work / "pytest"), "-o", "addopts=", "-rf", *tests]  # fmt: skip
    try:
        proc = subprocess.run(command, cwd=copy, env=env, capture_output=True, text=True,
                              timeout=timeout, start_new_session=True)  # fmt: skip
    except subprocess.TimeoutExpired as expired:
        output = expired.stdout or ""
        return None, output if isinstance(output, str) else output.decode(errors="replace")
    return proc.returncode, proc.stdout + proc.stderr


def failure_line(output: str) -> str:
    """pytest's short summary of the first failure: `FAILED node - message`."""
    for line in output.splitlines():
        if line.startswith(("FAILED ", "ERROR ")):
            return line[:300]
    return output.strip().splitlines()[-1][:300] if output.strip() else ""


def judge(m: Mutant, copy: Path, work: Path, timeout: float) -> dict:
    started = time.monotonic()
    result = {"id": m.id, "file": m.file, "tests": list(m.tests)}
    count = occurrences(m, copy)
    if count != 1:
        state = "not found" if count == 0 else f"found {count} times"
        return {**result, "outcome": "error", "detail": f"its text is {state} in {m.file}",
                "seconds": 0.0}  # fmt: skip
    path = copy / m.file
    original = path.read_text()
    path.write_text(original.replace(m.find, m.replace, 1))
    try:
        code, output = run_tests(copy, list(m.tests), work, timeout)
    finally:
        path.write_text(original)
    seconds = round(time.monotonic() - started, 1)
    if code == 1:
        outcome, detail = "killed", failure_line(output)
    elif code == 0:
        outcome, detail = "survived", "every test passed"
    elif code is None:
        outcome, detail = "error", f"its tests took over {timeout:.0f} s"
    else:  # 2 interrupted (a collection error), 4 usage (a test not found), 5 none collected
        outcome, detail = "error", f"pytest exited {code}: {failure_line(output)}"
    return {**result, "outcome": outcome, "detail": detail, "seconds": seconds}


def selected(only: list[str]) -> list[Mutant]:
    if not only:
        return list(MUTANTS)
    chosen = [m for m in MUTANTS if any(word in m.id for word in only)]
    if not chosen:
        raise SystemExit(f"no mutant id contains any of {only}")
    return chosen


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.mutants", description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", nargs="+", default=[], metavar="ID", help="mutants whose id contains one of these")
    parser.add_argument("--list", action="store_true", help="list the mutants and their tests")
    parser.add_argument("--baseline", action="store_true", help="run the mutants' tests on the unmutated copy")
    parser.add_argument("--jobs", type=int, default=1, help="mutants at once, each in a copy of its own")
    parser.add_argument("--timeout", type=float, default=1800, help="seconds a mutant's tests may take")
    parser.add_argument("--report", type=Path, help="write the results as JSON here")
    args = parser.parse_args(argv)
    mutants = selected(args.only)
    if args.list:
        for m in mutants:
            print(f"{m.id}  ({m.file}): {m.why}")
            for test in m.tests:
                print(f"    {test}")
        print(f"{len(mutants)} mutants")
        return 0

    with tempfile.TemporaryDirectory(prefix="loopgen-mutants-") as scratch:
        folders = [Path(scratch) / f"job{i}" for i in range(max(1, args.jobs))]
        copies = [scratch_copy(ROOT, folder) for folder in folders]
        started = time.monotonic()
        if args.baseline:
            tests = sorted({test for m in mutants for test in m.tests})
            print(f"The {len(tests)} tests of {len(mutants)} mutants, unmutated:", flush=True)
            code, output = run_tests(copies[0], tests, folders[0], args.timeout * 4)
            print(output[-3000:])
            return 0 if code == 0 else 1

        idle = list(zip(copies, folders, strict=True))
        lock = threading.Lock()
        results: list[dict] = []

        def one(m: Mutant) -> dict:
            with lock:
                copy, folder = idle.pop()
            try:
                result = judge(m, copy, folder, args.timeout)
            finally:
                with lock:
                    idle.append((copy, folder))
            with lock:
                done = len(results) + 1
                print(f"[{done}/{len(mutants)}] {result['outcome']:8} {m.id} "
                      f"({result['seconds']} s): {result['detail']}", flush=True)  # fmt: skip
                results.append(result)
            return result

        with ThreadPoolExecutor(len(copies)) as pool:
            ordered = list(pool.map(one, mutants))
        minutes = (time.monotonic() - started) / 60

    counts = {o: sum(r["outcome"] == o for r in ordered) for o in ("killed", "survived", "error")}
    print(f"\n{len(ordered)} mutants in {minutes:.1f} minutes ({args.jobs} at a time): "
          f"{counts['killed']} killed, {counts['survived']} survived, {counts['error']} errors")  # fmt: skip
    for r in ordered:
        if r["outcome"] != "killed":
            print(f"  {r['outcome'].upper()}: {r['id']} ({r['file']}): {r['detail']}")
    if args.report:
        summary = {"minutes": round(minutes, 1), "jobs": args.jobs, **counts, "mutants": ordered}
        args.report.write_text(json.dumps(summary, indent=2) + "\n")
    return 0 if counts["killed"] == len(ordered) else 1


if __name__ == "__main__":
    sys.exit(main())
