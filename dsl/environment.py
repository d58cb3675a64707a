"""An environment as the data source of reinforcement learning: the model makes its own data by
acting in a Gymnasium environment. Its spaces are read from the environment itself (by making
one, at validation), so that the spec's networks are checked against them."""

import hashlib
import importlib
import importlib.util
import json
import os
import sys
from dataclasses import asdict, dataclass
from functools import cache
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, Field, model_validator

from . import cache as disk_cache
from .base import PositiveInt, StrictModel, _check_identifier, check_target

NUM_ENVS_MAX = 4096
"""More sub-environments than this in one process spend their time in Python's loop."""


class Environment(StrictModel):
    """A Gymnasium environment, stepped `num_envs` copies at a time (a synchronous vector
    environment): from Gymnasium's registry by `id` (classic control needs no extra; Box2D and
    Atari need their packages), or made by a function of yours, `target="my_envs:make"`, that
    returns a `gymnasium.Env`. Install Gymnasium with `pip install "loopgen[rl]"`."""

    kind: Literal["environment"] = "environment"
    id: str | None = None
    """A Gymnasium registry id, e.g. `"CartPole-v1"` or `"Pendulum-v1"`."""
    target: Annotated[str, AfterValidator(check_target)] | None = None
    """`"module:function"` returning a `gymnasium.Env` of yours (called with `kwargs`), instead
    of `id`. The module must be importable where the script runs (beside it, or on
    PYTHONPATH), and where `loopgen` validates or renders the spec, which makes one environment
    to read the spaces (beside the spec file, or in the current directory)."""
    kwargs: dict[str, bool | int | float | str] = {}
    """Keyword arguments of `gymnasium.make(id, ...)` (or of your function)."""
    num_envs: Annotated[int, Field(gt=0, le=NUM_ENVS_MAX)] = 4
    """Copies of the environment stepped together: each rollout step acts in all of them with
    one call of the policy."""
    max_episode_steps: PositiveInt | None = None
    """End (truncate) an episode after this many steps; None keeps the registry's limit (your
    function's environment: none)."""

    @model_validator(mode="after")
    def _id_or_target(self) -> "Environment":
        if (self.id is None) == (self.target is None):
            raise ValueError(
                "set exactly one of id (a Gymnasium registry id, e.g. 'CartPole-v1') and target "
                "('module:function' returning a gymnasium.Env)"
            )
        return self

    def spaces(self) -> "Spaces":
        """The observation and action spaces, read from one environment made as the script
        makes it. Raises ValueError naming the field when that fails."""
        return read_spaces(self.id, self.target, tuple(sorted(self.kwargs.items())))


@dataclass(frozen=True)
class Spaces:
    observation_shape: tuple[int, ...]
    """A Box observation's shape; () for a Dict's (see `named`)."""
    observation_dtype: str
    """A Box observation's dtype; "" for a Dict's (the script casts every part to float32)."""
    discrete: bool
    """Discrete actions (an index) or continuous ones (a Box of floats)."""
    actions: int
    """Discrete: how many actions; continuous: the width of the action vector."""
    action_low: tuple[float, ...] = ()
    action_high: tuple[float, ...] = ()
    named: tuple[tuple[str, tuple[int, ...]], ...] = ()
    """A Dict observation's parts, (name, shape) in the Dict's order: each feeds the model's
    input of that name."""


@cache
def read_spaces(env_id: str | None, target: str | None, kwargs: tuple) -> Spaces:
    """The spaces of a registry environment are kept in loopgen's cache, by id, kwargs and the
    installed Gymnasium: importing Gymnasium and making the environment would cost each
    render of the spec 0.2 s. A function of yours is called every time (its code may change)."""
    path = _cache_path(env_id, kwargs) if env_id else None
    if path and os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            saved = json.load(f)
        saved["named"] = [(name, tuple(shape)) for name, shape in saved.get("named", [])]
        return Spaces(**{k: tuple(v) if isinstance(v, list) else v for k, v in saved.items()})
    spaces = _make_and_read(env_id, target, kwargs)
    if path:
        disk_cache.write(path, json.dumps(asdict(spaces)))
    return spaces


def _cache_path(env_id: str, kwargs: tuple) -> str | None:
    """Where the spaces of `env_id` made with `kwargs` are kept; None without Gymnasium (its
    import then says so) or a cache."""
    found = importlib.util.find_spec("gymnasium")
    folder = disk_cache.folder("spaces")
    if found is None or found.origin is None or folder is None:
        return None
    installed = f"{found.origin} {os.stat(found.origin).st_mtime_ns}"
    key = json.dumps([env_id, list(kwargs), installed])
    return os.path.join(folder, hashlib.sha256(key.encode()).hexdigest()[:32] + ".json")


def _make_and_read(env_id: str | None, target: str | None, kwargs: tuple) -> Spaces:
    field = "data.id" if env_id else "data.target"
    try:
        import gymnasium as gym
    except ImportError:
        raise ValueError(
            f"{field}: Gymnasium is not installed; install it with pip install 'loopgen[rl]' "
            "(or pip install gymnasium)"
        ) from None
    try:
        if env_id is not None:
            env = gym.make(env_id, **dict(kwargs))
        else:
            module, function = target.split(":")
            sys.path.append("")  # the current directory, after the spec's folder (loader.py)
            try:
                env = getattr(importlib.import_module(module), function)(**dict(kwargs))
            finally:
                if sys.path[-1:] == [""]:  # the one appended, not the interpreter's own first
                    sys.path.pop()
    except gym.error.Error as error:  # unknown id, wrong version, missing extra package
        raise ValueError(f"{field}={env_id or target!r}: {error}") from None
    except Exception as error:  # a module that does not import, a function that fails
        raise ValueError(
            f"{field}={env_id or target!r}: making the environment failed "
            f"({type(error).__name__}: {error})"
        ) from None
    try:
        return _spaces(env, field, gym)
    finally:
        env.close()


def _input_name(name: object) -> bool:
    """Whether a Graph's input may take `name` (a Dict part feeds the input of its name)."""
    from .rules.graph import GRAPH_NAMES

    try:
        return isinstance(name, str) and _check_identifier(name) not in GRAPH_NAMES
    except ValueError:
        return False


def _spaces(env: Any, field: str, gym: Any) -> Spaces:
    observation, action = env.observation_space, env.action_space
    if isinstance(observation, gym.spaces.Dict) and observation.spaces:
        parts = observation.spaces.items()
        if not all(isinstance(part, gym.spaces.Box) for _, part in parts):
            raise ValueError(
                f"{field}: the environment's observations are {observation}; each part of a "
                "Dict observation must be a Box (an array): flatten the others with a wrapper "
                "in your target function"
            )
        for name, _ in parts:
            if not _input_name(name):
                raise ValueError(
                    f"{field}: the environment's Dict observation has a part named {name!r}, "
                    "which cannot name a model input (a Python name the script does not use): "
                    "rename the parts in your target function "
                    "(gymnasium.wrappers.TransformObservation)"
                )
        found = dict(
            observation_shape=(),
            observation_dtype="",
            named=tuple((name, tuple(int(n) for n in part.shape)) for name, part in parts),
        )
    elif not isinstance(observation, gym.spaces.Box):
        raise ValueError(
            f"{field}: the environment's observations are {observation}; a Box (an array) or a "
            "Dict of them is what the policy takes: flatten others with a wrapper in your "
            "target function"
        )
    else:
        found = dict(
            observation_shape=tuple(int(n) for n in observation.shape),
            observation_dtype=str(observation.dtype),
        )
    if isinstance(action, gym.spaces.Discrete):
        return Spaces(**found, discrete=True, actions=int(action.n))
    if isinstance(action, gym.spaces.Box) and len(action.shape) == 1:
        return Spaces(
            **found,
            discrete=False,
            actions=int(action.shape[0]),
            action_low=tuple(float(v) for v in action.low),
            action_high=tuple(float(v) for v in action.high),
        )
    raise ValueError(
        f"{field}: the environment's actions are {action}; Discrete and one-dimensional Box "
        "actions are supported"
    )
