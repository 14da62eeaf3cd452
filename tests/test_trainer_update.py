"""The pieces of a GRPO step on hand-built input: batched generation equals
one prompt at a time and stops at the end of a turn; the clipped update
raises the log-prob of replies with a positive advantage and lowers those
with a negative one, touching only the policy's tokens; every estimator and
loss aggregation runs end to end."""

from __future__ import annotations

import copy

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from envgym.trainers.common.generation import SamplingParams, TransformersBackend  # noqa: E402
from envgym.trainers.common.policy import token_logprobs  # noqa: E402
from envgym.trainers.common.rollout import Episode, TurnRecord  # noqa: E402
from envgym.trainers.common.tiny import build_tiny_model  # noqa: E402
from envgym.trainers.common.tokenization import ChatTokenizer  # noqa: E402
from envgym.trainers.grpo import GRPOConfig, policy_update, train  # noqa: E402


@pytest.fixture(scope="module")
def tiny():
    return build_tiny_model(seed=3, initializer_range=0.5)


def test_a_batch_of_prompts_is_answered_as_each_prompt_alone(tiny):
    model, tokenizer = tiny
    chat = ChatTokenizer(tokenizer)
    backend = TransformersBackend(model, tokenizer.pad_token_id, chat.stop_token_ids)
    prompts = [
        chat.start(text)[1].ids for text in ("Go.", "A longer observation, padded less.", "x")
    ]
    greedy = SamplingParams(temperature=0.0, max_new_tokens=16)
    batch = backend.generate(prompts, greedy)
    assert batch == [backend.generate([p], greedy)[0] for p in prompts]
    for reply in batch:
        stops = [i for i, t in enumerate(reply) if t in chat.stop_token_ids]
        # Cut at the first stop token, else at the token limit.
        assert stops == [len(reply) - 1] if stops else len(reply) == 16
    split = TransformersBackend(model, tokenizer.pad_token_id, chat.stop_token_ids, batch_size=2)
    assert split.generate(prompts, greedy) == batch


@pytest.mark.parametrize(
    "kwargs,match",
    [
        ({"temperature": -1}, "temperature"),
        ({"top_p": 0}, "top_p"),
        ({"max_new_tokens": 0}, "max_new_tokens"),
    ],
)
def test_bad_sampling_parameters_are_refused(kwargs, match):
    with pytest.raises(ValueError, match=match):
        SamplingParams(**kwargs)


def _episode(chat, reply: str, group: int = 0) -> Episode:
    messages, tokens = chat.start("P F\nH G\nPosition: row 1, column 1.")
    ids = chat.encode(reply) + [chat.stop_token_ids[0]]
    chat.add_reply(messages, tokens, ids)
    episode = Episode(group=group, seed=0, task_id=None, tokens=tokens, messages=messages)
    episode.turns.append(TurnRecord("obs", reply, 0.0, None, True))
    return episode


def _reply_logprob(model, episode) -> tuple[float, float]:
    """Sum of log-probs over the reply's tokens and over the prompt's tokens."""
    ids = torch.tensor([episode.tokens.ids])
    with torch.no_grad():
        logp, _ = token_logprobs(model, ids, torch.ones_like(ids), 1.0)
    mask = torch.tensor(episode.tokens.loss_mask[1:], dtype=torch.bool)
    return float(logp[0][mask].sum()), float(logp[0][~mask].sum())


@pytest.mark.parametrize("temperature", [1.0, 0.7])
def test_masked_logprobs_are_log_softmax_at_the_scored_tokens_gradient_included(tiny, temperature):
    model = copy.deepcopy(tiny[0])
    torch.manual_seed(0)
    ids = torch.randint(0, len(tiny[1]), (3, 17))
    attention = torch.ones_like(ids)
    mask = (torch.rand(3, 16) < 0.4).float()
    mask[1] = 0  # a row with nothing to score

    logits = model(input_ids=ids, attention_mask=attention).logits[:, :-1].float() / temperature
    logp_all = torch.log_softmax(logits, dim=-1)
    expected = logp_all.gather(-1, ids[:, 1:, None])[..., 0] * mask
    expected_entropy = -(logp_all.exp() * logp_all).sum(-1) * mask
    (grad_expected,) = torch.autograd.grad(
        expected.sum(), model.model.embed_tokens.weight, retain_graph=True
    )

    logp, entropy = token_logprobs(model, ids, attention, temperature, mask)
    assert torch.allclose(logp, expected, atol=1e-5)
    assert torch.allclose(entropy, expected_entropy, atol=1e-5)
    assert torch.count_nonzero(logp[mask == 0]) == 0
    (grad,) = torch.autograd.grad(logp.sum(), model.model.embed_tokens.weight)
    assert float((grad - grad_expected).abs().max()) <= 1e-4 * float(grad_expected.abs().max())
    # An entropy bonus gets the entropy's gradient; without one, the entropy has no graph.
    assert not entropy.requires_grad
    _, entropy = token_logprobs(model, ids, attention, temperature, mask, entropy_grad=True)
    (grad_entropy,) = torch.autograd.grad(entropy.sum(), model.model.embed_tokens.weight)
    (grad_expected,) = torch.autograd.grad(expected_entropy.sum(), model.model.embed_tokens.weight)
    assert float((grad_entropy - grad_expected).abs().max()) <= 1e-4 * float(
        grad_expected.abs().max()
    )
    # Without a mask, every position is scored.
    full, _ = token_logprobs(model, ids, attention, temperature)
    assert torch.allclose(full, logp_all.gather(-1, ids[:, 1:, None])[..., 0], atol=1e-5)


@pytest.mark.parametrize("loss_agg", ["token-mean", "sequence-mean"])
def test_the_update_follows_the_advantage_on_the_policys_tokens_only(tiny, loss_agg):
    model = copy.deepcopy(tiny[0])
    chat = ChatTokenizer(tiny[1])
    good, bad = _episode(chat, "<answer>Right</answer>"), _episode(chat, "<answer>Down</answer>")
    before = [_reply_logprob(model, e) for e in (good, bad)]
    # A step small enough for its first-order direction to show: Adam's first
    # step moves every weight by about the learning rate, and 1e-2 overshot
    # once the tiny tokenizer's corpus (a few TicTacToe games among them) changed.
    config = GRPOConfig(loss_agg=loss_agg, learning_rate=1e-3)
    optimizer = torch.optim.AdamW(model.parameters(), lr=config.learning_rate, weight_decay=0.0)
    stats = policy_update(
        model, optimizer, [good, bad], [[1.0], [-1.0]], config, chat.tokenizer.pad_token_id
    )
    after = [_reply_logprob(model, e) for e in (good, bad)]
    assert after[0][0] > before[0][0]  # the positive reply got likelier
    assert after[1][0] < before[1][0]  # the negative one less likely
    assert set(stats) >= {"losses/policy", "losses/kl", "losses/entropy", "losses/clip_fraction"}
    # Zero advantages and no KL: no gradient, the weights stay as they were.
    still = copy.deepcopy(model)
    optimizer = torch.optim.AdamW(still.parameters(), lr=1e-2, weight_decay=0.0)
    policy_update(still, optimizer, [good, bad], [[0.0], [0.0]], config, 0)
    assert all(
        torch.equal(a, b) for a, b in zip(model.parameters(), still.parameters(), strict=True)
    )


@pytest.mark.parametrize("estimator", ["grpo", "rloo", "gigpo", "turn"])
def test_every_estimator_trains_end_to_end(tmp_path, estimator):
    summary = train(
        GRPOConfig(
            env="envgym/FrozenLake-v0",
            env_kwargs={"max_turns": 2},
            estimator=estimator,
            loss_agg="sequence-mean" if estimator == "turn" else "token-mean",
            steps=1,
            num_groups=2,
            group_size=2,
            max_new_tokens=6,
            torch_threads=1,
            out_dir=str(tmp_path / estimator),
            progress=False,
            tensorboard=False,
            drop_zero_variance=False,
        )
    )
    assert summary["steps"] == 1 and summary["checkpoint"].endswith("step_000001")
