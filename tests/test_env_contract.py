"""The single-agent contract of docs/design.md, checked on every registered envgym id
(an env with a sandbox session, Terminal-v0 and RepoFix-v0, at every level on
docker and on bwrap where a test runs commands: `SESSION_CASES`)."""

from __future__ import annotations

import functools
import importlib.util
import json
import os
import pickle
import subprocess
import sys
import warnings

import gymnasium as gym
import numpy as np
import pytest
from code_format_files import DATA as CODE_FORMATS
from code_format_files import FILES as CODE_FORMAT_FILES
from gymnasium.utils.env_checker import check_env
from postgres_server import ON_POSTGRES
from postgres_server import engine_kwargs as _engine_kwargs
from sandbox_backends import require_backend

import envgym
from envgym.agents import make_agent
from envgym.core import INFO_KEYS

ENV_IDS = [spec.id for spec in envgym.list_envs()]
OPEN_TEXT_REPLIES = [
    "<search>founded city</search>",
    "<search>born year river</search>",
    "<search>author of the novel</search>",
    "<answer>nobody</answer>",
]
#: Envs whose episodes run in a sandbox session (a shell): the tests that run
#: commands in it (`SESSION_CASES`: the shared info contract, whose reply is
#: the oracle's command, and snapshot/restore, which replays shell commands
#: and the grader) run every level on each isolating backend, docker cases
#: marked ``docker``. The other tests never start a session (the checker's
#: and the fuzz's replies hold no command, determinism only resets), so they
#: run each level once, on the default backend.
SESSION_IDS = [spec.id for spec in envgym.list_envs() if "terminal" in spec.tags]
SESSION_BACKENDS = ("docker", "bwrap")
ID_AND_DIFFICULTY = [(spec.id, level) for spec in envgym.list_envs() for level in spec.difficulties]
#: SQL-v0 on PostgreSQL as well as SQLite, at every level: `engine_kwargs` puts
#: the test server's URL in when the test runs (skipped without one, failed in CI).
ON_ENGINES = [
    ("envgym/SQL-v0", {"difficulty": level, "engine": ON_POSTGRES})
    for spec in envgym.list_envs()
    if spec.id == "envgym/SQL-v0"
    for level in spec.difficulties
]


def _on_backends(env_id: str, kwargs: dict) -> list:
    """One case, or (a session env) one per sandbox backend."""
    if env_id not in SESSION_IDS:
        return [(env_id, kwargs)]
    return [
        pytest.param(
            env_id,
            {**kwargs, "sandbox": backend},
            marks=[pytest.mark.docker] if backend == "docker" else [],
            id=f"{env_id}-{kwargs.get('difficulty', 'default')}-{backend}",
        )
        for backend in SESSION_BACKENDS
    ]


def engine_kwargs(kwargs: dict) -> dict:
    """A case's kwargs made real: the PostgreSQL server's URL put in, and its
    sandbox backend required (skipped, or failed where CI requires it)."""
    if "sandbox" in kwargs:
        require_backend(kwargs["sandbox"])
    return _engine_kwargs(kwargs)


#: PythonMath-v0 on problems loaded from files (the public layouts it reads) instead
#: of generated ones; also in the info-key and snapshot tests.
ON_FILES = [
    pytest.param(
        "envgym/PythonMath-v0",
        {"problems": os.path.join(os.path.dirname(__file__), "data", "math_formats")},
        id="envgym/PythonMath-v0-files",
    )
]
#: Code-v0's stdin/stdout problems (a second kind of problem, its own split): the
#: checker and the info contract (whose reply is the oracle's). Not the fuzz (nearly
#: every junk answer is a program that runs on every case: 390 s here), determinism
#: (three problems a level: seeds 0, 1 and 12345 draw one twice) or snapshot
#: replay (its replies run sandbox jobs, whose info["cost"]["sandbox_seconds"]
#: differs between two runs; the function kind's replies are refused before a job).
STDIO = [("envgym/Code-v0", {"split": "stdio"})]
LEVEL_CASES = [(env_id, {"difficulty": level}) for env_id, level in ID_AND_DIFFICULTY] + ON_ENGINES
SESSION_CASES = (
    [
        case
        for env_id, level in ID_AND_DIFFICULTY
        for case in _on_backends(env_id, {"difficulty": level})
    ]
    + ON_ENGINES
    + ON_FILES
)


def test_every_spec_is_registered_with_gymnasium():
    assert ENV_IDS, "no envgym ids registered"
    for env_id in ENV_IDS:
        assert env_id in gym.registry
        namespace, _, version = gym.envs.registration.parse_env_id(env_id)
        assert namespace and version is not None, f"{env_id} is not NAMESPACE/Name-vN"


#: Constructor arguments beyond difficulty that change an env's shape.
VARIANTS = [
    *ON_FILES,
    ("envgym/FrozenLake-v0", {"slippery": True}),
    ("envgym/LiarsDice-v0", {"num_players": 4}),
    ("envgym/Sokoban-v0", {"size": (7, 9), "num_boxes": 2}),
    ("envgym/Shop-v0", {"observation": "html"}),
    ("envgym/Shop-v0", {"observation": "html", "difficulty": "hard"}),
    ("envgym/WebShop-v0", {"observation": "html"}),
    *STDIO,
    ("envgym/ReasoningGym-v0", {"task": "basic_arithmetic"}),
    ("envgym/ReasoningGym-v0", {"task": "syllogism", "max_turns": 3}),
]
#: Code-v0 on each standard dataset's layout (tests/data/code_formats, written
#: by tests/code_format_files.py): one case per format's file; all of them at
#: once also plays the determinism and fuzz tests (slow: the fuzz takes 10 s).
CODE_FORMATS_CASES = [
    pytest.param("envgym/Code-v0", {"problems": str(CODE_FORMATS / name)}, id=f"Code-v0-{name}")
    for name in CODE_FORMAT_FILES
]
VARIANTS += CODE_FORMATS_CASES
CHECK_CASES = LEVEL_CASES + VARIANTS
#: Observation modes beyond the default text, also checked for determinism and fuzzing.
MODES = [
    *ON_FILES,
    ("envgym/Shop-v0", {"difficulty": "hard", "observation": "html"}),
    ("envgym/WebShop-v0", {"observation": "html"}),
    pytest.param(
        "envgym/Code-v0",
        {"problems": str(CODE_FORMATS)},
        # The stdin/stdout problems among them need the stdio grader to be submitted to.
        marks=[
            pytest.mark.slow,
            pytest.mark.skipif(
                importlib.util.find_spec("envgym.envs.code.stdio") is None,
                reason="no stdio grader in this Code-v0 (envs/code/stdio.py)",
            ),
        ],
        id="Code-v0-every-code-format",
    ),
    ("envgym/ReasoningGym-v0", {"task": "syllogism", "max_turns": 3}),
]
MODE_CASES = LEVEL_CASES + MODES


@pytest.mark.parametrize("env_id,kwargs", CHECK_CASES)
def test_gymnasium_checker_passes_unwrapped_and_through_make(env_id, kwargs):
    kwargs = engine_kwargs(kwargs)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_env(gym.make(env_id, **kwargs).unwrapped)
        # The checker always notes that a made env is wrapped; nothing else may warn.
        warnings.filterwarnings("ignore", message=".*is different from the unwrapped version.*")
        check_env(gym.make(env_id, **kwargs))


def _first_resets(env_id: str, kwargs: dict, seeds: list[int]) -> list[list[str]]:
    env = gym.make(env_id, **kwargs)
    return [[obs, info["task_id"]] for obs, info in (env.reset(seed=s) for s in seeds)]


@pytest.mark.parametrize("env_id,kwargs", MODE_CASES)
def test_same_seed_same_first_observation_in_another_process(env_id, kwargs):
    kwargs = engine_kwargs(kwargs)
    seeds = [0, 1, 12345]
    script = (
        "import json, sys, gymnasium as gym, envgym\n"
        f"env = gym.make({env_id!r}, **{kwargs!r})\n"
        "print(json.dumps([[o, i['task_id']] for o, i in "
        f"(env.reset(seed=s) for s in {seeds!r})]))\n"
    )
    # A different hash seed catches any dependence on set or dict ordering of strings.
    child_env = {**os.environ, "PYTHONHASHSEED": "12345"}
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=child_env, check=True
    )
    theirs = json.loads(out.stdout)
    ours = _first_resets(env_id, kwargs, seeds)
    assert ours == theirs
    # A game's first board may repeat (an empty grid); its task never does.
    assert len({task_id for _, task_id in ours}) == len(seeds), "seeds should give new tasks"


#: The replies of `_adversarial_actions` that do not depend on the task, built once.
_FIXED_ADVERSARIAL = (
    "",
    " ",
    "x" * 200_000,
    "<answer>" * 1000,
    "</answer>" * 1000 + "<answer>",
    "\\boxed{" * 300,
    "<answer>上 || ←</answer>",
    "🙂" * 50,
    "<answer>\x00\x01\x02</answer>",
    "\ud800",  # a lone surrogate
    None,
    12345,
    3.5,
    ["Up"],
    '<tool_call>{"name": "move", "arguments": {"direction": "Up"}}</tool_call>',
    '<tool_call>{"name": ' * 200,
    "[" * 5000,
    "<answer>" + "||" * 100 + "</answer>",
    "<answer>Up; Down, Left\nRight</answer>",
)


def _adversarial_actions(rng: np.random.Generator, admissible: list[str]) -> list[object]:
    """Replies a broken or hostile model (or caller) could send."""
    good = admissible[int(rng.integers(len(admissible)))] if admissible else "x"
    junk = bytes(rng.integers(0, 256, size=int(rng.integers(1, 64)), dtype=np.uint8))
    return [
        *_FIXED_ADVERSARIAL,
        f"<answer>{good}</answer>",
        f"<answer>{good} || {good} || {good}</answer>",
        "<answer>" + " || ".join([good] * 500) + "</answer>",
        f"<answer><answer>{good}</answer></answer>",
        f"<answer><think>{good}</think></answer>",
        f"<think>{good}",
        f"</think><answer>{good}</answer>",
        f"\\boxed{{{good}}}",
        junk,
        junk.decode("latin-1"),
        {"action": good},
        f"<answer>{good}",
        f"{good}</answer>",
        f"<ANSWER>{good.upper()}</ANSWER>",
        f"<answer>   {good.lower()}   </answer>",
    ]


@functools.lru_cache(maxsize=8)
def _sampled_replies(charset: str, bound: int) -> tuple[str, ...]:
    """Random replies over an action space's characters: drawing from a Text
    space is slow, so the pool is drawn once per (charset, bound) and shared by
    every env with that action space. Most draws are short; a few are at the
    reply bound (the space's own length), and one is over it."""
    short = gym.spaces.Text(max_length=8_192, charset=charset, seed=0)
    at_bound = gym.spaces.Text(max_length=bound, charset=charset, seed=0)
    sampled = [short.sample() for _ in range(300)]
    sampled += [at_bound.sample(mask=(bound, None)) for _ in range(3)]
    sampled.append("<answer>" + "x" * bound + "</answer>")
    return tuple(sampled)


def _in_text_space(obs: object, space: gym.spaces.Text, allowed: frozenset[str]) -> bool:
    """``obs in space`` (gymnasium's Text.contains), with the character test done
    on the set of characters rather than one character at a time."""
    return (
        isinstance(obs, str)
        and space.min_length <= len(obs) <= space.max_length
        and set(obs) <= allowed
    )


#: Fuzz steps per case: 10,000, but 3,000 for the envs whose every reset builds a
#: database, a shop page or a repository (a few ms each, so 10,000 steps cost them
#: 10-60 s a case); 3,000 steps still play every adversarial reply hundreds of times.
FUZZ_STEPS = 10_000
FUZZ_STEPS_HEAVY = 3_000
HEAVY_RESETS = {
    "envgym/SQL-v0",
    "envgym/Airline-v0",
    "envgym/Retail-v0",
    "envgym/RepoFix-v0",
    "envgym/Shop-v0",
    "envgym/WebShop-v0",
}


@pytest.mark.parametrize("env_id,kwargs", MODE_CASES)
def test_ten_thousand_random_and_adversarial_actions_never_raise(env_id, kwargs):
    env = gym.make(env_id, **engine_kwargs(kwargs))
    rng = np.random.default_rng(0)
    obs, info = env.reset(seed=0)
    space = env.observation_space
    allowed = frozenset(space.character_set)
    assert obs in space and _in_text_space(obs, space, allowed)
    charset = "".join(sorted(env.action_space.character_set))
    sampled = _sampled_replies(charset, env.action_space.max_length)
    steps = episodes = invalid = 0
    budget = FUZZ_STEPS_HEAVY if env_id in HEAVY_RESETS else FUZZ_STEPS
    while steps < budget:
        candidates = _adversarial_actions(rng, info.get("admissible_actions") or [])
        if rng.random() < 0.5:
            action = candidates[int(rng.integers(len(candidates)))]
        else:
            action = sampled[int(rng.integers(len(sampled)))]
        obs, reward, terminated, truncated, info = env.step(action)
        steps += 1
        assert _in_text_space(obs, space, allowed)
        assert isinstance(reward, float) and np.isfinite(reward)
        assert reward == pytest.approx(sum(info["reward_components"].values()))
        invalid += not info["action_valid"]
        if terminated or truncated:
            episodes += 1
            obs, info = env.reset(seed=int(rng.integers(1_000_000)))
    assert invalid > budget // 10, "the fuzz should hit the invalid-action path often"
    assert episodes > 10


@pytest.mark.parametrize("env_id,kwargs", SESSION_CASES + STDIO)
def test_info_keys_follow_the_shared_contract(env_id, kwargs):
    env = gym.make(env_id, **engine_kwargs(kwargs))
    obs, info = env.reset(seed=3)
    assert set(info) <= set(INFO_KEYS), f"unknown info keys {set(info) - set(INFO_KEYS)}"
    for key in ("task_id", "turn", "action_valid", "success", "reward_components", "state_key"):
        assert key in info
    assert info["turn"] == 0 and info["success"] is False
    assert isinstance(info["system_prompt"], str) and info["system_prompt"]
    hash(info["state_key"])
    # A well-formed reply: the first admissible action, or (open-text envs) the oracle's.
    actions = info.get("admissible_actions")
    if actions:
        reply = f"<answer>{actions[0]}</answer>"
    else:
        reply = make_agent("oracle", env, seed=0).act(obs, info)
    obs, reward, terminated, truncated, info = env.step(reply)
    assert info["turn"] == 1 and info["action_valid"] is True
    if terminated or truncated:  # one decision can end a game (a Kuhn poker fold)
        env.reset(seed=4)
    if "user-simulation" in envgym.get_spec(env_id).tags:
        # Plain text is a message to the simulated user there; a broken call is malformed.
        obs, reward, terminated, truncated, info = env.step("<tool_call>{no json</tool_call>")
        assert info["action_valid"] is False
        assert '{"name": "TOOL", "arguments": {...}}' in obs, "feedback should say the format"
        return
    obs, reward, terminated, truncated, info = env.step("no tags here")
    assert info["action_valid"] is False
    assert "answer" in obs.lower(), "feedback should say how to write a valid reply"


#: Replies to an env with a shell (a ``bash`` tool): each changes or shows what
#: a session keeps (files, working directory, exported variables), with no
#: output that depends on time.
SHELL_REPLIES = [
    "<bash>mkdir -p scratch && cd scratch && export STEP=$((STEP + 1)) && echo $STEP >> log</bash>",
    '<bash>pwd; echo "[$STEP]"; ls -A; cat log 2>/dev/null; true</bash>',
    '<tool_call>{"name": "write_file", "arguments": {"path": "note.txt", "content": "n"}}'
    "</tool_call>",
    "<bash>cd /work && echo more >> note.txt && wc -c note.txt && exit 3</bash>",
]


def _has_shell(info: dict) -> bool:
    return any(t.get("function", {}).get("name") == "bash" for t in info.get("tools") or [])


@pytest.mark.parametrize("env_id,kwargs", SESSION_CASES)
def test_restore_of_snapshot_replays_identically(env_id, kwargs):
    kwargs = engine_kwargs(kwargs)
    env = gym.make(env_id, **kwargs)
    rng = np.random.default_rng(7)
    obs, info = env.reset(seed=11)

    def random_reply(info):
        acts = info.get("admissible_actions")
        if _has_shell(info):  # commands that change the session's files, cwd and variables
            return SHELL_REPLIES[int(rng.integers(len(SHELL_REPLIES)))]
        if not acts:  # an open-text env (search): mostly searches, sometimes an answer
            return OPEN_TEXT_REPLIES[int(rng.integers(len(OPEN_TEXT_REPLIES)))]
        return f"<answer>{acts[int(rng.integers(len(acts)))]}</answer>"

    for _ in range(3):
        obs, _, terminated, truncated, info = env.step(random_reply(info))
        if terminated or truncated:
            obs, info = env.reset(seed=12)
    snap = env.unwrapped.snapshot()
    saved_info = info
    replies = [random_reply(info) for _ in range(12)]
    if _has_shell(saved_info):
        replies[-1] = "<done/>"  # the grader's verdict on the session's tree replays too

    def play(target_env):
        out = []
        for reply in replies:
            step = target_env.step(reply)
            out.append(step)
            if step[2] or step[3]:
                break
        return out

    original = play(env)
    env.unwrapped.restore(snap)
    assert play(env) == original
    # The snapshot survives pickling and restores into a fresh instance.
    fresh = gym.make(env_id, **kwargs)
    fresh.reset(seed=999)
    fresh.unwrapped.restore(pickle.loads(pickle.dumps(snap)))
    assert play(fresh) == original
    assert saved_info["state_key"] != "" and original


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_step_after_the_end_asks_for_reset(env_id):
    env = gym.make(env_id, max_turns=1)
    env.reset(seed=0)
    env.step("nonsense")
    with pytest.raises(gym.error.ResetNeeded, match="reset"):
        env.unwrapped.step("nonsense")


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_unknown_difficulty_is_a_clear_error(env_id):
    with pytest.raises(ValueError, match="choose one of"):
        gym.make(env_id, difficulty="impossible")


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_manual_documents_every_section(env_id):
    env = gym.make(env_id)
    doc = type(env.unwrapped).__doc__ or ""
    for section in (
        "Description",
        "Action Space",
        "Observation Space",
        "Starting State",
        "Rewards",
        "Episode End",
        "Arguments",
        "Version History",
    ):
        assert section in doc, f"{env_id} manual lacks {section}"


def test_list_envs_filters_by_tag():
    puzzles = envgym.list_envs(tag="puzzle")
    assert {s.id for s in puzzles} >= {"envgym/Sokoban-v0", "envgym/FrozenLake-v0"}
    assert envgym.list_envs(tag="no-such-tag") == []
    with pytest.raises(KeyError, match="Did you mean envgym/Sokoban-v0"):
        envgym.get_spec("envgym/Sokoban-v1")


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_unknown_reset_option_is_a_clear_error(env_id):
    env = gym.make(env_id)
    with pytest.raises(ValueError, match=r"unknown reset option\(s\) \['levle'\].*takes 'task_id'"):
        env.reset(seed=0, options={"levle": 3})
    obs, info = env.reset(seed=0, options={"task_id": env.reset(seed=1)[1]["task_id"]})
    assert obs == env.reset(seed=1)[0], "task_id replays the task of its seed"


@pytest.mark.parametrize("env_id", [spec.id for spec in envgym.list_envs()])
def test_a_reply_past_the_bound_is_not_read(env_id):
    """One documented bound for every env, which its action space declares: a
    longer reply is answered as an empty one, whatever it holds."""
    from envgym.text import ACTION_MAX_LENGTH

    env = gym.make(env_id)
    assert env.action_space.max_length == ACTION_MAX_LENGTH >= 256 * 1024
    obs, info = env.reset(seed=0)
    actions = info.get("admissible_actions") or ["x"]
    reply = f"<answer>{actions[0]}</answer>" + " " * ACTION_MAX_LENGTH
    obs, reward, terminated, truncated, info = env.step(reply)
    assert "not read" in obs and info["action_valid"] is False
    assert not info["success"] and reward <= 0
    env.reset(seed=0)
    empty = env.step("")
    assert reward == empty[1]  # what an empty reply gets, no more
