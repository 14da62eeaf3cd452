"""pass^k: ``envgym eval --trials K`` runs each seed K times and reports pass^1 .. pass^K.

The math on hand-worked cases; a real run (the random agent on easy TicTacToe,
which wins about a quarter of its games, so trials differ) through the CLI and
the Python entry points; an LLM agent against a sampling OpenAI-compatible
server on 127.0.0.1, whose trials get their own seeds; and forged files the
verifier must refuse (a claimed pass^3 of 1.0, repeated, missing or
mis-numbered trials, a header that disagrees with the episodes).
"""

from __future__ import annotations

import copy
import json
import random
import re
from typing import Any

import pytest

from envgym.cli import main
from envgym.evaluation import (
    EvaluationError,
    ResultsFileError,
    evaluate,
    load_results,
    summarize,
    validate_results,
    verify_submission,
    write_results,
)
from envgym.evaluation.batch import evaluate_many
from envgym.evaluation.summary import mean_ci95, pass_k, wilson_ci95

try:
    import fastapi
except ImportError:  # the OpenAI agent's test needs it
    fastapi = None

GAME = "envgym/TicTacToe-v0"  # the random agent wins about a quarter of easy games
EASY = {"difficulty": "easy"}
GUESS = "envgym/GuessNumber-v0"


def _episodes(successes_per_seed: list[list[bool]]) -> list[dict[str, Any]]:
    return [
        {"seed": seed, "trial": t, "success": ok, "return": float(ok), "turns": 1}
        for seed, trials in enumerate(successes_per_seed)
        for t, ok in enumerate(trials)
    ]


# ------------------------------------------------------------ the math
def test_pass_k_on_two_tasks_of_four_trials_worked_by_hand():
    # Task A: 4 of 4; task B: 2 of 4. pass^2 of B is C(2,2)/C(4,2) = 1/6.
    got = pass_k(_episodes([[True] * 4, [True, False, True, False]]))
    assert list(got) == ["1", "2", "3", "4"]
    assert got["1"] == pytest.approx(0.75)
    assert got["2"] == pytest.approx((1 + 1 / 6) / 2)
    assert got["3"] == pytest.approx(0.5)  # C(2,3) = 0
    assert got["4"] == pytest.approx(0.5)


def test_pass_k_of_one_success_in_three_and_pass_1_is_the_success_rate():
    episodes = _episodes([[False, True, False], [False, False, False]])
    got = pass_k(episodes)
    assert got == pytest.approx({"1": 1 / 6, "2": 0.0, "3": 0.0})
    assert summarize(episodes)["pass_k"]["1"] == summarize(episodes)["success_rate"]


def test_pass_k_needs_the_same_number_of_trials_for_every_seed():
    with pytest.raises(ValueError, match="same number of trials"):
        pass_k(_episodes([[True, True], [True]]))


def test_intervals_count_each_seed_once_however_many_trials():
    """Trials of one seed are not independent draws: 2 seeds x 4 trials are 2
    observations for the intervals, not 8, so more trials cannot narrow them
    past what the seeds say."""
    episodes = _episodes([[True] * 4, [True, False, True, False]])
    summary = summarize(episodes)
    assert summary["success_rate"] == 0.75 and summary["episodes"] == 8
    assert summary["success_ci95"] == list(wilson_ci95(1.5, 2))
    assert summary["ci95"] == list(mean_ci95([1.0, 0.5])[1:])
    as_if_independent = wilson_ci95(6, 8)
    low, high = summary["success_ci95"]
    assert low < as_if_independent[0] and high >= as_if_independent[1]


def test_a_single_trial_summary_has_no_pass_k():
    episodes = [{"seed": 0, "success": True, "return": 1.0, "turns": 1}]
    assert "pass_k" not in summarize(episodes)


# ------------------------------------------------------------ a real run
@pytest.fixture(scope="module")
def game(tmp_path_factory) -> dict[str, Any]:
    """`envgym eval` of the random agent on easy TicTacToe: 8 seeds x 3 trials, in a file."""
    out = tmp_path_factory.mktemp("passk") / "game.json"
    argv = [
        "eval",
        GAME,
        "--difficulty",
        "easy",
        "--episodes",
        "8",
        "--trials",
        "3",
        "--seed",
        "40",
    ]
    assert main([*argv, "--num-envs", "5", "--out", str(out)]) == 0
    return load_results(out)


def test_eval_with_trials_writes_a_file_that_loads_and_verifies(game):
    assert (game["seed"], game["num_episodes"], game["trials"]) == (40, 8, 3)
    assert [(e["seed"], e["trial"]) for e in game["episodes"]] == [
        (s, t) for s in range(40, 48) for t in range(3)
    ]
    summary = game["summary"]
    assert summary["episodes"] == 24
    verdict = verify_submission(game)
    assert verdict.accepted, verdict.reason
    assert verdict.checked_episodes == 24
    values = [summary["pass_k"][k] for k in ("1", "2", "3")]
    assert values == sorted(values, reverse=True)  # pass^k never grows with k
    assert values[0] == pytest.approx(summary["success_rate"])
    assert 0 < values[0] < 1  # the random agent wins some games and loses some
    assert values[-1] < values[0]  # and not every seed it wins once does it win always


def test_trials_of_a_seed_get_their_own_agent_seed_and_differ(game):
    by_seed: dict[int, list[dict[str, Any]]] = {}
    for episode in game["episodes"]:
        by_seed.setdefault(episode["seed"], []).append(episode)
    for trials in by_seed.values():
        assert len({e["agent_seed"] for e in trials}) == 3
    # Same task, other draws: some seed's trials play differently.
    assert any(len({json.dumps(e["actions"]) for e in trials}) > 1 for trials in by_seed.values())
    assert any(len({e["success"] for e in trials}) > 1 for trials in by_seed.values())


def test_trial_0_is_the_single_trial_run_and_the_run_repeats(game):
    single = evaluate(GAME, "random", episodes=8, seed=40, env_kwargs=EASY)
    assert single["trials"] == 1 and "pass_k" not in single["summary"]
    assert all("trial" not in e for e in single["episodes"])
    trial_0 = [e for e in game["episodes"] if e["trial"] == 0]
    assert [e["actions"] for e in trial_0] == [e["actions"] for e in single["episodes"]]
    assert [e["agent_seed"] for e in trial_0] == [e["agent_seed"] for e in single["episodes"]]
    # However many envs play at once, the same (seed, trial) plays the same way.
    again = evaluate(GAME, "random", episodes=8, seed=40, env_kwargs=EASY, trials=3)
    assert again["episodes"] == game["episodes"]
    assert again["summary"] == game["summary"]


def test_the_cli_table_shows_pass_k_and_counts_seeds_times_trials(capsys, tmp_path):
    assert main(["eval", GAME, "--episodes", "2", "--trials", "3"]) == 0
    out = capsys.readouterr().out
    assert "pass^1/.../pass^3" in out
    assert "2 x 3" in out
    assert re.search(r"\d\.\d\d/\d\.\d\d/\d\.\d\d", out)
    assert main(["eval", GAME, "--episodes", "2"]) == 0
    assert "pass^" not in capsys.readouterr().out


@pytest.mark.parametrize("trials", [0, 33, -1, True, 2.0, "3"])
def test_a_bad_trial_count_is_refused_before_any_episode(trials):
    with pytest.raises(EvaluationError, match="trials must be a whole number from 1 to 32"):
        evaluate(GAME, "random", episodes=1, trials=trials)
    with pytest.raises(EvaluationError, match="trials must be"):
        evaluate_many([(GAME, {})], "random", episodes=1, seed=0, trials=trials)


@pytest.mark.parametrize("text", ["0", "33", "two"])
def test_the_cli_refuses_a_bad_trials_flag(text, capsys):
    assert main(["eval", GAME, "--trials", text]) == 2
    assert "--trials" in capsys.readouterr().err


class SeedlessBatchAgent:
    """A batch agent whose reset_slot takes no seed."""

    name = "openai"

    def reset_slot(self, slot: int) -> None: ...
    def act_batch(self, slots, observations, infos):
        return ["1"] * len(slots)

    def usage(self, slot: int) -> dict[str, int]:
        return {"prompt_tokens": 0, "completion_tokens": 0}


def test_a_batch_agent_that_cannot_seed_a_slot_is_refused_for_trials():
    from envgym.evaluation.play import play
    from envgym.vector import TextVectorEnv

    with TextVectorEnv([(GUESS, {})], 2) as vector_env:
        with pytest.raises(EvaluationError, match="reset_slot takes no seed"):
            play(vector_env, SeedlessBatchAgent(), [0, 1], trials=2)


# ------------------------------------------------------------ an LLM agent's trials
def test_an_openai_agent_samples_each_trial_with_its_own_seed():
    """A sampling server guesses GuessNumber's secret from the request's seed:
    trials of one seed differ, and the file they make verifies."""
    if fastapi is None:
        pytest.skip("needs fastapi")
    pytest.importorskip("httpx")
    from envgym.serving import AppServer
    from envgym.sockets import listening_socket

    seeds_sent: list[int | None] = []

    async def completions(request: fastapi.Request) -> Any:
        body = await request.json()
        seeds_sent.append(body.get("seed"))
        turn = sum(m["role"] == "assistant" for m in body["messages"])
        guess = random.Random(f"{body.get('seed')}/{turn}").randint(1, 100)
        return {
            "id": "x",
            "object": "chat.completion",
            "model": body["model"],
            "choices": [{"index": 0, "message": {"role": "assistant", "content": str(guess)}}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1},
        }

    app = fastapi.FastAPI()
    app.post("/v1/chat/completions")(completions)
    server = AppServer(app, listening_socket())
    server.start()
    try:
        spec = f"openai:{server.url}/v1#sampler"
        results = evaluate_many(
            [(GUESS, {})], spec, episodes=2, seed=3, num_envs=4, trials=3, agent_options={}
        )[0]
    finally:
        server.close()
    assert len(set(seeds_sent)) == 5  # the agent's own seed (trial 0) and 2 x 2 trial seeds
    for seed in (3, 4):
        actions = [json.dumps(e["actions"]) for e in results["episodes"] if e["seed"] == seed]
        assert len(set(actions)) == 3
    assert verify_submission(results).accepted


# ------------------------------------------------------------ forged files
@pytest.fixture(scope="module")
def guess3() -> dict[str, Any]:
    """GuessNumber, 2 seeds x 3 trials of the random agent (which never wins)."""
    return evaluate(GUESS, "random", episodes=2, seed=7, trials=3)


def forge(results, change, *, resummarize=True):
    forged = copy.deepcopy(results)
    change(forged)
    if resummarize:
        forged["summary"] = summarize(forged["episodes"])
    return forged


def rejected(results: Any) -> str:
    verdict = verify_submission(results)
    assert not verdict.accepted, "a forged file was accepted"
    return verdict.reason


def test_a_claimed_pass_3_of_one_with_a_failed_trial_is_rejected(game):
    failed = [e for e in game["episodes"] if not e["success"]]
    assert failed

    def claim(r):
        r["summary"]["pass_k"]["3"] = 1.0

    reason = rejected(forge(game, claim, resummarize=False))
    assert "summary.pass_k is" in reason and "the episodes give" in reason

    # A careful forger flips the failed trials and recomputes the summary: the replay says no.
    def flip(r):
        for e in r["episodes"]:
            e["success"] = True

    forged = forge(game, flip)
    assert forged["summary"]["pass_k"]["3"] == 1.0
    assert "does not replay" in rejected(forged)


def test_a_duplicated_trial_is_rejected(guess3):
    def duplicate(r):
        r["episodes"][1] = copy.deepcopy(r["episodes"][0])

    reason = rejected(forge(guess3, duplicate))
    assert "repeats seed 7 trial 0" in reason


def test_a_missing_trial_is_rejected(guess3):
    def drop(r):
        del r["episodes"][2]

    reason = rejected(forge(guess3, drop, resummarize=False))
    assert "seed 7 has 2 trials but the header's trials is 3" in reason
    assert "trial 2 of seed 7 is missing" in reason


@pytest.mark.parametrize("claimed", [2, 4, 1])
def test_a_trial_count_that_disagrees_with_the_header_is_rejected(guess3, claimed):
    reason = rejected(forge(guess3, lambda r: r.__setitem__("trials", claimed)))
    assert "the header's trials is" in reason


def test_trials_out_of_order_or_unnumbered_are_rejected(guess3):
    def swap(r):
        r["episodes"][0], r["episodes"][1] = r["episodes"][1], r["episodes"][0]

    assert "should be trial 0" in rejected(forge(guess3, swap))

    def unnumber(r):
        del r["episodes"][4]["trial"]

    assert "episodes[4].trial is missing" in rejected(forge(guess3, unnumber))


def test_a_summary_without_pass_k_or_with_an_extra_k_is_rejected(guess3):
    def strip(r):
        del r["summary"]["pass_k"]

    assert "summary.pass_k is missing" in rejected(forge(guess3, strip, resummarize=False))

    def extra(r):
        r["summary"]["pass_k"]["4"] = 0.0

    assert "summary.pass_k is" in rejected(forge(guess3, extra, resummarize=False))


def test_a_huge_trial_count_is_refused_by_the_schema(guess3):
    reason = rejected(forge(guess3, lambda r: r.__setitem__("trials", 10**6)))
    assert "trials" in reason


def test_load_refuses_bad_numbering_and_old_files_without_trials_still_load(guess3, tmp_path):
    bad = forge(guess3, lambda r: r["episodes"][1].__setitem__("trial", 0))
    with pytest.raises(ResultsFileError, match="repeats seed 7 trial 0"):
        validate_results(bad)
    old = evaluate(GUESS, "random", episodes=2, seed=7)
    del old["trials"]  # a file written before trials existed
    path = tmp_path / "old.json"
    path.write_text(json.dumps(old))
    assert load_results(path)["episodes"] == old["episodes"]
    assert verify_submission(old).accepted
    write_results(guess3, tmp_path / "new.json")
    assert load_results(tmp_path / "new.json") == guess3
