"""PPO on Atari's Breakout from its pixels, CleanRL's ppo_atari.py settings in TensorFlow.

ALE's Breakout-v5 (ale-py: `pip install "loopgen[atari]"`) made to show every frame
(frameskip=1), then Gymnasium's AtariPreprocessing (up to 30 no-ops at a reset, each action
repeated 4 frames, 84 x 84 grayscale) and FrameStackObservation(4): the policy sees the last 4
frames, uint8 pixels of shape (4, 84, 84), which the rollouts keep as bytes and the networks
rescale. Both networks are the Nature CNN (Mnih et al., 2015): frames last (TensorFlow's
convolutions on a CPU take channels last), three convolutions, 512 units. Eight games are
stepped together, 128 steps each per update, 4 epochs of 4 minibatches, clip 0.1, as CleanRL.
What differs: v5's sticky actions (a quarter of the time the game repeats the last action,
Machado et al.'s protocol) where CleanRL's v4 has none, no reward clipping, a life lost does not
end the episode, and the policy and value are separate networks where CleanRL shares the
convolutions. Learning Breakout takes millions of steps: a GPU's work, not a laptop's.
"""

from loopgen.dsl import (
    PPO,
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


def nature_cnn(outputs: int, name: str) -> Sequential:
    """The DQN paper's network on 4 stacked 84 x 84 frames, ending in `outputs` units."""
    return Sequential(
        input_shape=(4, 84, 84),
        layers=[
            Rescaling(scale=1 / 255),  # uint8 pixels to floats in [0, 1]
            Permute(dims=(2, 3, 1)),  # the 4 frames last, as channels
            Conv2D(filters=32, kernel_size=8, strides=4, activation="relu"),
            Conv2D(filters=64, kernel_size=4, strides=2, activation="relu"),
            Conv2D(filters=64, kernel_size=3, strides=1, activation="relu"),
            Flatten(),
            Dense(units=512, activation="relu"),
            Dense(units=outputs, name=name),
        ],
    )


spec = Spec(
    name="breakout_ppo",
    description="Play Breakout from its pixels with PPO.",
    seed=1,
    data=Environment(
        id="ALE/Breakout-v5",
        kwargs={"frameskip": 1},  # AtariPreprocessing skips the frames
        num_envs=8,
        wrappers=[AtariPreprocessing(), FrameStackObservation(4)],
    ),
    model=nature_cnn(4, "logits"),
    training=PPO(
        value=nature_cnn(1, "value"),
        rollout_steps=128,
        gamma=0.99,
        gae_lambda=0.95,
        minibatches=4,
        update_epochs=4,
        clip=0.1,
        entropy_coef=0.01,
        value_coef=0.5,
        max_grad_norm=0.5,
    ),
    optimizer=Adam(learning_rate=2.5e-4, epsilon=1e-5),
    loop=Loop(steps=10_000_000, log_every_steps=10_240),
    checkpoint=Checkpoint(every_steps=102_400),
)
