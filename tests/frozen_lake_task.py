"""The small task the trainers' learning tests share: the FrozenLake map
``SF/HG`` with 3 turns of one move. Right then Down reaches the goal, Down
first falls in the hole, so the policy must act on where it stands. The random
agent succeeds about 11-14% of the time.

`LEARNING_SETTINGS` are the config fields GRPO and PPO share in those tests:
the tiny random model, a format warm-up on random valid moves (so RL starts
at the random agent's level), two epochs of two minibatches, torch on one
thread (a 2-core machine shared with other work slows two spinning threads
far more than one).
"""

from __future__ import annotations

import gymnasium as gym

import envgym  # noqa: F401 - registers the ids
from envgym.agents import RandomAgent

MAP = "SF/HG"
ENV_KWARGS = {"max_turns": 3, "max_actions_per_turn": 1}
LEARNING_SETTINGS = dict(
    env="envgym/FrozenLake-v0",
    env_kwargs=ENV_KWARGS,
    task_id=MAP,
    model="tiny",
    system_prompt=False,
    warmup_steps=60,
    warmup_learning_rate=3e-3,
    max_new_tokens=12,
    learning_rate=1e-3,
    update_epochs=2,
    minibatches=2,
    torch_threads=1,
    progress=False,
    tensorboard=False,
)


def random_success_rate(episodes: int = 400) -> float:
    """The random agent's success rate on the map, over seeds 0 .. episodes - 1."""
    env = gym.make("envgym/FrozenLake-v0", **ENV_KWARGS)
    wins = 0
    for seed in range(episodes):
        agent = RandomAgent(seed)
        obs, info = env.reset(seed=seed, options={"task_id": MAP})
        while True:
            obs, _, terminated, truncated, info = env.step(agent.act(obs, info))
            if terminated or truncated:
                wins += bool(info["success"])
                break
    return wins / episodes
