"""Small datasets that the tests make: no download, nothing shipped."""

from __future__ import annotations

import ast
import gzip
import json
import struct
import zlib
from pathlib import Path

import numpy as np
from helpers import ACTING, ROOT, npz


def classification_npz(
    path: Path, count: int, shape: tuple[int, ...], classes: int = 10, seed: int = 0
) -> str:
    """uint8 images whose mean brightness encodes the class, so a few steps learn something."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, classes, size=count).astype(np.int64)
    base = (y * (200 // classes)).reshape((count,) + (1,) * len(shape))
    x = np.clip(base + rng.integers(0, 40, size=(count, *shape)), 0, 255).astype(np.uint8)
    np.savez(path, x=x, y=y)
    return str(path)


def pattern_npz(path: Path, count: int, shape: tuple[int, ...], classes: int = 10) -> str:
    """uint8 images of `classes` fixed random patterns, each image its class's pattern in noise:
    one image of a class tells the others apart (few-shot tasks)."""
    rng = np.random.default_rng(0)
    patterns = rng.integers(0, 2, size=(classes, *shape)) * 160
    y = np.arange(count) % classes
    x = (patterns[y] + rng.integers(0, 96, size=(count, *shape))).astype(np.uint8)
    np.savez(path, x=x, y=y.astype(np.int64))
    return str(path)


def segmentation_npz(path: Path, count: int, size: int, classes: int = 3, seed: int = 0) -> str:
    """uint8 RGB images and (size, size, 1) masks with values in [0, classes)."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, classes, size=(count, size, size, 1)).astype(np.uint8)
    x = (y * 80 + rng.integers(0, 40, size=(count, size, size, 3))).astype(np.uint8)
    np.savez(path, x=x, y=y)
    return str(path)


def image_directory(root: Path, per_class: int, size: int, classes: int = 3) -> str:
    """One sub-directory per class with small PNG files, written without any image library."""
    rng = np.random.default_rng(1)
    for c in range(classes):
        folder = root / f"class_{c}"
        folder.mkdir(parents=True)
        for i in range(per_class):
            pixels = np.clip(c * 60 + rng.integers(0, 50, (size, size, 3)), 0, 255)
            _write_png(folder / f"{i}.png", pixels.astype(np.uint8))
    return str(root)


def _write_png(path: Path, rgb: np.ndarray) -> None:
    height, width, _ = rgb.shape
    raw = b"".join(b"\x00" + rgb[row].tobytes() for row in range(height))

    def chunk(tag: bytes, data: bytes) -> bytes:
        body = tag + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    path.write_bytes(
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(raw))
        + chunk(b"IEND", b"")
    )


def tokens_npz(path: Path, count: int, length: int, vocabulary: int = 2000, seed: int = 0) -> str:
    """Word-id sequences (0-padded at the start, as keras.utils.pad_sequences does) whose words
    tell the label: positive reviews use ids from one half of the vocabulary."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, size=count)
    x = np.zeros((count, length), dtype=np.int32)
    for i in range(count):
        words = rng.integers(length // 2, length)
        low, high = (2, vocabulary // 2) if y[i] == 0 else (vocabulary // 2, vocabulary)
        x[i, -words:] = rng.integers(low, high, size=words)
    np.savez(path, x=x, y=y)
    return str(path)


CITIES = ["lyon", "marseille", "nice", "paris", "toulouse"]


def houses_csv(
    folder: Path, prefix: str, files: int, rows: int, seed: int = 0, gzipped: bool = False
) -> str:
    """CSV files of houses: area, rooms, age, city, price (in 100 k€, from the others);
    `gzipped`: as .csv.gz files."""
    rng = np.random.default_rng(seed)
    folder.mkdir(parents=True, exist_ok=True)
    for f in range(files):
        lines = ["area,rooms,age,city,price"]
        for _ in range(rows):
            area, rooms, age = rng.uniform(30, 160), int(rng.integers(1, 7)), rng.uniform(0, 80)
            city = CITIES[int(rng.integers(0, len(CITIES)))]
            price = (area * (4 + CITIES.index(city)) / 2 - age + rng.normal(0, 5)) / 100
            lines.append(f"{area:.1f},{rooms},{age:.1f},{city},{price:.2f}")
        text = "\n".join(lines) + "\n"
        if gzipped:
            (folder / f"{prefix}-{f}.csv.gz").write_bytes(gzip.compress(text.encode()))
        else:
            (folder / f"{prefix}-{f}.csv").write_text(text)
    return str(folder / f"{prefix}-*.csv{'.gz' if gzipped else ''}")


REVIEW_WORDS = {
    "pos": ["great", "wonderful", "moving", "brilliant", "funny", "superb"],
    "neg": ["boring", "awful", "dull", "terrible", "weak", "tedious"],
}


REVIEW_FILLER = ["the", "film", "plot", "was", "and", "acting", "a", "story"]


def reviews_tsv(path: Path, count: int, seed: int = 0) -> str:
    """Short reviews, one per line: the text, a tab, pos or neg."""
    rng = np.random.default_rng(seed)
    filler = REVIEW_FILLER
    lines = []
    for _ in range(count):
        label = "pos" if rng.random() < 0.5 else "neg"
        words = list(rng.choice(filler, 5)) + list(rng.choice(REVIEW_WORDS[label], 2))
        rng.shuffle(words)
        lines.append(" ".join(words) + "\t" + label)
    path.write_text("\n".join(lines) + "\n")
    return str(path)


BERT_PRESET = """
import sys

import keras_hub

words = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *sys.argv[2].split()]
keras_hub.models.BertTokenizer(vocabulary=words, lowercase=True).save_to_preset(sys.argv[1])
keras.utils.set_random_seed(0)
# No dropout in the backbone: two replicas draw their own masks, and the replicas' test
# compares them with one device (the head's dropout, model.dropout, is the spec's).
backbone = keras_hub.models.BertBackbone(
    vocabulary_size=len(words), num_layers=2, num_heads=2, hidden_dim=16, intermediate_dim=32,
    max_sequence_length=32, dropout=0.0,
)
backbone.save_to_preset(sys.argv[1])
"""


def bert_preset(folder: Path) -> str:
    """A tiny BERT saved as a KerasHub preset (save_to_preset, as a downloaded one is laid
    out): 2 layers, 16 wide, random weights, a vocabulary of the reviews' words. Loaded by
    `from_preset(folder)` with no network."""
    from helpers import run_preloaded

    if not (folder / "config.json").exists():
        words = sorted({*REVIEW_WORDS["pos"], *REVIEW_WORDS["neg"], *REVIEW_FILLER})
        run_preloaded("-c", "import keras\n" + BERT_PRESET, str(folder), " ".join(words),
                      cwd=folder.parent)  # fmt: skip
    return str(folder)


LLAMA_PRESET = """
import io
import sys

import keras
import keras_hub
import sentencepiece

symbols = [*"0123456789", "+", "=", "?"]
# A SentencePiece "word" model (Llama's tokenizer is SentencePiece): each symbol one piece,
# after a space (a record's first symbol too), as GPT-2's byte-level BPE split them; ids 0-2
# are Llama's <unk> (what it pads with: not the end token, at which a generation stops), <s>
# and </s>. One op to trace, where a BPE tokenizer's merges are a while loop: 3 s sooner in
# each script's pipeline. sys.argv[2], if given, "end_is_pad": </s> is id 0, the id Llama's
# tokenizer pads with (as GPT-2's with a vocabulary whose end token is id 0).
end_is_pad = sys.argv[2:] == ["end_is_pad"]
unk, eos = (2, 0) if end_is_pad else (0, 2)
proto = io.BytesIO()
sentencepiece.SentencePieceTrainer.train(
    sentence_iterator=iter([" ".join(symbols)]), model_writer=proto, model_type="word",
    vocab_size=len(symbols) + 3, unk_id=unk, bos_id=1, eos_id=eos, pad_id=-1, unk_piece="<unk>",
    bos_piece="<s>", eos_piece="</s>", hard_vocab_limit=False, minloglevel=2,
)
keras_hub.models.LlamaTokenizer(proto=proto.getvalue()).save_to_preset(sys.argv[1])
keras.utils.set_random_seed(0)
backbone = keras_hub.models.LlamaBackbone(
    vocabulary_size=len(symbols) + 3, num_layers=2, num_query_heads=2, num_key_value_heads=2,
    hidden_dim=32, intermediate_dim=64,
)
backbone.save_to_preset(sys.argv[1])
"""


def llama_preset(folder: Path, end_is_pad: bool = False) -> str:
    """A tiny Llama saved as a KerasHub preset: 2 layers, 32 wide, random weights, a
    SentencePiece vocabulary of digits, '+', '=' and '?'. Loaded by `from_preset(folder)` with
    no network. `end_is_pad`: its end token </s> is id 0, the id its tokenizer pads with."""
    from helpers import run_preloaded

    if not (folder / "config.json").exists():
        extra = ["end_is_pad"] if end_is_pad else []
        run_preloaded("-c", LLAMA_PRESET, str(folder), *extra, cwd=folder.parent)
    return str(folder)


def sums_jsonl(path: Path, count: int, seed: int = 0) -> str:
    """Sums of two digits as prompt and completion records: {"prompt": "3 + 4 =", "completion":
    " 7"}, the answer's digits spaced as the prompt's."""
    rng = np.random.default_rng(seed)
    lines = []
    for _ in range(count):
        a, b = (int(x) for x in rng.integers(0, 10, 2))
        answer = " ".join(str(a + b))
        lines.append(json.dumps({"prompt": f"{a} + {b} =", "completion": f" {answer}"}))
    path.write_text("\n".join(lines) + "\n")
    return str(path)


def sum_pairs_jsonl(path: Path, count: int, seed: int = 0) -> str:
    """Preference records of sums: {"prompt": "3 + 4 =", "chosen": " 7", "rejected": " 9"}, the
    rejected answer wrong by 1 to 8."""
    rng = np.random.default_rng(seed)
    lines = []
    for _ in range(count):
        a, b, off = (int(x) for x in (*rng.integers(0, 10, 2), rng.integers(1, 9)))
        right, wrong = " ".join(str(a + b)), " ".join(str((a + b + off) % 19))
        lines.append(json.dumps({"prompt": f"{a} + {b} =", "chosen": f" {right}",
                                 "rejected": f" {wrong}"}))  # fmt: skip
    path.write_text("\n".join(lines) + "\n")
    return str(path)


SIGNALS = '''"""Windows of a noisy signal and whether a spike (the event) is in them."""

import numpy as np


def windows(count, length, seed):
    rng = np.random.default_rng(seed)
    for _ in range(count):
        signal = rng.normal(0, 0.3, size=(length, 1)).astype("float32")
        event = rng.random() < 0.5
        if event:
            signal[rng.integers(0, length), 0] += 4.0
        yield signal, np.float32(event)
'''


def signals_module(folder: Path) -> None:
    """The generator module signals_generator imports (`signals:windows`), in `folder`."""
    (folder / "signals.py").write_text(SIGNALS)


def companions(example: str, folder: Path) -> None:
    """The package of the user's that the example imports from beside it (corridor_ppo's
    environment), written into `folder` as `loopgen init` writes it beside a new spec."""
    from loopgen.dsl.starters import companions as shipped

    for relative, text in shipped(example).items():
        (folder / relative).parent.mkdir(parents=True, exist_ok=True)
        (folder / relative).write_text(text)


def example_module(example: str, name: str, folder: Path) -> None:
    """The module of yours an example imports (`name`.py), in `folder`: the code its docstring
    shows, so that what the example tells users to write is what the tests run."""
    docstring = ast.get_docstring(ast.parse((ROOT / "examples" / f"{example}.py").read_text()))
    (folder / f"{name}.py").write_text(docstring.split("```python\n")[1].split("```")[0])


def teacher_weights(script: Path) -> str:
    """Trains the teacher of a distillation script (its build_teacher(), on its own training
    data, with fit) and saves its weights where the script reads them (TEACHER_WEIGHTS); once."""
    from helpers import tf_check

    return tf_check("train_teacher", str(script), cwd=script.parent)["path"]


BACKBONE_ARGS = '{"alpha": 0.35}'
"""flowers_finetune's MobileNetV2 in the tests: the smallest one."""


def backbone_weights(tmp: Path) -> str:
    """A weights file of flowers_finetune's backbone (MobileNetV2, alpha 0.35, no top), saved
    by Keras from its own seed, in `tmp`."""
    from helpers import tf_check

    path = tmp / "mobilenet_v2_0.35_no_top.weights.h5"
    tf_check("write_backbone_weights", str(path), "MobileNetV2", BACKBONE_ARGS, "32", cwd=tmp)
    return str(path)


SMALL_UNET = [
    'model.layers[0].over={"filters": [8]}',
    "model.layers[1].filters=16",
    "model.layers[2].filters=16",
    'model.layers[3].over={"filters": [8]}',
]
"""pets_unet's U-Net cut to one level (8 and 16 filters), where its size proves nothing: an
encoder block (with its BatchNormalization), the bottom, a decoder block joined to the skip."""


SMALL_FLOWERS_MODEL = [
    # flowers_finetune's data with a small convolutional network in place of MobileNetV2,
    # where the backbone's size proves nothing (test_models keeps it where it does).
    'model.nodes=[{"name": "features", "inputs": "image", "layer": {"kind": "conv2d", '
    '"filters": 8, "kernel_size": 3, "strides": 2, "activation": "relu"}}, '
    '{"name": "pooled", "inputs": "features", "layer": {"kind": "global_average_pooling2d"}}, '
    '{"name": "dropout", "inputs": "pooled", "layer": {"kind": "dropout", "rate": 0.2}}, '
    '{"name": "logits", "inputs": "dropout", "layer": {"kind": "dense", "units": 5}}]',
    "fine_tune=null",
]


def small_data_overrides(example: str, tmp: Path, backbone: bool = True) -> list[str]:
    """Points an example at small data made here: its real source needs a download.
    `backbone=False`: flowers_finetune with SMALL_FLOWERS_MODEL."""
    if example == "mnist_mlp":
        return [f"data.train={npz(classification_npz(tmp / 'train.npz', 96, (28, 28)))}"]
    if example == "fashion_validation":
        return [
            f"data.train={npz(classification_npz(tmp / 'train.npz', 96, (28, 28)))}",
            f"data.validation={npz(classification_npz(tmp / 'v.npz', 40, (28, 28), seed=1))}",
        ]
    if example == "cifar10_vgg":
        # The training images come from a real image directory (PNG files), validation from
        # arrays: both loading paths of image data run.
        directory = image_directory(tmp / "images", per_class=16, size=32)
        source = {"kind": "image_directory", "path": directory, "image_size": [32, 32]}
        return [
            f"data.train={json.dumps(source)}",
            f"data.validation={npz(classification_npz(tmp / 'val.npz', 24, (32, 32, 3)))}",
        ]
    if example == "pets_unet":
        # Its own TFDS source, read through TFDS's test double (run it with `runnable`), at
        # 32x32 pixels.
        return [
            "data.train.image_size=[32, 32]",
            "data.validation.image_size=[32, 32]",
            "model.input_shape=[32, 32, 3]",
            "data.batch_size=4",
        ]
    if example in ("shapes_dcgan", "shapes_wgan_gp"):
        return ["data.train.count=96", "data.batch_size=32"]
    if example in ("shapes_unet", "shapes_plateau", "shapes_multitask", "shapes_simclr",
                   "shapes_sam"):  # fmt: skip
        # Its own generated data, made smaller.
        return ["data.train.count=96", "data.validation.count=32"]
    if example in ("shapes_flow", "shapes_diffusion", "shapes_vae"):
        # Validated (and sampled) every epoch, as the others are, not every tenth.
        return ["data.train.count=96", "data.validation.count=32", "loop.validate_every_epochs=1"]
    if example in ("mnist_onecycle", "fashion_cyclical"):
        return [
            f"data.train={npz(classification_npz(tmp / 'train.npz', 96, (28, 28)))}",
            f"data.validation={npz(classification_npz(tmp / 'v.npz', 40, (28, 28), seed=1))}",
            "data.batch_size=32",
        ]
    if example == "cifar10_resnet":
        return [
            f"data.train={npz(classification_npz(tmp / 'train.npz', 64, (32, 32, 3)))}",
            f"data.validation={npz(classification_npz(tmp / 'v.npz', 32, (32, 32, 3), seed=1))}",
            "data.batch_size=32",
        ]
    if example in ("imdb_bilstm", "imdb_transformer"):
        # Its own keras.datasets source, a small imdb.npz served by keras_datasets_mock.py (run
        # it with `runnable`).
        return ["data.batch_size=32"]
    if example == "houses_tabular":
        return [
            f"data.train.files={houses_csv(tmp / 'houses', 'train', 2, 40)}",
            f"data.validation.files={houses_csv(tmp / 'houses', 'validation', 1, 24, seed=1)}",
        ]
    if example == "flowers_finetune":
        from helpers import tf_check

        tf_check("write_image_tfrecords", str(tmp / "flowers"), "train", "2", "24", "5",
                 cwd=tmp)  # fmt: skip
        tf_check("write_image_tfrecords", str(tmp / "flowers"), "validation", "1", "16", "5",
                 cwd=tmp)  # fmt: skip
        image = {"dtype": "string", "image": [32, 32]}
        features = json.dumps({"image": image, "label": {"dtype": "int64"}})
        return [
            f"data.train.files={tmp / 'flowers' / 'train-*.tfrecord'}",
            f"data.validation.files={tmp / 'flowers' / 'validation-*.tfrecord'}",
            f"data.train.features={features}",
            f"data.validation.features={features}",
            "model.inputs.image.shape=[32, 32, 3]",
            "data.batch_size=16",
            *(
                # Nothing is downloaded in tests: the backbone starts from a local weights file.
                [f"model.nodes[0].layer.weights={backbone_weights(tmp)}",
                 f"model.nodes[0].layer.args={BACKBONE_ARGS}"]
                if backbone else SMALL_FLOWERS_MODEL
            ),
        ]  # fmt: skip
    if example in ("mnist_reptile", "mnist_maml"):
        # Ten classes of 30 images; tasks of 3 classes, the last three held out.
        return [
            f"data.train={npz(pattern_npz(tmp / 'train.npz', 300, (28, 28)))}",
            "training.ways=3",
            "training.test_classes=[7, 8, 9]",
            "model.layers[6].units=3",
            "training.evaluation_tasks=6",
        ]
    if example == "reviews_text":
        return [f"data.train.path={reviews_tsv(tmp / 'reviews.tsv', 120)}"]
    if example == "sums_sft":
        return [
            f"data.train.path={sums_jsonl(tmp / 'sums.jsonl', 120)}",
            f"model.preset={llama_preset(tmp / 'llama_preset')}",
            "model.sequence_length=12",
        ]
    if example == "sums_dpo":
        return [
            f"data.train.path={sum_pairs_jsonl(tmp / 'pairs.jsonl', 96)}",
            f"model.preset={llama_preset(tmp / 'llama_preset')}",
            "model.sequence_length=12",
        ]
    if example == "sums_grpo":
        companions(example, tmp)  # its reward functions, rewards/sums.py
        return [
            f"data.train.path={sums_jsonl(tmp / 'sums.jsonl', 64)}",
            f"model.preset={llama_preset(tmp / 'llama_preset')}",
            "model.sequence_length=12",
            "training.num_generations=4",
            "training.max_completion_length=4",
        ]
    if example == "reviews_bert_lora":
        return [
            f"data.train.path={reviews_tsv(tmp / 'reviews.tsv', 120)}",
            f"model.preset={bert_preset(tmp / 'bert_preset')}",
            "model.sequence_length=16",
        ]
    if example == "mnist_distillation":
        # Three classes, which a few steps learn. The teacher's weights are written by
        # `runnable` (it needs the rendered script).
        train = classification_npz(tmp / "train.npz", 96, (28, 28), classes=3)
        validation = classification_npz(tmp / "v.npz", 40, (28, 28), classes=3, seed=1)
        return [
            f"data.train={npz(train)}",
            f"data.validation={npz(validation)}",
            "data.batch_size=16",
            f"training.teacher.weights={tmp / 'teacher.weights.h5'}",
        ]
    if example == "mnist_adversarial":
        train = classification_npz(tmp / "train.npz", 96, (28, 28), classes=3)
        validation = classification_npz(tmp / "v.npz", 40, (28, 28), classes=3, seed=1)
        return [f"data.train={npz(train)}", f"data.validation={npz(validation)}",
                "data.batch_size=16"]  # fmt: skip
    if example == "mnist_own_step":
        example_module(example, "own_steps", tmp)
        return [
            f"data.train={npz(classification_npz(tmp / 'train.npz', 96, (28, 28)))}",
            f"data.validation={npz(classification_npz(tmp / 'v.npz', 40, (28, 28), seed=1))}",
            "data.batch_size=32",
        ]
    if example == "signals_generator":
        signals_module(tmp)
        return [
            'data.train.kwargs={"count": 96, "length": 128, "seed": 1}',
            "data.train.examples_per_epoch=96",
            "data.batch_size=32",
        ]
    companions(example, tmp)
    if example in ACTING:
        return []  # an environment makes its data: a run is made short by its steps
    raise AssertionError(f"no small data for {example}")


def small_off_policy(example: str) -> list[str]:
    """pendulum_sac or pendulum_td3 small: networks of 32 units (the examples' are 256 and
    400-300 wide), a replay buffer of 48 that wraps round, learning from step 16."""
    policy = 2 if example == "pendulum_sac" else 1  # SAC: a mean and a log standard deviation
    hidden = {"kind": "dense", "units": 32, "activation": "relu"}
    return [
        f"model.layers={json.dumps([hidden, {'kind': 'dense', 'units': policy}])}",
        f"training.critic.layers={json.dumps([hidden, {'kind': 'dense', 'units': 1}])}",
        "training.buffer_size=48", "training.batch_size=16", "training.learning_starts=16",
    ]  # fmt: skip


def small_pixel_dqn() -> list[str]:
    """breakout_dqn small: a network of one small convolution (the example's is the Nature
    CNN), a replay buffer of 48 that wraps round, learning from step 16, a gradient step
    every step; a lost life ends an episode, so that games reset within a short budget."""
    layers = [{"kind": "rescaling", "scale": 1 / 255}, {"kind": "permute", "dims": [2, 3, 1]},
              {"kind": "conv2d", "filters": 4, "kernel_size": 8, "strides": 8,
               "activation": "relu"},
              {"kind": "flatten"}, {"kind": "dense", "units": 4}]  # fmt: skip
    wrappers = [{"kind": "atari_preprocessing", "terminal_on_life_loss": True},
                {"kind": "frame_stack_observation", "stack_size": 4}]  # fmt: skip
    return [
        f"model.layers={json.dumps(layers)}", f"data.wrappers={json.dumps(wrappers)}",
        "training.buffer_size=48", "training.batch_size=16", "training.learning_starts=16",
        "training.train_every=1", "training.target_update_every=10",
    ]  # fmt: skip


# Examples whose own source would download: the test double that serves it small and local.
DOWNLOAD_DOUBLES = {
    "pets_unet": "tfds_mock",  # TFDS, inside tfds.testing.mock_data
    "imdb_bilstm": "keras_datasets_mock",  # keras.datasets.imdb, its download replaced
    "imdb_transformer": "keras_datasets_mock",
}


def runnable(example: str, script: Path, double: str | None = None) -> Path:
    """The file a test runs for `example`'s rendered script: the script itself, or for an
    example whose source downloads (DOWNLOAD_DOUBLES) a launcher next to it that runs the
    script with that download served by a test double (or by `double`, for a spec left
    downloading), through the source's real loading code. A distillation's teacher is trained
    first (a few epochs of fit on the script's own training data), its weights saved where the
    script reads them."""
    if example == "mnist_distillation":
        teacher_weights(script)
    double = double or DOWNLOAD_DOUBLES.get(example)
    if double is None:
        return script
    launcher = script.with_name(f"{script.stem}_{double}.py")
    launcher.write_text(
        "import runpy\n"
        "import sys\n\n"
        f"sys.path.insert(0, {str(Path(__file__).parent)!r})\n"
        f"import {double}\n\n"
        f"sys.argv = [{str(script)!r}, *sys.argv[1:]]\n"
        f"sys.path[0] = {str(script.parent)!r}  # as `python SCRIPT`: the runtime beside it\n"
        f"with {double}.served():\n"
        f"    runpy.run_path({str(script)!r}, run_name='__main__')\n"
    )
    return launcher


TINY_CLASSIFIER = """
from loopgen.dsl import *

spec = Spec(
    name="tiny",
    seed=0,
    data=Data(
        train=Npz(path="train.npz"), validation=Npz(path="val.npz"), batch_size=32, rescale=1 / 255
    ),
    model=Sequential(input_shape=(8,), layers=[Dense(units=16, activation="relu"), Dense(units=4)]),
    loss=SparseCategoricalCrossentropy(from_logits=True),
    optimizer=Adam(learning_rate=1e-2),
    metrics=[SparseCategoricalAccuracy()],
    loop=Loop(epochs=EPOCHS, log_every_steps=16),
    checkpoint=Checkpoint(every_epochs=1),
    logging=LOGGING,
)
"""


def tiny_classifier(
    folder: Path, epochs: int, examples: int = 2048, logging: str = "Logging()"
) -> None:
    """spec.py, train.npz and val.npz in `folder`: 8 features whose mean encodes one of 4
    classes, a 16-unit MLP. A rate that learns reaches ~0.9 validation accuracy in a few
    epochs; 1e-6 stays at chance. A trial of loopgen sweep takes seconds."""
    for name, count, seed in (("train", examples, 0), ("val", 256, 1)):
        rng = np.random.default_rng(seed)
        y = rng.integers(0, 4, size=count)
        x = np.clip(y[:, None] * 50 + rng.integers(0, 60, size=(count, 8)), 0, 255)
        np.savez(folder / f"{name}.npz", x=x.astype(np.uint8), y=y.astype(np.int64))
    spec = TINY_CLASSIFIER.replace("EPOCHS", str(epochs)).replace("LOGGING", logging)
    (folder / "spec.py").write_text(spec)
