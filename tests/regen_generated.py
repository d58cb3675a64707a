"""Re-renders every example into generated/ through the real CLI.

Usage: python tests/regen_generated.py"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def golden_pairs() -> list[tuple[Path, Path]]:
    """(example spec, its generated script), paths relative to the repository root."""
    return [
        (spec.relative_to(ROOT), Path("generated") / spec.name)
        for spec in sorted((ROOT / "examples").glob("*.py"))
    ]


def main() -> None:
    for spec, out in golden_pairs():
        # Golden files are outputs only (git keeps their history): replace them outright.
        (ROOT / out).unlink(missing_ok=True)
        subprocess.run(
            [sys.executable, "-m", "loopgen.cli", "render", str(spec), "-o", str(out)],
            cwd=ROOT,
            check=True,
        )


if __name__ == "__main__":
    main()
