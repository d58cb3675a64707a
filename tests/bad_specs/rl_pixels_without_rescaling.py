# Mistake: a CNN on Breakout's uint8 frames without Rescaling first
from loopgen.dsl import (
    DQN, PPO, Adam, AtariPreprocessing, Conv2D, Dense, Environment, Flatten,
    FrameStackObservation, Loop, MultiWorker, Permute, Rescaling, Sequential, Spec,
)


def cnn(outputs, rescale=True):
    first = [Rescaling(scale=1 / 255)] if rescale else []
    return Sequential(
        input_shape=(4, 84, 84),
        layers=[*first, Permute(dims=(2, 3, 1)), Conv2D(filters=16, kernel_size=8, strides=4),
                Flatten(), Dense(units=outputs)],
    )


spec = Spec(
    name="breakout_dqn",
    data=Environment(id="ALE/Breakout-v5", kwargs={"frameskip": 1}, num_envs=1,
                     wrappers=[AtariPreprocessing(), FrameStackObservation(4)]),
    model=cnn(4, rescale=False),
    training=DQN(buffer_size=10_000, batch_size=32, learning_starts=1_000),
    optimizer=Adam(learning_rate=1e-4),
    loop=Loop(steps=100_000),
)
