"""Play an envgym env with OpenEnv's own client (openenv-core), typed.

Run it (offline, CPU; needs only ``pip install 'envgym[openenv]'``)::

    python examples/openenv_client.py
    python examples/openenv_client.py --env envgym/Retail-v0 --kwarg difficulty=easy --seeds 1

With no ``--base-url`` it starts ``envgym serve ENV --port 0`` on 127.0.0.1
(a subprocess, as you would in a shell), then plays each seed with
`envgym.integrations.openenv.EnvgymEnvClient`, OpenEnv's ``EnvClient`` with
envgym's typed action and observation: the replies are envgym's oracle's (the
first legal move where the env has no oracle), the same as a local
``gym.make(ENV)`` would get, and the script prints the rewards and how each
episode ended beside the local env's. ``--base-url http://HOST:PORT`` plays a
server you started yourself; ``--manifest DIR`` also writes the env's
``openenv.yaml`` into DIR for OpenEnv's tooling.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

import gymnasium as gym

import envgym  # noqa: F401 - registers the ids
from envgym.agents import make_agent
from envgym.integrations.openenv import EnvgymAction, EnvgymEnvClient, write_openenv_manifest
from envgym.remote import serve_in_subprocess


def first_legal_move(text: str, info: dict[str, Any]) -> str:
    return f"<answer>{(info.get('admissible_actions') or ['1'])[0]}</answer>"


def policy(env_id: str, kwargs: dict[str, Any], seed: int):
    """An episode's ``act(text, info)``: the oracle of a local copy of the env reset
    with the same seed (some oracles read the task from it), else the first legal move."""
    local = gym.make(env_id, **kwargs)
    local.reset(seed=seed)
    try:
        agent = make_agent("oracle", local)
    except ValueError:
        return first_legal_move
    agent.reset()
    return agent.act


def local_rewards(env_id: str, kwargs: dict[str, Any], seed: int, replies: list[str]) -> list:
    env = gym.make(env_id, **kwargs)
    env.reset(seed=seed)
    return [float(env.step(reply)[1]) for reply in replies]


def play(base_url: str, env_id: str, kwargs: dict[str, Any], seeds: list[int]) -> None:
    with EnvgymEnvClient(base_url=base_url).sync() as client:
        for seed in seeds:
            act = policy(env_id, kwargs, seed)
            result = client.reset(seed=seed)
            replies, rewards = [], []
            while not result.done:
                observation = result.observation
                replies.append(act(observation.text, observation.info))
                result = client.step(EnvgymAction(action=replies[-1]))
                rewards.append(result.reward)
            end = result.observation
            how = "terminated" if end.terminated else "truncated"
            print(
                f"seed {seed}: {len(rewards)} turns, return {sum(rewards):.3f}, {how}, "
                f"success {end.info.get('success')}; local gym.make: "
                f"{sum(local_rewards(env_id, kwargs, seed, replies)):.3f}"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--env", default="envgym/Sokoban-v0")
    parser.add_argument("--kwarg", action="append", default=[], help="gym.make argument, K=V")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--base-url", help="a running envgym serve, http://HOST:PORT")
    parser.add_argument("--manifest", help="write the env's openenv.yaml into this folder")
    args = parser.parse_args()
    kwargs: dict[str, Any] = {}
    for item in args.kwarg:
        key, _, value = item.partition("=")
        try:
            kwargs[key] = json.loads(value)
        except ValueError:
            kwargs[key] = value
    if args.manifest:
        print("wrote", write_openenv_manifest(args.manifest, args.env))
    if args.base_url:
        play(args.base_url, args.env, kwargs, args.seeds)
        return
    with serve_in_subprocess(args.env, kwargs, port=0) as server:
        print(f"envgym serve {args.env} at {server.address.base_url}")
        play(server.address.base_url, args.env, kwargs, args.seeds)


if __name__ == "__main__":
    main()
