"""The MkDocs hook (`hooks:` in mkdocs.yml) that writes the generated pages at every build: the
reference of the spec models (reference_pages.py), the gallery of examples (gallery_pages.py)
and the command-line reference (cli_pages.py). Nothing generated is committed, so nothing
generated can go stale. It also marks where code in a table may wrap (on_page_content)."""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

import cli_pages
import gallery_pages
import reference_pages
from mkdocs.structure.files import File, Files

GENERATED = {
    "Reference": reference_pages,
    "Command line": cli_pages,
    "Gallery": gallery_pages,
}
"""The navigation entries (`- Reference: reference/index.md` in mkdocs.yml) that the hook
replaces by the generated section."""


def on_config(config: Any) -> Any:
    for i, entry in enumerate(config.nav or []):
        if isinstance(entry, dict) and len(entry) == 1:
            (title,) = entry
            if title in GENERATED:
                config.nav[i] = {title: GENERATED[title].nav()}
    return config


def on_files(files: Files, config: Any) -> Files:
    for module in GENERATED.values():
        for path, content in module.pages().items():
            files.append(File.generated(config, path, content=content))
    return files


CELL = re.compile(r"<td>.*?</td>", re.S)
CODE = re.compile(r"<code>([^<]*)</code>")
AFTER = re.compile(r"([(=,/|]|\.(?=[A-Za-z_]))(?=[^\s)])")
BREAK = r"\1<wbr>"


def wrappable(match: re.Match[str]) -> str:
    """A code span of a cell with a line-break opportunity (`<wbr>`) after each `(`, `=`, `,`,
    `/` and `|`, and after a `.` before a name: `Distillation(teacher=TrainedModel(...)` wraps
    after `(` or `=`, `tf.config.run_functions_eagerly(True)` after a dot too (the debugging
    guide's TensorFlow column fits a 1,280-pixel window), `0.001` and `()` never, and a name
    (`run_eagerly`) is never split (the stylesheet stops the theme breaking words anywhere)."""
    return CODE.sub(
        lambda code: "<code>" + AFTER.sub(BREAK, code.group(1)) + "</code>", match.group(0)
    )


def on_page_content(html: str, **_: Any) -> str:
    return CELL.sub(wrappable, html)
