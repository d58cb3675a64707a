"""Rules that tie a way of training (the `training` section) to the rest of the spec: what each
kind needs of the model, the loss, the data and the strategy."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .. import shapes
from ..keras_file import keras_file_output_shape
from ..model import OPAQUE
from ..saved_model_file import saved_model_output_shape
from .objective import output_activation

if TYPE_CHECKING:
    from ..spec import Spec


def check_way(spec: Spec) -> None:
    check = CHECKS.get(spec.training.kind)
    if check is not None:
        check(spec)


def output_shape(network: Any, spec: Spec, root: str) -> tuple | None:
    """A network's output shape (without the batch dimension), None where it is not visible
    (an imported model, several outputs)."""
    classes = {c.name: c for c in spec.custom_layers}
    if isinstance(network, OPAQUE) or getattr(network, "heads", None):
        return None
    if network.kind == "graph":
        if not isinstance(network.outputs, str):
            return None
        return shapes.check_graph_shapes(network, classes, root)[network.outputs]
    return shapes.check_shapes(network.input_shape, network.layers, classes, f"{root}.layers")


def check_distillation(spec: Spec) -> None:
    way = spec.training
    if getattr(spec.model, "heads", None) or (
        spec.model.kind == "graph" and not isinstance(spec.model.outputs, str)
    ):
        raise ValueError(
            "training is distillation, but the model has several outputs: distillation needs "
            "one output of logits, the teacher's shape"
        )
    if spec.loss.probabilistic and not spec.loss.from_logits:
        raise ValueError(
            "training is distillation and loss.from_logits=False: the student must output "
            "logits, which the distillation loss softens by the temperature; set "
            "loss.from_logits=True (and end the model without a softmax)"
        )
    if way.teacher.kind in ("keras_file", "saved_model"):
        # Read from the .keras file's config or the SavedModel's serving signature where the
        # file is there already (it may be made later): the script checks it again when it
        # loads the teacher.
        if way.teacher.kind == "keras_file":
            teacher = keras_file_output_shape(way.teacher.path)
        else:
            teacher = saved_model_output_shape(way.teacher.path)
        student = output_shape(spec.model, spec, "model") if teacher else None
        if None not in (student, teacher) and not same_shape(student, teacher):
            raise ValueError(
                f"training.teacher: {way.teacher.path} outputs shape {teacher} but the model "
                f"(the student) outputs {tuple(student)}: the student learns the teacher's "
                "predictions class by class, so both need the same output shape"
            )
    if way.teacher.kind != "trained":
        return
    student = output_shape(spec.model, spec, "model")
    teacher = output_shape(way.teacher.model, spec, "training.teacher.model")
    if None not in (student, teacher) and tuple(student) != tuple(teacher):
        raise ValueError(
            f"training.teacher.model outputs shape {tuple(teacher)} but the model (the "
            f"student) outputs {tuple(student)}: the student learns the teacher's predictions "
            "class by class, so both need the same output shape"
        )


def same_shape(a: tuple, b: tuple) -> bool:
    """Whether two output shapes can be the same: one rank, and each size known in both equal
    (a size left open, e.g. a sequence's length, is the script's to compare)."""
    if len(a) != len(b):
        return False
    return all(x == y for x, y in zip(a, b, strict=True) if None not in (x, y))


def reads_ids(spec: Spec) -> bool:
    """Whether the model reads text or integer ids (tokens) rather than float values."""
    sources = {spec.data.train.kind, getattr(spec.data.validation, "kind", None)}
    if sources & {"text", "text_directory", "text_records"} or getattr(
        spec.data.train, "num_words", None
    ):
        return True
    if spec.model.kind == "graph":
        return any(not i.dtype.startswith("float") for i in spec.model.inputs.values())
    if spec.model.kind == "keras_hub":
        return True  # token ids
    if isinstance(spec.model, OPAQUE):
        return False
    first = spec.model.flat_items()[0][1]
    return getattr(first, "kind", None) == "embedding"


def check_adversarial(spec: Spec) -> None:
    if reads_ids(spec):
        raise ValueError(
            "training is adversarial, but the model reads text or integer ids: the attack moves "
            "inputs along their gradient, which token ids do not have; train on float inputs "
            "(images, measurements)"
        )
    if spec.gradients.accumulate_steps > 1:
        raise ValueError(
            "gradients.accumulate_steps is set for adversarial training, whose step loopgen "
            "writes for whole batches (the attack's random start is drawn per batch); remove "
            "it, or lower data.batch_size"
        )
    if getattr(spec.model, "heads", None) or (
        spec.model.kind == "graph" and not isinstance(spec.model.outputs, str)
    ):
        raise ValueError(
            "training is adversarial, but the model has several outputs: the attack raises one "
            "loss; use a model with one output"
        )


def check_contrastive(spec: Spec) -> None:
    if not spec.data.augmentation:
        raise ValueError(
            "training is contrastive, but data.augmentation is empty: SimCLR learns what two "
            "augmented views of an image share, and two identical views teach nothing; set "
            "data.augmentation (e.g. RandomFlip, RandomTranslation, RandomContrast)"
        )
    if spec.data.augment_in != "pipeline":
        raise ValueError(
            "training is contrastive with data.augment_in='model': the two views are made in "
            "the input pipeline, each from (seed, epoch, position, view); set "
            "data.augment_in='pipeline'"
        )
    if any(layer.entry.get("batch_level") for layer in spec.data.augmentation):
        raise ValueError(
            "training is contrastive, and data.augmentation mixes images (MixUp, CutMix): a "
            "view must be of one image; remove those layers"
        )
    unsupported = {
        "gradients": spec.gradients.clipped or spec.gradients.accumulate_steps > 1,
        "performance.precision": spec.performance.precision != "float32",
        "logging.histograms": spec.logging.histograms,
    }
    for field, used in unsupported.items():
        if used:
            raise ValueError(
                f"{field} is set for contrastive training, whose step loopgen writes without "
                "it (the negatives are the whole global batch: micro-batches would have fewer); "
                f"remove {field}"
            )
    features = output_shape(spec.model, spec, "model")
    if features is not None and len(features) != 1:
        raise ValueError(
            f"training is contrastive, but the model (the encoder) outputs shape "
            f"{tuple(features)}: it must end in a feature vector, which the projection head "
            "and the probe take; end it in Flatten() or GlobalAveragePooling2D()"
        )
    if spec.loss is None or not spec.loss.probabilistic or spec.data.labels != "sparse":
        raise ValueError(
            "training is contrastive: loss is the linear probe's, on the labels; set "
            "loss=SparseCategoricalCrossentropy(from_logits=True) and data.labels='sparse'"
        )


# Classes and the fewest training examples of a class, per keras.datasets classification set
# (the training split: the few-shot classes are split off it).
KERAS_DATASET_CLASSES = {
    "mnist": (10, 5421),
    "fashion_mnist": (10, 6000),
    "cifar10": (10, 5000),
    "cifar100": (100, 500),
}


def check_meta(spec: Spec) -> None:
    way = spec.training
    name = f"training is {way.kind}"
    train = spec.data.train
    if train.kind not in ("npz", "keras_dataset"):
        raise ValueError(
            f"{name}, and data.train is {train.kind!r}: tasks are drawn class by class from "
            "labeled images held in memory; use Npz or KerasDataset (mnist, fashion_mnist, "
            "cifar10, cifar100)"
        )
    if train.kind == "keras_dataset" and train.name not in KERAS_DATASET_CLASSES:
        raise ValueError(
            f"{name}, and data.train.name is {train.name!r}, a text dataset: tasks are drawn "
            "class by class from labeled images; use mnist, fashion_mnist, cifar10 or cifar100"
        )
    if spec.data.feature_names:
        raise ValueError(
            f"{name}, and the data has several named inputs: a task's examples are one array "
            "of images; give the model one input"
        )
    if spec.data.validation is not None:
        raise ValueError(
            f"{name}, and data.validation is set: the few-shot evaluation draws its tasks from "
            "training.test_classes, held out of data.train; remove data.validation"
        )
    if len(way.test_classes) < way.ways:
        raise ValueError(
            f"training.test_classes holds {len(way.test_classes)} classes, fewer than "
            f"training.ways={way.ways}: an evaluation task needs {way.ways} held-out classes; "
            f"hold out at least {way.ways} or lower ways"
        )
    if train.kind == "keras_dataset":
        classes, fewest = KERAS_DATASET_CLASSES[train.name]
        unknown = [c for c in way.test_classes if c >= classes]
        if unknown:
            raise ValueError(
                f"training.test_classes holds {unknown}, but {train.name} has classes 0 to "
                f"{classes - 1}; hold out ids of that range"
            )
        if classes - len(way.test_classes) < way.ways:
            raise ValueError(
                f"{train.name} has {classes} classes and training.test_classes holds out "
                f"{len(way.test_classes)}: {classes - len(way.test_classes)} are left for "
                f"training, fewer than training.ways={way.ways}; hold out fewer or lower ways"
            )
        if train.split == "train" and way.shots + way.queries > fewest:
            raise ValueError(
                f"training.shots + training.queries = {way.shots + way.queries}, more "
                f"examples than {train.name}'s smallest class has ({fewest}): a task draws "
                "them without repeats; lower shots or queries"
            )
    unsupported = {
        "data.augmentation": bool(spec.data.augmentation),
        "gradients": spec.gradients.clipped or spec.gradients.accumulate_steps > 1,
        "performance.precision": spec.performance.precision != "float32",
        "performance.xla": spec.performance.xla == "on",
        "logging.histograms": spec.logging.histograms,
        "fine_tune": spec.fine_tune is not None,
    }
    for field, used in unsupported.items():
        if used:
            raise ValueError(
                f"{field} is set for {way.kind}, whose step loopgen writes without it (a "
                "meta-step adapts whole tasks, each by plain SGD); remove " + field
            )
    if (
        getattr(spec.model, "heads", None)
        or isinstance(spec.model, OPAQUE)
        or (spec.model.kind == "graph" and not isinstance(spec.model.outputs, str))
    ):
        raise ValueError(
            f"{name}: the model must be one built from the spec with one output (the adapted "
            "copies are functions of its weights); use Sequential, Functional or Graph"
        )
    kinds = [getattr(layer, "kind", "") for _, layer in spec.model.flat_items()]
    random = [k for k in kinds if "dropout" in k or "noise" in k or k.startswith("random_")]
    if random:
        raise ValueError(
            f"{name}, and the model has a {random[0]} layer: a task's adapted copy only reads "
            "the network's variables, so its random state would never advance (every task "
            "the same draws); remove it (tasks are small: regularize by inner_steps and the "
            "meta step instead)"
        )
    if "batch_normalization" in kinds:
        raise ValueError(
            f"{name}, and the model has a batch_normalization layer: each task normalizes by "
            "its own examples and its adapted copy is dropped, so the moving statistics the "
            "exported network uses would never be learnt; remove it or use "
            "LayerNormalization"
        )
    if spec.regularized:
        raise ValueError(
            f"{name}, and the model has weight regularizers: the inner loop's plain SGD and "
            "the meta-step would not add them; remove kernel_regularizer and the like"
        )
    if (
        spec.loss is None
        or spec.loss.kind != "sparse_categorical_crossentropy"
        or spec.data.labels != "sparse"
    ):
        raise ValueError(
            f"{name}: a task's labels are class positions 0..ways-1; set "
            "loss=SparseCategoricalCrossentropy(from_logits=True) and data.labels='sparse'"
        )
    logits = output_shape(spec.model, spec, "model")
    if logits is not None and tuple(logits) != (way.ways,):
        raise ValueError(
            f"the model outputs shape {tuple(logits)}, but training.ways={way.ways}: a task "
            f"has {way.ways} classes; end the model in Dense(units={way.ways})"
        )


def check_generative(spec: Spec) -> None:
    """Diffusion, flow matching: a denoiser of the images, (time[, label]) -> the image's
    shape; images with class labels when guided; a step of whole batches."""
    way, kind = spec.training, spec.training.kind
    if spec.data.feature_names or spec.data.label_names or spec.data.labels != "sparse":
        raise ValueError(
            f"training is {kind}: the data must give images and (for guidance) class ids; "
            "data.train gives named features or several labels, or data.labels is not "
            "'sparse'. Use images with one class id each"
        )
    if spec.gradients.accumulate_steps > 1:
        raise ValueError(
            f"gradients.accumulate_steps is set, and training is {kind}, whose step loopgen "
            "writes for whole batches (the noise is drawn per batch); remove it, or lower "
            "data.batch_size"
        )
    if spec.loop.epochs is None:
        raise ValueError(
            f"loop.steps is set, and training is {kind}: the script's `sample --steps N` is the "
            "sampler's steps, so its training length is in epochs; set loop.epochs"
        )
    source = spec.data.train
    if way.guidance is not None and source.kind == "shapes":
        if source.task != "classification":
            raise ValueError(
                f"training.guidance is set, but data.train is Shapes(task={source.task!r}), "
                "whose labels are no classes; use task='classification' or remove guidance"
            )
        if way.guidance.classes != 3:
            raise ValueError(
                f"training.guidance.classes={way.guidance.classes}, but the shapes have 3 "
                "classes (circle, square, triangle); set classes=3"
            )
    if isinstance(spec.model, OPAQUE):
        return  # your network: it takes the same dict, unchecked here
    if spec.model.kind != "graph":
        raise ValueError(
            f"model.kind={spec.model.kind!r}, and training is {kind}: the denoiser takes the "
            'noisy image, the time and (guided) the class, so it is a Graph with inputs "image", '
            '"t" (shape (1,)) and "label" (shape (), dtype int32), or your own network '
            "(Imported); use Graph(inputs={...})"
        )
    wanted = {"image", "t"} | ({"label"} if way.guidance else set())
    inputs = spec.model.inputs
    if set(inputs) != wanted:
        missing = sorted(wanted - set(inputs))
        extra = sorted(set(inputs) - wanted)
        said = f"lacks {missing}" if missing else f"has {extra}, which nothing feeds"
        hint = "; a 'label' input needs training.guidance" if "label" in extra else ""
        raise ValueError(
            f"model.inputs {sorted(inputs)} {said}: the denoiser of training={kind} takes "
            f"exactly {sorted(wanted)}{hint}"
        )
    if tuple(inputs["t"].shape) != (1,) or not inputs["t"].dtype.startswith("float"):
        raise ValueError(
            f"model.inputs['t'] is {inputs['t'].shape} {inputs['t'].dtype}: the time "
            "is one float per image in [0, 1]; set Input(shape=(1,))"
        )
    label = inputs.get("label")
    if label is not None and (
        tuple(label.shape) not in ((), (1,)) or not label.dtype.startswith("int")
    ):
        raise ValueError(
            f"model.inputs['label'] is {inputs['label'].shape} {inputs['label'].dtype}: the label "
            'is one class id per image; set Input(shape=(), dtype="int32")'
        )
    image = tuple(inputs["image"].shape)
    shape = getattr(source, "image_size", None)
    if source.kind == "shapes" and image != (shape, shape, 3):
        raise ValueError(
            f"model.inputs['image'] has shape {image}, but data.train draws {shape}x{shape} RGB "
            f"images; set Input(shape=({shape}, {shape}, 3))"
        )
    output = output_shape(spec.model, spec, "model")
    if output is not None and tuple(output) != image:
        raise ValueError(
            f"the model outputs shape {tuple(output)}, but its image input is {image}: the "
            f"denoiser predicts {'the velocity' if kind == 'flow_matching' else way.prediction} "
            "of every pixel; end it in a layer with the image's shape (e.g. Conv2D(filters="
            f"{image[-1]}, kernel_size=3, padding='same'))"
        )


def check_vae(spec: Spec) -> None:
    """A VAE: an encoder of the images to 2 * latent_dim numbers, a decoder (`model`) of the
    codes to the images; images in memory, whole batches."""
    way = spec.training
    if spec.data.feature_names or spec.data.label_names:
        raise ValueError(
            "training is a VAE: the data must give images (their labels are not used); "
            "data.train gives named features or several labels. Use images"
        )
    source = spec.data.train
    if source.kind not in ("shapes", "npz", "keras_dataset"):
        raise ValueError(
            f"data.train.kind={source.kind!r}, and training is a VAE, whose script shows the "
            "reconstructions of images it holds in memory; use Shapes, Npz or KerasDataset"
        )
    if spec.gradients.accumulate_steps > 1:
        raise ValueError(
            "gradients.accumulate_steps is set, and training is a VAE, whose step loopgen "
            "writes for whole batches (the codes' noise is drawn per batch); remove it, or "
            "lower data.batch_size"
        )
    if spec.data.augmentation and spec.data.augment_in == "model":
        raise ValueError(
            'data.augment_in="model", and training is a VAE, whose model is its decoder (of '
            'codes, not images); set data.augment_in="pipeline"'
        )
    if spec.data.rescale is None and source.kind != "shapes":
        raise ValueError(
            f"data.rescale is not set, and training is a VAE of data.train.kind="
            f"{source.kind!r}: its {way.reconstruction} likelihood is of pixels in [0, 1] "
            "(the shapes are drawn so), and 8-bit pixels would make the loss unbounded; set "
            "data.rescale=1 / 255"
        )
    classes = {c.name: c for c in spec.custom_layers}
    encoder = way.encoder
    if getattr(encoder, "heads", None):
        raise ValueError(
            "training.encoder has heads: a VAE's encoder gives one vector, the mean and the "
            f"log-variance side by side ({2 * way.latent_dim} numbers); remove heads and end "
            f"the layers in Dense(units={2 * way.latent_dim})"
        )
    image = tuple(encoder.input_shape)  # after this check, the shapes' too
    if source.kind == "shapes":
        drawn = (source.image_size, source.image_size, 3)
        if image != drawn:
            raise ValueError(
                f"training.encoder.input_shape={image}, but data.train draws "
                f"{source.image_size}x{source.image_size} RGB images; set input_shape={drawn}"
            )
    codes = shapes.check_shapes(
        encoder.input_shape, encoder.layers, classes, path="training.encoder.layers"
    )
    if codes is not None and tuple(codes) != (2 * way.latent_dim,):
        raise ValueError(
            f"training.encoder outputs shape {tuple(codes)}, but training.latent_dim="
            f"{way.latent_dim}: the encoder gives each code's mean and log-variance, "
            f"{2 * way.latent_dim} numbers; end it in Dense(units={2 * way.latent_dim}) "
            "without activation"
        )
    path, last = encoder.last_layer()
    activation = output_activation(last)
    if activation not in (None, "linear"):
        raise ValueError(
            f"training.encoder.{path} ends the encoder in activation={activation!r}: its "
            "output is the codes' mean and log-variance, which take any value; remove the "
            "activation"
        )
    decoder = spec.model
    if decoder.kind in ("graph", "keras_hub", "import"):
        raise ValueError(
            f"model.kind={decoder.kind!r}, and training is a VAE, whose model is the decoder: "
            f"codes of training.latent_dim={way.latent_dim} numbers to images, built by the "
            "script as the model named 'decoder'; use Sequential or Functional"
        )
    if tuple(decoder.input_shape) != (way.latent_dim,):
        raise ValueError(
            f"model.input_shape={tuple(decoder.input_shape)}, but training.latent_dim="
            f"{way.latent_dim}: the model is the VAE's decoder, of the codes; set input_shape="
            f"({way.latent_dim},)"
        )
    made = tuple(shapes.check_shapes(decoder.input_shape, decoder.layers, classes) or ())
    if made and made != image:
        raise ValueError(
            f"model (the decoder) makes images of shape {made}, but training.encoder takes "
            f"{image}: a VAE reconstructs its input; make them equal"
        )
    path, last = decoder.last_layer()
    activation = output_activation(last)
    if way.reconstruction == "bernoulli" and activation not in (None, "linear"):
        raise ValueError(
            f"model.{path} ends the decoder in activation={activation!r}, but "
            "training.reconstruction='bernoulli' takes logits (the loss is their sigmoid "
            "cross-entropy, the images their sigmoid); remove the activation, or set "
            "training.reconstruction='gaussian'"
        )


CHECKS = {
    "vae": check_vae,
    "diffusion": check_generative,
    "flow_matching": check_generative,
    "distillation": check_distillation,
    "adversarial": check_adversarial,
    "contrastive": check_contrastive,
    "reptile": check_meta,
    "maml": check_meta,
}
"""The rules of each kind that has some, by kind."""
