"""Ways of training a pretrained causal language model (model=KerasHub(task="causal_lm")):
supervised fine-tuning (SFT) on prompts and their responses, direct preference optimization
(DPO) against a frozen reference, and group relative policy optimization (GRPO) of completions
the model samples, scored by your reward functions. The names are TRL's (SFTConfig, DPOConfig,
GRPOConfig), so that a TRL user finds each one."""

from typing import Any, ClassVar, Literal

from pydantic import Field, PositiveInt, field_validator, model_validator

from ..base import PositiveFloat, StrictModel, check_target
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


class GRPO(StrictModel):
    """Group relative policy optimization (Shao et al., 2024, DeepSeekMath; TRL's GRPOTrainer):
    for each prompt of a batch the policy (`model`) samples `num_generations` completions, your
    reward functions score them, and each completion's advantage is its reward against its own
    group's: `(r - mean(group)) / (std(group) + 1e-4)` (std with n - 1, as torch's). The loss of
    each completion token t is PPO's clipped objective with a KL penalty to a frozen reference,
    `-min(ratio A, clip(ratio, 1 - epsilon, 1 + epsilon_high) A) + beta KL`, where ratio is
    `pi(t) / pi_old(t)` (pi_old: the policy that sampled) and KL the k3 estimator
    `exp(ref - logp) - (ref - logp) - 1`; averaged as `loss_type` says. Sampling is seeded by
    the step and each completion's place in the global batch: a resumed run, a replayed step
    and two replicas sample what one uninterrupted device does. Logged with TRL's names:
    `reward`, `reward_std`, `frac_reward_zero_std`, `completions/mean_length`, `kl` (beta > 0),
    `clip_ratio/region_mean`."""

    kind: Literal["grpo"] = "grpo"
    template: ClassVar[str] = "grpo"
    reward_funcs: list[str] = Field(min_length=1)
    """Your reward functions, each `package.module:function` importable where the script runs
    (beside it): called as `function(prompts=[...], completions=[...])` with lists of strings
    (each prompt repeated for each of its completions), it returns one number per completion.
    TRL's signature: a function written for GRPOTrainer that takes `**kwargs` works."""
    reward_weights: list[float] | None = None
    """The weight of each reward function in the reward, their weighted sum; None: 1 each."""
    num_generations: int = Field(default=8, ge=2)
    """G, the completions sampled for each prompt: its group."""
    max_completion_length: PositiveInt | None = None
    """The most tokens a completion may have; None: up to model.sequence_length tokens in all.
    A completion ends at the end token or there."""
    temperature: PositiveFloat = 1.0
    """The sampling temperature (logits divided by it)."""
    beta: float = Field(default=0.04, ge=0)
    """The KL penalty's weight (the paper's 0.04; TRL's default is 0.0). 0: no reference is
    loaded and no KL computed."""
    epsilon: PositiveFloat = 0.2
    """The clipping of the ratio from below, 1 - epsilon (and above, without epsilon_high)."""
    epsilon_high: PositiveFloat | None = None
    """The clipping from above, 1 + epsilon_high (DAPO's clip-higher); None: epsilon."""
    num_iterations: PositiveInt = 1
    """Updates on each batch of completions (the paper's mu): the first samples them, each
    update's ratio is against the sampling policy. With 1 the ratio is 1 and never clipped."""
    loss_type: Literal["dapo", "grpo", "dr_grpo"] = "dapo"
    """How token losses average: `dapo` (TRL's default), over all completion tokens of the
    global batch; `grpo`, over each completion's tokens, then over completions; `dr_grpo`,
    summed and divided by completions times max_completion_length (Dr. GRPO)."""
    scale_rewards: bool = True
    """Divide each advantage by its group's standard deviation (TRL's "group"); False: the
    reward minus the group's mean alone (Dr. GRPO)."""
    ref_model: str | None = None
    """The reference's preset (TRL's `ref_model`), when it is not the policy's own starting
    point. None: model.preset as loaded."""

    @field_validator("reward_funcs", mode="before")
    @classmethod
    def _one_or_more(cls, value: object) -> object:
        return [value] if isinstance(value, str) else value

    @field_validator("reward_funcs")
    @classmethod
    def _targets(cls, value: list[str]) -> list[str]:
        return [check_target(target, "function") for target in value]

    @field_validator("ref_model")
    @classmethod
    def _known_preset(cls, value: str | None) -> str | None:
        return value if value is None else check_preset(value)

    @model_validator(mode="after")
    def _weights_per_function(self) -> "GRPO":
        if self.reward_weights is not None and len(self.reward_weights) != len(self.reward_funcs):
            raise ValueError(
                f"reward_weights has {len(self.reward_weights)} weight(s) for "
                f"{len(self.reward_funcs)} reward function(s): give one per function"
            )
        return self

    @property
    def modules(self) -> list[str]:
        """The reward functions' modules, which the script imports."""
        return sorted({target.split(":")[0] for target in self.reward_funcs})

    def describe(self, spec: object) -> str:
        return f"causal LM, GRPO (G={self.num_generations}, beta={self.beta})"


def grpo_logged(training: GRPO) -> list[str]:
    """What GRPO logs after its loss, by TRL's names."""
    logged = ["reward", "reward_std", "frac_reward_zero_std", "completions/mean_length"]
    if training.beta > 0:
        logged.append("kl")
    return [*logged, "clip_ratio/region_mean"]


LM_KINDS = ("sft", "dpo", "grpo")
"""The ways of training a causal language model."""
