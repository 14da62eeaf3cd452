"""The open registry: `envgym.register` and `unregister`, the checks on a spec,
and what a spec's own agents and commands do for the generic layers.

Installed plugins (the ``envgym.envs`` entry point) are in test_plugin_env.py.
"""

from __future__ import annotations

import dataclasses

import gymnasium as gym
import pytest
from test_evaluation import GUESS_ID, GUESS_SPEC, registered

import envgym
from envgym.agents import agent_forms, make_agent, parse_agent_spec
from envgym.cli import main
from envgym.envspec import EnvSpecError
from envgym.evaluation import EvaluationError, evaluate

OWN_AGENT = GUESS_SPEC.oracle  # the guess env's bisecting solver, as an agent of its own
GUESS_WITH_AGENT = dataclasses.replace(GUESS_SPEC, agents={"bisect": OWN_AGENT})


def test_a_registered_spec_is_everywhere_and_unregister_takes_it_back():
    assert GUESS_ID not in [s.id for s in envgym.list_envs()]
    envgym.register(GUESS_SPEC)
    try:
        assert envgym.get_spec(GUESS_ID) is GUESS_SPEC
        assert envgym.list_envs()[-1] is GUESS_SPEC
        assert GUESS_ID in [s.id for s in envgym.list_envs(tag="test")]
        obs, info = gym.make(GUESS_ID).reset(seed=0)
        assert "Guess" in obs
        envgym.register(GUESS_SPEC)  # the very same spec again: nothing happens
    finally:
        envgym.unregister(GUESS_ID)
    assert GUESS_ID not in gym.registry
    with pytest.raises(KeyError, match="no envgym environment"):
        envgym.get_spec(GUESS_ID)
    with pytest.raises(KeyError, match="no envgym environment"):
        envgym.unregister(GUESS_ID)


def test_a_taken_id_is_refused_saying_who_has_it():
    sokoban = envgym.get_spec("envgym/Sokoban-v0")
    with pytest.raises(EnvSpecError, match=r"already registered \(by envgym\)"):
        envgym.register(dataclasses.replace(sokoban, description="mine"))
    with registered(GUESS_SPEC):
        with pytest.raises(EnvSpecError, match=r"by envgym\.register"):
            envgym.register(dataclasses.replace(GUESS_SPEC, tags=("other",)))
    gym.register(id="elsewhere/Plain-v0", entry_point=GUESS_SPEC.entry_point)
    try:
        spec = dataclasses.replace(GUESS_SPEC, id="elsewhere/Plain-v0")
        with pytest.raises(EnvSpecError, match="with Gymnasium by other code"):
            envgym.register(spec)
    finally:
        del gym.registry["elsewhere/Plain-v0"]
    assert envgym.get_spec("envgym/Sokoban-v0") is sokoban


@pytest.mark.parametrize(
    "change,message",
    [
        ({"id": "Guess-v0"}, "NAMESPACE/Name-vN"),
        ({"id": "mine/Guess"}, "NAMESPACE/Name-vN"),
        ({"id": "a/b/Guess-v0"}, "NAMESPACE/Name-vN"),
        ({"entry_point": "test_evaluation.GuessEnv"}, '"module:attribute"'),
        ({"tags": "test"}, "tags must be a tuple"),
        ({"difficulties": ()}, "at least one"),
        ({"default_difficulty": "expert"}, "'expert' is not one of"),
        ({"oracle": "GuessOracle"}, "oracle must be"),
        ({"agents": {"oracle": OWN_AGENT}}, "'oracle' is taken by envgym"),
        ({"agents": {"My Agent": OWN_AGENT}}, "lowercase words"),
        ({"commands": ("add_commands",)}, "commands must be"),
        ({"kwargs": [("a", 1)]}, "kwargs must be a dict"),
    ],
)
def test_a_malformed_spec_is_refused_saying_what_to_fix(change, message):
    with pytest.raises(EnvSpecError, match=message):
        envgym.register(dataclasses.replace(GUESS_SPEC, **change))
    assert GUESS_ID not in gym.registry and "mine/Guess" not in gym.registry


def test_register_takes_only_an_env_spec():
    with pytest.raises(EnvSpecError, match="takes an envgym.EnvSpec, got dict"):
        envgym.register({"id": GUESS_ID})


def test_an_envs_own_agent_is_its_only_and_joins_the_help_texts():
    with registered(GUESS_WITH_AGENT):
        assert "bisect" in agent_forms() and parse_agent_spec("bisect").kind == "bisect"
        results = evaluate(GUESS_ID, "bisect", episodes=3, seed=0)
        assert results["agent"] == {"name": "bisect"}
        assert results["summary"]["success_rate"] == 1.0
        with pytest.raises(ValueError, match=f"the bisect agent is {GUESS_ID}'s own"):
            make_agent("bisect", gym.make("envgym/FrozenLake-v0"))
        with pytest.raises(EvaluationError, match="use random or oracle"):
            evaluate("envgym/FrozenLake-v0", "bisect", episodes=1)
    assert "bisect" not in agent_forms()
    with pytest.raises(ValueError, match="unknown agent 'bisect'"):
        parse_agent_spec("bisect")


def test_the_search_envs_agent_and_commands_come_from_its_spec(capsys):
    search = envgym.get_spec("envgym/Search-v0")
    assert search.agents == {"nosearch": "envgym.envs.search.oracle:NoSearchAgent"}
    assert "nosearch" in agent_forms()
    assert main(["--help"]) == 0
    listed = capsys.readouterr().out
    assert "search" in listed and "shop" in listed
    assert main(["eval", "envgym/FrozenLake-v0", "--agent", "nosearch"]) == 2
    assert "envgym/Search-v0's own" in capsys.readouterr().err


def test_a_command_that_does_not_import_is_left_out_with_a_warning(capsys):
    broken = dataclasses.replace(GUESS_SPEC, commands=("no_such_module_here:add_commands",))
    with registered(broken):
        with pytest.warns(
            envgym.registry.EnvPluginWarning, match=f"no_such_module_here.*{GUESS_ID}"
        ):
            assert main(["list"]) == 0
    assert GUESS_ID in capsys.readouterr().out
