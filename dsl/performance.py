"""The `performance` section: how the script trades Python overhead, compilation and precision
for speed. The defaults are measured: `python -m bench` prints the numbers behind them."""

from typing import Literal

from .base import PositiveInt, StrictModel


class Performance(StrictModel):
    """Speed options of the generated script. None of them changes what is trained: the steps,
    their order and every cadence stay the same (XLA and mixed precision round differently)."""

    steps_per_loop: PositiveInt = 50
    """Train steps per call of the compiled loop function (a `tf.range` loop over the one data
    iterator, like Keras's `steps_per_execution` and Orbit's `steps_per_loop`): Python runs once
    per call instead of once per step. A call also ends at the next log point, step checkpoint
    and epoch end, so every cadence happens at its exact step whatever this is. Default 50,
    measured on a 2-core CPU without XLA: the MLP example trained 29k samples/s at 1 step per
    call, 65k at 10, 68k at 50 (no gain beyond); conv nets, bound by their kernels, neither
    gain nor lose."""
    xla: Literal["auto", "on", "off"] = "auto"
    """XLA-compile the per-batch step (`tf.function(jit_compile=True)`). `auto`: on for
    single-device models of dense layers without Dropout (the MLP example: 75k samples/s
    against 68k uncompiled, at 50 steps per call), off for convolutional models (the VGG
    example: 290 against 323), imported models, gradient accumulation (its micro-batches
    vary in size), Dropout (XLA's random numbers made the
    Fashion-MNIST MLP 5x slower on CPU) and the distributed variants (their step all-reduces
    gradients, which loopgen does not compile).
    Of the ways that act, DQN on one device: `auto` compiles its greedy call and train step
    for a Q-network of dense layers (CartPole's: 0.031 ms of CPU a greedy call against 0.086,
    and the run at 1.27x Stable-Baselines3's steps per CPU-second, from 0.98x; the RL speed
    page); the other ways that act are not compiled.
    XLA rounds differently: within 1e-5 of the uncompiled step after an epoch (tested). XLA
    cannot compile every op: `tf.print` in the step needs `off`."""
    precision: Literal["float32", "mixed_float16", "mixed_bfloat16"] = "float32"
    """Compute dtype. `mixed_float16` (GPUs): layers compute in float16, variables stay
    float32, and the loss is scaled by a `keras.optimizers.LossScaleOptimizer` so that small
    gradients do not underflow. `mixed_bfloat16` (TPUs, recent CPUs): bfloat16 has float32's
    range, so no loss scaling. The model's output is cast back to float32 either way (an
    Imported model's builder must do that itself: the script says so where it calls it)."""
