"""trainers/ppo.py: turn-level GAE and the clipped value loss on numbers worked
out by hand, where the critic reads each turn's value and that it learns one,
the value head kept out of the model folder and restored on resume, two
torchrun ranks taking the one-process step, and PPO learning a small
FrozenLake map on the CPU.

Every expected number is written out from the definitions in
`envgym.trainers.common.advantages.turn_gae` and `envgym.trainers.ppo`, never by
calling the function a second time. The learning test uses the recipe of
tests/test_trainer_grpo.py: the tiny random model after a format warm-up on
random valid moves, the map ``SF/HG`` with 3 turns of one move (Right then
Down reaches the goal, Down first falls in the hole), torch on one thread.
Run as a script, this file is one rank of the torchrun test.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

import envgym  # noqa: F401 - registers the ids
from envgym.trainers.common.advantages import turn_gae
from envgym.trainers.common.rollout import Episode, TurnRecord

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from distributed_update import torchrun  # noqa: E402
from frozen_lake_task import LEARNING_SETTINGS, random_success_rate  # noqa: E402

from envgym.trainers.common.run_log import read_metrics  # noqa: E402
from envgym.trainers.ppo import (  # noqa: E402
    PPOConfig,
    clipped_value_loss,
    main,
    train,
    turn_advantages,
)


def assert_close(actual, expected) -> None:
    assert actual.dtype == np.float64
    np.testing.assert_allclose(actual, expected, rtol=1e-9, atol=1e-12)


# ---------------------------------------------------------------- turn-level GAE
def test_gae_with_lambda_one_is_the_discounted_return_minus_the_value():
    # gamma 0.9, the reward on the last turn: G = [0.81, 0.9, 1.0].
    # A = G - V = [0.81 - 0.5, 0.9 - 0.2, 1.0 - 0.8]; the targets are G itself.
    advantages, returns = turn_gae([0.0, 0.0, 1.0], [0.5, 0.2, 0.8], gamma=0.9, lam=1.0)
    assert_close(advantages, [0.31, 0.7, 0.2])
    assert_close(returns, [0.81, 0.9, 1.0])


def test_gae_with_lambda_zero_is_the_one_step_td_error():
    # delta_t = r_t + 0.9 V_{t+1} - V_t, V_3 = 0 (terminated):
    # 0 + 0.9*0.2 - 0.5 = -0.32;  0 + 0.9*0.8 - 0.2 = 0.52;  1 + 0 - 0.8 = 0.2.
    # Targets A + V: the one-step targets r_t + 0.9 V_{t+1} = 0.18, 0.72, 1.0.
    advantages, returns = turn_gae([0.0, 0.0, 1.0], [0.5, 0.2, 0.8], gamma=0.9, lam=0.0)
    assert_close(advantages, [-0.32, 0.52, 0.2])
    assert_close(returns, [0.18, 0.72, 1.0])


def test_gae_credits_the_turns_before_a_mid_episode_reward():
    # gamma 1, lambda 0.5, every V = 0.5, the reward on the middle turn:
    # delta = [0 + 0.5 - 0.5, 1 + 0.5 - 0.5, 0 + 0 - 0.5] = [0, 1, -0.5]
    # A_2 = -0.5;  A_1 = 1 + 0.5 * -0.5 = 0.75;  A_0 = 0 + 0.5 * 0.75 = 0.375.
    advantages, returns = turn_gae([0.0, 1.0, 0.0], [0.5, 0.5, 0.5], gamma=1.0, lam=0.5)
    assert_close(advantages, [0.375, 0.75, -0.5])
    assert_close(returns, [0.875, 1.25, 0.0])
    # The turn that earned it gets most, the turn before it some, the turn after it blame.
    assert advantages[1] > advantages[0] > 0 > advantages[2]


def test_a_cut_episode_bootstraps_from_the_value_after_its_last_turn():
    # gamma 0.5, lambda 1, no reward, V = [0.4, 0.6], and V(s_2) = 0.8 after the cut:
    # A_1 = 0 + 0.5*0.8 - 0.6 = -0.2;  A_0 = (0 + 0.5*0.6 - 0.4) + 0.5 * -0.2 = -0.2,
    # i.e. G_0 = 0.25 * 0.8 = 0.2 minus V_0 = 0.4.
    advantages, returns = turn_gae([0.0, 0.0], [0.4, 0.6], gamma=0.5, lam=1.0, last_value=0.8)
    assert_close(advantages, [-0.2, -0.2])
    assert_close(returns, [0.2, 0.4])
    # Worth nothing afterwards (terminated): A_1 = -0.6, A_0 = -0.1 + 0.5 * -0.6 = -0.4.
    ended, _ = turn_gae([0.0, 0.0], [0.4, 0.6], gamma=0.5, lam=1.0)
    assert_close(ended, [-0.4, -0.6])


def _episode(rewards, **ending) -> Episode:
    turns = [TurnRecord("obs", "<answer>Up</answer>", r, None, True) for r in rewards]
    return Episode(group=0, seed=0, task_id=None, turns=turns, **ending)


def test_only_an_episode_the_context_cut_bootstraps():
    # The same numbers as above under three endings. The env's turn limit is part
    # of the task (the observation counts the turns left), so only the trainer's
    # cut at the context limit leaves a future worth V(s_T) = 0.8.
    endings = [{"terminated": True}, {"truncated": True}, {"truncated": True, "context_full": True}]
    episodes = [_episode([0.0, 0.0], **e) for e in endings]
    advantages, returns = turn_advantages(episodes, [[0.4, 0.6]] * 3, [0.8] * 3, gamma=0.5, lam=1.0)
    assert_close(advantages[0], [-0.4, -0.6])
    assert_close(advantages[1], [-0.4, -0.6])
    assert_close(advantages[2], [-0.2, -0.2])
    assert_close(returns[2], [0.2, 0.4])


def test_gae_refuses_values_that_do_not_fit_the_rewards():
    with pytest.raises(ValueError, match="one value per turn"):
        turn_gae([0.0, 1.0], [0.5], gamma=1.0, lam=0.95)
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        turn_gae([1.0], [0.0], gamma=1.0, lam=1.5)


# ------------------------------------------------------------ the value loss
def test_the_value_loss_gains_nothing_beyond_the_clip():
    # Rollout value 0.5, target 1.0, clip 0.2: V may move to 0.3 .. 0.7 for free.
    old = torch.tensor([0.5, 0.5, 0.5])
    target = torch.tensor([1.0, 1.0, 1.0])
    values = torch.tensor([0.9, 0.6, 0.2], requires_grad=True)
    loss = clipped_value_loss(values, old, target, clip=0.2)
    # 0.9: unclipped (0.1)^2 = 0.01, clipped to 0.7: (0.3)^2 = 0.09, the max halved: 0.045.
    # 0.6: inside the clip, both 0.16: 0.08.
    # 0.2: unclipped (0.8)^2 = 0.64, clipped to 0.3: 0.49; the max: 0.32.
    np.testing.assert_allclose(loss.detach().numpy(), [0.045, 0.08, 0.32], rtol=1e-6)
    loss.sum().backward()
    # Past the clip toward the target, no pull further; inside, V - R; moving the
    # wrong way is always pulled back.
    np.testing.assert_allclose(values.grad.numpy(), [0.0, -0.4, -0.8], rtol=1e-6)
    plain = clipped_value_loss(torch.tensor([0.9]), torch.tensor([0.5]), torch.tensor([1.0]), 0.0)
    assert plain.item() == pytest.approx(0.005)  # 0.5 * 0.1^2, no clipping


# ------------------------------------------------------------ runs on the tiny model
def ppo_config(tmp_path, **overrides) -> PPOConfig:
    settings = dict(LEARNING_SETTINGS, num_episodes=32, steps=40, out_dir=str(tmp_path / "run"))
    settings.update(overrides)
    return PPOConfig(**settings)


@pytest.mark.slow
def test_ppo_learns_a_small_frozen_lake(tmp_path):
    random_level = random_success_rate()
    assert 0.05 < random_level < 0.25
    train(ppo_config(tmp_path))
    rows = read_metrics(tmp_path / "run")
    success = [row["charts/success_rate"] for row in rows]
    # The first steps play at the random agent's level (the warm-up taught the format only).
    assert np.mean(success[:5]) < random_level + 0.15
    # The last 5 steps' 160 sampled episodes succeed at least 80% of the time.
    assert np.mean(success[-5:]) >= 0.8, success
    assert all(np.isfinite(row["losses/value"]) for row in rows)


def test_the_critic_sees_the_prompt_but_not_the_reply():
    from envgym.trainers.common.policy import load_policy, pad_tokens
    from envgym.trainers.common.tokenization import EpisodeTokens
    from envgym.trainers.ppo import forward

    torch.set_num_threads(1)
    model, _ = load_policy("tiny", 0, "cpu")
    head = torch.nn.Linear(model.config.hidden_size, 1)  # a critic that has learned something

    def values(prompt, reply):
        tokens = EpisodeTokens()
        tokens.add_env(prompt)
        tokens.add_policy(reply)
        batch = pad_tokens([tokens], None, 0)
        batch["turn_pos"] = torch.tensor([[len(prompt) - 1]])
        with torch.no_grad():
            return forward(model, head, batch, 1.0)[2][0, 0].item()

    base = values([5, 6, 7, 8], [9, 10])
    assert values([5, 6, 7, 8], [11, 12, 13]) == pytest.approx(base)  # the reply is ahead of it
    assert values([5, 6, 20, 8], [9, 10]) != pytest.approx(base)  # the observation is not


def test_each_turns_value_is_read_where_its_prompt_ends():
    from envgym.trainers.common.tiny import build_tiny_model
    from envgym.trainers.common.tokenization import ChatTokenizer
    from envgym.trainers.ppo import _batch

    tokenizer = build_tiny_model(seed=3)[1]
    episodes = _two_turn_batch(ChatTokenizer(tokenizer))
    batch = _batch(episodes, tokenizer.pad_token_id, "cpu")
    for row, episode in enumerate(episodes):
        ids = episode.tokens.ids
        for t, pos in enumerate(batch["turn_pos"][row].tolist()):
            seen = tokenizer.decode(ids[: pos + 1])
            assert seen.endswith("<|im_start|>assistant\n")  # the whole prompt, no reply
            assert seen.count("<|im_start|>assistant") == t + 1
            assert tokenizer.decode(ids[pos + 1 :]).startswith(episode.turns[t].reply)


def test_the_critic_learns_what_each_state_is_worth():
    # Two states (maps) the reply is made in: one always pays 1, the other 0.
    # Ten updates on that batch and the critic tells them apart.
    from envgym.trainers.common.distributed import Distributed
    from envgym.trainers.common.tiny import build_tiny_model
    from envgym.trainers.common.tokenization import ChatTokenizer
    from envgym.trainers.ppo import _batch, forward, ppo_update

    torch.set_num_threads(1)
    torch.manual_seed(0)
    model, tokenizer = build_tiny_model(seed=0)
    chat = ChatTokenizer(tokenizer)

    def episode(observation, reward):
        messages, tokens = chat.start(observation)
        reply = chat.encode("<answer>Down</answer>") + [chat.stop_token_ids[0]]
        chat.add_reply(messages, tokens, reply)
        turn = TurnRecord(observation, "<answer>Down</answer>", reward, None, True)
        return Episode(0, 0, None, [turn], tokens, messages, terminated=True)

    episodes = [episode("P F\nH G", 1.0), episode("S F\nP G", 0.0)] * 2
    head = torch.nn.Linear(model.config.hidden_size, 1)
    torch.nn.init.zeros_(head.weight), torch.nn.init.zeros_(head.bias)
    config = PPOConfig(learning_rate=1e-3, num_episodes=4)
    groups = [{"params": model.parameters()}, {"params": head.parameters()}]
    optimizer = torch.optim.AdamW(groups, lr=config.learning_rate)
    pad = tokenizer.pad_token_id
    for _ in range(10):
        ppo_update(model, head, optimizer, episodes, config, pad, Distributed())
    with torch.no_grad():
        paying, not_paying = forward(model, head, _batch(episodes[:2], pad, "cpu"), 1.0)[2][:, 0]
    assert paying - not_paying > 0.5


def _state(run_dir, step: int) -> dict:
    return torch.load(
        run_dir / "checkpoints" / f"step_{step:06d}" / "trainer_state.pt", weights_only=True
    )


def test_the_value_head_is_trainer_state_and_resuming_restores_it(tmp_path):
    from safetensors.torch import load_file
    from transformers import AutoModelForCausalLM

    small = dict(warmup_steps=5, num_episodes=4, minibatches=2, save_every=1, max_new_tokens=8)
    train(ppo_config(tmp_path / "a", steps=3, **small))
    train(ppo_config(tmp_path / "b", steps=2, **small))
    train(ppo_config(tmp_path / "b", steps=3, resume=True, **small))
    a, b = tmp_path / "a" / "run", tmp_path / "b" / "run"
    # The model folder is the plain causal LM an agent loads: no value head in it.
    model_dir = a / "checkpoints" / "step_000003" / "model"
    _, info = AutoModelForCausalLM.from_pretrained(model_dir, output_loading_info=True)
    assert not any(info[k] for k in ("missing_keys", "unexpected_keys", "mismatched_keys"))
    assert not any("value" in key for key in load_file(str(model_dir / "model.safetensors")))
    head = _state(a, 3)["extra"]["value_head"]
    assert head["weight"].shape == (1, 64) and head["weight"].abs().sum() > 0  # it learned
    # The resumed run's critic and policy take the same third update as the straight run's.
    resumed = _state(b, 3)["extra"]["value_head"]
    assert all(torch.equal(head[k], resumed[k]) for k in head)
    wa = load_file(str(model_dir / "model.safetensors"))
    wb = load_file(str(b / "checkpoints" / "step_000003" / "model" / "model.safetensors"))
    assert all(torch.equal(wa[k], wb[k]) for k in wa)
    rows_a, rows_b = read_metrics(a), read_metrics(b)
    assert [r["step"] for r in rows_b] == [1, 2, 3]
    assert rows_a[-1]["losses/value"] == rows_b[-1]["losses/value"]


def test_episodes_cut_by_the_context_still_train(tmp_path):
    # The first prompt is 95 tokens, the second about 150: with room for 120, every
    # episode that outlives its first turn ends there, cut (and bootstraps).
    config = ppo_config(tmp_path, warmup_steps=5, num_episodes=4, steps=2, max_context=120)
    train(config)
    rows = read_metrics(tmp_path / "run")
    assert sum(r["rollout/context_full"] for r in rows) > 0
    assert all(r["charts/episode_turns"] == 1 for r in rows)
    assert all(np.isfinite(r["losses/value"]) for r in rows)


def test_bad_options_are_refused_with_the_flag_to_change(capsys):
    with pytest.raises(ValueError, match="--steps"):
        PPOConfig(steps=0)
    with pytest.raises(ValueError, match="--gae-lambda"):
        PPOConfig(gae_lambda=1.5)
    with pytest.raises(ValueError, match="--value-coef"):
        PPOConfig(value_coef=0.0)
    with pytest.raises(ValueError, match="--minibatches"):
        PPOConfig(num_episodes=2, minibatches=4)
    with pytest.raises(ValueError, match="--eval-seed"):
        PPOConfig(steps=10, num_episodes=8, eval_every=1, eval_seed=20)
    with pytest.raises(SystemExit) as exit_info:
        main(["--gamma", "2"])
    assert exit_info.value.code == 2
    assert "--gamma" in capsys.readouterr().err


def test_main_trains_evaluates_and_writes_results_the_leaderboard_accepts(tmp_path):
    from envgym.evaluation.verify import verify_submission

    out = tmp_path / "cli-run"
    code = main(
        [
            "--env", "envgym/GuessNumber-v0", "--difficulty", "easy", "--model", "tiny",
            "--steps", "2", "--num-episodes", "4", "--max-new-tokens", "8",
            "--eval-every", "1", "--eval-episodes", "3", "--torch-threads", "1",
            "--out-dir", str(out), "--no-progress",
        ]
    )  # fmt: skip
    assert code == 0
    results_files = sorted((out / "eval").glob("step_*.json"))
    assert [p.name for p in results_files] == ["step_000001.json", "step_000002.json"]
    results = json.loads(results_files[-1].read_text())
    assert results["agent"]["model"].endswith("step_000002/model")
    verdict = verify_submission(results)
    assert verdict.accepted, verdict.reason
    rows = read_metrics(out)
    assert [r["step"] for r in rows] == [1, 2]
    assert all("losses/value" in r and "eval/success_rate" in r for r in rows)


# ------------------------------------------------------------ data parallel (torchrun, Gloo)
#: Two-turn episodes: replies of different lengths, rewards on either turn.
BATCH = (
    (("<answer>Right</answer>", 0.0), ("<answer>Down</answer>", 1.0)),
    (("<answer>Down</answer> and a longer tail", -0.1), ("<answer>Up</answer>", 0.0)),
    (("<answer>Left</answer>", 0.0), ("<answer>Right</answer> right", 0.5)),
    (("<answer>Up</answer> up up", 1.0), ("<answer>Left</answer>", -0.1)),
)


def _two_turn_batch(chat) -> list[Episode]:
    episodes = []
    for turns in BATCH:
        messages, tokens = chat.start("P F\nH G\nPosition: row 1, column 1.")
        episode = Episode(group=0, seed=0, task_id=None, tokens=tokens, messages=messages)
        for t, (reply, reward) in enumerate(turns):
            if t:
                chat.add_observation(messages, tokens, "F P\nH G\nTurns left: 1.", stopped=True)
            chat.add_reply(messages, tokens, chat.encode(reply) + [chat.stop_token_ids[0]])
            episode.turns.append(TurnRecord("obs", reply, reward, None, True))
        episode.terminated = True
        episodes.append(episode)
    return episodes


def _update(episodes, dist=None):
    """Two epochs of two minibatches, one episode per forward pass; the new weights."""
    from envgym.trainers.common.distributed import Distributed
    from envgym.trainers.common.tiny import build_tiny_model
    from envgym.trainers.ppo import ppo_update

    torch.set_num_threads(1)
    torch.manual_seed(0)
    model, tokenizer = build_tiny_model(seed=3, initializer_range=0.5)
    head = torch.nn.Linear(model.config.hidden_size, 1)  # not zero: values reach the model
    config = PPOConfig(learning_rate=1e-2, num_episodes=4, micro_batch_size=1)
    groups = [{"params": model.parameters()}, {"params": head.parameters()}]
    optimizer = torch.optim.AdamW(groups, lr=config.learning_rate, weight_decay=0.0)
    ppo_update(
        model, head, optimizer, episodes, config, tokenizer.pad_token_id, dist or Distributed()
    )
    return {**model.state_dict(), **{f"value_head.{k}": v for k, v in head.state_dict().items()}}


def test_two_ranks_on_half_a_batch_each_take_the_one_process_step(tmp_path):
    from envgym.trainers.common.tiny import build_tiny_model
    from envgym.trainers.common.tokenization import ChatTokenizer

    torchrun(__file__, str(tmp_path))
    ranks = [torch.load(tmp_path / f"rank{r}.pt") for r in range(2)]
    episodes = _two_turn_batch(ChatTokenizer(build_tiny_model(seed=3)[1]))
    # Rank r holds episodes 2r and 2r + 1, and minibatch k is slice k of every rank's:
    # one process on the whole batch in the order 0, 2, 1, 3 makes the same minibatches
    # (and normalises the advantages over the same eight turns).
    whole = _update([episodes[i] for i in (0, 2, 1, 3)])
    start = _update([])  # no episodes: no step
    for name, value in whole.items():
        assert torch.equal(ranks[0][name], ranks[1][name]), f"{name} differs between ranks"
        assert torch.allclose(ranks[0][name], value, atol=1e-5), name  # sums in another order
    assert any(not torch.equal(start[n], whole[n]) for n in whole)
    assert not torch.equal(start["value_head.weight"], whole["value_head.weight"])


def test_ppo_under_torchrun_plays_every_ranks_episodes_and_logs_once(tmp_path):
    out = tmp_path / "run"
    torchrun(
        "-m", "envgym.trainers.ppo", "--env", "envgym/FrozenLake-v0",
        "--env-kwargs", '{"max_turns": 2}', "--steps", "2", "--num-episodes", "4",
        "--max-new-tokens", "6", "--torch-threads", "1", "--no-progress", "--no-tensorboard",
        "--out-dir", str(out),
    )  # fmt: skip
    rows = read_metrics(out)
    assert [r["step"] for r in rows] == [1, 2]  # rank 0 alone writes the log
    assert all(r["charts/episodes"] == 4 and r["update/trained_episodes"] == 4 for r in rows)
    state = torch.load(out / "checkpoints" / "step_000002" / "trainer_state.pt")
    assert state["extra"]["value_head"]["weight"].shape == (1, 64)


if __name__ == "__main__":  # one rank of the torchrun above: python -m torch.distributed.run ...
    import sys
    from pathlib import Path

    from envgym.trainers.common.distributed import init_distributed
    from envgym.trainers.common.tiny import build_tiny_model
    from envgym.trainers.common.tokenization import ChatTokenizer

    dist = init_distributed("cpu")
    episodes = _two_turn_batch(ChatTokenizer(build_tiny_model(seed=3)[1]))
    weights = _update([episodes[i] for i in dist.shard(len(episodes), "the batch")], dist)
    torch.save(weights, Path(sys.argv[1]) / f"rank{dist.rank}.pt")
    dist.close()
