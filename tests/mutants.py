"""The mutants: each guard of the generated scripts (the templates) and of loopgen itself, undone
one at a time, with the tests that must fail when it is (issue 47). A guard the docs call proven
(docs/proofs.md lists them) is proven only if some test fails without it: `python -m
tests.mutants` checks that for every mutant listed here.

    python -m tests.mutants                   # every mutant; exit 1 if one survives or errs
    python -m tests.mutants --only ID ...     # some of them (ids, or parts of ids)
    python -m tests.mutants --list            # the list, with each mutant's tests
    python -m tests.mutants --baseline        # their tests on the unmutated code: all pass
    python -m tests.mutants --jobs 2 --report mutants.json

Each mutant replaces one exact text of one file (found exactly once: a mutant whose text is not
there, or is there twice, is an error, never skipped: the code changed and the mutant must be
written again) in a scratch copy of the repository (the working tree's files that git tracks or
does not ignore; never the working tree itself), then runs its tests there with `pytest -x`,
loopgen imported from the copy. Killed: a test failed. Survived: they all passed, and the guard is
not proven. A new guard adds its mutant here; test_mutants.py (quick tier) checks that every text
is found once and every test named exists.

It takes about 18 minutes with `--jobs 2` on 2 cores (2026-11-27: most mutants are killed by
their first test, in seconds; the tests of a mutant run the scripts they name): it runs by hand
and nightly, not in the 25-minute suite."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Mutant:
    id: str
    file: str
    """The file changed, relative to the repository's root."""
    find: str
    """The exact text replaced: it must occur exactly once in the file."""
    replace: str
    tests: tuple[str, ...]
    """pytest node ids, relative to the root: at least one must fail."""
    why: str
    """What the guard keeps from going wrong (and the issue or claim it comes from)."""


def mutant(id: str, file: str, find: str, replace: str, tests: list[str], why: str) -> Mutant:
    return Mutant(id, file, find, replace, tuple(tests), why)


PPO = "templates/partials/ways/ppo.jinja"
DQN = "templates/partials/ways/dqn.jinja"
ENVIRONMENT = "templates/partials/rl/environment.jinja"
TAPE = "templates/partials/ways/tape.jinja"
RUNTIME = "runtime/loopgen_runtime.py"
VALIDATED_WITHOUT_MONITORS = (
    "tests/test_controls.py::"
    "test_a_validated_run_without_monitors_killed_after_any_checkpoint_logs_every_validation"
)
EMA_TEST = (
    "tests/test_ema.py::"
    "test_the_average_follows_its_formula_and_is_what_validation_scores_and_the_export_serves"
)
SAM_STEP = "tests/test_sam.py::test_a_sam_step_equals_the_two_pass_step_written_by_hand"
DIFFUSION = "templates/partials/ways/diffusion.jinja"
GENERATIVE_FORMULAS = (
    "tests/test_diffusion.py::test_the_training_example_schedule_loss_and_sampler_equal_references"
)
GAN_EMA = (
    "tests/test_ema.py::"
    "test_a_gans_generator_average_follows_its_formula_and_is_what_the_export_serves"
)
VAE = "templates/partials/ways/vae.jinja"
VAE_FORMULAS = "tests/test_vae.py::test_the_training_example_terms_and_samples_equal_references"
VAE_TRAINED = "tests/test_vae.py::test_a_trained_vae_logs_its_terms_samples_and_exports"
XLA_ON_ACTING = (
    "tests/test_performance.py::test_xla_on_for_a_way_that_acts_is_refused_but_for_dqn_on_one_"
    "device[cartpole_ppo-None-training is PPO]"
)
REPLAY_DQN = (
    "tests/test_debugging.py::test_replay_of_an_update_prints_what_the_run_logged[cartpole_dqn]"
)
TRACED_CALL = (
    "tests/test_runtime.py::"
    "test_traced_call_runs_one_trace_with_the_inputs_flat_and_is_the_function_under_eager"
)
TFDS_OFFLINE = (
    "tests/test_bad_data.py::"
    "test_a_failed_download_is_one_message_and_leaves_the_directory_as_it_was[tfds]"
)
TFDS_OFFLINE_UNIT = (
    "tests/test_runtime.py::test_an_unprepared_tfds_dataset_offline_is_one_message_at_once"
)
CLIP_VALUE = (
    "tests/test_controls.py::"
    "test_clipping_by_value_bounds_each_element_of_the_whole_batchs_gradient"
)
OTHER_DATA = (
    "tests/test_bad_data.py::"
    "test_a_resume_on_other_training_data_is_refused_and_new_data_accepts_it"
)
KILLED_AFTER_ANY_CHECKPOINT = (
    "tests/test_controls.py::test_a_run_killed_after_any_of_its_checkpoints_resumes_to_the_same_end"
)
SCHEDULES = "templates/partials/schedules.jinja"
PREPROCESS = "templates/partials/data/preprocess.jinja"
TEXT_RECORDS = "templates/partials/data/text_records.jinja"
NO_RESPONSE_TOKEN = (
    "tests/test_hub.py::test_a_record_whose_prompt_leaves_its_response_no_token_is_refused"
)
SFT_LOSS = "tests/test_hub.py::test_sft_loss_is_the_mean_over_the_response_tokens_of_the_batch"
DPO_VALUES = "tests/test_hub.py::test_dpo_logs_trls_values_computed_as_the_formulas_say"
GRPO = "templates/partials/ways/grpo.jinja"
GRPO_VALUES = "tests/test_grpo.py::test_grpo_logs_trls_values_computed_as_the_formulas_say"
GRPO_FORMULAS = "tests/test_grpo.py::test_grpo_advantages_and_clipped_objective_equal_numpy"
END_IS_PAD = (
    "tests/test_grpo.py::"
    "test_on_a_preset_whose_end_token_is_its_padding_id_grpo_samples_and_the_export_answers"
)
PACKED_LOSS = (
    "tests/test_packing.py::"
    "test_packed_rows_loss_is_numpys_of_the_same_packing_and_validation_is_unpacked"
)
PACKED_REPLICAS = "tests/test_packing.py::test_packed_sft_on_two_replicas_equals_one_device"
BEST_FIT = (
    "tests/test_packing.py::test_packing_is_best_fit_decreasing_where_first_fit_packs_otherwise"
)
LORA_EXPORT = (
    "tests/test_hub.py::test_the_export_serves_strings_with_lora_merged_as_the_checkpoint_answers"
)
MIRRORED_EQUALS = "tests/test_distributed.py::test_mirrored_equals_single_device"
LAST_OBSERVATION = (
    "tests/test_rl.py::"
    "test_the_observation_reached_at_a_cut_is_the_episodes_last_not_the_next_ones_first"
)
MAX_GRAD_NORM = (
    "tests/test_offpolicy.py::test_max_grad_norm_clips_each_gradient_step_by_its_global_norm"
)
SCHEDULED = (
    "tests/test_offpolicy.py::test_a_learning_rate_schedule_reaches_the_off_policy_optimizers"
)
MATRIX = "tests/test_faults.py::test_sigkill_then_resume_is_exact_for_every_source_and_way"
MIRRORED = "tests/test_distributed.py::test_mirrored_equals_single_device"
WORKERS = "tests/test_distributed.py::test_two_workers_act_as_one_device_stop_together_and_resume"
ACCUMULATION = "tests/test_controls.py::test_accumulated_micro_batches_train_like_the_whole_batch"
WIRING = (
    "tests/test_rl_wiring.py::test_a_rollout_bootstraps_each_cut_episode_from_its_last_observation"
)
DQN_STORES = "tests/test_rl_wiring.py::test_dqn_stores_each_transition_as_the_environment_made_it"
ENDLESS = "tests/test_rl_wiring.py::test_dqn_learns_the_endless_tasks_value_by_double_dqn"
# DQN's train step: the line that hands dqn_targets() the networks' values, and what follows it
# on one device and on replicas (their own train step).
PICKS = (
    "targets = dqn_targets(rewards, terminated, "
    '{{ "model(reached), " if way.double }}target_network(reached))\n'
    "        with tf.GradientTape() as tape:\n"
    "            values = tf.gather(model(observations, training=True), actions, batch_dims=1)\n"
)
OFFPOLICY = "templates/partials/ways/offpolicy.jinja"
DEBUGGING = "templates/partials/debugging.jinja"
SAC_REFERENCE = (
    "tests/test_offpolicy.py::test_a_sac_step_equals_the_formulas_with_the_tanh_correction"
)
TD3_REFERENCE = (
    "tests/test_offpolicy.py::"
    "test_td3_steps_equal_the_formulas_and_ddpg_is_td3_without_its_additions[td3]"
)
OVERFIT = (
    "tests/test_debugging.py::"
    "test_overfit_batches_n_trains_on_exactly_its_first_n_batches_again_and_again"
)
OVERFIT_UNCHECKPOINTED = (
    "tests/test_debugging.py::"
    "test_overfit_batches_of_a_spec_without_checkpoints_repeats_its_first_n_batches"
)
COPIED_AGAIN = (
    "tests/test_bad_data.py::"
    "test_the_same_data_copied_again_resumes_and_other_data_of_the_same_size_does_not"
)
PRUNED_ONCE = (
    "tests/test_sweep.py::"
    "test_a_pruned_trial_is_said_once_with_its_time_and_a_resumed_one_reports_no_step_twice"
)
AFTER_ONE_DEVICE = "            loss = loss_fn(targets, values)"
AFTER_REPLICAS = "            # A Keras loss"

MUTANTS: list[Mutant] = [
    # --- Debugging: replay, the flags and the run directory (issue 55, items 1-8)
    mutant(
        "replay_norms_in_float32",
        RUNTIME,
        "arrays = [np.asarray(tf.convert_to_tensor(a), np.float64) for a in arrays]",
        "arrays = [np.asarray(tf.convert_to_tensor(a), np.float32) for a in arrays]",
        [
            "tests/test_runtime.py::test_global_norm64_does_not_overflow_where_float32_would",
            "tests/test_debugging.py::test_replay_names_the_first_nonfinite_layer_of_a_diverged_step",
        ],
        "#1: replay's weight norms of a diverged run (near 1e35) overflow to inf",
    ),
    mutant(
        "overfit_replay_on_all_the_data",
        RUNTIME,
        'for name in ("epochs", "steps", "overfit_batches")',
        'for name in ("epochs", "steps")',
        [
            "tests/test_debugging.py::"
            "test_overfit_batches_drives_the_loss_towards_zero_in_a_directory_of_its_own"
        ],
        "#2: an --overfit-batches run replayed on the full data",
    ),
    mutant(
        "overfit_debug_batch_of_the_full_data",
        RUNTIME,
        "            step = (step - 1) % self.args.overfit_batches + 1\n",
        "            pass\n",
        ["tests/test_debugging.py::test_replay_names_the_first_nonfinite_layer_of_a_diverged_step"],
        "#2: an --overfit-batches run's debug/step-N keeps the full data's batch of step N",
    ),
    mutant(
        "replay_runs_the_steps_before_n_in_one_call",
        RUNTIME,
        'or getattr(self.args, "step", None) or first',
        "or first",
        [
            "tests/test_runtime.py::test_bound_runs_each_step_of_a_replay_alone",
            "tests/test_debugging.py::"
            "test_overfit_batches_drives_the_loss_towards_zero_in_a_directory_of_its_own",
        ],
        "#3: the steps before N replayed in calls of several: no loss of each is printed",
    ),
    mutant(
        "debugging_flags_checked_after_tensorflow_loads",
        RUNTIME,
        "    check_debugging_flags(args, unit, multi_worker=multi_worker)\n",
        "",
        [
            "tests/test_debugging.py::"
            "test_a_mistaken_debugging_flag_is_refused_before_tensorflow_loads"
            "[--profile 30:10-mnist_mlp]"
        ],
        "#4: the debugging flags are not checked before TensorFlow loads",
    ),
    mutant(
        "refused_run_leaves_its_files",
        RUNTIME,
        "return self.undo() if isinstance(error, SystemExit) else None",
        "return None",
        [
            "tests/test_runtime.py::"
            "test_a_run_refused_at_its_start_leaves_no_setup_json_run_lock_or_directory",
            "tests/test_debugging.py::test_a_refused_run_leaves_nothing_in_a_new_directory",
        ],
        "#5: a run refused once it holds the directory leaves run.lock and setup.json",
    ),
    mutant(
        "profile_marks_a_call_of_several_steps",
        RUNTIME,
        " or first - 1 <= step < last:",
        ":",
        [
            "tests/test_runtime.py::test_bound_runs_each_profiled_step_in_a_call_of_its_own",
            "tests/test_debugging.py::test_profile_traces_the_steps_it_names",
        ],
        "#6: the profiler's step markers cover a call of several steps (no step time measured)",
    ),
    mutant(
        "profile_line_glued_to_the_progress_bar",
        RUNTIME,
        "            print()  # after the progress bar's line\n"
        '            profile = os.path.join(self.path, "logs", "profile")\n',
        '            profile = os.path.join(self.path, "logs", "profile")\n',
        ["tests/test_debugging.py::test_profile_traces_the_steps_it_names"],
        "#7: the profile's closing line glued to the progress bar",
    ),
    mutant(
        "replay_counts_the_epochs_it_replays",
        RUNTIME,
        "{self.args.epochs if replaying else epochs}",
        "{epochs}",
        [
            "tests/test_debugging.py::"
            "test_replay_of_a_healthy_step_prints_the_loss_the_run_logged[single_device]"
        ],
        "#7: replay shows Epoch 1/1 for a step of a 3-epoch run",
    ),
    mutant(
        "replay_says_as_logged_of_a_step_never_logged",
        RUNTIME,
        "logged = was_logged(self.args.replay_of, step)",
        "logged = True",
        [
            "tests/test_debugging.py::"
            "test_overfit_batches_drives_the_loss_towards_zero_in_a_directory_of_its_own"
        ],
        "#7: replay shows 'as logged' for a step the run never logged",
    ),
    mutant(
        "replay_weight_norm_before_the_step",
        RUNTIME,
        "{global_norm64(after):12.6g}",
        "{global_norm64(before):12.6g}",
        [
            "tests/test_debugging.py::"
            "test_replay_of_a_healthy_step_prints_the_loss_the_run_logged[single_device]"
        ],
        "#7: replay's weight norm is before the step, inspect's after it",
    ),
    mutant(
        "fast_dev_run_summaries_at_each_stage",
        RUNTIME,
        "        keras.Model.summary = lambda *args, **kwargs: None\n",
        "",
        [
            "tests/test_debugging.py::"
            "test_fast_dev_run_runs_every_stage_and_leaves_the_run_directory_alone[mnist_mlp]"
        ],
        "#7: --fast-dev-run prints the model's summary at each stage",
    ),
    mutant(
        "fast_dev_run_says_not_locking",
        RUNTIME,
        "            if not self.args.fast_dev_run:  # whose scratch directory is its own\n",
        "            if True:\n",
        [
            "tests/test_runtime.py::"
            "test_no_lock_takes_no_lock_and_says_so_except_in_fast_dev_runs_scratch",
            "tests/test_debugging.py::"
            "test_fast_dev_run_runs_every_stage_and_leaves_the_run_directory_alone[mnist_mlp]",
        ],
        "#7: --fast-dev-run says 'Not locking ... (--no-lock)' without --no-lock",
    ),
    mutant(
        "metrics_jsonl_writes_a_bare_nan",
        RUNTIME,
        "        if nonfinite:\n",
        "        if False:\n",
        [
            "tests/test_runtime.py::"
            "test_append_writes_strict_json_with_nonfinite_values_as_null_and_named",
            "tests/test_debugging.py::test_replay_names_the_first_nonfinite_layer_of_a_diverged_step",
        ],
        "#8: metrics.jsonl holds a bare NaN, which strict JSON readers refuse",
    ),
    # --- Reinforcement learning: what the loop feeds the formulas (issue 47's survivors 1-10)
    mutant(
        "ppo_bootstraps_the_next_episodes_first_observation",
        PPO,
        'reward[cut] += GAMMA * value_of({{ inputs("reached[cut]") }}).numpy()',
        'reward[cut] += GAMMA * value_of({{ inputs("environments.observations[cut]") }}).numpy()',
        [f"{WIRING}[ppo]", f"{WIRING}[a2c]"],
        "#4: a cut episode bootstrapped from the next episode's first observation",
    ),
    mutant(
        "ppo_dict_bootstraps_the_next_episodes_first_observation",
        PPO,
        "ends = {name: part[cut] for name, part in reached.items()}",
        "ends = {name: part[cut] for name, part in environments.observations.items()}",
        [f"{WIRING}[ppo_dict]"],
        "#5: a Dict's cut episode bootstrapped from the next episode's first observation",
    ),
    mutant(
        "ppo_bootstraps_raw_observations",
        PPO,
        'value_of({{ inputs("reached[cut]") }})',
        "value_of(reached[cut])",
        [f"{WIRING}[ppo_normalized]"],
        "#6: with normalized observations, the cut's bootstrap takes raw observations",
    ),
    mutant(
        "ppo_bootstraps_a_terminated_cut",
        PPO,
        "cut = truncated & ~terminated",
        "cut = truncated",
        [f"{WIRING}[ppo]"],
        "#7: a step both terminated and truncated bootstrapped as if the task went on",
    ),
    mutant(
        "statistics_lose_chans_between_batch_term",
        PPO,
        "var * count + batch_var * batch_count + delta**2 * count * batch_count / total",
        "var * count + batch_var * batch_count",
        [f"{WIRING}[ppo_normalized]"],
        "#8: the running variance without the spread between the batches' means",
    ),
    mutant(
        "rollout_end_not_bootstrapped",
        PPO,
        'last_values = value_of({{ inputs("environments.observations") }}).numpy()',
        'last_values = 0 * value_of({{ inputs("environments.observations") }}).numpy()',
        [f"{WIRING}[a2c]", f"{WIRING}[ppo]"],
        "#10: the rollout's end not bootstrapped (only a learning threshold noticed, for A2C)",
    ),
    mutant(
        "epoch_end_saved_before_a_validation_without_monitors",
        "templates/partials/loop.jinja",
        "{% if spec.checkpoint and spec.checkpoint.every_steps and (monitors or has_validation) %}",
        "{% if spec.checkpoint and spec.checkpoint.every_steps and monitors %}",
        [VALIDATED_WITHOUT_MONITORS],
        "issue 63 #1 (the class, not the case): a run without monitors killed after the step "
        "checkpoint of an epoch's end resumes into the next epoch: that validation is never logged",
    ),
    mutant(
        "ema_decay_the_wrong_way_round",
        TAPE,
        "average.assign(EMA_DECAY * average + (1.0 - EMA_DECAY) * weight)",
        "average.assign((1.0 - EMA_DECAY) * average + EMA_DECAY * weight)",
        [EMA_TEST],
        "issue 62 #2: the average keeps 1 - decay of itself (a classic: EMA decay reversed)",
    ),
    mutant(
        "ema_starts_from_the_drawn_weights_after_init_from",
        "templates/partials/checkpoint.jinja",
        "{% else %}\n        ema_model.set_weights(model.get_weights())\n",
        "{% else %}\n",
        [EMA_TEST],
        "issue 62 #2: after --init-from the average starts from the random weights drawn",
    ),
    mutant(
        "ema_left_out_of_the_checkpoint",
        "templates/partials/ways/supervised.jinja",
        "        ema_model=ema_model,\n",
        "",
        [f"{MATRIX}[ema-single_device]", EMA_TEST],
        "issue 62 #2: a resumed run restarts the average from the weights it resumes with",
    ),
    mutant(
        "ema_validation_scores_the_weights",
        "templates/partials/ways/supervised.jinja",
        '(("ema_model" if ema else "model") ~ "({x}, training=False)")',
        '("model" ~ "({x}, training=False)")',
        [EMA_TEST],
        "issue 62 #2: validation (and so the monitors) scores the raw weights, not the average",
    ),
    mutant(
        "ema_export_of_the_weights",
        "templates/partials/export.jinja",
        'if gan else ("ema_model" if ema else "model") %}',
        'if gan else "model" %}',
        [EMA_TEST],
        "issue 62 #2: the export serves the raw weights, not the average",
    ),
    mutant(
        "sam_ascends_along_the_weights",
        TAPE,
        "        scale = RHO / (tf.linalg.global_norm({{ g }}) + 1e-12)",
        "        scale = RHO / (tf.linalg.global_norm(model.trainable_variables) + 1e-12)",
        [SAM_STEP],
        "issue 62 #5: the ascent scaled by the weights' norm, not the gradient's (public TF ports)",
    ),
    mutant(
        "sam_gradient_at_the_weights",
        TAPE,
        "        set_weights([w + g * scale for w, g in zip(unperturbed, {{ g }})])\n",
        "",
        [SAM_STEP],
        "issue 62 #5: no ascent: the second gradient taken at w, plain SGD at twice the cost",
    ),
    mutant(
        "sam_weights_not_restored",
        TAPE,
        "        set_weights(unperturbed)  # back to w, bit for bit: the optimizer updates w\n",
        "",
        [SAM_STEP],
        "issue 62 #5: the base optimizer updates the perturbed weights w + e, not w",
    ),
    mutant(
        "sam_logs_the_perturbed_loss",
        TAPE,
        "        loss, predictions = logged\n",
        "",
        [SAM_STEP],
        "issue 62 #5: the loss and metrics logged (and watched for NaN) are those at w + e",
    ),
    mutant(
        "sam_replicas_ascend_their_own_gradient",
        TAPE,
        "        ascent = tf.distribute.get_replica_context().all_reduce(\n"
        "            tf.distribute.ReduceOp.SUM, gradients\n"
        "        )\n",
        "        ascent = gradients\n",
        [f"{MIRRORED}[shapes_sam]"],
        "issue 62 #5: each replica ascends along its own share's gradient: not one device's step",
    ),
    mutant(
        "flow_path_the_wrong_way_round",
        DIFFUSION,
        '    inputs = {"image": (1.0 - t) * images + t * noise, "t": times}\n',
        '    inputs = {"image": t * images + (1.0 - t) * noise, "t": times}\n',
        [f"{GENERATIVE_FORMULAS}[flow_matching]"],
        "issue 62 #7: x_t = t x0 + (1 - t) noise: time runs from the image to the noise reversed",
    ),
    mutant(
        "cosine_schedule_off_by_one_timestep",
        DIFFUSION,
        "    betas = np.minimum(1 - f[1:] / f[:-1], 0.999)\n",
        "    betas = np.minimum(1 - f[1:] / f[:-1], 0.999)\n"
        "    betas = np.concatenate([betas[:1], betas[:-1]])\n",
        [f"{GENERATIVE_FORMULAS}[cosine_epsilon]"],
        "issue 62: the schedule shifted by one timestep (a classic silent bug)",
    ),
    mutant(
        "v_target_signs_swapped",
        DIFFUSION,
        "    target = tf.sqrt(alpha_bar) * noise - tf.sqrt(1.0 - alpha_bar) * images",
        "    target = tf.sqrt(alpha_bar) * images - tf.sqrt(1.0 - alpha_bar) * noise",
        [f"{GENERATIVE_FORMULAS}[linear_v]"],
        "issue 62 #1: v = sqrt(a) x0 - sqrt(1 - a) e, the image's and the noise's parts swapped",
    ),
    mutant(
        "guidance_towards_the_unconditional",
        DIFFUSION,
        "    return unconditional + guidance * (conditional - unconditional)\n",
        "    return conditional + guidance * (unconditional - conditional)\n",
        [f"{GENERATIVE_FORMULAS}[flow_matching]"],
        "issue 62 #1: classifier-free guidance extrapolates away from the class",
    ),
    mutant(
        "labels_never_dropped",
        DIFFUSION,
        "    dropped = draw(tf.random.stateless_uniform, seed, 2, batch, first, count)"
        " < LABEL_DROPOUT\n",
        "    dropped = tf.zeros(batch, tf.bool)\n",
        [f"{GENERATIVE_FORMULAS}[flow_matching]"],
        "issue 62 #1: guidance dropout off in training: no unconditional model to guide from",
    ),
    mutant(
        "ddim_skips_the_clipping_of_x0",
        DIFFUSION,
        "        clean = tf.clip_by_value(clean, -1.0, 1.0)\n",
        "",
        [f"{GENERATIVE_FORMULAS}[cosine_epsilon]"],
        "issue 62 #7: DDIM's predicted x0 not clipped to the data's range",
    ),
    mutant(
        "diffusion_draws_per_replica",
        DIFFUSION,
        "            inputs, denoised = noised({{ x }}, {{ labels }}, seed, "
        "{{ tape.first_example(batch) }}, {{ batch }})\n",
        "            inputs, denoised = noised({{ x }}, {{ labels }}, seed, 0, "
        "tf.shape({{ x }})[0])\n",
        [f"{MIRRORED}[shapes_flow]"],
        "issue 62 #1: each replica draws its noise as if alone: two replicas are not one device",
    ),
    mutant(
        "gan_exports_the_raw_generator",
        "templates/partials/export.jinja",
        '{% set net = ("ema_generator" if ema else "generator") if gan else',
        '{% set net = "generator" if gan else',
        [GAN_EMA],
        "issue 62 #2: ema=EMA on a GAN, and the export serves the raw generator, not its average",
    ),
    mutant(
        "gan_average_starts_from_other_weights",
        "templates/partials/ways/gan.jinja",
        '{{ tape.ema_copy("generator", "The samples and the export use it", "ema_generator", '
        '"generator").rstrip() }}\n',
        '{{ tape.ema_copy("generator", "The samples and the export use it", "ema_generator", '
        '"generator").rstrip() }}\nema_generator = build_generator()\n',
        [GAN_EMA],
        "issue 62 #2: the generator's average starts from weights drawn anew, not the generator's",
    ),
    mutant(
        "vae_codes_noise_drawn_statefully",
        VAE,
        "    return tf.random.stateless_normal([count, LATENT_DIM], seed)[first : first + size]\n",
        "    return tf.random.normal([count, LATENT_DIM])[first : first + size]\n",
        [
            "tests/test_debugging.py::test_replay_of_a_generative_step_redraws_its_noise_and_"
            "prints_the_loss_logged[shapes_vae]"
        ],
        "issue 62 #7: the codes' noise from a stateful op: a replayed step draws other noise",
    ),
    mutant(
        "vae_kl_without_its_one",
        VAE,
        "    kl = -0.5 * (1.0 + log_variance - tf.square(mean) - tf.exp(log_variance))\n",
        "    kl = -0.5 * (log_variance - tf.square(mean) - tf.exp(log_variance))\n",
        [f"{VAE_FORMULAS}[bernoulli]"],
        "issue 62 #4: the KL divergence from N(0, I) without its -1 per dimension",
    ),
    mutant(
        "vae_codes_scaled_by_the_variance",
        "templates/partials/model.jinja",
        "    codes = mean + keras.ops.exp(0.5 * log_variance) * noise\n",
        "    codes = mean + keras.ops.exp(log_variance) * noise\n",
        [f"{VAE_FORMULAS}[bernoulli]"],
        "issue 62 #4: the reparameterization scales the noise by the variance, not sigma",
    ),
    mutant(
        "vae_mean_and_log_variance_swapped",
        "templates/partials/model.jinja",
        "    mean, log_variance = keras.ops.split(encoder(images), 2, axis=-1)\n",
        "    log_variance, mean = keras.ops.split(encoder(images), 2, axis=-1)\n",
        [f"{VAE_FORMULAS}[bernoulli]"],
        "issue 62 #4: the encoder's halves read the other way round from the export's",
    ),
    mutant(
        "vae_gaussian_without_its_half",
        VAE,
        "    errors = 0.5 * tf.square(images - reconstructed)\n",
        "    errors = tf.square(images - reconstructed)\n",
        [f"{VAE_FORMULAS}[gaussian]"],
        "issue 62 #4: the Gaussian likelihood of unit variance is half the squared error",
    ),
    mutant(
        "vae_kl_warmup_the_wrong_way_round",
        VAE,
        "    return BETA * tf.minimum(1.0, tf.cast(step, tf.float32) / KL_WARMUP_STEPS)\n",
        "    return BETA * tf.maximum(0.0, 1.0 - tf.cast(step, tf.float32) / KL_WARMUP_STEPS)\n",
        [f"{VAE_FORMULAS}[bernoulli]", VAE_TRAINED],
        "issue 62 #4: KL annealing from BETA down to 0 instead of up",
    ),
    mutant(
        "vae_step_without_the_kl_weight",
        VAE,
        "            {{ target }} = tf.reduce_mean(reconstruction + kl_weight(step) * kl)\n",
        "            {{ target }} = tf.reduce_mean(reconstruction + BETA * kl)\n",
        [VAE_TRAINED],
        "issue 62 #4: the step weighs the KL by BETA from the first step: no warm-up at all",
    ),
    mutant(
        "vae_codes_drawn_per_replica",
        VAE,
        "            noise = code_noise(seed, tf.shape({{ x }})[0], "
        "{{ tape.first_example(batch) }}, {{ batch if distributed",
        "            noise = code_noise(seed, tf.shape({{ x }})[0], 0, "
        '{{ "tf.shape(" ~ x ~ ")[0]" if distributed',
        [f"{MIRRORED}[shapes_vae]"],
        "issue 62 #4: each replica draws its codes' noise as if alone: not one device's step",
    ),
    mutant(
        "xla_on_ignored_for_a_way_that_acts",
        "dsl/rules/rl.py",
        '    if spec.performance.xla == "on" and (kind != "DQN"',
        '    if False and (kind != "DQN"',
        [XLA_ON_ACTING],
        "performance.xla='on' for PPO (or DQN on replicas) rendered without XLA, without a word",
    ),
    mutant(
        "traced_call_ignores_eager",
        RUNTIME,
        "        if tf.config.functions_run_eagerly():\n            return function(*args)\n",
        "",
        [TRACED_CALL, REPLAY_DQN],
        "issue 63 #23: DQN's train step called through its trace under --eager and replay: "
        "then no Python of the step runs (no breakpoint stops, replay checks no op)",
    ),
    mutant(
        "dqn_stores_a_time_limit_as_termination",
        DQN,
        "buffer.add(observations, actions, rewards, reached, terminated)",
        "buffer.add(observations, actions, rewards, reached, terminated | _)",
        [f"{DQN_STORES}[box]", f"{ENDLESS}[single_device]"],
        "#1: a time limit stored as the episode's end (bootstrapped as termination)",
    ),
    mutant(
        "dqn_stores_the_next_episodes_first_observation",
        DQN,
        "buffer.add(observations, actions, rewards, reached, terminated)",
        "buffer.add(observations, actions, rewards, environments.observations, terminated)",
        [f"{DQN_STORES}[box]", f"{DQN_STORES}[dict]"],
        "#2: the next episode's first observation stored as s' instead of the last",
    ),
    mutant(
        "dqn_plain_under_the_name_of_double",
        DQN,
        PICKS + AFTER_ONE_DEVICE,
        PICKS.replace('"model(reached), "', '"target_network(reached), "') + AFTER_ONE_DEVICE,
        [f"{ENDLESS}[single_device]"],
        "#3: the target network picks the next action too: plain DQN under double DQN's name",
    ),
    mutant(
        "dqn_replicas_plain_under_the_name_of_double",
        DQN,
        PICKS + AFTER_REPLICAS,
        PICKS.replace('"model(reached), "', '"target_network(reached), "') + AFTER_REPLICAS,
        [f"{ENDLESS}[mirrored]"],
        "#3 on replicas (their own train step): plain DQN under double DQN's name",
    ),
    mutant(
        "evaluation_seeded_as_training",
        ENVIRONMENT,
        "np.random.SeedSequence([SEED, int(evaluation), first_index + i])",
        "np.random.SeedSequence([SEED, 0, first_index + i])",
        ["tests/test_rl_wiring.py::test_evaluation_plays_environments_seeded_apart_from_training"],
        "#9: evaluate's environments seeded as training's (README: seeded apart)",
    ),
    # --- Supervised, data, run directory, sweeps (issue 47's survivors 11-20)
    mutant(
        "every_epoch_in_the_same_order",
        "templates/partials/data/order.jinja",
        "seed=tf.stack([tf.constant(SEED, tf.int64), epoch]), max_index=num_examples - 1",
        "seed=tf.stack([tf.constant(SEED, tf.int64), tf.constant(0, tf.int64)]), "
        "max_index=num_examples - 1",
        ["tests/test_training.py::test_each_epoch_reads_every_example_once_in_an_order_of_its_own"],
        "#11: epoch_order seeded without the epoch: every epoch drawn in the same order",
    ),
    mutant(
        "clip_value_not_applied",
        TAPE,
        '        gradients = [tf.clip_by_value(g, -CLIP_VALUE{{ " * scale" if loss_scaling }}, '
        'CLIP_VALUE{{ " * scale" if loss_scaling }}) for g in gradients]\n',
        "",
        [f"{CLIP_VALUE}[single_device]", f"{CLIP_VALUE}[mirrored]"],
        "#12: gradients.clip_value not applied",
    ),
    mutant(
        "best_model_left_out_of_the_checkpoint",
        "templates/partials/checkpoint.jinja",
        "{% for name in monitors %}",
        '{% for name in monitors if name != "best" %}',
        [
            "tests/test_controls.py::test_plateau_early_stopping_and_best_model_act_and_resume_exactly"
        ],
        "#13: best_model's state not in the checkpoint: a resumed run forgets its best",
    ),
    mutant(
        "early_stopping_left_out_of_the_checkpoint",
        "templates/partials/checkpoint.jinja",
        "{% for name in monitors %}",
        '{% for name in monitors if name != "early_stopping" %}',
        [
            "tests/test_controls.py::test_plateau_early_stopping_and_best_model_act_and_resume_exactly"
        ],
        "README: early stopping's state in the checkpoint: a run that stopped early stays stopped",
    ),
    mutant(
        "epoch_end_step_saved_before_its_validation",
        "templates/partials/loop.jinja",
        "            if global_step % CHECKPOINT_EVERY_STEPS == 0 and global_step < epoch_end:\n",
        "            if global_step % CHECKPOINT_EVERY_STEPS == 0:\n",
        [f"{KILLED_AFTER_ANY_CHECKPOINT}[every_steps]"],
        "issue 63: the step checkpoint of an epoch's last step written before its validation: "
        "killed after it, the resumed run skips the validation (its monitors' decisions)",
    ),
    mutant(
        "preempted_at_an_epoch_end_before_its_validation",
        "templates/partials/loop.jinja",
        "        if run.preempted and global_step < epoch_end:  # else after the validation\n",
        "        if run.preempted:\n",
        [f"{KILLED_AFTER_ANY_CHECKPOINT}[every_epochs]"],
        "issue 63: a SIGTERM in an epoch's last train_loop call saves before the epoch's "
        "validation: the resumed run skips it (its monitors' decisions)",
    ),
    mutant(
        "setup_compares_only_the_number_of_examples",
        RUNTIME,
        # The files' comparison, which both the digested (data files) and the plain check
        # make: the plain check's `recorded == self.data` is only reached without files.
        '        files = {**recorded["files"], **self.data["files"]}\n',
        "        files = {}\n",
        [
            "tests/test_runtime.py::"
            "test_other_training_data_is_refused_naming_the_file_that_differs",
            OTHER_DATA,
        ],
        "#14: setup.json compares the number of examples, not each file's size and time",
    ),
    mutant(
        "setup_records_no_data_file",
        RUNTIME,
        '"files": {path: file_record(path) for path in paths},',
        '"files": {},',
        [
            "tests/test_runtime.py::"
            "test_the_data_record_holds_the_number_of_examples_and_each_files_size_and_time",
            OTHER_DATA,
        ],
        "#14: setup.json records no file's size and time",
    ),
    mutant(
        "no_nan_check_before_a_save",
        RUNTIME,
        '''        checkpoint on disk always restores."""
        self.stop_if_diverged()
''',
        '''        checkpoint on disk always restores."""
''',
        [
            "tests/test_runtime.py::"
            "test_a_nan_before_a_save_stops_the_run_and_keeps_its_batch_for_replay",
            "tests/test_faults.py::test_a_nan_loss_between_log_points_is_caught_before_the_next_save",
        ],
        "#15: the NaN check before each save removed: NaN weights saved between log points",
    ),
    mutant(
        "augmentation_positions_from_0_after_a_resume",
        "templates/partials/data/batches.jinja",
        'positions = tf.range({{ "start" if spec.checkpoint else "0" }}, '
        '{{ "start + " if spec.checkpoint }}tf.size(order, out_type=tf.int64))',
        "positions = tf.range(tf.size(order, out_type=tf.int64))",
        [
            "tests/test_models.py::test_augmentation_is_reproducible_resumable_and_training_only",
            "tests/test_faults.py::test_sigkill_then_resume_is_exact_for_every_source_and_way[contrastive-single_device]",
        ],
        "#16: an augmented example's position counted from 0 in a resumed epoch",
    ),
    mutant(
        "stream_augmentation_positions_from_0_after_a_resume",
        "templates/partials/data/batches.jinja",
        "records = records.enumerate({{ at }}).map(",
        "records = records.enumerate().map(",
        ["tests/test_models.py::test_augmentation_of_a_stream_resumes_at_its_position"],
        "#16 for streams: a streamed example's position counted from 0 in a resumed epoch",
    ),
    mutant(
        "predictions_written_in_place",
        RUNTIME,
        """        with open(partial, "w") as f:
            f.writelines(lines)
        os.replace(partial, destination)""",
        """        with open(destination, "w") as f:
            f.writelines(lines)""",
        [
            "tests/test_predict.py::"
            "test_a_predictions_write_the_machine_refuses_leaves_the_last_predictions_whole"
        ],
        "#17: predict's output written in place: a refused write leaves half a file",
    ),
    mutant(
        "checkpoints_without_their_state_file_removed",
        RUNTIME,
        "    if missing and not steps:\n",
        "    if missing:\n",
        [
            "tests/test_runtime.py::"
            "test_checkpoints_whose_state_file_is_gone_are_kept_and_listed_again",
        ],
        "#61's tests: a checkpoints folder whose `checkpoint` file is gone lost every checkpoint "
        "to remove_partial_checkpoints, without a word",
    ),
    mutant(
        "state_file_rebuilt_in_place",
        RUNTIME,
        """        with open(state_file + ".tmp", "w") as f:
            f.write("\\n".join(lines) + "\\n")
        os.replace(state_file + ".tmp", state_file)""",
        """        with open(state_file, "w") as f:
            f.write("\\n".join(lines) + "\\n")""",
        [
            "tests/test_runtime.py::test_a_state_file_rebuilt_is_never_half_written",
            "tests/test_recovery.py::test_a_damaged_checkpoint_state_file_is_rebuilt_and_the_run_resumes_exactly",
        ],
        "#18: the rebuilt checkpoint state file written in place",
    ),
    mutant(
        "sweep_reports_validation_by_step",
        "sweep/trial.py",
        'at = "epoch" if self.loaded.per_epoch else "step"',
        'at = "step"',
        [
            "tests/test_sweep.py::test_a_study_of_six_trials_two_at_a_time_prunes_the_hopeless_one_and_names_the_best"
        ],
        "#19: a validation objective reported to the pruner by step, not by epoch",
    ),
    mutant(
        "every_sweep_process_seeds_its_sampler",
        "sweep/study.py",
        "sampler=sampler(loaded, sweep.seed if fresh else None),",
        "sampler=sampler(loaded, sweep.seed),",
        [
            "tests/test_sweep.py::test_two_processes_on_one_study_share_its_trials_and_run_none_twice"
        ],
        "#20: a process joining a study seeds its sampler as its maker did: the same draws again",
    ),
    # --- Reinforcement learning: the guards the tests already caught (issue 47's audit)
    mutant(
        "gae_flows_back_across_an_episode_end_in_delta",
        PPO,
        "delta = rewards[t] + GAMMA * next_values * going_on - values[t]",
        "delta = rewards[t] + GAMMA * next_values - values[t]",
        ["tests/test_rl.py::test_ppo_advantages_and_loss_equal_the_formulas"],
        "GAE at episode ends: the next episode's value bootstrapped into an ended one",
    ),
    mutant(
        "gae_flows_back_across_an_episode_end",
        PPO,
        "following = delta + GAMMA * GAE_LAMBDA * going_on * following",
        "following = delta + GAMMA * GAE_LAMBDA * following",
        ["tests/test_rl.py::test_ppo_advantages_and_loss_equal_the_formulas"],
        "GAE at episode ends: advantages flowing back from the next episode",
    ),
    mutant(
        "a2c_returns_across_an_episode_end",
        PPO,
        "going_on = 1.0 - ended[t]",
        "going_on = 1.0 + 0 * ended[t]",
        ["tests/test_rl.py::test_a2c_loss_is_the_policy_gradient_of_n_step_advantages"],
        "A2C's n-step returns bootstrapped across an episode's end",
    ),
    mutant(
        "autoreset_on_the_next_step",
        ENVIRONMENT,
        "autoreset_mode=gym.vector.AutoresetMode.SAME_STEP",
        "autoreset_mode=gym.vector.AutoresetMode.NEXT_STEP",
        [
            "tests/test_rl.py::test_a_truncated_episode_is_bootstrapped_and_the_autoreset_step_is_no_transition"
        ],
        "README: the autoreset step is no transition (Gymnasium's default trains on it)",
    ),
    mutant(
        "reached_is_the_next_episodes_first_observation",
        ENVIRONMENT,
        '                reached[i] = info["final_obs"][i]\n',
        "                pass\n",
        [f"{LAST_OBSERVATION}[box]"],
        "README: the observation reached at a cut is the episode's last (info['final_obs'])",
    ),
    mutant(
        "dict_reached_is_the_next_episodes_first_observation",
        ENVIRONMENT,
        'part[i] = info["final_obs"][i][name]',
        "part[i] = part[i]",
        [f"{LAST_OBSERVATION}[dict]"],
        "README: a Dict's observation reached at a cut is the episode's last, part by part",
    ),
    mutant(
        "environments_left_out_of_the_checkpoint",
        PPO,
        "        # saved whole, mid-episode.\n"
        "        step=step,\n        environments=environments,\n",
        "        # saved whole, mid-episode.\n        step=step,\n",
        [f"{MATRIX}[ppo-single_device]"],
        "README: the environments mid-episode in the checkpoint (0.0145 off without them)",
    ),
    mutant(
        "replay_buffer_left_out_of_the_checkpoint",
        DQN,
        "        buffer=buffer,\n",
        "",
        [f"{MATRIX}[dqn-single_device]"],
        "README: DQN's replay buffer in the checkpoint",
    ),
    mutant(
        "observation_statistics_left_out_of_the_checkpoint",
        PPO,
        "        observation_statistics=statistics,\n",
        "",
        [f"{MATRIX}[ppo_continuous-single_device]"],
        "README: the observation statistics in the checkpoint (0.02 off without them)",
    ),
    mutant(
        "export_serves_unnormalized_observations",
        PPO,
        "        observations = statistics(observations)\n",
        "",
        [
            "tests/test_rl.py::test_training_improves_the_return_and_the_export_serves_the_networks[pendulum_ppo]"
        ],
        "README: the export normalizes raw observations with the training's statistics",
    ),
    mutant(
        "ppo_replicas_take_the_whole_minibatch",
        PPO,
        "batch = {key: value[start : start + share] for key, value in batch.items()}",
        "batch = {key: value for key, value in batch.items()}",
        [f"{MIRRORED}[cartpole_ppo]"],
        "replicas' shares: each replica trains on the whole minibatch (twice the step)",
    ),
    mutant(
        "ppo_replicas_clip_their_own_share",
        PPO,
        "        gradients = context.all_reduce(tf.distribute.ReduceOp.SUM, gradients)\n",
        "",
        [f"{MIRRORED}[cartpole_ppo]"],
        "replicas' clipping: each replica clips its own share of the gradient",
    ),
    mutant(
        "off_policy_gradients_unclipped",
        DQN,
        "# Scaled down together, to a global norm of MAX_GRAD_NORM at most.\n"
        "{{ name }}, _ = tf.clip_by_global_norm({{ name }}, MAX_GRAD_NORM)\n",
        "{{ name }}, _ = {{ name }}, MAX_GRAD_NORM\n",
        [
            f"{MAX_GRAD_NORM}[cartpole_dqn-single_device]",
            f"{MAX_GRAD_NORM}[pendulum_sac-single_device]",
        ],
        "issue 55: DQN's, SAC's and TD3's max_grad_norm rendered but never applied",
    ),
    mutant(
        "off_policy_replicas_clip_their_own_share",
        DQN,
        "{{ name }} = context.all_reduce(tf.distribute.ReduceOp.SUM, {{ name }})\n",
        "",
        [f"{MAX_GRAD_NORM}[cartpole_dqn-mirrored]", f"{MAX_GRAD_NORM}[pendulum_sac-mirrored]"],
        "issue 55: on replicas, each clips its own share of DQN's, SAC's or TD3's gradient",
    ),
    mutant(
        "dqn_replicas_take_the_whole_batch",
        DQN,
        "            value[start : start + share]\n            for value in",
        "            value\n            for value in",
        [f"{MIRRORED}[cartpole_dqn]"],
        "replicas' shares: each replica trains on DQN's whole sampled batch",
    ),
    mutant(
        "workers_draw_their_own_categorical_actions",
        PPO,
        "        draws = tf.random.stateless_categorical(tf.pad(logits, padding), 1, seed)\n"
        "        return draws[cluster.first : cluster.first + cluster.count, 0]",
        "        return tf.random.stateless_categorical(logits, 1, seed)[:, 0]",
        [f"{WORKERS}[categorical]"],
        "workers' draws: a worker acting on its own draws, not its rows of one device's (6e-3)",
    ),
    mutant(
        "workers_draw_their_own_gaussian_noise",
        PPO,
        "noise = noise[cluster.first : cluster.first + cluster.count]",
        "noise = noise[: cluster.count]",
        [f"{WORKERS}[gaussian]"],
        "workers' draws: each worker the first rows of one device's noise",
    ),
    mutant(
        "workers_seed_their_shares_alike",
        ENVIRONMENT,
        'make_envs({{ count }}{{ ", cluster.first" if mw }})',
        "make_envs({{ count }})",
        [f"{WORKERS}[categorical]"],
        "workers' draws: both workers' shares of the environments seeded alike (7e-3)",
    ),
    mutant(
        "workers_keep_their_own_transitions",
        DQN,
        "        steps = self.cluster.gather(steps, axis=1)\n",
        "",
        [f"{WORKERS}[dqn]"],
        "exchange: a DQN worker storing only its own transitions (0.071)",
    ),
    mutant(
        "a_save_leaves_out_the_pending_transitions",
        DQN,
        "{% if mw %}\n        self.exchange()\n{% endif %}\n        arrays =",
        "        arrays =",
        [f"{WORKERS}[dqn]"],
        "exchange: a save without the transitions since the last train step",
    ),
    mutant(
        "workers_do_not_vote_on_a_sigterm",
        PPO,
        "        run.preempted = cluster.any(run.sigterm)\n",
        "",
        [f"{WORKERS}[categorical]"],
        "vote: without it the job ignores a worker's SIGTERM",
    ),
    mutant(
        "dqn_workers_do_not_vote_on_a_sigterm",
        DQN,
        "            run.preempted = cluster.any(run.sigterm)\n",
        "",
        [f"{WORKERS}[dqn]"],
        "vote: without it a DQN job ignores a worker's SIGTERM",
    ),
    mutant(
        "a_worker_resumes_another_workers_share",
        ENVIRONMENT,
        "mine = slice(self.cluster.first, self.cluster.first + self.cluster.count)",
        "mine = slice(0, self.cluster.count)",
        [f"{WORKERS}[categorical]"],
        "workers' draws: a restarted worker resumes the first share, not its own (5e-3)",
    ),
    mutant(
        "finished_episodes_left_out_of_the_exchange",
        ENVIRONMENT,
        '"finished": [e[1:] for e in self.finished if e[0] == first + i],',
        '"finished": [],',
        [f"{WORKERS}[categorical]"],
        "exchange: the episodes finished since the last log not saved with the environments",
    ),
    mutant(
        "ppo_replicas_normalize_their_own_share",
        PPO,
        '    ratio = tf.exp(log_ratio)\n    advantages = batch["advantages"]\n'
        "{% if way.normalize_advantages and not distributed %}",
        '    ratio = tf.exp(log_ratio)\n    advantages = batch["advantages"]\n'
        "{% if way.normalize_advantages %}",
        [f"{MIRRORED}[cartpole_ppo]"],
        "replicas' shares: advantages normalized over a replica's share (3e-3 off)",
    ),
    # --- Supervised steps and the other ways of training
    mutant(
        "weight_penalties_left_out",
        TAPE,
        "            {{ target }} += {{ penalty }}{{ share }}\n{% endif %}\n{% endmacro %}",
        "            pass\n{% endif %}\n{% endmacro %}",
        ["tests/test_training.py::test_regularization_penalty_shrinks_weights"],
        "weight penalties: the regularizers silently do nothing in a hand-written step",
    ),
    mutant(
        "replicas_add_the_whole_penalty",
        TAPE,
        '{% set penalty = "tf.nn.scale_regularization_loss(tf.add_n(" ~ network ~ ".losses))" '
        "if distributed",
        '{% set penalty = "tf.add_n(" ~ network ~ ".losses)" if distributed',
        [
            "tests/test_distributed.py::test_mirrored_equals_single_device_and_its_checkpoint_resumes_there"
        ],
        "replicas' shares: every replica adds the whole weight penalty",
    ),
    mutant(
        "replicas_divide_by_their_own_batch",
        TAPE,
        '{{ forward("loss", x_name, "labels", "global_batch_size", parts).rstrip() }}',
        '{{ forward("loss", x_name, "labels", "batch_size", parts).rstrip() }}',
        [
            "tests/test_distributed.py::test_mirrored_equals_single_device_and_its_checkpoint_resumes_there"
        ],
        "replicas' shares: a replica's loss divided by its own batch, not the global one",
    ),
    mutant(
        "replicas_clip_their_own_share",
        TAPE,
        "        gradients = tf.distribute.get_replica_context().all_reduce(\n"
        "            tf.distribute.ReduceOp.SUM, gradients\n        )\n",
        "",
        ["tests/test_controls.py::test_clipping_limits_the_update_of_the_whole_batch[mirrored]"],
        "replicas' clipping: each replica clips its own share (Keras's clipnorm would)",
    ),
    mutant(
        "clip_norm_unscaled_under_mixed_precision",
        TAPE,
        "gradients, gradient_norm = tf.clip_by_global_norm(gradients, "
        'CLIP_NORM{{ " * scale" if loss_scaling }})',
        "gradients, gradient_norm = tf.clip_by_global_norm(gradients, CLIP_NORM)",
        [
            "tests/test_controls.py::test_clipping_limits_the_update_of_the_whole_batch[mixed_float16]"
        ],
        "clipping under mixed_float16: the threshold not scaled with the loss",
    ),
    mutant(
        "micro_batches_divided_by_their_own_size",
        TAPE,
        '"micro_labels", "global_batch_size" if distributed else "batch_size",',
        '"micro_labels", "global_batch_size" if distributed else "micro_batch_size",',
        [ACCUMULATION],
        "accumulation: each micro-batch's loss divided by its own size, not the batch's",
    ),
    mutant(
        "micro_batches_add_the_whole_penalty",
        TAPE,
        'penalties("micro_loss", " / tf.cast(num_micro_batches, tf.float32)")',
        'penalties("micro_loss")',
        [ACCUMULATION],
        "accumulation: every micro-batch adds the whole weight penalty",
    ),
    mutant(
        "dropout_state_left_out_of_the_checkpoint",
        "templates/partials/checkpoint.jinja",
        "        rng_states=[v for v in {% for net in networks %}{{ net }}.variables"
        '{{ " + " if not loop.last }}{% endfor %} if "seed_generator_state" in v.path],\n',
        "",
        ["tests/test_training.py::test_resume_continues_exactly"],
        "README: Dropout's random state in the checkpoint (a resumed run repeats old masks)",
    ),
    mutant(
        "running_means_left_out_of_the_checkpoint",
        "templates/partials/checkpoint.jinja",
        "        train_values=[v for value in train_values for v in value.variables],\n",
        "",
        [
            "tests/test_recovery.py::test_a_run_killed_between_checkpoints_logs_each_step_once_after_its_resume"
        ],
        "README: a run resumed mid-epoch logs the running means of a run that never stopped",
    ),
    mutant(
        "loss_scale_unused_under_mixed_float16",
        TAPE,
        "            scaled_loss = optimizer.scale_loss({{ loss }})",
        "            scaled_loss = {{ loss }}",
        ["tests/test_performance.py::test_mixed_float16_scales_the_loss_and_resumes_exactly"],
        "mixed_float16: the loss not scaled, float16 gradients underflow",
    ),
    mutant(
        "gan_replicas_draw_the_first_rows",
        "templates/partials/ways/gan.jinja",
        "    return values[first : first + shape[0]]",
        "    return values[: shape[0]]",
        ["tests/test_gan.py::test_uneven_replica_slices_draw_what_one_device_draws"],
        "GAN noise: each replica draws the first rows of the global batch's noise",
    ),
    mutant(
        "gan_noise_the_same_for_every_use",
        "templates/partials/ways/gan.jinja",
        "    seed = tf.random.experimental.stateless_fold_in(seed, use)\n",
        "",
        [
            "tests/test_gan.py::test_the_alternating_step_is_the_papers[shapes_dcgan-float32-1-1e-05]"
        ],
        "GAN noise: the discriminator's and the generator's draws the same",
    ),
    mutant(
        "simclr_negatives_from_the_replica_alone",
        "templates/partials/ways/contrastive.jinja",
        "    all_first = context.all_gather(first, axis=0)\n"
        "    all_second = context.all_gather(second, axis=0)\n"
        "    # Where this replica's images sit in the global batch (slices may be uneven).\n"
        "    sizes = context.all_gather(tf.shape(first)[:1], axis=0)\n"
        "    offset = tf.reduce_sum(sizes[: context.replica_id_in_sync_group])\n",
        "    all_first, all_second, offset = first, second, 0\n",
        [f"{MIRRORED}[shapes_simclr]"],
        "SimCLR's gather: negatives from the local replica only (the loss alone 0.7 off)",
    ),
    mutant(
        "teacher_in_training_mode",
        "templates/partials/ways/distillation.jinja",
        "            teacher_logits = teacher({{ x }}, training=False)",
        "            teacher_logits = teacher({{ x }}, training=True)",
        [
            "tests/test_distillation.py::test_the_teacher_stays_frozen_in_inference_mode_while_the_student_learns"
        ],
        "the teacher: called in training mode, its BatchNormalization statistics drift",
    ),
    mutant(
        "maml_without_its_second_order_terms",
        "templates/partials/ways/meta.jinja",
        "        # Taken inside the meta-step's tape, this gradient is differentiated in turn:"
        " the\n        # meta-gradient has MAML's second-order terms.\n",
        "        gradients = [tf.stop_gradient(gradient) for gradient in gradients]\n",
        ["tests/test_meta.py::test_maml_meta_gradient_is_the_nested_tape_reference[False]"],
        "MAML's second order: the inner gradients held constant",
    ),
    mutant(
        "first_order_maml_keeps_the_second_order_terms",
        "templates/partials/ways/meta.jinja",
        "        gradients = [tf.stop_gradient(gradient) for gradient in gradients]\n"
        "{% elif maml %}",
        "        pass\n{% elif maml %}",
        ["tests/test_meta.py::test_maml_meta_gradient_is_the_nested_tape_reference[True]"],
        "MAML's first order: the inner gradients differentiated again",
    ),
    mutant(
        "wgan_penalty_unscaled_under_mixed_float16",
        "templates/partials/ways/gan.jinja",
        "        scores = scores * scale\n    gradients = tape.gradient(scores, points) / scale",
        "    gradients = tape.gradient(scores, points)",
        ["tests/test_gan.py::test_the_gradient_penalty_is_scaled_under_mixed_precision"],
        "WGAN-GP under mixed_float16: the penalty's inner gradient not scaled (README: a test "
        "removes it and fails)",
    ),
    mutant(
        "own_step_losses_averaged_per_replica",
        "templates/partials/ways/own_step.jinja",
        "name: tf.nn.compute_average_loss(value, global_batch_size={{ batch }})",
        "name: tf.nn.compute_average_loss(value, global_batch_size=tf.shape(value)[0])",
        [f"{MIRRORED}[mnist_own_step]"],
        "your own step: your losses averaged per replica, not over the global batch",
    ),
    mutant(
        "reptile_sums_its_tasks",
        "templates/partials/ways/meta.jinja",
        "g + (v - a) / TASKS_PER_STEP",
        "g + (v - a)",
        ["tests/test_meta.py::test_reptile_with_a_meta_step_of_one_is_sgd_on_the_task[2]"],
        "Reptile: the tasks' moves summed, not averaged",
    ),
    mutant(
        "attack_in_training_mode",
        "templates/partials/ways/adversarial.jinja",
        "loss = tf.reduce_sum(loss_fn(labels, model(adversarial, training=False)))",
        "loss = tf.reduce_sum(loss_fn(labels, model(adversarial, training=True)))",
        [
            "tests/test_adversarial.py::test_the_attack_leaves_the_batch_normalization_statistics_alone"
        ],
        "adversarial: an attack in training mode moves the BatchNormalization statistics",
    ),
    mutant(
        "fine_tuning_unfreezes_batch_normalization",
        "templates/partials/model.jinja",
        "    for layer in backbone.layers[: names.index(UNFREEZE_FROM)]:\n"
        "        layer.trainable = False\n"
        "    for layer in backbone.layers:\n"
        "        if isinstance(layer, layers.BatchNormalization):\n"
        "            layer.trainable = False\n",
        "    for layer in backbone.layers[: names.index(UNFREEZE_FROM)]:\n"
        "        layer.trainable = False\n",
        [
            "tests/test_models.py::test_a_frozen_backbone_and_its_statistics_stay_put_until_it_unfreezes"
        ],
        "fine-tuning: the backbone's BatchNormalization unfrozen with its layers",
    ),
    mutant(
        "multitask_weights_ignored",
        "templates/partials/ways/supervised.jinja",
        "            {{ target }} = tf.add_n([LOSS_WEIGHTS[task] * {{ task_target }}[task] "
        "for task in loss_fns])",
        "            {{ target }} = tf.add_n([{{ task_target }}[task] for task in loss_fns])",
        [
            "tests/test_multitask.py::test_the_step_follows_the_weighted_sum_and_every_task_is_logged"
        ],
        "multi-task: the tasks' weights left out of the loss",
    ),
    # --- Schedules
    mutant(
        "triangular2_does_not_halve",
        SCHEDULES,
        "swing /= 2 ** (cycle - 1)",
        "swing /= 1",
        ["tests/test_controls.py::test_warmup_then_triangular2_follows_its_formula_and_resumes"],
        "schedules: triangular2 without its halving",
    ),
    mutant(
        "warmup_does_not_shift_its_schedule",
        SCHEDULES,
        "self.after(step - self.warmup_steps)",
        "self.after(step)",
        ["tests/test_controls.py::test_warmup_then_triangular2_follows_its_formula_and_resumes"],
        "schedules: the schedule after a warmup counts its steps from 0, not from the warmup's end",
    ),
    mutant(
        "one_cycle_falls_from_the_start",
        SCHEDULES,
        "(step - self.rise_steps) / (self.total_steps - self.rise_steps),",
        "step / self.total_steps,",
        ["tests/test_controls.py::test_one_cycle_rises_to_its_peak_then_anneals_to_the_floor"],
        "schedules: one-cycle's fall measured from step 0",
    ),
    # --- The run directory: lock, setup, faults
    mutant(
        "a_training_run_takes_a_shared_lock",
        RUNTIME,
        "shared = fcntl.LOCK_SH if reader else fcntl.LOCK_EX",
        "shared = fcntl.LOCK_SH",
        [
            "tests/test_runtime.py::"
            "test_a_training_run_holds_the_lock_and_a_second_is_refused_naming_the_first",
            "tests/test_rundir.py::test_a_second_run_on_a_locked_directory_stops_at_once",
        ],
        "the run lock: two training runs on one directory",
    ),
    mutant(
        "the_setup_is_not_compared",
        RUNTIME,
        'if key != "data" and saved.get(key) != setup.get(key)',
        'if key not in ("data", "data.batch_size") and saved.get(key) != setup.get(key)',
        [
            "tests/test_runtime.py::"
            "test_check_setup_refuses_another_setup_listing_each_key_that_differs",
            "tests/test_rundir.py::test_checkpoints_of_another_setup_are_refused_unless_branched_with_init_from",
        ],
        "setup.json: a resume with another batch size not refused",
    ),
    mutant(
        "a_hand_edited_network_is_not_noticed",
        RUNTIME,
        'setup = {**self.setup, "weights": weights_fingerprint(*networks.values())}',
        "setup = {**self.setup}",
        [
            "tests/test_runtime.py::"
            "test_a_network_edited_by_hand_is_refused_by_its_weights_fingerprint",
            "tests/test_rundir.py::test_checkpoints_of_another_setup_are_refused_unless_branched_with_init_from",
        ],
        "setup.json: a hand edit of build_model() not refused",
    ),
    mutant(
        "logged_steps_past_the_checkpoint_kept",
        RUNTIME,
        "if (found := re.match(pattern, line)) and int(found[1]) <= step",
        "if (found := re.match(pattern, line))",
        [
            "tests/test_runtime.py::"
            "test_forget_logged_after_drops_the_records_past_the_step_and_cut_lines",
            "tests/test_recovery.py::test_a_run_killed_between_checkpoints_logs_each_step_once_after_its_resume",
        ],
        "README: after a kill, metrics.jsonl holds each step once",
    ),
    mutant(
        "no_nan_check_in_the_step",
        TAPE,
        "        if nonfinite_step < 0 and not tf.math.is_finite({{ value }}):\n"
        "            nonfinite_step.assign(step)\n",
        "",
        [
            "tests/test_faults.py::test_nan_loss_stops_the_run_naming_the_step_and_keeps_the_good_checkpoint"
        ],
        "NaN: a non-finite loss never noted, the ruined weights saved",
    ),
    # --- loopgen itself: the setup's fingerprint, the merge of hand edits
    mutant(
        "the_seed_is_not_in_the_setup",
        "render/fingerprint.py",
        '    entries.append(("seed", "SEED"))\n',
        "",
        [
            "tests/test_rundir.py::test_what_changes_a_checkpoints_meaning_changes_the_setup[seed=7-seed]"
        ],
        "SETUP: another seed resumes checkpoints of another run",
    ),
    mutant(
        "hand_edits_merged_unformatted",
        "output/__init__.py",
        "        formatted(old),\n",
        "        old,\n",
        [
            "tests/test_rerender.py::test_reformatted_edited_script_merges_with_the_edit_kept",
            "tests/test_rerender.py::test_reformatting_only_edits_are_not_conflicts",
        ],
        "the merge of hand edits: a reformatted script conflicts with every change",
    ),
    mutant(
        "a_render_over_hand_edits_keeps_no_backup",
        "output/__init__.py",
        'kept = {"backup": True, "old_base": base}',
        'kept = {"backup": False, "old_base": base}',
        ["tests/test_rerender.py::test_conflicting_edits_get_markers_a_failure_and_a_way_back"],
        "the merge of hand edits: no .orig backup that undoes the render",
    ),
    mutant(
        "strings_written_between_quotes_by_hand",
        "render/code.py",
        "    if value is None or isinstance(value, bool | int | str):\n        return repr(value)",
        "    if isinstance(value, str):\n        return f'\"{value}\"'\n"
        "    if value is None or isinstance(value, bool | int):\n        return repr(value)",
        ["tests/test_injection.py::test_hostile_strings_stay_string_constants"],
        "literals: a spec's string pasted into code by hand, not through repr (hostile strings)",
    ),
    mutant(
        "softmax_under_from_logits_accepted",
        "dsl/rules/objective.py",
        "    if loss.from_logits and squashed:\n",
        "    if False:\n",
        ["tests/test_spec_validation.py"],
        "rules: from_logits=True on a softmax output (the loss applies it twice)",
    ),
    mutant(
        "rl_schedule_named_not_built",
        "render/rl.py",
        '"optimizer_expr": optimizer_expression(spec, inline_schedule=True),',
        '"optimizer_expr": optimizer_expression(spec),',
        [f"{SCHEDULED}[cartpole_dqn]"],
        "RL: a learning-rate schedule rendered as `learning_rate`, a name no RL script defines",
    ),
    # --- Issue 55's eight guards that no test held (items 9-16)
    mutant(
        "sac_polyak_the_other_way_round",
        OFFPOLICY,
        "target_weight.assign(TAU * weight + (1.0 - TAU) * target_weight)",
        "target_weight.assign((1.0 - TAU) * weight + TAU * target_weight)",
        [f"{SAC_REFERENCE}[pendulum]"],
        "#9: SAC's (and TD3's) targets moved 1 - tau of the way (the same as tau at 0.5 only)",
    ),
    mutant(
        "sac_target_entropy_always_minus_one",
        OFFPOLICY,
        '(-spaces.actions if way.target_entropy == "auto" else way.target_entropy)',
        '(-1 if way.target_entropy == "auto" else way.target_entropy)',
        [f"{SAC_REFERENCE}[two_actions]"],
        "#10: SAC's automatic target entropy -1, not minus the action width",
    ),
    mutant(
        "td3_smoothing_noise_unclipped",
        OFFPOLICY,
        "smoothing = tf.clip_by_value(TARGET_NOISE * noise, -TARGET_NOISE_CLIP, TARGET_NOISE_CLIP)",
        "smoothing = TARGET_NOISE * noise",
        [TD3_REFERENCE],
        "#11: TD3's target smoothing noise not clipped to +-target_noise_clip",
    ),
    mutant(
        "nonfinite_layer_named_outermost",
        RUNTIME,
        "            layer = candidate\n",
        "            layer = candidate if layer is None else layer\n",
        [
            "tests/test_runtime.py::test_innermost_layer_names_the_layer_nearest_the_failing_op",
            "tests/test_debugging.py::test_replay_names_the_first_nonfinite_layer_of_a_diverged_step",
        ],
        "#12: replay names the outermost layer being called, not the innermost (a wrapper's)",
    ),
    mutant(
        "overfit_batches_takes_twice_as_many",
        DEBUGGING,
        "first = training_batches(examples, start_step=0).take(args.overfit_batches)",
        "first = training_batches(examples, start_step=0).take(2 * args.overfit_batches)",
        [OVERFIT],
        "#13: --overfit-batches N repeats 2N batches",
    ),
    mutant(
        "directory_digest_without_file_names",
        RUNTIME,
        'digest.update(name.encode() + b"\\0")',
        'digest.update(b"\\0")',
        [
            "tests/test_runtime.py::test_file_digest_of_a_directory_changes_when_a_file_is_renamed",
            f"{COPIED_AGAIN}[image_directory]",
        ],
        "#14: a directory's digest without its files' names: an image moved to another class "
        "resumes as the same data, copied again",
    ),
    mutant(
        "sweep_reports_a_pruned_trial_again",
        "sweep/run.py",
        "for step, value in reported if not running.pruned else []:",
        "for step, value in reported:",
        [PRUNED_ONCE],
        "#15: a pruned trial's later values reported, and the trial pruned (and said) again",
    ),
    mutant(
        "sac_targets_updated_every_step",
        OFFPOLICY,
        "if critic_optimizer.iterations % TARGET_UPDATE_EVERY == 0:",
        "if True:",
        [f"{SAC_REFERENCE}[two_actions]"],
        "#16: SAC's target critics updated at every gradient step whatever target_update_every",
    ),
    # --- Issue 63's guards that no test held (items 8-15)
    mutant(
        "grpo_lower_clip_fixed_at_0_2",
        GRPO,
        "EPSILON_LOW = {{ grpo.epsilon | py }}",
        "EPSILON_LOW = 0.2",
        [GRPO_FORMULAS],
        "#8: GRPO's training.epsilon ignored, the ratio clipped from below at 0.8 whatever it says",
    ),
    mutant(
        "grpo_keys_the_same_at_every_step",
        GRPO,
        "return step * 2**24 + tf.range(first_row, first_row + rows)",
        "return tf.range(first_row, first_row + rows)",
        [GRPO_VALUES],
        "#9: GRPO's sampling keys without the step: each step draws its completions from the "
        "same seeds as step 1",
    ),
    mutant(
        "grpo_completion_without_its_end_token",
        GRPO,
        '    written = tf.logical_and(sequences["padding_mask"], '
        'tf.logical_not(prompts["padding_mask"]))\n',
        '    written = tf.logical_and(sequences["padding_mask"], '
        'tf.logical_not(prompts["padding_mask"]))\n'
        '    written = tf.logical_and(written, sequences["token_ids"] != end_token)\n',
        [GRPO_VALUES],
        "#10: GRPO's completions without their end token: the loss never teaches the model to "
        "stop, and the logged lengths are a token short",
    ),
    mutant(
        "grpo_completion_not_cut_at_max_completion_length",
        GRPO,
        "completion = tf.logical_and(written, positions < prompt_length + MAX_COMPLETION_LENGTH)",
        "completion = written",
        [GRPO_VALUES],
        "#11: GRPO's completions not cut at max_completion_length: the rewards and the loss "
        "read every token sampled up to the sequence's end",
    ),
    mutant(
        "lora_export_of_the_base_kernels",
        "templates/partials/export.jinja",
        "        layer._kernel.assign(layer.kernel)\n        layer.lora_enabled = False\n",
        "        layer.lora_enabled = False\n",
        [LORA_EXPORT],
        "#12: LoRA's export serving the base kernels, the adapters dropped instead of merged",
    ),
    mutant(
        "packing_by_first_fit",
        PREPROCESS,
        "row = tf.argmin(tf.where(room >= 0, room, SEQUENCE_LENGTH + 1), output_type=tf.int32)",
        "row = tf.argmax(tf.cast(room >= 0, tf.int32), output_type=tf.int32)",
        [BEST_FIT],
        "#13: SFT's packing by first fit (the first row an example fits), not the documented "
        "best fit (the row it leaves the least room in)",
    ),
    mutant(
        "overfit_replay_from_the_first_batch",
        DEBUGGING,
        "    return first.cache().repeat().skip(step % args.overfit_batches)\n",
        "    return first.cache().repeat()\n",
        [OVERFIT],
        "#14: --overfit-batches N replayed from a step that is not a multiple of N starting "
        "again at the first batch, not at the one its step trained on",
    ),
    mutant(
        "overfit_batches_takes_twice_as_many_without_checkpoints",
        DEBUGGING,
        "    return batches.take(args.overfit_batches).cache().repeat()\n",
        "    return batches.take(2 * args.overfit_batches).cache().repeat()\n",
        [OVERFIT_UNCHECKPOINTED],
        "#15: --overfit-batches N of a spec without checkpoints repeats 2N batches",
    ),
    # --- Language models (issue 54): the pitfalls of SFT and DPO
    mutant(
        "sft_prompt_unmasked",
        PREPROCESS,
        "    weights = response_targets(weights[:count], weights[count:])\n",
        "    weights = weights[:count]\n",
        [SFT_LOSS],
        "SFT's loss counting the prompts' tokens: the model learns to write prompts",
    ),
    mutant(
        "sft_first_response_target_masked",
        PREPROCESS,
        "    if preprocessor().add_end_token:\n        first -= 1\n",
        "",
        [SFT_LOSS],
        "SFT's mask one target late: the response's first token, the answer's start, not learnt",
    ),
    mutant(
        "sft_tokens_counted_per_replica",
        "templates/partials/ways/sft.jinja",
        """tokens = tf.distribute.get_replica_context().all_reduce(
                tf.distribute.ReduceOp.SUM, tf.reduce_sum(weights)
            )""",
        "tokens = tf.reduce_sum(weights) * strategy.num_replicas_in_sync",
        [f"{MIRRORED_EQUALS}[sums_sft]"],
        "SFT on replicas dividing by its own token count: two replicas train otherwise than one",
    ),
    mutant(
        "dpo_logps_over_prompt_tokens",
        PREPROCESS,
        "    weights = response_targets(weights[:count], tf.repeat(weights[count:], 2, axis=0))\n",
        "    weights = weights[:count]\n",
        [DPO_VALUES],
        "DPO's log-probabilities summed over the prompt's tokens too: each reward carries them",
    ),
    mutant(
        "dpo_reference_trained",
        "templates/partials/ways/tape.jinja",
        "reference.trainable = False",
        "reference = model",
        [DPO_VALUES],
        "DPO's reference trained along with the policy: the rewards stay 0, the loss log 2",
    ),
    # --- GRPO's pitfalls
    mutant(
        "grpo_advantages_over_the_batch",
        GRPO,
        "groups = tf.reshape(rewards, [-1, NUM_GENERATIONS])",
        "groups = tf.reshape(rewards, [1, -1])",
        [GRPO_VALUES, GRPO_FORMULAS],
        "GRPO's advantages normalized over the whole batch, not within each prompt's group",
    ),
    mutant(
        "grpo_kl_against_the_policy",
        GRPO,
        "log_ratio = ref_logps - logps",
        "log_ratio = old_logps - logps",
        [GRPO_VALUES],
        "GRPO's KL penalty measured against the policy itself (0 at one update), not the reference",
    ),
    mutant(
        "grpo_ratio_unclipped",
        GRPO,
        "losses = -tf.minimum(ratio * advantages, clipped * advantages)",
        "losses = -ratio * advantages",
        [GRPO_FORMULAS],
        "GRPO's ratio unclipped: an update may push a completion's probability without bound",
    ),
    mutant(
        "grpo_std_of_the_population",
        GRPO,
        "/ (NUM_GENERATIONS - 1)",
        "/ NUM_GENERATIONS",
        [GRPO_FORMULAS],
        "GRPO's group std without Bessel's correction: advantages differ from TRL's",
    ),
    mutant(
        "grpo_keys_without_the_replicas_row_offset",
        GRPO,
        'first_row = ({{ tape.first_example("global_batch_size") }}) * NUM_GENERATIONS',
        "first_row = 0",
        [f"{MIRRORED_EQUALS}[sums_grpo]"],
        "GRPO on replicas drawing its completions' keys from row 0 of its own slice, not from "
        "its rows of the global batch: the second replica draws with the first's keys, and "
        "two replicas train otherwise than one device (issue 63, item 7)",
    ),
    mutant(
        "grpo_tokens_counted_per_replica",
        GRPO,
        '"tf.distribute.get_replica_context().all_reduce(tf.distribute.ReduceOp.SUM, '
        'tf.reduce_sum(mask))" if distributed',
        '"tf.reduce_sum(mask) * strategy.num_replicas_in_sync" if distributed',
        [f"{MIRRORED_EQUALS}[sums_grpo]"],
        "GRPO (dapo) on replicas dividing by its own completion tokens, not the global batch's: "
        "two replicas train otherwise than one device",
    ),
    mutant(
        "packed_prompts_counted",
        PREPROCESS,
        "    return tf.nest.map_structure(packed, ({{ x_name }}, labels))",
        '    labels = {**labels, "weights": tf.cast(mask, tf.float32)}\n'
        "    return tf.nest.map_structure(packed, ({{ x_name }}, labels))",
        [PACKED_LOSS],
        "SFT's packing counting every token of a row (the padding mask's): each packed "
        "example's prompt, and its end token's target, the next example's start",
    ),
    mutant(
        "packed_tokens_shifted",
        PREPROCESS,
        "within = tf.gather_nd(tf.cumsum(tf.cast(mask, tf.int32), axis=1), tokens) - 1",
        "within = tf.gather_nd(tf.cumsum(tf.cast(mask, tf.int32), axis=1), tokens)",
        [PACKED_LOSS],
        "SFT's packing placing each example a column past its start: its tokens, mask and "
        "targets run across the boundary into the next example's place",
    ),
    mutant(
        "packed_per_replica",
        "templates/partials/data/batches.jinja",
        "{% if distributed and not packing %}",
        "{% if distributed %}",
        [PACKED_REPLICAS],
        "SFT's packing of each replica's slice of the examples, not of the global batch: two "
        "replicas train on other rows than one device",
    ),
    # --- Issue 63's items 2, 5 and 6
    mutant(
        "generation_padding_left_as_the_end_token",
        PREPROCESS,
        "filler = (tokenizer.end_token_id + 1) % tokenizer.vocabulary_size()",
        "filler = tokenizer.pad_token_id",
        [END_IS_PAD],
        "#2: on a preset whose end token is its padding id, KerasHub's sampler finds the end "
        "token in the padding: GRPO samples empty completions, the export answers ''",
    ),
    mutant(
        "predict_casts_an_image_for_a_model_of_floats",
        RUNTIME,
        "            if like.dtype != np.uint8 or not pixels:",
        "            if not pixels:",
        [
            "tests/test_runtime.py::test_read_array_inputs_refuses_an_image_for_a_model_of_other_examples_than_pixels[floats]",
        ],
        "#20: a PNG given to a model of float examples: its 0-255 pixels cast and served, as "
        "though the model had been trained on them",
    ),
    mutant(
        "predict_serves_an_image_of_another_size",
        RUNTIME,
        "    if None not in (height, width) and tuple(image.shape[:2]) != (height, width):",
        "    if False:",
        [
            "tests/test_runtime.py::test_read_decoded_images_decodes_each_to_the_signatures_channels_at_its_own_size",
        ],
        "#20: an image of another size than a model that does not resize takes: a reshape's "
        "error, or pixels scrambled into the model's shape",
    ),
    mutant(
        "spaces_cache_blind_to_your_code",
        "dsl/environment.py",
        'sources = _module_sources(name.split(":")[0]) if target else {}',
        "sources = {}",
        [
            "tests/test_tooling.py::test_a_render_reads_the_spaces_of_your_environment_from_the_cache_until_its_code_changes",
        ],
        "#24: an environment of yours cached by its name alone: an edit to its module keeps the "
        "old spaces, and the networks are checked against an environment that is no more",
    ),
    mutant(
        "evaluate_data_of_another_shape_unchecked",
        "templates/partials/ways/supervised.jinja",
        '    check_inputs(model, validation_examples, args.data, "--data")',
        "    pass",
        [
            "tests/test_evaluate.py::test_an_npz_split_evaluates_a_held_out_file_and_predicts_image_files",
        ],
        "#20: evaluate --data with arrays of another shape: an error inside the step's trace, "
        "not one line naming --data and the file",
    ),
    mutant(
        "reward_function_error_raw",
        RUNTIME,
        "    except Exception as error:\n        # Your function's error",
        "    except ZeroDivisionError as error:\n        # Your function's error",
        [
            "tests/test_runtime.py::test_reward_scores_says_a_reward_functions_mistake_in_one_line",
            "tests/test_grpo.py::test_a_reward_function_that_raises_is_one_message_before_training",
        ],
        "#6: a reward function that raises at the pre-training check: a raw traceback, not "
        "one message naming training.reward_funcs, the function and its error",
    ),
    mutant(
        "lm_cut_records_counted_one_token_late",
        TEXT_RECORDS,
        "cut |= whole > room",
        "cut |= whole > room + 1",
        ["tests/test_hub.py::test_records_that_sequence_length_cuts_are_counted_before_sft_trains"],
        "#5: the records that sequence_length cuts miscounted: one that lost its last token "
        "is not said",
    ),
    mutant(
        "lm_record_without_its_response_trains",
        TEXT_RECORDS,
        "lost = np.flatnonzero((whole > room) & (prompts >= room))",
        "lost = np.flatnonzero((whole > room) & (prompts > room))",
        [f"{NO_RESPONSE_TOKEN}[sums_sft-response]", f"{NO_RESPONSE_TOKEN}[sums_dpo-chosen]"],
        "#5: a record whose prompt fills sequence_length trains: its response is cut whole, "
        "the record teaches the end token after a cut prompt",
    ),
    mutant(
        "grpo_prompt_without_room_trains",
        TEXT_RECORDS,
        "full = np.flatnonzero(prompts >= room)",
        "full = np.flatnonzero(prompts > room)",
        [f"{NO_RESPONSE_TOKEN}[sums_grpo-prompt]"],
        "#5: a GRPO prompt that fills sequence_length trains: its completions are empty",
    ),
    mutant(
        "tfds_no_lookup_first",
        "templates/partials/data/tfds.jinja",
        "        tfds_reachable(tfds.builder(",
        "        (tfds.builder(",
        [TFDS_OFFLINE],
        "Offline, a TFDS dataset not prepared goes to TFDS's downloader: 3 minutes of retries "
        "and 20 'Retrying' warnings, some after the message (issue 63 #19)",
    ),
    mutant(
        "tfds_hosts_resolving_or_not",
        RUNTIME,
        "    if len(failures) < len(hosts):",
        "    if True:",
        [TFDS_OFFLINE_UNIT, TFDS_OFFLINE],
        "tfds_reachable never refusing: offline, TFDS retries each file for minutes",
    ),
    mutant(
        "tfds_prepared_looked_up",
        RUNTIME,
        "    if builder.data_path.exists():  # as download_and_prepare tells it reuses the dataset",
        "    if False:",
        [
            "tests/test_runtime.py::test_a_prepared_tfds_dataset_is_read_without_a_lookup",
            "tests/test_evaluate.py::test_evaluate_on_another_tfds_split_and_predict_image_files",
        ],
        "A TFDS dataset prepared in its data folder refused offline, as if it were to be "
        "downloaded",
    ),
    mutant(
        "tfds_lookup_behind_a_proxy",
        RUNTIME,
        '    if "https" in proxies or "all" in proxies:',
        "    if False:",
        [
            "tests/test_runtime.py::"
            "test_tfds_downloads_as_it_does_behind_a_proxy_or_without_checksums"
        ],
        "Behind an https proxy (which resolves the names, where the local resolver may not) a "
        "TFDS download refused",
    ),
    mutant(
        "tfds_lookup_without_timeout",
        RUNTIME,
        "        thread.join(max(0.0, deadline - time.monotonic()))",
        "        thread.join()",
        ["tests/test_runtime.py::test_a_name_resolver_that_does_not_answer_is_given_up_on_in_time"],
        "A name resolver that does not answer holds the script for as long as it does not",
    ),
]


# --- The runner ---------------------------------------------------------------------------------


def occurrences(m: Mutant, root: Path = ROOT) -> int:
    path = root / m.file
    return path.read_text().count(m.find) if path.is_file() else 0


def repository_files(root: Path) -> list[str]:
    """The working tree's files that git tracks or does not ignore."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=root, capture_output=True, check=True,
    ).stdout.decode()  # fmt: skip
    return [name for name in listed.split("\0") if name and (root / name).is_file()]


def scratch_copy(root: Path, into: Path) -> Path:
    """A copy of the repository at into/loopgen: with `into` first on PYTHONPATH, `import
    loopgen` is the copy (before the editable install's finder)."""
    copy = into / "loopgen"
    for name in repository_files(root):
        target = copy / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(root / name, target)
    return copy


def run_tests(copy: Path, tests: list[str], work: Path, timeout: float) -> tuple[int | None, str]:
    """pytest -x on `tests` in the copy; (exit status or None if it timed out, output)."""
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(copy.parent), os.environ.get("PYTHONPATH", "")]),
        # black's and the spaces' caches of the mutated renders stay in the scratch folder.
        "XDG_CACHE_HOME": str(work / "cache"),
        # pytest cuts the short summary of a failure at the width of the terminal.
        "COLUMNS": "400",
        "LOOPGEN_TESTS_AS_GIVEN": "1",  # conftest.py: in the listed order, not longest first
    }
    command = [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider",
               "--basetemp", str(work / "pytest"), "-o", "addopts=", "-rf", *tests]  # fmt: skip
    # In a session of its own: a run past its time is killed with the servers it started.
    proc = subprocess.Popen(
        command, cwd=copy, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        start_new_session=True,
    )  # fmt: skip
    try:
        output, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        output, _ = proc.communicate()
        return None, output
    return proc.returncode, output


def failure_line(output: str) -> str:
    """pytest's short summary of the first failure: `FAILED node - message`."""
    for line in output.splitlines():
        if line.startswith(("FAILED ", "ERROR ")):
            return line[:300]
    return output.strip().splitlines()[-1][:300] if output.strip() else ""


def judge(m: Mutant, copy: Path, work: Path, timeout: float) -> dict:
    started = time.monotonic()
    result = {"id": m.id, "file": m.file, "tests": list(m.tests)}
    count = occurrences(m, copy)
    if count != 1:
        state = "not found" if count == 0 else f"found {count} times"
        return {**result, "outcome": "error", "detail": f"its text is {state} in {m.file}",
                "seconds": 0.0}  # fmt: skip
    path = copy / m.file
    original = path.read_text()
    path.write_text(original.replace(m.find, m.replace, 1))
    try:
        code, output = run_tests(copy, list(m.tests), work, timeout)
    finally:
        path.write_text(original)
    seconds = round(time.monotonic() - started, 1)
    if code == 1:
        outcome, detail = "killed", failure_line(output)
    elif code == 0:
        outcome, detail = "survived", "every test passed"
    elif code is None:
        outcome, detail = "error", f"its tests took over {timeout:.0f} s"
    else:  # 2 interrupted (a collection error), 4 usage (a test not found), 5 none collected
        outcome, detail = "error", f"pytest exited {code}: {failure_line(output)}"
    return {**result, "outcome": outcome, "detail": detail, "seconds": seconds}


def selected(only: list[str]) -> list[Mutant]:
    if not only:
        return list(MUTANTS)
    chosen = [m for m in MUTANTS if any(word in m.id for word in only)]
    if not chosen:
        raise SystemExit(f"no mutant id contains any of {only}")
    return chosen


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tests.mutants", description=__doc__.split("\n\n")[0]
    )
    add = parser.add_argument
    add("--only", nargs="+", default=[], metavar="ID", help="mutants whose id contains one")
    add("--list", action="store_true", help="list the mutants and their tests")
    add("--baseline", action="store_true", help="run their tests on the unmutated copy")
    add("--jobs", type=int, default=1, help="mutants at once, each in a copy of its own")
    add("--timeout", type=float, default=1800, help="seconds a mutant's tests may take")
    add("--report", type=Path, help="write the results as JSON here")
    args = parser.parse_args(argv)
    mutants = selected(args.only)
    if args.list:
        for m in mutants:
            print(f"{m.id}  ({m.file}): {m.why}")
            for test in m.tests:
                print(f"    {test}")
        print(f"{len(mutants)} mutants")
        return 0

    with tempfile.TemporaryDirectory(prefix="loopgen-mutants-") as scratch:
        folders = [Path(scratch) / f"job{i}" for i in range(max(1, args.jobs))]
        copies = [scratch_copy(ROOT, folder) for folder in folders]
        started = time.monotonic()
        if args.baseline:
            tests = sorted({test for m in mutants for test in m.tests})
            print(f"The {len(tests)} tests of {len(mutants)} mutants, unmutated:", flush=True)
            code, output = run_tests(copies[0], tests, folders[0], args.timeout * 4)
            print(output[-3000:])
            return 0 if code == 0 else 1

        idle = list(zip(copies, folders, strict=True))
        lock = threading.Lock()
        results: list[dict] = []

        def one(m: Mutant) -> dict:
            with lock:
                copy, folder = idle.pop()
            try:
                result = judge(m, copy, folder, args.timeout)
            finally:
                with lock:
                    idle.append((copy, folder))
            with lock:
                done = len(results) + 1
                print(f"[{done}/{len(mutants)}] {result['outcome']:8} {m.id} "
                      f"({result['seconds']} s): {result['detail']}", flush=True)  # fmt: skip
                results.append(result)
            return result

        with ThreadPoolExecutor(len(copies)) as pool:
            ordered = list(pool.map(one, mutants))
        minutes = (time.monotonic() - started) / 60

    counts = {o: sum(r["outcome"] == o for r in ordered) for o in ("killed", "survived", "error")}
    print(
        f"\n{len(ordered)} mutants in {minutes:.1f} minutes ({args.jobs} at a time): "
        f"{counts['killed']} killed, {counts['survived']} survived, {counts['error']} errors"
    )
    for r in ordered:
        if r["outcome"] != "killed":
            print(f"  {r['outcome'].upper()}: {r['id']} ({r['file']}): {r['detail']}")
    if args.report:
        summary = {"minutes": round(minutes, 1), "jobs": args.jobs, **counts, "mutants": ordered}
        args.report.write_text(json.dumps(summary, indent=2) + "\n")
    return 0 if counts["killed"] == len(ordered) else 1


if __name__ == "__main__":
    sys.exit(main())
