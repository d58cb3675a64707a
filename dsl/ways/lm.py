"""Ways of training a pretrained causal language model (model=KerasHub(task="causal_lm")):
supervised fine-tuning (SFT) on prompts and their responses, and direct preference optimization
(DPO) against a frozen reference. The names are TRL's (SFTConfig, DPOConfig), so that a TRL
user finds each one."""

from typing import Any, ClassVar, Literal

from pydantic import Field, field_validator, model_validator

from ..base import PositiveFloat, StrictModel
from ..hub import check_preset


class SFT(StrictModel):
    """Supervised fine-tuning (TRL's SFTTrainer): the model learns to write each response after
    its prompt. The loss is the cross-entropy of each next token, averaged over the response
    tokens of the whole (global) batch: the prompt's tokens are masked out of it
    (`completion_only_loss`), or the model would learn to write prompts too. Logged: `loss`
    and `mean_token_accuracy` (TRL's names), and validation's `perplexity`, exp of the mean
    loss over the validation responses' tokens."""

    kind: Literal["sft"] = "sft"
    template: ClassVar[str] = "sft"
    completion_only_loss: bool = True
    """The loss on the response tokens only (TRL's default for prompt-completion data); False:
    on every token, the prompt's too (plain language modeling of prompt + response)."""
    packing: bool = False
    """Pack each batch's examples into as few rows of model.sequence_length tokens as hold
    them (TRL's `packing`), so that fewer of the tokens the model computes are padding: short
    examples train in fewer, fuller rows. Each example stays whole, with its start and end
    tokens, and keeps its targets: the loss still counts the response tokens alone (each
    example's prompt masked), its mean over the batch's as without packing. The rows are
    filled best-fit decreasing (TRL's `packing_strategy="bfd"`) within each batch of
    data.batch_size examples, a function of the batch alone: a resume, replicas and
    `replay` see the same rows. KerasHub's backbones take token ids and a padding mask, no
    position or segment ids: a token attends to the examples before it in its row, and its
    position counts from the row's start, as in TRL's `packing_strategy="wrapped"` (TRL's
    bfd keeps examples apart by position ids, with FlashAttention). Validation is not
    packed (TRL's `eval_packing=False`): its perplexity is of each example alone, as
    generate() sees a prompt, comparable with an unpacked run's."""

    def describe(self, spec: object) -> str:
        return "causal LM, SFT" + (", packed" if self.packing else "")


class DPO(StrictModel):
    """Direct preference optimization (Rafailov et al., 2023; TRL's DPOTrainer): the policy
    (`model`) learns to prefer each prompt's chosen response to its rejected one, measured
    against a frozen reference, the same preset as loaded (its starting weights). With
    log-probabilities summed over each response's tokens only (never the prompt's),
    `loss = -log sigmoid(beta * ((log pi(chosen) - log ref(chosen)) - (log pi(rejected) -
    log ref(rejected))))`, averaged over the pairs; with label_smoothing ls (cDPO),
    `-(1 - ls) log sigmoid(beta d) - ls log sigmoid(-beta d)`. Logged as TRL does:
    `rewards/chosen` and `rewards/rejected` (beta times each log-ratio), `rewards/margins`,
    `rewards/accuracies` (the share of pairs whose chosen reward is the higher),
    `logps/chosen` and `logps/rejected`."""

    kind: Literal["dpo"] = "dpo"
    template: ClassVar[str] = "dpo"
    beta: PositiveFloat = 0.1
    """How far from the reference the policy may move (the KL penalty's inverse weight)."""
    label_smoothing: float = Field(default=0.0, ge=0, lt=0.5)
    """The assumed share of pairs whose preference is wrong (cDPO); 0: plain DPO."""
    ref_model: str | None = None
    """The reference's preset (TRL's `ref_model`), when it is not the policy's own starting
    point: a built-in preset's name, a handle, or a local preset directory of the same
    tokenizer. None: model.preset as loaded."""

    @model_validator(mode="before")
    @classmethod
    def _no_packing(cls, data: Any) -> Any:
        if isinstance(data, dict) and "packing" in data:
            raise ValueError(
                "packing is SFT's (training=SFT(packing=True)): DPO compares each prompt's "
                "chosen and rejected responses, each pair in rows of its own; remove packing"
            )
        return data

    @field_validator("ref_model")
    @classmethod
    def _known_preset(cls, value: str | None) -> str | None:
        return value if value is None else check_preset(value)

    def describe(self, spec: object) -> str:
        return f"causal LM, DPO (beta={self.beta})"


DPO_LOGGED = [
    "rewards/chosen",
    "rewards/rejected",
    "rewards/accuracies",
    "rewards/margins",
    "logps/chosen",
    "logps/rejected",
]
"""What DPO logs after its loss, by TRL's names."""

LM_KINDS = ("sft", "dpo")
"""The ways of training a causal language model."""
