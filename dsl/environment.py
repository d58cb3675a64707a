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
from importlib.machinery import PathFinder
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal

from pydantic import AfterValidator, Field, model_validator

from . import cache as disk_cache
from .base import PositiveInt, StrictModel, _check_identifier, check_target

SOURCES_MAX = 200
"""A target's package of more files than this is read each render, not hashed for the cache."""

NUM_ENVS_MAX = 4096
"""More sub-environments than this in one process spend their time in Python's loop."""


class _Wrapper(StrictModel):
    def arguments(self) -> dict[str, Any]:
        """The wrapper's arguments that are not Gymnasium's defaults, as the script passes them."""
        return self.model_dump(exclude_defaults=True, exclude={"kind"})


class AtariPreprocessing(_Wrapper):
    """Gymnasium's `gymnasium.wrappers.AtariPreprocessing` (Machado et al., 2018), the
    preprocessing of DQN's Atari games: up to `noop_max` no-op actions at each reset, each
    action repeated `frame_skip` frames (the last two max-pooled), the screen resized to
    `screen_size` and turned grayscale. The observations stay uint8 pixels. The game must not
    skip frames itself: make ALE's v5 games with `kwargs={"frameskip": 1}`. Needs
    `pip install "loopgen[atari]"` (ale-py, whose ROMs ship with it, and OpenCV)."""

    kind: Literal["atari_preprocessing"] = "atari_preprocessing"
    gym_class: ClassVar[str] = "AtariPreprocessing"
    noop_max: Annotated[int, Field(ge=0)] = 30
    """At most this many no-op actions at the start of an episode (a random number of them):
    the episodes do not all start alike."""
    frame_skip: PositiveInt = 4
    """Frames each action is repeated for; the observation max-pools the last two (some games
    draw their sprites every other frame)."""
    screen_size: PositiveInt = 84
    """The screen is resized to `screen_size` x `screen_size` pixels."""
    terminal_on_life_loss: bool = False
    """End (terminate) an episode when a life is lost, as the DQN paper did; the Atari
    benchmarks since (Machado et al.) keep the whole game."""
    grayscale_obs: bool = True
    """Grayscale frames (one channel); False: RGB."""
    grayscale_newaxis: bool = False
    """Grayscale frames of shape (size, size, 1) instead of (size, size)."""


class FrameStackObservation(_Wrapper):
    """Gymnasium's `gymnasium.wrappers.FrameStackObservation`: the observation is the last
    `stack_size` frames, stacked along a new first axis (`(4, 84, 84)` from frames of
    `(84, 84)`), so that a policy of one observation sees motion. Images only."""

    kind: Literal["frame_stack_observation"] = "frame_stack_observation"
    gym_class: ClassVar[str] = "FrameStackObservation"
    stack_size: Annotated[int, Field(ge=2)]
    """How many frames: the newest last."""
    padding_type: Literal["reset", "zero"] = "reset"
    """What fills the stack at an episode's start: copies of its first frame ("reset"), or
    zeros."""

    def __init__(self, stack_size: int | None = None, /, **data: Any) -> None:
        # FrameStackObservation(4), as Gymnasium's FrameStackObservation(env, 4) reads.
        if stack_size is not None:
            data["stack_size"] = stack_size
        super().__init__(**data)


Wrapper = Annotated[AtariPreprocessing | FrameStackObservation, Field(discriminator="kind")]
"""A Gymnasium wrapper the script puts round each environment, by Gymnasium's class name."""


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
    wrappers: list[Wrapper] = []
    """Gymnasium's wrappers round each environment, innermost first, e.g. Atari's
    `[AtariPreprocessing(), FrameStackObservation(4)]`: the script applies them as Gymnasium
    does, and the networks take the observations they give."""

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
        wrappers = tuple(json.dumps(wrapper.model_dump(mode="json")) for wrapper in self.wrappers)
        return read_spaces(self.id, self.target, tuple(sorted(self.kwargs.items())), wrappers)


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
    atari: bool = False
    """An Atari game of ALE's (ale_py): the script registers ALE's games with Gymnasium, and
    checkpoints each emulator's state, which pickling an ALE environment leaves out."""

    @property
    def pixels(self) -> bool:
        """uint8 observations (frames, or an Atari's RAM): kept as bytes, rescaled by the
        networks."""
        return self.observation_dtype == "uint8"


@cache
def read_spaces(
    env_id: str | None, target: str | None, kwargs: tuple, wrappers: tuple = ()
) -> Spaces:
    """The spaces are kept in loopgen's cache, by id (or target), kwargs, wrappers and the
    installed Gymnasium, and for a function of yours by the source of its module's files too:
    importing Gymnasium and making the environment would cost each render of the spec 0.2 s.
    Edit a file of your module's package and the next render makes the environment again."""
    path = _cache_path(env_id or target, (*kwargs, *wrappers), target is not None)
    if path and os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            saved = json.load(f)
        saved["named"] = [(name, tuple(shape)) for name, shape in saved.get("named", [])]
        return Spaces(**{k: tuple(v) if isinstance(v, list) else v for k, v in saved.items()})
    spaces = _make_and_read(env_id, target, kwargs, wrappers)
    if path:
        disk_cache.write(path, json.dumps(asdict(spaces)))
    return spaces


def _cache_path(name: str, kwargs: tuple, target: bool = False) -> str | None:
    """Where the spaces of `name` (a registry id, or a target's "module:function") made with
    `kwargs` are kept; None without Gymnasium (its import then says so), a cache, or, for a
    target, its module found where the import would find it."""
    found = importlib.util.find_spec("gymnasium")
    folder = disk_cache.folder("spaces")
    if found is None or found.origin is None or folder is None:
        return None
    installed = f"{found.origin} {os.stat(found.origin).st_mtime_ns}"
    sources = _module_sources(name.split(":")[0]) if target else {}
    if sources is None:
        return None
    key = json.dumps([name, list(kwargs), installed, sources])
    return os.path.join(folder, hashlib.sha256(key.encode()).hexdigest()[:32] + ".json")


def _module_sources(module: str) -> dict[str, str] | None:
    """The sha256 of each Python file of the top-level package (or the module) that `module`
    is imported from, found as _make_and_read's import finds it (sys.path, then the current
    directory) without importing it; None where it is not found on the path (the import then
    says why)."""
    top = module.split(".")[0]
    if top in sys.modules or top in sys.builtin_module_names:
        return None  # imported already, or not from a file: made again each time
    found = PathFinder.find_spec(top, [*sys.path, ""])
    if found is None or (found.origin is None and not found.submodule_search_locations):
        return None
    if found.submodule_search_locations:  # a package: all of its files
        files = sorted(
            os.path.join(folder, name)
            for root in found.submodule_search_locations
            for folder, _, names in os.walk(root)
            for name in names
            if name.endswith(".py")
        )
    else:
        files = [found.origin]
    if len(files) > SOURCES_MAX:
        return None  # an installed library's, say: made again each time
    try:
        return {
            os.path.abspath(path): hashlib.sha256(Path(path).read_bytes()).hexdigest()
            for path in files
        }
    except OSError:
        return None


def _make_and_read(
    env_id: str | None, target: str | None, kwargs: tuple, wrappers: tuple = ()
) -> Spaces:
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
            _register_atari(env_id, gym)
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
        env = _wrapped(env, [json.loads(wrapper) for wrapper in wrappers], field, gym)
        return _spaces(env, field, gym)
    finally:
        env.close()


def _register_atari(env_id: str, gym: Any) -> None:
    """ALE's games (ALE/Breakout-v5, ...) are in Gymnasium's registry once ale_py registers
    them, as the script does."""
    if env_id in gym.registry or importlib.util.find_spec("ale_py") is None:
        return
    import ale_py

    # Without its banner on stderr, where loopgen's own messages go.
    ale_py.ALEInterface.setLoggerMode(ale_py.LoggerMode.Error)
    gym.register_envs(ale_py)


def _wrapped(env: Any, wrappers: list[dict], field: str, gym: Any) -> Any:
    """`env` inside `wrappers` (data.wrappers, innermost first), as the script wraps it; raises
    ValueError naming the wrapper that cannot wrap it."""
    for i, wrapper in enumerate(wrappers):
        kind = wrapper.pop("kind")
        here = f"data.wrappers[{i}]"
        observation = env.observation_space
        if kind == "frame_stack_observation":
            if not isinstance(observation, gym.spaces.Box) or len(observation.shape) < 2:
                raise ValueError(
                    f"{here}: FrameStackObservation stacks frames (images, e.g. "
                    "AtariPreprocessing's screens), but the observations it would stack are "
                    f"{_described(observation, gym)}: loopgen's networks take a vector "
                    "observation as it comes; remove the wrapper"
                )
            env = gym.wrappers.FrameStackObservation(env, **wrapper)
            continue
        skips = getattr(env.unwrapped, "_frameskip", None)
        if kind == "atari_preprocessing" and skips is None:
            raise ValueError(
                f"{here}: AtariPreprocessing prepares the screens of ALE's Atari games "
                f"(data.id='ALE/Breakout-v5', ...), but {field} makes "
                f"{type(env.unwrapped).__name__}; remove the wrapper"
            )
        if skips != 1 and wrapper.get("frame_skip", 4) > 1:
            raise ValueError(
                f"{here}: AtariPreprocessing repeats each action {wrapper.get('frame_skip', 4)} "
                f"frames, but the game skips {skips} frames itself already: set "
                "data.kwargs={'frameskip': 1} (or AtariPreprocessing(frame_skip=1))"
            )
        try:
            env = gym.wrappers.AtariPreprocessing(env, **wrapper)
        except gym.error.DependencyNotInstalled as error:
            raise ValueError(f"{here}: {error}; pip install 'loopgen[atari]' installs it") from None
    return env


def _described(space: Any, gym: Any) -> str:
    if isinstance(space, gym.spaces.Box):
        return f"vectors of shape {tuple(space.shape)}"
    return str(space)


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
            atari=type(env.unwrapped).__module__.startswith("ale_py"),
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
