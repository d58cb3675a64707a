"""PPO in an environment of your own: walk a corridor of 8 cells to its far end.

The environment is Python code of yours, `envs/corridor.py` beside this spec: `make(length,
render_mode)` returns a `gymnasium.Env` (loopgen reads its observation and action spaces from
one it makes when it validates the spec, and checks the networks against them). The script
imports the module from beside itself: copy the `envs` folder next to it, or put it on
PYTHONPATH. Each copy of the environment is seeded by the run's seed and its index, so a
resumed run continues the same episodes.

An episode starts in the corridor's first half and ends at the last cell (a reward of 1; each
other step costs 0.01), or is cut after 32 steps (a truncation: bootstrapped from the value of
where it stood). A return of 0.94 to 0.97 is the shortest walk.
"""

from loopgen.dsl import (
    PPO,
    Adam,
    Checkpoint,
    Dense,
    Environment,
    Loop,
    Sequential,
    Spec,
)

spec = Spec(
    name="corridor_ppo",
    description="Walk to the end of a corridor, an environment of your own, with PPO.",
    seed=3,
    data=Environment(
        target="envs.corridor:make",
        kwargs={"length": 8},
        num_envs=4,
        max_episode_steps=32,
    ),
    model=Sequential(
        input_shape=(8,),
        layers=[
            Dense(units=32, activation="tanh"),
            Dense(units=2, name="logits"),
        ],
    ),
    training=PPO(
        value=Sequential(
            input_shape=(8,),
            layers=[
                Dense(units=32, activation="tanh"),
                Dense(units=1, name="value"),
            ],
        ),
        rollout_steps=32,
        minibatches=2,
        update_epochs=4,
    ),
    optimizer=Adam(learning_rate=3e-3),
    loop=Loop(steps=16_384, log_every_steps=1024),
    checkpoint=Checkpoint(every_steps=4096),
)
