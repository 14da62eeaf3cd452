"""The one registry of envgym environments, registered with Gymnasium at import time.

It holds envgym's own ids (`ENV_SPECS` below), every spec that an installed
distribution declares in the ``envgym.envs`` entry-point group, and every spec
passed to `register`. Gymnasium 1.x no longer loads entry-point plugins, so
`import envgym` calls `register_envs()`, which loads the plugins once and
registers every id with Gymnasium. A plugin that fails to load is reported as
an `EnvPluginWarning` naming its distribution; envgym's own ids are unaffected.

Each id's Gymnasium entry point is an `EnvFactory`: ``gym.make(id)`` builds the
env class in this process, and ``gym.make(id, backend="docker")`` hands the same
arguments to the backend's class (named here by a "module:Class" string, as env
classes are, so the registry imports no backend code). `list_envs()` and
`get_spec()` are what every tool reads (the CLI, evaluation, baselines, the
contract tests, the leaderboard); `make_text_env` is ``gym.make`` with errors
that say what to fix.
"""

from __future__ import annotations

import difflib
import importlib
import importlib.metadata
import warnings
from collections.abc import Mapping
from typing import Any

import gymnasium as gym
from gymnasium import spaces

from envgym.envspec import EnvSpec, EnvSpecError, check_spec

__all__ = [
    "BACKENDS",
    "ENV_SPECS",
    "PLUGIN_GROUP",
    "EnvCreationError",
    "EnvFactory",
    "EnvPluginWarning",
    "EnvSpec",
    "EnvSpecError",
    "get_spec",
    "list_envs",
    "load_entry_point",
    "load_plugins",
    "make_text_env",
    "missing_data",
    "register",
    "register_envs",
    "unregister",
]

#: The entry-point group an installed distribution declares its envs in, e.g.
#: ``[project.entry-points."envgym.envs"] coin = "coinflip:SPEC"``.
PLUGIN_GROUP = "envgym.envs"

#: Where an env can run: "local" (this process) or a backend class that takes
#: ``(env_id, env_kwargs, render_mode=...)`` and returns a `gymnasium.Env`.
BACKENDS: dict[str, str | None] = {
    "local": None,
    "docker": "envgym.remote.container:DockerEnv",
}


class EnvCreationError(ValueError):
    """An env that cannot be made: arguments it refuses, code that does not
    import, or spaces that are not text."""


class EnvPluginWarning(UserWarning):
    """An installed env plugin (an ``envgym.envs`` entry point) that could not be loaded."""


ENV_SPECS: tuple[EnvSpec, ...] = (
    EnvSpec(
        id="envgym/Sokoban-v0",
        entry_point="envgym.envs.sokoban:SokobanEnv",
        description="Push every box onto a target; procedural, always-solvable levels",
        tags=("puzzle", "planning", "multi-turn", "grid"),
        oracle="envgym.envs.sokoban.oracle:SokobanOracle",
        scoring_kwargs=("max_actions_per_turn",),
    ),
    EnvSpec(
        id="envgym/FrozenLake-v0",
        entry_point="envgym.envs.frozenlake:FrozenLakeEnv",
        description="Cross a frozen lake to the goal without falling into a hole",
        tags=("puzzle", "navigation", "multi-turn", "grid", "stochastic-option"),
        oracle="envgym.envs.frozenlake.oracle:FrozenLakeOracle",
        scoring_kwargs=("slippery", "max_actions_per_turn"),
    ),
    EnvSpec(
        id="envgym/Household-v0",
        entry_point="envgym.envs.household:HouseholdEnv",
        description="ALFWorld-style household tasks in procedural homes, no downloads",
        tags=("embodied", "planning", "multi-turn", "alfworld-like"),
        oracle="envgym.envs.household.oracle:HouseholdOracle",
    ),
    EnvSpec(
        id="envgym/Search-v0",
        entry_point="envgym.envs.search:SearchEnv",
        description="Multi-hop questions over a generated 100k-document encyclopedia (Search-R1)",
        tags=("search", "tool-use", "multi-turn", "question-answering", "search-r1-like"),
        oracle="envgym.envs.search.oracle:SearchOracle",
        scoring_kwargs=("num_docs", "world_seed", "distractors", "top_k"),
        agents={"nosearch": "envgym.envs.search.oracle:NoSearchAgent"},
        commands=("envgym.cli.search:add_commands",),
    ),
    EnvSpec(
        id="envgym/Shop-v0",
        entry_point="envgym.envs.shop:ShopEnv",
        description="Find and buy what an instruction asks for in a generated 50k-product shop",
        tags=("shopping", "web", "multi-turn", "webshop-like"),
        oracle="envgym.envs.shop.oracle:ShopOracle",
        scoring_kwargs=("num_products", "catalogue_seed", "observation"),
        commands=("envgym.cli.shop:add_commands",),
    ),
    EnvSpec(
        id="envgym/WebShop-v0",
        entry_point="envgym.envs.shop.webshop_env:WebShopEnv",
        description="The Shop env on WebShop's own product and instruction files (download them)",
        tags=("shopping", "web", "multi-turn", "webshop", "needs-data"),
        difficulties=("standard",),
        default_difficulty="standard",
        data_check="envgym.envs.shop.webshop:find_webshop_files",
        scoring_kwargs=("split", "num_products", "observation"),
    ),
    EnvSpec(
        id="envgym/Retail-v0",
        entry_point="envgym.envs.retail:RetailEnv",
        description="Serve an online shop's customers with stateful tools under a written "
        "policy (tau-bench-like)",
        tags=("tool-use", "customer-service", "user-simulation", "multi-turn", "tau-bench-like"),
        oracle="envgym.envs.toolworld.oracle:ToolWorldOracle",
        scoring_kwargs=("world_seed",),
    ),
    EnvSpec(
        id="envgym/Code-v0",
        entry_point="envgym.envs.code:CodeEnv",
        description="Write a Python function, test it in a sandbox, submit it (basic or HumanEval)",
        tags=("code", "tool-use", "multi-turn", "sandbox"),
        oracle="envgym.envs.code.oracle:CodeOracle",
        scoring_kwargs=("split", "timeout_s"),
    ),
    EnvSpec(
        id="envgym/Terminal-v0",
        entry_point="envgym.envs.terminal:TerminalEnv",
        description="Shell tasks (files, logs, CSV/JSON, permissions, archives, merges, "
        "bisecting, builds, configs) in a persistent sandboxed shell, checked by a trusted grader",
        tags=("terminal", "code", "tool-use", "multi-turn", "sandbox"),
        oracle="envgym.envs.terminal.agents:ShellOracle",
        random_agent="envgym.envs.terminal.agents:RandomShellAgent",
        scoring_kwargs=("family",),
    ),
    EnvSpec(
        id="envgym/RepoFix-v0",
        entry_point="envgym.envs.terminal:RepoFixEnv",
        description="Fix the bug an issue describes in a generated Python package, in a "
        "sandboxed shell; graded by hidden tests",
        tags=("terminal", "code", "software-engineering", "tool-use", "multi-turn", "sandbox"),
        oracle="envgym.envs.terminal.agents:ShellOracle",
        random_agent="envgym.envs.terminal.agents:RandomShellAgent",
    ),
    EnvSpec(
        id="envgym/PythonMath-v0",
        entry_point="envgym.envs.python_math:PythonMathEnv",
        description="Exact-answer math problems; Python in a sandbox helps with the hard ones",
        tags=("math", "tool-use", "code", "multi-turn"),
        oracle="envgym.envs.python_math.oracle:PythonMathOracle",
    ),
    EnvSpec(
        id="envgym/Airline-v0",
        entry_point="envgym.envs.airline:AirlineEnv",
        description="Serve an airline's customers with stateful tools by a written policy",
        tags=("tool-use", "customer-service", "user-simulation", "multi-turn", "tau-bench-like"),
        oracle="envgym.envs.toolworld.oracle:ToolWorldOracle",
        scoring_kwargs=("world_seed",),
    ),
    EnvSpec(
        id="envgym/SQL-v0",
        entry_point="envgym.envs.sql:SQLEnv",
        description="Answer questions about generated databases with one SQL query "
        "(execution match; SQLite or PostgreSQL, Spider/BIRD loaders)",
        tags=("sql", "tool-use", "multi-turn", "text-to-sql", "database"),
        oracle="envgym.envs.sql.agents:SQLOracle",
        random_agent="envgym.envs.sql.agents:RandomSQLAgent",
        scoring_kwargs=("world_seed", "max_rows"),
    ),
    EnvSpec(
        id="envgym/ReasoningGym-v0",
        entry_point="envgym.envs.reasoning_gym:ReasoningGymEnv",
        description="reasoning-gym's procedural generators (task=NAME; `envgym info` lists "
        "them), scored by their own scorers (the reasoning extra)",
        tags=("reasoning", "math", "logic", "puzzle", "single-turn", "procedural"),
        difficulties=("standard",),
        default_difficulty="standard",
        oracle="envgym.envs.reasoning_gym.oracle:ReasoningGymOracle",
        scoring_kwargs=("task", "task_config"),
    ),
    EnvSpec(
        id="envgym/GuessNumber-v0",
        entry_point="envgym.envs.guess_number:GuessNumberEnv",
        description="Find a secret number from higher/lower hints (the env of the guide)",
        tags=("puzzle", "multi-turn", "example"),
        oracle="envgym.envs.guess_number.oracle:GuessNumberOracle",
    ),
    EnvSpec(
        id="envgym/TicTacToe-v0",
        entry_point="envgym.envs.games.tictactoe:TicTacToeEnv",
        description="TicTacToe against a built-in opponent (perfect minimax play on hard)",
        tags=("game", "two-player", "zero-sum", "self-play", "multi-turn"),
        default_difficulty="hard",
        scoring_kwargs=("seat",),
    ),
    EnvSpec(
        id="envgym/ConnectFour-v0",
        entry_point="envgym.envs.games.connect_four:ConnectFourEnv",
        description="Connect Four against a built-in opponent (depth-limited search on hard)",
        tags=("game", "two-player", "zero-sum", "self-play", "multi-turn"),
        default_difficulty="hard",
        scoring_kwargs=("seat",),
    ),
    EnvSpec(
        id="envgym/KuhnPoker-v0",
        entry_point="envgym.envs.games.kuhn_poker:KuhnPokerEnv",
        description="Kuhn poker against a built-in opponent (Nash equilibrium on hard)",
        tags=("game", "two-player", "zero-sum", "self-play", "imperfect-information"),
        default_difficulty="hard",
        scoring_kwargs=("seat",),
    ),
    EnvSpec(
        id="envgym/SimpleNegotiation-v0",
        entry_point="envgym.envs.games.simple_negotiation:SimpleNegotiationEnv",
        description="Trade resources toward private valuations against a built-in negotiator",
        tags=("game", "two-player", "negotiation", "self-play", "imperfect-information"),
        default_difficulty="hard",
        scoring_kwargs=("seat",),
    ),
    EnvSpec(
        id="envgym/LiarsDice-v0",
        entry_point="envgym.envs.games.liars_dice:LiarsDiceEnv",
        description="Liar's Dice (2-4 players) against built-in bidders",
        tags=("game", "multi-player", "zero-sum", "self-play", "imperfect-information"),
        default_difficulty="hard",
        scoring_kwargs=("seat",),
    ),
)


def load_entry_point(entry_point: str) -> Any:
    """The object a "module:attribute" string names."""
    module, _, name = entry_point.partition(":")
    return getattr(importlib.import_module(module), name)


class EnvFactory:
    """The Gymnasium entry point of one envgym id.

    ``factory(**kwargs)`` builds the env class in this process;
    ``factory(backend="docker", **kwargs)`` serves it in a container and returns
    a `envgym.remote.DockerEnv` speaking to it. The factory is picklable (it
    holds only the id), so specs travel to worker processes.
    """

    def __init__(self, env_id: str) -> None:
        self.env_id = env_id

    @property
    def env_class(self) -> type[gym.Env]:
        return load_entry_point(get_spec(self.env_id).entry_point)

    @property
    def metadata(self) -> dict[str, Any]:
        # gym.make reads the render modes from the entry point before calling it.
        return self.env_class.metadata

    def __call__(self, *, backend: str = "local", **kwargs: Any) -> gym.Env:
        if backend not in BACKENDS:
            raise ValueError(
                f"unknown env backend {backend!r}; choose one of {', '.join(BACKENDS)}"
            )
        backend_class = BACKENDS[backend]
        if backend_class is None:
            return self.env_class(**kwargs)
        render_mode = kwargs.pop("render_mode", None)
        return load_entry_point(backend_class)(self.env_id, kwargs, render_mode=render_mode)

    def __repr__(self) -> str:
        return f"EnvFactory({self.env_id!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, EnvFactory) and other.env_id == self.env_id

    def __hash__(self) -> int:
        return hash(self.env_id)


#: The one registry: every id envgym knows, in the order tools list them, and
#: where each came from (for errors): "envgym", "envgym.register" or a plugin.
_SPECS: dict[str, EnvSpec] = {spec.id: spec for spec in ENV_SPECS}
_ORIGINS: dict[str, str] = dict.fromkeys(_SPECS, "envgym")
_plugins_loaded = False


def _gym_register(spec: EnvSpec) -> None:
    if spec.id not in gym.registry:
        gym.register(
            id=spec.id,
            entry_point=EnvFactory(spec.id),
            kwargs=dict(spec.kwargs),
            nondeterministic=False,
        )


def _check_free(spec: EnvSpec) -> bool:
    """False when this very spec is registered already; EnvSpecError when its id is taken."""
    known = _SPECS.get(spec.id)
    if known == spec:
        return False
    if known is not None:
        raise EnvSpecError(
            f"{spec.id} is already registered (by {_ORIGINS[spec.id]}); give yours another "
            "id, or envgym.unregister it first"
        )
    if spec.id in gym.registry:
        raise EnvSpecError(f"{spec.id} is already registered with Gymnasium by other code")
    return True


def register(spec: EnvSpec) -> None:
    """Add `spec` to envgym's registry and register its id with Gymnasium.

    From then on ``gym.make(spec.id)``, `list_envs`, `get_spec` and every tool
    built on them (``envgym list``/``eval``/``baselines``, the contract tests,
    the leaderboard) know the id. Registering the same spec again does nothing;
    raises `EnvSpecError` for a malformed spec or an id already taken. Ids
    registered this way exist in this process only: for worker processes,
    declare the spec in the ``envgym.envs`` entry-point group instead.
    """
    check_spec(spec)
    if _check_free(spec):
        _add(spec, "envgym.register")


def _add(spec: EnvSpec, origin: str) -> None:
    _SPECS[spec.id] = spec
    _ORIGINS[spec.id] = origin
    _gym_register(spec)


def unregister(env_id: str) -> None:
    """Remove `env_id` from envgym's registry and from Gymnasium's (for tests)."""
    get_spec(env_id)  # KeyError naming close matches
    del _SPECS[env_id], _ORIGINS[env_id]
    gym.registry.pop(env_id, None)


def _plugin_specs(loaded: Any) -> list[EnvSpec]:
    """The specs an entry point names: an EnvSpec, or a callable returning one or several."""
    if callable(loaded) and not isinstance(loaded, EnvSpec):
        loaded = loaded()
    if isinstance(loaded, EnvSpec):
        loaded = [loaded]
    if not isinstance(loaded, list | tuple):
        raise EnvSpecError(
            "an envgym.envs entry point names an EnvSpec, or a function returning one or a "
            f"list of them; got {type(loaded).__name__}"
        )
    specs = list(loaded)
    for spec in specs:
        check_spec(spec)
    ids = [spec.id for spec in specs]
    if len(set(ids)) != len(ids):
        raise EnvSpecError(f"the same id is declared twice in {ids}")
    return specs


def load_plugins() -> None:
    """Register the specs of every installed ``envgym.envs`` entry point, once per process.

    An entry point names an `EnvSpec`, or a callable returning one or several.
    A plugin that does not import, names something else, or reuses a taken id
    is skipped with an `EnvPluginWarning` naming its distribution and the error.
    """
    global _plugins_loaded
    if _plugins_loaded:
        return
    _plugins_loaded = True
    for entry in importlib.metadata.entry_points(group=PLUGIN_GROUP):
        dist = (
            f"{entry.dist.name} {entry.dist.version}" if entry.dist else "an unknown distribution"
        )
        origin = f"the env plugin {entry.name!r} of {dist}"
        try:
            specs = _plugin_specs(entry.load())
            fresh = [spec for spec in specs if _check_free(spec)]
        except Exception as exc:  # a plugin's own bug must not break envgym
            warnings.warn(
                f"envgym: skipped {origin} ({entry.value}): {type(exc).__name__}: {exc}",
                EnvPluginWarning,
                stacklevel=2,
            )
            continue
        for spec in fresh:
            _add(spec, origin)


def register_envs() -> None:
    """Register every envgym id, installed plugins' included, with Gymnasium (idempotent)."""
    load_plugins()
    for spec in _SPECS.values():
        _gym_register(spec)


def missing_data(spec: EnvSpec) -> str | None:
    """None when `spec`'s env has the data it needs here, else what to download."""
    if spec.data_check is None:
        return None
    try:
        load_entry_point(spec.data_check)()
    except FileNotFoundError as exc:
        return str(exc)
    return None


def list_envs(tag: str | None = None) -> list[EnvSpec]:
    """Every registered env spec (envgym's, then plugins'), optionally only those carrying `tag`."""
    return [s for s in _SPECS.values() if tag is None or tag in s.tags]


def get_spec(env_id: str) -> EnvSpec:
    """The spec for `env_id`; a clear error with close matches if there is none."""
    if isinstance(env_id, str) and env_id in _SPECS:
        return _SPECS[env_id]
    close = difflib.get_close_matches(str(env_id), list(_SPECS), n=3, cutoff=0.4)
    hint = f" Did you mean {', '.join(close)}?" if close else ""
    raise KeyError(f"no envgym environment {env_id!r}.{hint} Run `envgym list` to see all ids.")


def _gym_spec(env_id: str) -> gym.envs.registration.EnvSpec:
    """Gymnasium's spec for `env_id`, with envgym's helpful error if there is none."""
    if not isinstance(env_id, str) or not env_id:
        raise EnvCreationError(
            f"an env id is a non-empty string like 'envgym/Sokoban-v0', got {env_id!r}"
        )
    if env_id not in gym.registry:
        register_envs()
    if env_id not in gym.registry:
        get_spec(env_id)  # raises KeyError naming close matches and `envgym list`
        raise KeyError(f"{env_id!r} is not registered with gymnasium; `import envgym` registers it")
    return gym.spec(env_id)


def make_text_env(env_id: str, env_kwargs: Mapping[str, Any] | None = None) -> gym.Env:
    """`gym.make(env_id, **env_kwargs)`, with errors that say what to fix.

    Raises KeyError for an unknown id and `EnvCreationError` for kwargs the env
    refuses, env code that does not import, data the env needs that is not on
    this machine, or an env that is not a text env.
    """
    _gym_spec(env_id)
    kwargs = dict(env_kwargs or {})
    try:
        env = gym.make(env_id, **kwargs)
    except ImportError as exc:
        raise EnvCreationError(
            f"could not import the code of {env_id}: {exc}. Is the env's package installed "
            "(with its extras)?"
        ) from exc
    except FileNotFoundError as exc:
        # Data the env needs and envgym cannot ship (WebShop-v0's files); the
        # message says what to download and where to put it.
        raise EnvCreationError(f"could not make {env_id}: {exc}") from exc
    except (TypeError, ValueError) as exc:
        if isinstance(exc, EnvCreationError):
            raise
        shown = ", ".join(f"{k}={v!r}" for k, v in kwargs.items()) or "no arguments"
        raise EnvCreationError(
            f"could not make {env_id} with {shown}: {exc}. "
            f"Run `envgym info {env_id}` to see its arguments."
        ) from exc
    if not isinstance(env.observation_space, spaces.Text) or not isinstance(
        env.action_space, spaces.Text
    ):
        env.close()
        raise EnvCreationError(
            f"{env_id} is not a text env (its spaces are {env.observation_space} and "
            f"{env.action_space}); envgym evaluates envs whose observations and actions are text"
        )
    return env
