"""Knowledge distillation: a student learns from the labels and from a frozen teacher's softened
predictions."""

from typing import Annotated, Any, ClassVar, Literal

from pydantic import Field

from ..base import PositiveFloat, StrictModel
from ..model import Model


class TrainedModel(StrictModel):
    """A teacher whose network the spec describes (so that its output shape is checked against
    the student's now), with the weights of another run: its `--output-dir` (the newest
    checkpoint), its `checkpoints` folder, or a Keras `.weights.h5` file."""

    kind: Literal["trained"] = "trained"
    model: Model
    """The teacher's network, as the run that trained it built it."""
    weights: str
    """Where its weights are: a run's output directory, its checkpoints folder, or a
    `.weights.h5` file."""


class KerasFile(StrictModel):
    """A teacher saved whole by Keras (`model.save`): a `.keras` file, loaded with
    `keras.saving.load_model`. Custom layer classes it uses must be importable and registered
    (`@keras.saving.register_keras_serializable`)."""

    kind: Literal["keras_file"] = "keras_file"
    path: str
    """The `.keras` file."""


class ExportedModel(StrictModel):
    """A teacher exported as a SavedModel (another run's `export/saved_model`, or any
    `model.export`), called through its `serve` endpoint (`keras.layers.TFSMLayer`): no Python
    class of it is needed."""

    kind: Literal["saved_model"] = "saved_model"
    path: str
    """The SavedModel's directory."""


Teacher = Annotated[TrainedModel | KerasFile | ExportedModel, Field(discriminator="kind")]
"""Where the teacher comes from."""


class Distillation(StrictModel):
    """Knowledge distillation (Hinton et al., 2015): the student (`model`) minimizes `alpha *
    loss(labels, student) + (1 - alpha) * T^2 * KL(softmax(teacher / T) || softmax(student /
    T))`, the KL divergence from the teacher's predictions softened by the temperature T to the
    student's. The teacher is frozen and always runs in inference mode: its weights and its
    BatchNormalization statistics never change. `loss` is the student's loss on the labels
    (on logits: from_logits=True); the student's outputs are logits of the teacher's shape."""

    kind: Literal["distillation"] = "distillation"
    template: ClassVar[str] = "distillation"
    teacher: Teacher
    """The trained network whose predictions the student learns from."""
    temperature: PositiveFloat = 3.0
    """How much the predictions are softened: logits are divided by it before the softmax
    (1 keeps them; 2-5 are usual)."""
    alpha: Annotated[float, Field(ge=0, le=1)] = 0.1
    """The weight of the loss on the labels; the distillation loss has 1 - alpha."""
    teacher_outputs: Literal["logits", "probabilities"] = "logits"
    """What the teacher outputs: logits, or probabilities (a softmax at its end), whose
    logarithms are then its logits."""

    def describe(self, spec: Any) -> str:
        return f"{spec.model.kind} model distilled from a {self.teacher.kind} teacher"
