"""Tree rollouts in the GRPO trainer (``--tree-branch-turns``, ``--tree-width``):
the branches of a node start from its state and are scored independently,
a shared prefix is in the loss once, the options refuse shapes that do not
fit, and a tree-rollout run learns the small FrozenLake task.

The rollout tests play FrozenLake's ``SF/HG`` map with a scripted policy: a
reply picked by the episode's place in the batch, so siblings (whose prompts
are the same) still answer differently. Right then Down wins; from the start
Down falls in the hole. A fork after the first turn therefore shows whether
the children really stand where their parent stood.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import envgym  # noqa: F401 - registers the ids

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from frozen_lake_task import ENV_KWARGS, MAP, random_success_rate  # noqa: E402
from test_trainer_grpo import _check_learned, learning_config  # noqa: E402

from envgym.trainers.common.generation import SamplingParams  # noqa: E402
from envgym.trainers.common.policy import pad_tokens  # noqa: E402
from envgym.trainers.common.rollout import collect_rollouts  # noqa: E402
from envgym.trainers.common.run_log import read_metrics  # noqa: E402
from envgym.trainers.common.tiny import build_tiny_tokenizer  # noqa: E402
from envgym.trainers.common.tokenization import ChatTokenizer  # noqa: E402
from envgym.trainers.common.tree import TreeShape, tree_advantages, tree_counts  # noqa: E402
from envgym.trainers.grpo import GRPOConfig, train  # noqa: E402
from envgym.vector import TextVectorEnv  # noqa: E402


class ScriptedPolicy:
    """Turn ``t``'s reply to the ``p``-th live episode of the batch is
    ``script[t][p]``, a move."""

    def __init__(self, tokenizer, script: list[list[str]]) -> None:
        self.tokenizer, self.script, self.turn = tokenizer, script, 0
        self.stop_token_ids = (tokenizer.convert_tokens_to_ids("<|im_end|>"),)

    def generate(self, prompts, params):
        moves = self.script[self.turn]
        assert len(prompts) == len(moves), (self.turn, len(prompts))
        self.turn += 1
        return [
            self.tokenizer.encode(f"<answer>{m}</answer>") + list(self.stop_token_ids)
            for m in moves
        ]


@pytest.fixture(scope="module")
def tokenizer():
    return build_tiny_tokenizer()


def play_tree(tokenizer, script):
    """One group of two trees (roots in envs 0 and 2), forked after turn 1 into 2."""
    shape = TreeShape((1,), 2)
    chat = ChatTokenizer(tokenizer)
    make = [lambda: gym.make("envgym/FrozenLake-v0", **ENV_KWARGS)] * 4
    with TextVectorEnv(env_fns=make, group_size=4) as envs:
        episodes, _ = collect_rollouts(
            envs,
            ScriptedPolicy(tokenizer, script),
            chat,
            SamplingParams(max_new_tokens=12),
            seed=0,
            options={"task_id": MAP},
            system_prompt=False,
            tree=shape,
        )
    return shape, {e.tree_node: e for e in episodes}


def test_branches_start_from_their_parents_state_and_are_scored_apart(tokenizer):
    # Both roots go Right; tree 0's children go Down (goal) and Left (back to
    # the start); tree 1's both go Down, which wins only from where the root stood.
    script = [["Right", "Right"], ["Down", "Left", "Down", "Down"], ["Up"]]
    shape, tree = play_tree(tokenizer, script)
    assert set(tree) == {(0, 0, 0), (0, 0, 1), (0, 1, 0), (0, 1, 1)}
    for root in ((0, 0), (0, 1)):
        a, b = tree[(*root, 0)], tree[(*root, 1)]
        assert a.turns[0] == b.turns[0]  # the shared first turn
        # The second turn starts where the root's first ended, in both children.
        assert a.turns[1].observation == b.turns[1].observation
        assert a.turns[1].state_key == b.turns[1].state_key == f"{MAP}@1"
        assert "row 1, column 2" in b.turns[1].observation
    assert tree[(0, 1, 0)].success and tree[(0, 1, 1)].success  # Down from (1, 2) wins
    assert tree[(0, 0, 0)].success and not tree[(0, 0, 1)].success
    assert tree[(0, 0, 0)].episode_return > tree[(0, 0, 1)].episode_return

    leaves = list(tree)
    adv = dict(
        zip(leaves, tree_advantages(shape, leaves, [tree[n].rewards for n in leaves]), strict=True)
    )
    # Siblings' advantages sum to 0: at the fork (turn 1) and among the roots (turn 0).
    assert adv[(0, 0, 0)][1] > 0 > adv[(0, 0, 1)][1]
    assert adv[(0, 0, 0)][1] + adv[(0, 0, 1)][1] == pytest.approx(0)
    assert adv[(0, 1, 0)][1] == adv[(0, 1, 1)][1] == 0  # both won: nothing to tell apart
    assert adv[(0, 0, 0)][0] < 0 < adv[(0, 1, 0)][0]  # root 1's subtree won more
    assert adv[(0, 0, 0)][0] + adv[(0, 1, 0)][0] == pytest.approx(0)
    assert tree_counts(leaves) == (6, 4)


def test_a_shared_prefix_is_in_the_loss_once(tokenizer):
    shape, tree = play_tree(tokenizer, [["Right", "Down"], ["Down", "Left"], ["Up"]])
    # Tree 1's root fell in the hole on turn 1: it never forked and is a leaf.
    assert set(tree) == {(0, 0, 0), (0, 0, 1), (0, 1)}
    first, copy = tree[(0, 0, 0)], tree[(0, 0, 1)]
    start, end = first.tokens.spans[0]
    assert copy.tokens.ids[:end] == first.tokens.ids[:end]
    assert all(first.tokens.loss_mask[start:end]) and not any(copy.tokens.loss_mask[:end])
    # What the update sees: every reply the policy made weighs once, no more.
    # (The copy's own replies are its turns after the fork.)
    replies = first.tokens.spans + copy.tokens.spans[1:] + tree[(0, 1)].tokens.spans
    assert len(replies) == 2 + 2 + 1
    replies_tokens = sum(e - s for s, e in replies)
    episodes = list(tree.values())
    batch = pad_tokens([e.tokens for e in episodes], [e.rewards for e in episodes], 0)
    assert int(batch["mask"].sum()) == replies_tokens


def test_tree_options_that_do_not_fit_say_what_to_change():
    with pytest.raises(ValueError, match="--group-size to 8"):
        GRPOConfig(tree_branch_turns="1,2", tree_width=2, group_size=6)
    with pytest.raises(ValueError, match="--estimator grpo or rloo"):
        GRPOConfig(tree_branch_turns="1", estimator="gigpo")
    with pytest.raises(ValueError, match="increasing turn counts"):
        GRPOConfig(tree_branch_turns="2,1")
    with pytest.raises(ValueError, match="separated by commas"):
        GRPOConfig(tree_branch_turns="one")
    with pytest.raises(ValueError, match="--tree-width must be >= 2"):
        GRPOConfig(tree_branch_turns="1", tree_width=1)


def test_a_tree_step_logs_its_nodes_and_leaves(tmp_path):
    config = learning_config(
        tmp_path, steps=1, warmup_steps=0, num_groups=1, group_size=4, tree_branch_turns="1"
    )
    train(config)
    (row,) = read_metrics(tmp_path / "run")
    assert row["tree/leaves"] <= 4 and 2 <= row["tree/nodes"] <= 6
    assert row["charts/episodes"] == row["tree/leaves"]


@pytest.mark.slow
def test_grpo_with_tree_rollouts_learns_a_small_frozen_lake(tmp_path):
    random_level = random_success_rate()
    # Groups of 8: 4 roots forked after their first move into 2.
    train(learning_config(tmp_path, estimator="grpo", tree_branch_turns="1", tree_width=2))
    _check_learned(tmp_path / "run", random_level)
    rows = read_metrics(tmp_path / "run")
    assert all(row["tree/leaves"] <= 4 * 8 for row in rows)
    assert np.mean([row["tree/nodes"] for row in rows]) > 4 * 4  # roots did fork
