"""Data parallelism under torchrun, on the CPU (Gloo over the loopback):
two processes that each update on half a batch end with the weights one
process gets from the whole batch, and a two-process GRPO run plays every
rank's episodes and writes one run folder."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from distributed_update import batch, torchrun, update  # noqa: E402

HERE = Path(__file__).parent


@pytest.mark.parametrize("loss_agg", ["token-mean", "sequence-mean"])
def test_two_ranks_on_half_a_batch_each_take_the_one_process_step(tmp_path, loss_agg):
    from envgym.trainers.common.tiny import build_tiny_model
    from envgym.trainers.common.tokenization import ChatTokenizer

    torchrun(str(HERE / "distributed_update.py"), str(tmp_path), loss_agg)
    ranks = [torch.load(tmp_path / f"rank{r}.pt") for r in range(2)]
    tokenizer = build_tiny_model(seed=3, initializer_range=0.5)[1]
    episodes, advantages = batch(ChatTokenizer(tokenizer))
    # Rank r holds episodes 2r and 2r + 1, and minibatch k is slice k of every rank's:
    # one process on the whole batch in the order 0, 2, 1, 3 makes the same minibatches.
    order = [0, 2, 1, 3]
    whole = update(
        loss_agg, [episodes[i] for i in order], [advantages[i] for i in order]
    ).state_dict()
    start = build_tiny_model(seed=3, initializer_range=0.5)[0].state_dict()
    for name, value in whole.items():
        assert torch.equal(ranks[0][name], ranks[1][name]), f"{name} differs between ranks"
        # Sums in another order: equal up to float rounding, and the step moved them.
        assert torch.allclose(ranks[0][name], value, atol=1e-5), name
    assert any(not torch.equal(start[n], whole[n]) for n in whole)


def test_grpo_under_torchrun_plays_every_ranks_groups_and_logs_once(tmp_path):
    out = tmp_path / "run"
    torchrun(
        "-m", "envgym.trainers.grpo",
        "--env", "envgym/FrozenLake-v0",
        "--env-kwargs", '{"max_turns": 2}',
        "--steps", "2",
        "--num-groups", "4",
        "--group-size", "2",
        "--max-new-tokens", "6",
        "--torch-threads", "1",
        "--no-drop-zero-variance",
        "--no-progress",
        "--no-tensorboard",
        "--out-dir", str(out),
    )  # fmt: skip
    rows = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows] == [1, 2]  # rank 0 alone writes the log
    assert all(r["charts/episodes"] == 8 for r in rows)  # 4 groups x 2, over two ranks
    assert all(r["update/trained_episodes"] == 8 for r in rows)
    assert (out / "checkpoints" / "step_000002" / "model").is_dir()


def test_groups_that_do_not_split_over_the_ranks_are_refused(tmp_path):
    done = torchrun(
        "-m", "envgym.trainers.grpo", "--num-groups", "3", "--steps", "1", "--no-progress",
        "--out-dir", str(tmp_path / "r"), check=False,
    )  # fmt: skip
    assert done.returncode != 0
    assert "--num-groups 3 does not split over 2 processes" in done.stderr
