"""PPO in an environment of your own: walk a corridor of 8 cells to a goal cell.

The environment is Python code of yours, `envs/corridor.py` beside this spec: `make(length,
render_mode)` returns a `gymnasium.Env` (loopgen reads its observation and action spaces from
one it makes when it validates the spec, and checks the networks against them). The script
imports the module from beside itself: copy the `envs` folder next to it, or put it on
PYTHONPATH. Each copy of the environment is seeded by the run's seed and its index, so a
resumed run continues the same episodes.

Its observation is a Dict of two parts, the walker's cell and the goal's (each one-hot): the
policy and the value network are Graphs whose two inputs take the parts of those names. An
episode puts the walker and the goal in two random cells and ends at the goal (a reward of 1;
each other step costs 0.01), or is cut after 32 steps (a truncation: bootstrapped from the
value of where it stood). A return of 0.94 to 1 is a shortest walk.
"""

from loopgen.dsl import (
    PPO,
    Adam,
    Checkpoint,
    Concatenate,
    Dense,
    Environment,
    Graph,
    Input,
    Loop,
    Node,
    Spec,
)


def network(output: str, units: int) -> Graph:
    """The walker's cell and the goal's, side by side, through one hidden layer."""
    return Graph(
        inputs={"position": Input(shape=(8,)), "goal": Input(shape=(8,))},
        nodes=[
            Node(name="cells", layer=Concatenate(), inputs=["position", "goal"]),
            Node(name="hidden", layer=Dense(units=64, activation="tanh"), inputs="cells"),
            Node(name=output, layer=Dense(units=units), inputs="hidden"),
        ],
        outputs=output,
    )


spec = Spec(
    name="corridor_ppo",
    description="Walk to a goal in a corridor, an environment of your own, with PPO.",
    seed=3,
    data=Environment(
        target="envs.corridor:make",
        kwargs={"length": 8},
        num_envs=4,
        max_episode_steps=32,
    ),
    model=network("logits", units=2),
    training=PPO(
        value=network("value", units=1),
        rollout_steps=32,
        minibatches=2,
        update_epochs=4,
    ),
    optimizer=Adam(learning_rate=3e-3),
    loop=Loop(steps=16_384, log_every_steps=1024),
    checkpoint=Checkpoint(every_steps=4096),
)
