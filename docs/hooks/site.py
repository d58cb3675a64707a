"""The MkDocs hook (`hooks:` in mkdocs.yml) that writes the generated pages at every build: the
reference of the spec models (reference_pages.py), the gallery of examples (gallery_pages.py)
and the command-line reference (cli_pages.py). Nothing generated is committed, so nothing
generated can go stale."""

from __future__ import annotations

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
