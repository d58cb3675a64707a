"""Rules of the objective: the model, loss or tasks (or GAN) that go together, label formats,
logits against `from_logits`, thresholds of metrics on logits."""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path
from typing import TYPE_CHECKING

from ...errors import RuleError
from ..layers import KerasLayer
from ..training import Loss
from ..ways import DRAWING_KINDS, LM_KINDS

if TYPE_CHECKING:
    from ..spec import Spec

_COUNTERPART = {
    "sparse_categorical_crossentropy": "categorical_crossentropy",
    "categorical_crossentropy": "sparse_categorical_crossentropy",
    "sparse_categorical_accuracy": "categorical_accuracy",
    "categorical_accuracy": "sparse_categorical_accuracy",
}
"""For a loss or metric that expects the other label format: the one that fits."""


def check_language_model(spec: Spec) -> None:
    """SFT and DPO train a KerasHub causal LM on records of text, with their own loss."""
    way = spec.training.kind.upper()
    model = spec.model
    if model is None or model.kind != "keras_hub" or model.task != "causal_lm":
        raise ValueError(
            f"training is {way}, which trains a causal language model: set "
            'model=KerasHub(preset=..., task="causal_lm")'
        )
    if spec.optimizer is None:
        raise ValueError("optimizer is missing: set it")
    if spec.loss is not None:
        raise ValueError(
            f"loss is set, and training is {way}, whose loss is its own (the next-token "
            "cross-entropy of the responses"
            + (")" if way == "SFT" else ", through DPO's)")
            + ": remove loss"
        )
    if spec.metrics:
        raise ValueError(
            f"metrics are set, and training is {way}, which logs its own (TRL's names): "
            "remove metrics"
        )
    for field, source in (
        ("data.train", spec.data.train),
        ("data.validation", spec.data.validation),
    ):
        if source is not None and source.kind not in ("text_records", "split"):
            raise ValueError(
                f"{field}.kind={source.kind!r}, but training is {way}, which reads records "
                f"of text fields: use {field}=TextRecords(path=...)"
            )
    if spec.gradients.accumulate_steps > 1:
        raise ValueError(
            f"gradients.accumulate_steps={spec.gradients.accumulate_steps} with training "
            f"{way}: its loss is a mean over the batch's tokens, which micro-batches would "
            "each take over their own; raise data.batch_size or remove accumulate_steps"
        )
    if getattr(spec.training, "packing", False) and spec.distribute.kind == "tpu":
        raise RuleError(
            "training.packing=True with distribute=TPU(): a TPU compiles the step for fixed "
            "shapes, and packing gives each batch its own count of rows (a compile each); "
            "remove packing, or train with Mirrored() or MultiWorker()",
            at="training",
        )
    if spec.training.kind == "grpo":
        check_grpo(spec)


def check_grpo(spec: Spec) -> None:
    """GRPO's completions fit in the sequence, it trains on prompts alone, and each reward
    function is found (its module beside the spec or on the path, the function defined in it)
    without running your code."""
    grpo, length = spec.training, spec.model.sequence_length
    if grpo.max_completion_length is not None and grpo.max_completion_length >= length:
        raise RuleError(
            f"training.max_completion_length={grpo.max_completion_length} leaves no room for a "
            f"prompt in model.sequence_length={length} tokens (prompt and completion): raise "
            "model.sequence_length or lower max_completion_length",
            at="training",
        )
    if spec.data.validation is not None:
        raise RuleError(
            "data.validation is set, and training is GRPO, which has no validation pass (its "
            "rewards are logged on the training prompts): remove data.validation",
            at="data.validation",
        )
    if spec.performance.xla == "on":
        raise RuleError(
            "performance.xla='on' with training GRPO: its step samples with a while loop and "
            "calls your reward functions in Python, which XLA cannot compile; set 'auto'",
            at="performance",
        )
    for index, target in enumerate(grpo.reward_funcs):
        check_reward_function(f"training.reward_funcs[{index}]", target)


def check_reward_function(field: str, target: str) -> None:
    module, function = target.split(":")
    try:
        found = importlib.util.find_spec(module)
    except (ImportError, ValueError) as error:
        found, reason = None, f" ({error})"
    else:
        reason = ""
    if found is None:
        raise RuleError(
            f"{field}={target!r}: no module {module!r} beside the spec or on Python's path"
            f"{reason}; put {module.replace('.', '/')}.py beside the spec, or fix the name",
            at="training",
        )
    if found.origin is None or not found.origin.endswith(".py"):
        return  # a compiled or namespace module: the script's import checks it
    try:
        tree = ast.parse(Path(found.origin).read_text(encoding="utf-8"), found.origin)
    except (SyntaxError, ValueError, UnicodeDecodeError) as error:
        raise RuleError(
            f"{field}={target!r}: module {module} ({Path(found.origin).name}) does not parse "
            f"({error}); fix it",
            at="training",
        ) from None
    names = set()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names |= {t.id for t in node.targets if isinstance(t, ast.Name)}
        elif isinstance(node, ast.ImportFrom | ast.Import):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names}
    if function not in names:
        defined = sorted(n.name for n in tree.body if isinstance(n, ast.FunctionDef))
        raise RuleError(
            f"{field}={target!r}: module {module} ({Path(found.origin).name}) defines no "
            f"{function!r} (its functions: "
            f"{', '.join(defined) or 'none'}); fix the name",
            at="training",
        )


def check_objective(spec: Spec) -> None:
    if spec.gan is not None:
        check_gan(spec)
        return
    if spec.training.kind in LM_KINDS:
        check_language_model(spec)
        return
    if spec.training.kind in DRAWING_KINDS:
        check_generative_objective(spec)
        return
    if spec.training.kind == "own_step" and spec.loss is not None:
        raise ValueError(
            f"loss is set, and training is your own step ({spec.training.target}), which "
            "returns the losses: remove loss"
        )
    for field in ("model", "optimizer"):
        if getattr(spec, field) is None:
            raise ValueError(
                f"{field} is missing: set it (or training=GAN(...), for a generative "
                "adversarial network)"
            )
    if spec.loss is None and not spec.tasks and spec.training.kind != "own_step":
        raise ValueError(
            "loss is missing: set loss (the objective), or training=MultiTask(tasks=...) for a "
            "multi-task model (one loss per head of model.heads)"
        )
    if spec.loss is not None and spec.tasks:
        raise ValueError(
            "loss is set and training is MultiTask: a multi-task model has one loss per task; "
            "remove loss (or use training=Supervised(), for a single output)"
        )
    if spec.training.kind == "own_step":
        return  # your step reads the model's outputs and the labels as they are
    heads = list(getattr(spec.model, "heads", {}))
    field = "model.outputs" if spec.model.kind == "graph" else "model.heads"
    if not spec.tasks:
        if heads:
            raise ValueError(
                f"{field} has {heads} but training is not MultiTask: give each head its loss "
                "in training=MultiTask(tasks={...}) (and drop loss)"
            )
        if spec.data.label_names:
            raise ValueError(
                f"data gives one label per task ({spec.data.label_names}) but the model has "
                "one output; add model.heads and training=MultiTask(tasks=...) for them, or use "
                "single labels"
            )
        return
    if sorted(heads) != sorted(spec.tasks):
        raise ValueError(
            f"training.tasks {sorted(spec.tasks)} and {field} {sorted(heads)} differ: a multi-task "
            "model (a Functional model's heads, a Graph's outputs) needs one head per task, "
            "with the same names"
        )
    if spec.metrics:
        raise ValueError(
            "metrics is set for a multi-task model: put each metric in its task's "
            "training.tasks.<name>.metrics"
        )
    labels = spec.data.label_names
    if labels is None or sorted(labels) != sorted(spec.tasks):
        raise ValueError(
            f"training.tasks {sorted(spec.tasks)} need one label each, but data.train gives "
            f"{sorted(labels) if labels else 'one label per example'}: use an Npz source "
            'with y_key={"<task>": "<array name>", ...} or Shapes(task="multitask")'
        )
    if spec.data.labels == "one_hot":
        raise ValueError(
            'data.labels="one_hot" is for single labels; a multi-task model takes each '
            "task's labels as they are (sparse class ids)"
        )


def check_generative_objective(spec: Spec) -> None:
    """Diffusion, flow matching, VAE: a network and its optimizer; the loss is the way's own."""
    kind = spec.training.kind
    network = "VAE's decoder" if kind == "vae" else "denoiser"
    for field in ("model", "optimizer"):
        if getattr(spec, field) is None:
            raise ValueError(
                f"{field} is missing: training is {kind}, whose {field} is the {network}'s; set "
                f"{field}"
            )
    loss = (
        "the reconstruction's negative log-likelihood plus the weighted KL divergence"
        if kind == "vae"
        else "the mean squared error of the denoiser's prediction"
    )
    taken = [f for f in ("loss", "metrics") if getattr(spec, f)]
    if taken:
        raise ValueError(
            f"{taken[0]} is set, and training is {kind}: its loss is {loss}, written by the way "
            f"itself; remove {taken[0]}"
        )


def check_gan(spec: Spec) -> None:
    gan = spec.gan
    assert gan is not None
    taken = [f for f in ("model", "optimizer", "loss") if getattr(spec, f) is not None]
    taken += ["metrics"] if spec.metrics else []
    if taken:
        raise ValueError(
            f"training is a GAN, and {taken[0]} is set: a GAN's networks, losses and "
            "optimizers are all in training (training.generator, training.discriminator, "
            f"training.*_optimizer); remove {taken[0]}"
        )
    if spec.data.validation is not None:
        raise ValueError(
            "data.validation is set for a GAN: there are no labels to score it on, and the "
            "script writes sample images instead; remove data.validation"
        )
    unsupported = {
        "gradients": spec.gradients.clipped or spec.gradients.accumulate_steps > 1,
        "logging.histograms": spec.logging.histograms,
        "data.labels": spec.data.labels != "sparse" or bool(spec.data.label_names),
    }
    for field, used in unsupported.items():
        if used:
            raise ValueError(
                f"{field} is set for a GAN, whose step loopgen writes without it (only the "
                f"supervised step has it); remove {field} or hand-edit the GAN step"
            )
    check_gan_objective(spec)
    if gan.generator.input_shape != (gan.latent_dim,):
        raise ValueError(
            f"training.generator.input_shape={gan.generator.input_shape} but training.latent_dim="
            f"{gan.latent_dim}: the generator takes the noise vector; set input_shape="
            f"({gan.latent_dim},)"
        )
    path, last = gan.generator.last_layer()
    if output_activation(last) not in ("tanh", "sigmoid"):
        raise ValueError(
            f"training.generator.{path} must end the generator in activation='tanh' (images in "
            "[-1, 1], the DCGAN choice) or 'sigmoid' ([0, 1]): the script scales the real "
            "images to the same range"
        )


def check_gan_objective(spec: Spec) -> None:
    """The loss, its penalty and the critic that they need."""
    gan = spec.gan
    assert gan is not None
    if gan.loss == "wasserstein" and gan.label_smoothing:
        raise ValueError(
            "training.label_smoothing is set with training.loss='wasserstein': a critic scores "
            "images, it has no labels to smooth; remove training.label_smoothing"
        )
    if gan.loss == "wasserstein" and gan.penalty is None:
        raise ValueError(
            "training.loss='wasserstein' without training.penalty: nothing keeps the critic "
            "1-Lipschitz, and its scores grow without bound; set "
            "training.penalty=GradientPenalty(weight=10.0) (WGAN-GP)"
        )
    if gan.penalty is not None and gan.penalty.kind == "gradient_penalty":
        if gan.loss != "wasserstein":
            raise ValueError(
                "training.penalty=GradientPenalty() with training.loss='cross_entropy': the "
                "gradient penalty keeps a Wasserstein critic 1-Lipschitz; set "
                "training.loss='wasserstein', or use training.penalty=R1() for a "
                "cross-entropy discriminator"
            )
    if gan.penalty is not None:
        layers = gan.discriminator.flat_items()
        for path, item in layers:
            if getattr(item, "kind", "") == "batch_normalization":
                raise ValueError(
                    f"training.discriminator.{path} is a BatchNormalization, and training."
                    f"penalty is set: the penalty is on each image's own gradient, which batch "
                    "statistics tie to the other images of the batch; use "
                    "LayerNormalization() in the discriminator (as WGAN-GP does)"
                )


def check_labels(spec: Spec) -> None:
    labels = spec.data.labels
    checked = []
    for loss_path, loss, metrics_path, metrics, _, _ in spec.objectives():
        checked += [(loss_path, loss)]
        checked += [(f"{metrics_path}[{i}]", m) for i, m in enumerate(metrics)]
    for where, obj in checked:
        wants = obj.labels
        if wants != "any" and wants != labels:
            alternative = _COUNTERPART.get(obj.kind)
            raise ValueError(
                f"{where}.kind={obj.kind!r} expects {wants} labels, but data.labels="
                f'{labels!r}; use data.labels="{wants}"'
                + (f", or use {where}.kind={alternative!r}" if alternative else "")
            )


def check_logits(spec: Spec) -> None:
    for where, loss, _, _, path, last in spec.objectives():
        check_output(spec, where, loss, path, last)


def output_activation(layer: object) -> str | None:
    """The activation a layer ends in ("linear" for none), or None when it is not visible
    (a custom layer, Dropout, a block, ...)."""
    if not isinstance(layer, KerasLayer):
        return None
    if layer.kind == "softmax":
        return "softmax"
    if "activation" in layer.entry.args:
        return layer.arg("activation") or "linear"
    return None


def check_output(spec: Spec, where: str, loss: Loss, path: str, last: object) -> None:
    activation = output_activation(last)
    if not loss.probabilistic or activation is None:
        return  # the output activation is not visible here
    squashed = activation in ("softmax", "sigmoid")
    if loss.from_logits and squashed:
        raise RuleError(
            f"{where}.from_logits=True but {path}.activation={activation!r}: the loss "
            f"would apply {activation} a second time. Remove the activation (recommended, "
            f"more stable) or set {where}.from_logits=False",
            at=path,
        )
    if not loss.from_logits and not squashed:
        raise RuleError(
            f"{where}.from_logits=False but {path} outputs "
            f"{'logits' if activation == 'linear' else repr(activation) + ' values'}"
            f", not probabilities; set {where}.from_logits=True (recommended) or end the "
            "model in a softmax/sigmoid",
            at=path,
        )


def check_thresholds(spec: Spec) -> None:
    for where, loss, metrics_path, metrics, _, _ in spec.objectives():
        from_logits = loss.from_logits
        for i, metric in enumerate(metrics):
            threshold = metric.arg("threshold") if metric.kind == "binary_accuracy" else 0.0
            if from_logits and threshold != 0.0:
                raise ValueError(
                    f"{metrics_path}[{i}].threshold={threshold} but {where}.from_logits"
                    "=True: the model outputs logits, where probability 0.5 is logit 0; set "
                    "threshold=0.0"
                )
