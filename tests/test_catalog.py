"""The catalog of Keras (dsl/catalog/keras.json) is what the installed Keras has, the Python
names of the vocabulary are what the catalog lists, and the catalog says what the spec language
relies on."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from helpers import ROOT
from loopgen.dsl import catalog

GENERATE = ROOT / "dsl" / "catalog" / "generate.py"


@pytest.mark.slow
def test_catalog_matches_the_installed_keras():
    """Regenerates the catalog from Keras (imports TensorFlow: seconds) and compares."""
    proc = subprocess.run(
        [sys.executable, str(GENERATE), "--check"], capture_output=True, text=True, timeout=600
    )
    assert proc.returncode == 0, proc.stderr[-3000:]


def test_vocabulary_modules_match_the_catalog():
    proc = subprocess.run(
        [sys.executable, "-m", "loopgen.dsl.catalog.api", "--check"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr


def test_catalog_covers_keras_and_the_kinds_specs_use():
    data = catalog.data()
    layers = data["layers"]
    assert len(layers) == 163  # Keras 3.15: every public Layer subclass, aliases included
    kinds = [entry["kind"] for entry in layers.values()]
    assert len(set(kinds)) == len(kinds)
    for kind in ("dense", "conv2d", "conv2d_transpose", "max_pooling2d", "up_sampling2d",
                 "concatenate", "flatten", "reshape", "dropout", "batch_normalization",
                 "activation", "conv1d", "lstm", "multi_head_attention", "embedding"):  # fmt: skip
        assert catalog.lookup("layers", kind) is not None, kind
    for name, entry in layers.items():
        if entry.get("alias_of"):
            assert entry["alias_of"] in layers and not layers[entry["alias_of"]].get("alias_of")
        elif not entry.get("excluded"):
            assert entry["example"]["args"] is not None, name
    assert catalog.lookup("layers", "Convolution2D").class_name == "Conv2D"
    for section, kind in (("losses", "sparse_categorical_crossentropy"),
                          ("metrics", "mean_iou"), ("optimizers", "adamw"),
                          ("optimizers", "rmsprop"), ("applications", "mobilenetv2")):  # fmt: skip
        assert catalog.lookup(section, kind) is not None, (section, kind)
    assert "relu" in data["activations"] and "he_uniform" in data["initializers"]


def test_exclusions_say_why():
    for section in ("layers", "losses", "metrics", "optimizers"):
        for name, entry in catalog.data()[section].items():
            reason = entry.get("excluded")
            assert reason is None or len(reason) > 20, (section, name)
    excluded = {n for n, e in catalog.data()["layers"].items() if e.get("excluded")}
    assert {"JaxLayer", "TorchModuleWrapper", "TFSMLayer", "Lambda"} <= excluded


def test_the_catalog_file_is_deterministic_json():
    text = catalog.PATH.read_text()
    assert text == json.dumps(json.loads(text), indent=1, sort_keys=True) + "\n"


@pytest.mark.slow
def test_keras_hub_catalog_matches_the_installed_keras_hub():
    """Regenerates KerasHub's presets and task classes from the installed keras-hub (imports
    it: seconds) and compares them with dsl/catalog/keras_hub.json, which rendering reads."""
    code = (
        "import json, sys\n"
        "from loopgen.dsl.catalog import hub\n"
        "sys.exit(hub.generate() != json.loads(hub.PATH.read_text()))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=600)  # fmt: skip
    assert proc.returncode == 0, "stale: python -m loopgen.dsl.catalog.hub\n" + proc.stderr[-3000:]
