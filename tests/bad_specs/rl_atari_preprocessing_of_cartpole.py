# Mistake: Atari's preprocessing round CartPole
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
    name="cartpole_dqn",
    data=Environment(id="CartPole-v1", num_envs=1, wrappers=[AtariPreprocessing()]),
    model=Sequential(input_shape=(4,), layers=[Dense(units=64, activation="relu"), Dense(units=2)]),
    training=DQN(),
    optimizer=Adam(learning_rate=1e-4),
    loop=Loop(steps=100_000),
)
