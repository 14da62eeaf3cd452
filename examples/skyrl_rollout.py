"""Play envgym envs through SkyRL-Gym's interface, as SkyRL's generator does (CPU, offline).

Run it (needs only ``pip install 'envgym[skyrl]'``; a second or two)::

    python examples/skyrl_rollout.py
    python examples/skyrl_rollout.py --env envgym/TicTacToe-v0 --seeds 0 1 2 --out rows.json

What it shows: importing `envgym.integrations.skyrl` registers every envgym id
in ``skyrl_gym``'s registry. `dataset_rows` writes SkyRL dataset rows (the
``prompt``, ``env_class`` and the extras SkyRL hands the env: ``seed``,
``env_kwargs``); each row is then played the way SkyRL's ``SkyRLGymGenerator``
plays one: ``skyrl_gym.make(env_class, env_config=..., extras=row)``,
``env.init(prompt)``, then ``env.step(reply)`` until ``done``, appending each
step's observations to the chat. The policy here picks a random legal move
from the metadata's ``admissible_actions`` (a model writes the reply in
training); rewards, ``success`` and the ``terminated``/``truncated`` flags are
envgym's own. To train, write the rows to parquet
(``pandas.DataFrame(rows).to_parquet``) and point SkyRL's
``data.train_data`` at it: docs/integrations/skyrl.md.
"""

from __future__ import annotations

import argparse
import json
import random

import skyrl_gym

from envgym.integrations.skyrl import EnvgymTextEnv, dataset_rows


def play_row(row: dict, rng: random.Random) -> dict:
    """One episode of `row`, as SkyRL's generator plays it, with a random legal move a turn."""
    extras = {k: v for k, v in row.items() if k not in ("prompt", "env_class")}
    env = skyrl_gym.make(row["env_class"], env_config={}, extras=extras)
    chat, metadata = env.init(row["prompt"])
    rewards = []
    while True:
        moves = metadata.get("admissible_actions") or ["1"]
        reply = f"<answer>{rng.choice(list(moves))}</answer>"
        chat.append({"role": "assistant", "content": reply})
        out = env.step(reply)
        rewards.append(out["reward"])
        chat += out["observations"]
        metadata = out["metadata"]
        if out["done"]:
            break
    metrics = env.get_metrics()
    env.close()
    print(
        f"seed {row['seed']}: {len(rewards)} turns, rewards {rewards}, "
        f"success {metadata['success']}, terminated {metadata['terminated']}, "
        f"truncated {metadata['truncated']}; chat of {len(chat)} messages"
    )
    return metrics


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--env", default="envgym/Sokoban-v0", help="an envgym id")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--kwargs", default="{}", help="env kwargs as JSON")
    parser.add_argument("--out", help="also write the dataset rows to this JSON file")
    args = parser.parse_args()

    assert args.env in skyrl_gym.registry, "importing envgym.integrations.skyrl registers every id"
    rows = dataset_rows(args.env, args.seeds, json.loads(args.kwargs))
    if args.out:
        with open(args.out, "w") as f:
            json.dump(rows, f, indent=1)
    rng = random.Random(0)
    metrics = [play_row(row, rng) for row in rows]
    print("averaged as SkyRL logs them:", EnvgymTextEnv.aggregate_metrics(metrics))


if __name__ == "__main__":
    main()
