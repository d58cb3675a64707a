"""Re-renders every example into generated/ through the real CLI: `generated/<example>.py` is
the spec as written, `generated/<variant>/<example>.py` its twin for each other strategy, and
`generated/loopgen_runtime.py` the runtime they all import (the same bytes for every script,
so kept once: a render writes it beside each script).

Usage: python tests/regen_generated.py"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from loopgen.dsl.loader import load_spec
from loopgen.dsl.rules.rl import strategies
from loopgen.dsl.spec import STRATEGY_KINDS

ROOT = Path(__file__).resolve().parent.parent


def golden_files() -> list[tuple[Path, str | None, Path]]:
    """(example spec, --variant or None for the spec as written, its generated script), paths
    relative to the repository root."""
    found = []
    for spec_file in sorted((ROOT / "examples").glob("*.py")):
        loaded = load_spec(spec_file)
        own = loaded.distribute.kind
        spec = spec_file.relative_to(ROOT)
        found.append((spec, None, Path("generated") / spec.name))
        # Reinforcement learning has no TPU variant, DQN no multi-worker one (dsl/rules/rl.py).
        kinds = strategies(loaded) if loaded.acts else STRATEGY_KINDS
        found += [
            (spec, kind, Path("generated") / kind / spec.name) for kind in kinds if kind != own
        ]
    return found


def main() -> None:
    # Golden files are outputs only (git keeps their history): replace them outright.
    for old in (ROOT / "generated").rglob("*.py"):
        old.unlink()  # (a variant's link to the runtime too)
    for spec, variant, out in golden_files():
        (ROOT / out).parent.mkdir(parents=True, exist_ok=True)
        args = ["render", str(spec), "-o", str(out)]
        if variant:
            args += ["--variant", variant]
        subprocess.run([sys.executable, "-m", "loopgen", *args], cwd=ROOT, check=True)
    # The runtime once, beside the scripts as written; each variant's folder links to it, so
    # that its scripts run where they are.
    for runtime in (ROOT / "generated").glob("*/loopgen_runtime.py"):
        runtime.unlink()
        runtime.symlink_to(Path("..") / runtime.name)
    # Nobody edits golden files, so they need no merge base (see output/sidecar.py).
    for state in (ROOT / "generated").rglob(".loopgen"):
        shutil.rmtree(state)
    for empty in (ROOT / "generated").iterdir():
        if empty.is_dir() and not any(empty.iterdir()):
            shutil.rmtree(empty)


if __name__ == "__main__":
    main()
