"""Run under torchrun by tests/test_trainer_distributed.py: each rank takes
one GRPO update on its share of a fixed batch and saves its weights.

    torchrun --standalone --nproc_per_node 2 tests/distributed_update.py OUT_DIR LOSS_AGG

`torchrun` starts such a run from a test (two CPU processes, Gloo on the
loopback interface).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import torch

from envgym.trainers.common.distributed import init_distributed
from envgym.trainers.common.rollout import Episode, TurnRecord
from envgym.trainers.common.tiny import build_tiny_model
from envgym.trainers.common.tokenization import ChatTokenizer
from envgym.trainers.grpo import GRPOConfig, policy_update

#: Replies of different lengths (so token-mean weighs episodes unequally) and their advantages.
BATCH = (
    ("<answer>Right</answer>", 1.0),
    ("<answer>Down</answer> and a longer tail", -1.0),
    ("<answer>Left</answer>", 0.5),
    ("<answer>Up</answer> up up", -0.25),
)


def torchrun(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    """``torchrun --standalone --nproc_per_node 2 ARGS`` on the CPU; with
    ``check``, fail the test (showing the ranks' errors) unless it exits 0."""
    # COLUMNS: a wide terminal, so a rank's printed summary keeps each row on one line.
    env = {**os.environ, "GLOO_SOCKET_IFNAME": "lo", "OMP_NUM_THREADS": "1", "COLUMNS": "200"}
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone"]
    command += ["--nproc_per_node", "2", *args]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)
    if check:
        assert done.returncode == 0, done.stderr[-3000:]
    return done


def batch(chat: ChatTokenizer) -> tuple[list[Episode], list[list[float]]]:
    episodes = []
    for reply, _ in BATCH:
        messages, tokens = chat.start("P F\nH G\nPosition: row 1, column 1.")
        chat.add_reply(messages, tokens, chat.encode(reply) + [chat.stop_token_ids[0]])
        episode = Episode(group=0, seed=0, task_id=None, tokens=tokens, messages=messages)
        episode.turns.append(TurnRecord("obs", reply, 0.0, None, True))
        episodes.append(episode)
    return episodes, [[a] for _, a in BATCH]


def update(loss_agg: str, episodes, advantages, dist=None) -> torch.nn.Module:
    """Two epochs of two minibatches, one episode per forward pass."""
    torch.set_num_threads(1)
    model, tokenizer = build_tiny_model(seed=3, initializer_range=0.5)
    config = GRPOConfig(
        loss_agg=loss_agg, learning_rate=1e-2, update_epochs=2, minibatches=2, micro_batch_size=1
    )
    optimizer = torch.optim.AdamW(model.parameters(), lr=config.learning_rate, weight_decay=0.0)
    policy_update(model, optimizer, episodes, advantages, config, tokenizer.pad_token_id, dist=dist)
    return model


def main() -> None:
    out_dir, loss_agg = Path(sys.argv[1]), sys.argv[2]
    dist = init_distributed("cpu")
    _, tokenizer = build_tiny_model(seed=3, initializer_range=0.5)
    episodes, advantages = batch(ChatTokenizer(tokenizer))
    mine = dist.shard(len(episodes), "the batch")
    model = update(loss_agg, [episodes[i] for i in mine], [advantages[i] for i in mine], dist)
    torch.save(model.state_dict(), out_dir / f"rank{dist.rank}.pt")
    dist.close()


if __name__ == "__main__":
    main()
