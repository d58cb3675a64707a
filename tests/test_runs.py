"""Every generated script runs end to end on small data the tests make, in a fresh process:
it trains, writes checkpoints, TensorBoard events, a metrics log and an export."""

from __future__ import annotations

import json
from pathlib import Path

import data
import pytest
from helpers import ROOT, npz, run_python, tf_check

pytestmark = pytest.mark.slow


def small_data_overrides(example: str, tmp: Path) -> list[str]:
    """Points an example at small data made here: its real source needs a download."""
    if example == "mnist_mlp":
        return [f"data.train={npz(data.classification_npz(tmp / 'train.npz', 96, (28, 28)))}"]
    if example == "fashion_validation":
        return [
            f"data.train={npz(data.classification_npz(tmp / 'train.npz', 96, (28, 28)))}",
            f"data.validation={npz(data.classification_npz(tmp / 'v.npz', 40, (28, 28), seed=1))}",
        ]
    if example == "cifar10_vgg":
        # The training images come from a real image directory (PNG files), validation from
        # arrays: both loading paths of image data run.
        directory = data.image_directory(tmp / "images", per_class=16, size=32)
        source = {"kind": "image_directory", "path": directory, "image_size": [32, 32]}
        return [
            f"data.train={json.dumps(source)}",
            f"data.validation={npz(data.classification_npz(tmp / 'val.npz', 24, (32, 32, 3)))}",
        ]
    if example == "pets_unet":
        return [
            f"data.train={npz(data.segmentation_npz(tmp / 'train.npz', 8, 128))}",
            f"data.validation={npz(data.segmentation_npz(tmp / 'val.npz', 4, 128, seed=1))}",
            "data.batch_size=4",
        ]
    if example == "shapes_unet":
        # Its own generated data, made smaller.
        return ["data.train.count=96", "data.validation.count=32"]
    raise AssertionError(f"no small data for {example}")


EXAMPLES = sorted(p.stem for p in (ROOT / "examples").glob("*.py"))


@pytest.mark.parametrize("example", EXAMPLES)
def test_example_trains_end_to_end(example, render, tmp_path):
    script = render(example, *small_data_overrides(example, tmp_path))
    out = tmp_path / "run"
    proc = run_python(script, "--epochs", "2", "--output-dir", str(out), cwd=tmp_path)

    assert "Epoch 2/2" in proc.stdout
    checkpoints = sorted(p.name for p in (out / "checkpoints").glob("ckpt-*.index"))
    assert checkpoints, "no checkpoint written"
    assert (out / "export" / "saved_model" / "saved_model.pb").is_file()

    records = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    steps = [r["step"] for r in records if "loss" in r]
    assert steps == sorted(steps) and steps[-1] == 2 * steps_per_epoch(records)
    assert all(r["loss"] == r["loss"] and r["loss"] > 0 for r in records if "loss" in r)

    tags = tf_check("scalar_tags", str(out / "logs" / "train"), cwd=tmp_path)
    assert {"loss", "learning_rate"} <= set(tags), tags
    if (out / "logs" / "validation").exists():
        val_tags = tf_check("scalar_tags", str(out / "logs" / "validation"), cwd=tmp_path)
        assert val_tags.get("loss") == 2, val_tags  # one validation pass per epoch
        assert any("val_loss" in r for r in records)


def steps_per_epoch(records: list[dict]) -> int:
    first_epoch = [r["step"] for r in records if r["epoch"] == 1 and "loss" in r]
    return max(first_epoch)
