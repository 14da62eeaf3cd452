"""Evaluate an envgym env with verifiers' own eval runner (the environment interface of prime-rl).

Run it (offline, CPU, seconds; needs only ``pip install 'envgym[verifiers]'``)::

    python examples/verifiers_eval.py
    python examples/verifiers_eval.py --env envgym/Retail-v0 --kwarg difficulty=easy --seeds 1 2

With no ``--base-url``, the model is a scripted OpenAI-compatible server
started here on 127.0.0.1 (standard library only): it answers each
conversation with the replies of envgym's oracle for that task, worked out
beforehand by stepping ``gym.make(id).reset(seed=s)``. verifiers'
``run_eval`` then plays every seed ``--group`` times through
`envgym.integrations.verifiers` (verifiers' interception endpoint, its
subprocess runtime, its traces), and the script prints each episode's reward,
success and turns beside envgym's own figures for the same replies; they are
equal. With ``--base-url URL --model NAME`` (a vLLM or any OpenAI-compatible
server; the key in ``$OPENAI_API_KEY``) a real model plays instead.

The runner writes its traces under ``--output-dir`` (``outputs/`` by default),
as ``vf-eval`` does.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import tempfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import gymnasium as gym

import envgym  # noqa: F401 - registers the ids
from envgym.agents import make_agent
from envgym.integrations.verifiers import environment_config
from envgym.parsing import parse_tool_calls

MODEL = "scripted-model"


def oracle_episode(env_id: str, kwargs: dict[str, Any], seed: int) -> dict[str, Any]:
    """envgym's own episode: the oracle's replies (the first legal move where the env
    has no oracle) and the rewards ``gym.make(env_id)`` gives them."""
    env = gym.make(env_id, **kwargs)
    obs, info = env.reset(seed=seed)
    first = obs
    try:
        agent = make_agent("oracle", env)
        agent.reset()
    except ValueError:
        agent = None
    replies, rewards, done = [], [], False
    while not done:
        if agent is not None:
            reply = agent.act(obs, info)
        else:
            reply = f"<answer>{(info.get('admissible_actions') or ['1'])[0]}</answer>"
        replies.append(reply)
        obs, reward, terminated, truncated, info = env.step(reply)
        rewards.append(float(reward))
        done = terminated or truncated
    return {"first": first, "replies": replies, "rewards": rewards, "success": info["success"]}


def chat_message(reply: str, turn: int) -> dict[str, Any]:
    """A reply as a model server sends it: tool calls as native ``tool_calls``."""
    if "<tool_call>" not in reply:
        return {"role": "assistant", "content": reply}
    calls, _ = parse_tool_calls(reply)
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": f"call_{turn}_{i}",
                "type": "function",
                "function": {"name": call.name, "arguments": json.dumps(call.arguments)},
            }
            for i, call in enumerate(calls)
        ],
    }


class ScriptedModel(ThreadingHTTPServer):
    """``POST /v1/chat/completions``: each conversation (known by its first user
    message) gets its script's reply for the turn it is at."""

    def __init__(self, scripts: dict[str, list[str]]) -> None:
        self.scripts = scripts
        super().__init__(("127.0.0.1", 0), _Handler)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"


class _Handler(BaseHTTPRequestHandler):
    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        messages = body["messages"]
        first = next(m["content"] for m in messages if m["role"] == "user")
        turn = sum(m["role"] == "assistant" for m in messages)
        script = self.server.scripts.get(first, [])
        reply = script[turn] if turn < len(script) else "I cannot go on."
        answer = {
            "id": f"chatcmpl-{turn}",
            "object": "chat.completion",
            "created": 0,
            "model": body["model"],
            "choices": [
                {"index": 0, "message": chat_message(reply, turn), "finish_reason": "stop"}
            ],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
        }
        data = json.dumps(answer).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: Any) -> None:
        pass


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--env", default="envgym/Sokoban-v0")
    parser.add_argument("--kwarg", action="append", default=[], help="gym.make argument, K=V")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    parser.add_argument("--group", type=int, default=2, help="rollouts per seed")
    parser.add_argument("--base-url", help="a real OpenAI-compatible endpoint")
    parser.add_argument("--model", default=MODEL)
    parser.add_argument("--output-dir", default=None)
    args = parser.parse_args()
    kwargs: dict[str, Any] = {}
    for item in args.kwarg:
        key, _, value = item.partition("=")
        try:
            kwargs[key] = json.loads(value)
        except ValueError:
            kwargs[key] = value

    from verifiers.v1 import EvalClientConfig
    from verifiers.v1.cli.eval.runner import run_eval
    from verifiers.v1.configs.cli.eval import EvalConfig

    expected = {}
    server = None
    if args.base_url is None:
        expected = {seed: oracle_episode(args.env, kwargs, seed) for seed in args.seeds}
        server = ScriptedModel({e["first"]: e["replies"] for e in expected.values()})
        threading.Thread(target=server.serve_forever, daemon=True).start()
        os.environ.setdefault("OPENAI_API_KEY", "scripted")
    try:
        config = EvalConfig(
            env=environment_config(args.env, seeds=args.seeds, **kwargs),
            model=args.model,
            client=EvalClientConfig(
                base_url=args.base_url or server.url, api_key_var="OPENAI_API_KEY"
            ),
            num_rollouts=args.group,
            push=False,
            rich=None,
            output_dir=args.output_dir or tempfile.mkdtemp(prefix="verifiers-eval-"),
        )
        episodes = asyncio.run(run_eval(config))
    finally:
        if server is not None:
            server.shutdown()
    print(f"{'seed':>5} {'reward':>8} {'success':>7} {'turns':>5}  envgym's own (reward, turns)")
    for episode in episodes:
        for trace in episode.traces:
            record = trace.info.get("envgym", {})
            seed = record.get("seed")
            own = expected.get(seed)
            theirs = f"{sum(own['rewards']):.3f}, {len(own['rewards'])}" if own else "-"
            print(
                f"{seed:>5} {trace.reward:>8.3f} {trace.metrics.get('success', 0):>7.0f} "
                f"{trace.metrics.get('turns', 0):>5.0f}  {theirs}"
                + ("" if trace.ok else f"  error: {trace.errors[-1].message[:200]}")
            )
            if own is not None and trace.ok:
                assert record["rewards"] == own["rewards"], (record["rewards"], own["rewards"])


if __name__ == "__main__":
    main()
