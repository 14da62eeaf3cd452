"""The games' fast paths give what the general code gives: the whole-reply
answer parser against the full parser on a fuzz corpus of tricky replies, the
board texts patched move by move against texts drawn from scratch, and the
games that declare lower-case moves against their legal moves."""

from __future__ import annotations

import random

import pytest

from envgym.envs.games import connect_four_v0, kuhn_poker_v0, tictactoe_v0
from envgym.parsing import _parse_tag_full, parse_answer, parse_tag, whole_answer

#: Pieces of replies that have broken parsers: tags in every case, reasoning
#: blocks, stray brackets, \boxed{}, whitespace, characters whose lower case
#: changes length.
FRAGMENTS = (
    "<answer>",
    "</answer>",
    "<ANSWER>",
    "</Answer>",
    "<answer >",
    "<think>",
    "</think>",
    "think>",
    "<THINK>",
    "\\boxed{4}",
    "\\boxed{",
    "}",
    "<",
    ">",
    "</",
    "answer>",
    "<answer",
    "5",
    "bet",
    "Call",
    " ",
    "  ",
    "\n",
    "\t",
    "x",
    "İ",
    "é",
    "<tool_call>",
    "</tool_call>",
)
TAGS = ("answer", "Answer", "think", "tool_call", "x")


def _corpus(count: int, seed: int = 0) -> list[str]:
    rng = random.Random(seed)
    replies = []
    for _ in range(count):
        inner = "".join(rng.choice(FRAGMENTS) for _ in range(rng.randrange(0, 6)))
        shape = rng.randrange(4)
        if shape == 0:  # the fast path's own shape, with anything inside
            replies.append(f"<answer>{inner}</answer>")
        elif shape == 1:  # that shape with something around it
            outer = rng.choice(FRAGMENTS)
            replies.append(
                rng.choice((f"{outer}<answer>{inner}</answer>", f"<answer>{inner}</answer>{outer}"))
            )
        else:
            replies.append("".join(rng.choice(FRAGMENTS) for _ in range(rng.randrange(0, 9))))
    return replies + ["", "<answer></answer>", "<answer>  5 </answer>", "<think></think>"]


def test_whole_reply_fast_path_equals_the_full_parser_on_a_fuzz_corpus():
    corpus = _corpus(6000)
    fast_hits = 0
    for text in corpus:
        for tag in TAGS:
            full = _parse_tag_full(text, tag, f"<{tag.lower()}>", f"</{tag.lower()}>", "...")
            assert parse_tag(text, tag) == full, (text, tag)
        value = whole_answer(text)
        if value is not None:
            fast_hits += 1
            assert parse_answer(text) == parse_tag(text, "answer")
            assert parse_answer(text).value == value, text
    assert fast_hits > 300  # the corpus does exercise the fast path


def _random_game(env, seed: int):
    """Random legal play, yielding after each move."""
    rng = random.Random(seed)
    env.reset(seed=seed)
    for _agent in env.agent_iter():
        _, _, terminated, truncated, info = env.last()
        if terminated or truncated:
            env.step(None)
            continue
        legal = info["admissible_actions"]
        env.step(f"<answer>{rng.choice(legal)}</answer>")
        yield legal


@pytest.mark.parametrize("module", [tictactoe_v0, connect_four_v0])
def test_board_texts_patched_per_move_equal_texts_drawn_from_scratch(module):
    env = module.env()
    fresh = module.env()
    for seed in range(30):
        for _ in _random_game(env, seed):
            fresh.restore(env.snapshot())  # restore drops every cache
            assert env._grid() == fresh._grid()
            assert env._state_key() == fresh._state_key()
            assert env.observe("player_0") == fresh.observe("player_0")


@pytest.mark.parametrize(
    "env", [tictactoe_v0.env(), connect_four_v0.env(), kuhn_poker_v0.env(rounds=3)]
)
def test_games_that_declare_lower_case_moves_have_only_lower_case_moves(env):
    assert env.lower_case_moves
    for seed in range(30):
        for legal in _random_game(env, seed):
            assert all(action == action.lower() for action in legal)
    # Replies still match without regard to case.
    env.reset(seed=0)
    move = env.infos[env.agent_selection]["admissible_actions"][0]
    env.step(f"<ANSWER> {move.upper()} </ANSWER>")
    assert env.infos[env.possible_agents[0]]["action_valid"]
