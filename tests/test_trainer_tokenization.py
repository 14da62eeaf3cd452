"""Multi-turn tokenization of rollouts: the loss falls on exactly the policy's
tokens, each turn's span decodes to the reply the env received, and the
episode's tokens are the chat template's rendering of the conversation."""

from __future__ import annotations

import gymnasium as gym
import pytest

import envgym  # noqa: F401 - registers the ids

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from envgym.trainers.common.generation import SamplingParams, TransformersBackend  # noqa: E402
from envgym.trainers.common.rollout import collect_rollouts  # noqa: E402
from envgym.trainers.common.tiny import build_tiny_model  # noqa: E402
from envgym.trainers.common.tokenization import ChatTokenizer, TemplateError  # noqa: E402
from envgym.trainers.common.warmup import format_warmup  # noqa: E402
from envgym.vector import TextVectorEnv  # noqa: E402

TURNS = 3


class Recorder(gym.Wrapper):
    """Keeps every action the env is stepped with, per episode."""

    log: list[list[str]] = []

    def reset(self, **kwargs):
        self.actions: list[str] = []
        Recorder.log.append(self.actions)
        return super().reset(**kwargs)

    def step(self, action):
        self.actions.append(action)
        return super().step(action)


@pytest.fixture(scope="module")
def tiny():
    return build_tiny_model(seed=1)


def guess_number():
    return gym.make("envgym/GuessNumber-v0", max_turns=TURNS)


def frozen_lake():
    return gym.make("envgym/FrozenLake-v0", max_turns=TURNS)


def _rollout(tiny, max_new_tokens: int, make=guess_number, num_envs: int = 4):
    model, tokenizer = tiny
    chat = ChatTokenizer(tokenizer)
    backend = TransformersBackend(model, tokenizer.pad_token_id, chat.stop_token_ids)
    Recorder.log = []
    envs = TextVectorEnv(
        env_fns=[lambda: Recorder(make()) for _ in range(num_envs)],
        group_size=2,
    )
    with envs:
        torch.manual_seed(0)
        episodes, times = collect_rollouts(
            envs, backend, chat, SamplingParams(max_new_tokens=max_new_tokens), seed=7
        )
    return chat, episodes, times, Recorder.log[:num_envs]


def test_in_a_three_turn_episode_exactly_the_policys_tokens_carry_loss(tiny):
    chat, episodes, times, received = _rollout(tiny, max_new_tokens=10)
    tokenizer = chat.tokenizer
    for episode, actions in zip(episodes, received, strict=True):
        tokens = episode.tokens
        assert len(episode.turns) == TURNS and len(tokens.spans) == TURNS
        assert len(tokens.ids) == len(tokens.loss_mask)
        # The loss mask is 1 on the turn spans and nowhere else.
        in_spans = {p for start, end in tokens.spans for p in range(start, end)}
        assert {p for p, m in enumerate(tokens.loss_mask) if m} == in_spans
        # Each span decodes to the reply the env was stepped with.
        spans = [
            tokenizer.decode(tokens.ids[s:e], skip_special_tokens=True) for s, e in tokens.spans
        ]
        assert spans == actions == [t.reply for t in episode.turns]
        # The env's tokens hold the observations: the first one is in the prompt.
        first = tokenizer.decode(tokens.ids[: tokens.spans[0][0]])
        assert episode.turns[0].observation in first
    # Two groups of two: members of a group played the same task (seed), groups differ.
    assert [e.group for e in episodes] == [0, 0, 1, 1]
    assert episodes[0].seed == episodes[1].seed == 7 and episodes[2].seed == episodes[3].seed == 8
    assert times.generated_tokens == sum(sum(e.tokens.loss_mask) for e in episodes)


@pytest.fixture(scope="module")
def warmed():
    """The tiny model after a format warm-up on FrozenLake: its replies are
    moves in answer tags that end with <|im_end|>."""
    model, tokenizer = build_tiny_model(seed=1)
    torch.manual_seed(0)
    format_warmup(
        model,
        ChatTokenizer(tokenizer),
        frozen_lake,
        steps=40,
        learning_rate=3e-3,
    )
    return model, tokenizer


def test_an_episode_is_the_chat_templates_rendering_of_its_conversation(tiny, warmed):
    # The warmed model's replies stop on <|im_end|>; the random one's are cut at the
    # token limit, where the template's end-of-turn text becomes the env's.
    chat, episodes, _, _ = _rollout(warmed, max_new_tokens=12, make=frozen_lake)
    _, cut, _, _ = _rollout(tiny, max_new_tokens=12, make=frozen_lake)
    assert sum(t.stopped for e in episodes for t in e.turns) > len(episodes)
    assert not any(t.stopped for e in cut for t in e.turns)
    episodes += cut
    tokenizer = chat.tokenizer
    special = set(tokenizer.all_special_ids)
    for episode in episodes:
        tokens = episode.tokens
        rendered = tokenizer.apply_chat_template(episode.messages, tokenize=False)
        # A reply's text leaves out the special tokens the model sampled in it
        # (`ChatTokenizer.decode_reply`: no reply can write the template's role
        # markers); the stop token that ends a reply is the template's own.
        shown = list(tokens.ids)
        for start, end in reversed(tokens.spans):
            body = end - 1 if tokens.ids[end - 1] in chat.stop_token_ids else end
            shown[start:body] = [i for i in tokens.ids[start:body] if i not in special]
        text = tokenizer.decode(shown)
        # The last reply is not followed by the template's newline (the episode ended).
        assert rendered.startswith(text) and len(rendered) - len(text) <= len("<|im_end|>\n")
        for (_, end), turn in zip(tokens.spans, episode.turns, strict=True):
            assert (tokens.ids[end - 1] in chat.stop_token_ids) == turn.stopped


def test_an_episode_that_would_overflow_the_context_ends_truncated(tiny):
    model, tokenizer = tiny
    chat = ChatTokenizer(tokenizer)
    backend = TransformersBackend(model, tokenizer.pad_token_id, chat.stop_token_ids)
    params = SamplingParams(max_new_tokens=10)
    with TextVectorEnv(env_fns=[guess_number]) as envs:
        (whole,), _ = collect_rollouts(envs, backend, chat, params, seed=0)
        first_prompt = whole.tokens.spans[0][0]
        # Room for the first reply, not for the second prompt and its reply.
        (episode,), _ = collect_rollouts(
            envs, backend, chat, params, seed=0, max_tokens=first_prompt + 20
        )
    assert episode.context_full and episode.truncated and not episode.terminated
    assert len(episode.turns) == 1
    assert len(episode.tokens.ids) + params.max_new_tokens > first_prompt + 20


def test_a_template_that_rewrites_earlier_turns_is_refused():
    tok = build_tiny_model(seed=1)[1]
    # Shows only the last user message, so the conversation does not grow by appending.
    tok.chat_template = (
        "{{ messages[-1]['role'] }}: {{ messages[-1]['content'] }}\n"
        "{% if add_generation_prompt %}assistant:{% endif %}"
    )
    chat = ChatTokenizer(tok)
    messages, tokens = chat.start("first observation")
    chat.add_reply(messages, tokens, chat.encode("<answer>1</answer>") + [tok.eos_token_id])
    with pytest.raises(TemplateError, match="rewrites earlier turns"):
        chat.add_observation(messages, tokens, "second observation", stopped=True)


def test_a_tokenizer_without_a_chat_template_is_refused():
    tok = build_tiny_model(seed=1)[1]
    tok.chat_template = None
    with pytest.raises(TemplateError, match="no chat template"):
        ChatTokenizer(tok)


def test_a_first_prompt_the_context_cannot_hold_is_a_clear_error(tiny):
    """A tool world's policy alone can outgrow a small model's context: no episode
    could start, so the trainer says so and what to change, before it trains."""
    model, tokenizer = tiny
    chat = ChatTokenizer(tokenizer)
    backend = TransformersBackend(model, tokenizer.pad_token_id, chat.stop_token_ids)
    params = SamplingParams(max_new_tokens=10)
    with TextVectorEnv(env_fns=[guess_number]) as envs:
        (whole,), _ = collect_rollouts(envs, backend, chat, params, seed=0)
        first_prompt = whole.tokens.spans[0][0]
        with pytest.raises(ValueError, match=r"does not fit the model's context.*--system-prompt"):
            collect_rollouts(envs, backend, chat, params, seed=0, max_tokens=first_prompt + 5)
