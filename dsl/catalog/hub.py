"""KerasHub's presets as data: each built-in preset's backbone class and size, and which
backbone classes each task the spec language names has a class for (`keras_hub.json`).

Rendering reads the JSON instead of importing KerasHub (tens of seconds on a loaded machine):
a preset's name is checked here, a local preset directory by its own config.json. Written by
`python -m loopgen.dsl.catalog.hub` from the installed keras-hub; a test regenerates it and
fails when it drifts.
"""

from __future__ import annotations

import difflib
import json
from functools import cache
from pathlib import Path
from typing import Any

PATH = Path(__file__).with_name("keras_hub.json")

TASKS = {"text_classifier": "TextClassifier", "causal_lm": "CausalLM"}
"""The spec's task names, and KerasHub's base class of each."""


@cache
def data() -> dict[str, Any]:
    """The whole catalog, parsed once."""
    return json.loads(PATH.read_text(encoding="utf-8"))


def preset(name: str) -> dict[str, Any] | None:
    """A built-in preset's entry ({"backbone", "params"}), or None."""
    return data()["presets"].get(name)


def close_presets(name: str) -> list[str]:
    """Built-in presets whose names are close to `name`, for a message."""
    return difflib.get_close_matches(name, list(data()["presets"]), n=3, cutoff=0.6)


def task_backbones(task: str) -> list[str]:
    """The backbone classes that KerasHub has a `task` class for."""
    return data()["tasks"][task]


def generate() -> dict[str, Any]:
    """The catalog of the installed keras-hub."""
    import keras_hub
    from keras_hub.src.utils.preset_utils import BUILTIN_PRESETS_FOR_BACKBONE

    presets = {
        name: {"backbone": backbone.__name__, "params": entry["metadata"].get("params")}
        for backbone, entries in BUILTIN_PRESETS_FOR_BACKBONE.items()
        for name, entry in entries.items()
    }
    tasks = {}
    for task, base in TASKS.items():
        classes = _subclasses(getattr(keras_hub.models, base))
        tasks[task] = sorted(
            {cls.backbone_cls.__name__ for cls in classes if getattr(cls, "backbone_cls", None)}
        )
    return {
        "keras_hub_version": keras_hub.__version__,
        "presets": dict(sorted(presets.items())),
        "tasks": tasks,
    }


def _subclasses(cls: type) -> list[type]:
    found = []
    for sub in cls.__subclasses__():
        found += [sub, *_subclasses(sub)]
    return found


if __name__ == "__main__":
    PATH.write_text(json.dumps(generate(), indent=1) + "\n", encoding="utf-8")
    print(f"wrote {PATH}")
