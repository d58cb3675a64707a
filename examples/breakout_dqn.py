"""DQN on Atari's Breakout from its pixels, with the RL Baselines3 Zoo's Atari settings.

ALE's Breakout-v5 (ale-py: `pip install "loopgen[atari]"`) made to show every frame
(frameskip=1), then Gymnasium's AtariPreprocessing (up to 30 no-ops at a reset, each action
repeated 4 frames, 84 x 84 grayscale) and FrameStackObservation(4): the Q-network sees the last
4 frames, uint8 pixels of shape (4, 84, 84), which the replay buffer keeps as bytes and the
network rescales: the Nature CNN (Mnih et al., 2015). The Zoo's settings (hyperparams/dqn.yml,
atari): a buffer of 100,000 transitions (5.3 GiB here: `loopgen validate` says so, and refuses
a buffer that would not fit the machine; CleanRL's dqn_atari.py keeps a million, 53 GiB without
its memory-saving buffer), learning from step 100,000, a gradient step on 32 transitions every
4 steps, the target network copied every 1,000 steps, epsilon from 1 to 0.01 over the first
tenth of training. What differs: v5's sticky actions, no reward clipping, double DQN and the
Huber loss (DQN's defaults here; the Zoo's DQN is plain DQN with the Huber loss).
"""

from loopgen.dsl import (
    DQN,
    Adam,
    AtariPreprocessing,
    Checkpoint,
    Conv2D,
    Dense,
    Environment,
    Flatten,
    FrameStackObservation,
    Loop,
    Permute,
    Rescaling,
    Sequential,
    Spec,
)

spec = Spec(
    name="breakout_dqn",
    description="Play Breakout from its pixels with DQN.",
    seed=1,
    data=Environment(
        id="ALE/Breakout-v5",
        kwargs={"frameskip": 1},  # AtariPreprocessing skips the frames
        num_envs=1,
        wrappers=[AtariPreprocessing(), FrameStackObservation(4)],
    ),
    model=Sequential(
        input_shape=(4, 84, 84),
        layers=[
            Rescaling(scale=1 / 255),  # uint8 pixels to floats in [0, 1]
            Permute(dims=(2, 3, 1)),  # the 4 frames last, as channels
            Conv2D(filters=32, kernel_size=8, strides=4, activation="relu"),
            Conv2D(filters=64, kernel_size=4, strides=2, activation="relu"),
            Conv2D(filters=64, kernel_size=3, strides=1, activation="relu"),
            Flatten(),
            Dense(units=512, activation="relu"),
            Dense(units=4, name="q_values"),
        ],
    ),
    training=DQN(
        buffer_size=100_000,
        batch_size=32,
        gamma=0.99,
        learning_starts=100_000,
        train_every=4,
        target_update_every=1_000,
        start_epsilon=1.0,
        end_epsilon=0.01,
        exploration_fraction=0.1,
    ),
    optimizer=Adam(learning_rate=1e-4),
    loop=Loop(steps=10_000_000, log_every_steps=10_000),
    checkpoint=Checkpoint(every_steps=500_000, keep=2),
)
