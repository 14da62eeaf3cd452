"""Action parsing: what a model may write and what it is told when it gets it wrong."""

from __future__ import annotations

import random

import pytest

from envgym.parsing import (
    ToolCall,
    first_tag,
    parse_answer,
    parse_boxed,
    parse_tag,
    parse_tool_calls,
    split_moves,
    strip_think,
)


@pytest.mark.parametrize(
    "text,expected",
    [
        ("<think>a</think>b", "b"),
        ("<THINK>a</THINK>b<think>c</think>d", "bd"),
        ("reasoning without an opening tag</think>answer", "answer"),
        ("answer<think>cut off mid-thought", "answer"),
        ("no reasoning", "no reasoning"),
    ],
)
def test_strip_think(text, expected):
    assert strip_think(text) == expected


def test_answer_tag_takes_the_last_innermost_pair_outside_reasoning():
    assert parse_answer("<answer>Up</answer> then <answer>Down</answer>").value == "Down"
    assert parse_answer("<answer><answer>Left</answer></answer>").value == "Left"
    assert parse_answer("<think><answer>Up</answer></think><answer>Right</answer>").value == "Right"
    assert parse_answer("<Answer>  Up \n</Answer>").value == "Up"


def test_case_changing_unicode_does_not_shift_the_answer():
    # "İ".lower() is two characters long; the answer must still be cut out exactly.
    assert parse_answer("İİİ <ANSWER>Up</Answer>").value == "Up"
    assert parse_answer("<think>İİ</think>İ<answer>Left</answer>").value == "Left"
    assert strip_think("İİ<THINK>x</THINK>y") == "İİy"


def test_answer_falls_back_to_boxed():
    assert parse_answer("so \\boxed{\\frac{1}{2}}").value == "\\frac{1}{2}"


def test_missing_or_unclosed_answer_tells_the_model_what_to_write():
    missing = parse_answer("Up", example="Up || Left")
    assert not missing.ok and missing.value is None
    assert "<answer>Up || Left</answer>" in missing.error
    unclosed = parse_answer("<answer>Up")
    assert "not closed" in unclosed.error


def test_answer_only_in_reasoning_does_not_count():
    assert not parse_answer("<think><answer>Up</answer></think>").ok


def test_boxed_needs_balanced_braces():
    assert parse_boxed("\\boxed{a{b}c}").value == "a{b}c"
    assert "closing brace" in parse_boxed("\\boxed{a{b}").error
    assert not parse_boxed("nothing").ok


def test_tool_tags():
    assert parse_tag("<search>capital of Zorbia</search>", "search").value == "capital of Zorbia"
    assert "<search>" in parse_tag("none", "search", example="query").error
    with pytest.raises(ValueError):
        parse_tag("x", "bad tag")


def test_hermes_tool_calls():
    text = (
        '<think>call it</think><tool_call>{"name": "search", "arguments": {"query": "x"}}'
        '</tool_call>\n<tool_call>{"name": "python", "arguments": "{\\"code\\": \\"1+1\\"}"}'
        "</tool_call>"
    )
    calls, error = parse_tool_calls(text)
    assert error is None
    assert calls == [ToolCall("search", {"query": "x"}), ToolCall("python", {"code": "1+1"})]


@pytest.mark.parametrize(
    "text,message",
    [
        ("<tool_call>{not json}</tool_call>", "not valid JSON"),
        ('<tool_call>{"arguments": {}}</tool_call>', 'string "name"'),
        ('<tool_call>{"name": "a", "arguments": [1]}</tool_call>', "JSON object"),
        ('<tool_call>{"name": "a"', "not closed"),
        ("plain text", "No <tool_call>"),
        ("<tool_call>" + "[" * 100_000 + "</tool_call>", "tool call"),
        # json raises a plain ValueError past Python's integer digit limit
        (
            '<tool_call>{"name": "a", "arguments": {"n": ' + "1" * 5000 + "}}</tool_call>",
            "too long",
        ),
        (
            '<tool_call>{"name": "a", "arguments": "{\\"n\\": ' + "1" * 5000 + '}"}</tool_call>',
            "not JSON",
        ),
    ],
)
def test_bad_tool_calls_explain_the_expected_shape(text, message):
    calls, error = parse_tool_calls(text)
    assert calls == []
    assert message in error


def test_split_moves():
    vocab = {"up": "Up", "left": "Left"}
    assert split_moves("up || LEFT,up", vocab) == (["Up", "Left", "Up"], None)
    moves, error = split_moves("up || fly", vocab)
    assert moves == [] and "Unknown move 'fly'" in error
    assert split_moves(" || ", vocab)[1] == "Your answer is empty."
    moves, error = split_moves("飛ぶ", vocab)
    assert error.isascii()


SEARCH_OR_ANSWER = {"tags": ("search", "answer"), "tool_calls": True, "boxed_as": "answer"}


@pytest.mark.parametrize(
    "text,tag,value",
    [
        ("<answer>Paris</answer> <search>capital</search>", "answer", "Paris"),
        (
            "<search>capital  of\n France</search><answer>Paris</answer>",
            "search",
            "capital of France",
        ),
        ("<SEARCH>x</Search>", "search", "x"),
        ("İİ <search>x</search>", "search", "x"),
        ("<search>never closed <answer>Paris</answer>", "answer", "Paris"),
        ("<think><answer>no</answer></think><search>yes</search>", "search", "yes"),
        ("so the answer is \\boxed{ 1 \n 2 }", "answer", "1 \n 2"),
        ("<answer></answer>", "answer", ""),
    ],
)
def test_first_tag_takes_the_earliest_complete_action(text, tag, value):
    assert first_tag(text, **SEARCH_OR_ANSWER) == (tag, value)


def test_first_tag_reports_tool_calls_for_parse_tool_calls():
    text = (
        '<tool_call>{"name": "search", "arguments": {"query": "x"}}</tool_call><answer>y</answer>'
    )
    assert first_tag(text, **SEARCH_OR_ANSWER)[0] == "tool_call"
    assert first_tag(text, ("search", "answer")) == ("answer", "y")


def test_first_tag_explains_a_missing_or_unclosed_action():
    hint = "Write <answer>X</answer>."
    assert first_tag("<answer>Paris", **SEARCH_OR_ANSWER, hint=hint) == (
        None,
        "Your <answer> tag is not closed. Write <answer>X</answer>.",
    )
    missing = "No <search>, <answer> or tool call found in your reply."
    assert first_tag("Paris", **SEARCH_OR_ANSWER) == (None, missing)
    # A \\boxed{} answers only when the caller names the tag it stands for.
    assert first_tag("\\boxed{Paris}", ("answer",)) == (None, "No <answer> found in your reply.")


def test_first_tag_never_raises_on_a_reply():
    rng = random.Random(0)
    pieces = ["<search>", "</search>", "<answer>", "</ANSWER>", "<tool_call>", "</tool_call>",
              "<think>", "</think>", "\\boxed{", "}", "İ", "x", " ", "<", "/"]  # fmt: skip
    for _ in range(5000):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 12)))
        tag, content = first_tag(text, **SEARCH_OR_ANSWER)
        assert isinstance(content, str)
        assert tag is not None or "found in your reply" in content or "not closed" in content
    with pytest.raises(ValueError, match="not a valid"):
        first_tag("x", ("bad tag",))
