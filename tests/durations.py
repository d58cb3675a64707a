"""Records how long each test took in a run, for conftest.py to start the longest first.

Usage: pytest -n 2 --junitxml=/tmp/suite.xml; python tests/durations.py /tmp/suite.xml"""

from __future__ import annotations

import json
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

FILE = Path(__file__).with_name("durations.json")


def main(junit: str) -> None:
    found = {}
    for case in ET.parse(junit).iter("testcase"):
        seconds = float(case.get("time", 0))
        if seconds >= 1:  # the order of the rest does not matter
            module = case.get("classname").replace(".", "/")
            found[f"{module}.py::{case.get('name')}"] = round(seconds, 1)
    FILE.write_text(json.dumps(dict(sorted(found.items())), indent=0) + "\n")
    print(f"{len(found)} tests of 1 s or more written to {FILE}")


if __name__ == "__main__":
    main(sys.argv[1])
