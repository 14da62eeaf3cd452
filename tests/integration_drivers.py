"""One episode of envgym through each trainer adapter, as a common record.

tests/test_integration_contract.py checks the contract of every adapter in
envgym.integrations the same way; the per-adapter test files use the same
pieces for their adapter-specific checks. A driver takes an env id, its
``gym.make`` arguments and episodes as ``(seed, replies)`` and plays them
through the adapter with the framework's own classes:

- verifiers: verifiers' eval runner (``run_eval``) against the scripted
  OpenAI-compatible server of tests/test_agents_openai.py on 127.0.0.1;
- openenv: OpenEnv's ``EnvClient`` (`EnvgymEnvClient`) on ``envgym serve``'s
  server in a thread;
- skyrl: ``skyrl_gym.make`` and its ``BaseTextEnv`` interface;
- verl: verl's ``AgentLoopWorker`` running `EnvgymAgentLoop`, its inference
  server replaced by a scripted ``LLMServerClient``.

Each returns a `Record` per episode: what the trainer is told (rewards turn by
turn, the ending, success, the task) and every text the model is shown
(`Record.shown`: system prompt, observations, tool results and schemas, never
the model's own replies). `envgym_play` gives the same record from
``gym.make`` stepped directly, the reference.

Framework imports happen inside the drivers, so this module imports without
any of the frameworks installed.
"""

from __future__ import annotations

import asyncio
import atexit
import functools
import json
import os
import re
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym
import numpy as np
import pytest

import envgym  # noqa: F401 - registers the ids
from envgym.agents import make_agent
from envgym.parsing import parse_tool_calls

#: An episode to play: its seed and the model's replies, turn by turn.
Episode = tuple[int, list[str]]


@dataclass
class Record:
    """One episode as an adapter reports it (None: the adapter does not report it)."""

    seed: int
    first: str  # the first observation, as the model reads it
    task_id: str | None
    system_prompt: str | None
    rewards: list[float]
    terminated: bool
    truncated: bool
    success: bool
    reward_components: list[dict[str, float]] | None  # per turn
    shown: list[str] = field(default_factory=list)  # every env-side text the model saw
    prompt: list[str] = field(default_factory=list)  # those of them before its first reply
    privileged: list[dict[str, Any]] = field(default_factory=list)  # envgym_play only

    @property
    def turns(self) -> int:
        return len(self.rewards)


# -- envgym itself ------------------------------------------------------------


def scripted_replies(env_id: str, kwargs: dict[str, Any], seed: int) -> list[str]:
    """The replies of a whole episode: the oracle's, or, where the env has none
    (the games), the first legal move each turn."""
    env = gym.make(env_id, **kwargs)
    obs, info = env.reset(seed=seed)
    try:
        agent = make_agent("oracle", env)
        agent.reset()
    except ValueError:
        agent = None
    replies, done = [], False
    while not done:
        reply = (
            agent.act(obs, info)
            if agent is not None
            else f"<answer>{info['admissible_actions'][0]}</answer>"
        )
        replies.append(reply)
        obs, _, terminated, truncated, info = env.step(reply)
        done = terminated or truncated
    env.close()
    return replies


def envgym_play(env_id: str, kwargs: dict[str, Any], seed: int, replies: list[str]) -> Record:
    """`replies` stepped through ``gym.make(env_id, **kwargs).reset(seed=seed)``,
    until they run out or the episode ends. ``privileged`` holds the
    ``info["privileged"]`` of the reset and of every step."""
    env = gym.make(env_id, **kwargs)
    obs, info = env.reset(seed=seed)
    record = Record(
        seed=seed,
        first=obs,
        task_id=info.get("task_id"),
        system_prompt=info.get("system_prompt") or None,
        rewards=[],
        terminated=False,
        truncated=False,
        success=bool(info.get("success")),
        reward_components=[],
        shown=[obs],
        prompt=[obs],
        privileged=[info.get("privileged") or {}],
    )
    for reply in replies:
        obs, reward, terminated, truncated, info = env.step(reply)
        record.rewards.append(float(reward))
        record.reward_components.append(dict(info.get("reward_components") or {}))
        record.privileged.append(info.get("privileged") or {})
        record.terminated, record.truncated = terminated, truncated
        record.success = bool(info.get("success"))
        if terminated or truncated:
            break
        record.shown.append(obs)
    env.close()
    return record


def privileged_texts(privileged: dict[str, Any]) -> list[str]:
    """A privileged info dict's values as they could appear in text: each value
    serialised as JSON (both separator styles) and, for a string, as itself.
    Values under 6 characters (``2``, ``true``) are left out: they cannot be
    told apart from ordinary text."""
    texts = []
    for value in privileged.values():
        forms = {json.dumps(value), json.dumps(value, separators=(",", ":"))}
        if isinstance(value, str):
            forms.add(value)
        texts += [form for form in forms if len(form) >= 6]
    return texts


# -- verifiers ----------------------------------------------------------------

VERIFIERS_KEY_VAR = "ENVGYM_TEST_SCRIPTED_KEY"


@functools.cache
def verifiers_server_class() -> type:
    """The scripted server of tests/test_agents_openai.py, its responses completed
    with the two fields verifiers' client checks (``created``, ``usage.total_tokens``)."""
    import fastapi
    from test_agents_openai import ScriptedServer

    class Server(ScriptedServer):
        async def completions(self, request: Any) -> Any:
            body = await super().completions(request)
            if isinstance(body, dict):
                usage = body["usage"]
                body["created"] = 0
                usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
            return body

    # FastAPI reads the request's type from the annotation (a string here).
    Server.completions.__annotations__["request"] = fastapi.Request
    return Server


def as_scripted(reply: str) -> Any:
    """A reply as the scripted server sends it: text, or its one tool call as a native call."""
    if "<tool_call>" not in reply:
        return reply
    calls, error = parse_tool_calls(reply)
    assert error is None and len(calls) == 1
    return {"tool": calls[0].name, "arguments": calls[0].arguments}


def verifiers_eval(
    url: str,
    env_id: str,
    kwargs: dict[str, Any],
    seeds: list[int],
    output_dir: Any,
    num_rollouts: int = 1,
    **options: Any,
) -> list:
    """verifiers' eval runner on `env_id`, `num_rollouts` per seed: its episodes."""
    import verifiers.v1 as vf
    from test_agents_openai import MODEL
    from verifiers.v1.cli.eval.runner import run_eval
    from verifiers.v1.configs.cli.eval import EvalConfig

    from envgym.integrations.verifiers import environment_config

    os.environ.setdefault(VERIFIERS_KEY_VAR, "scripted")
    config = EvalConfig(
        env=environment_config(env_id, seeds=seeds, **options, **kwargs),
        model=MODEL,
        client=vf.EvalClientConfig(base_url=url, api_key_var=VERIFIERS_KEY_VAR),
        num_rollouts=num_rollouts,
        push=False,
        rich=None,
        output_dir=output_dir,
    )
    return asyncio.run(run_eval(config))


def _message_texts(message: dict[str, Any]) -> list[str]:
    content = message.get("content")
    if content is None:
        return []
    return [content if isinstance(content, str) else json.dumps(content)]


def play_verifiers(
    env_id: str, kwargs: dict[str, Any], episodes: list[Episode], tmp_path: Any
) -> list[Record]:
    pytest.importorskip("verifiers.v1")
    pytest.importorskip("fastapi")
    firsts = {seed: gym.make(env_id, **kwargs).reset(seed=seed)[0] for seed, _ in episodes}
    assert len(set(firsts.values())) == len(episodes)  # the server tells them apart by it
    scripts = {firsts[seed]: [as_scripted(r) for r in replies] for seed, replies in episodes}
    server = verifiers_server_class()(scripts)
    with server as url:
        played = verifiers_eval(url, env_id, kwargs, [s for s, _ in episodes], tmp_path)
    records = {}
    for episode in played:
        assert episode.ok, episode.errors
        [trace] = episode.traces
        assert trace.ok, trace.errors
        data = trace.info["envgym"]
        requests = [
            body
            for body in server.requests
            if next(m["content"] for m in body["messages"] if m["role"] == "user")
            == firsts[data["seed"]]
        ]
        shown, prompt = [], []
        for body in requests:
            for message in body["messages"]:
                if message["role"] != "assistant":
                    shown += _message_texts(message)
            if body.get("tools"):
                shown.append(json.dumps(body["tools"]))
            prompt = prompt or list(shown)
        messages = requests[0]["messages"]
        system = [m["content"] for m in messages if m["role"] == "system"]
        records[data["seed"]] = Record(
            seed=data["seed"],
            first=next(m["content"] for m in messages if m["role"] == "user"),
            task_id=data["task_id"],
            system_prompt=system[0] if system else None,
            rewards=data["rewards"],
            terminated=trace.metrics["terminated"] == 1.0,
            truncated=trace.metrics["truncated"] == 1.0,
            success=trace.metrics["success"] == 1.0,
            reward_components=data["reward_components"],
            shown=shown,
            prompt=prompt,
        )
        # What verifiers itself reports agrees with the adapter's record.
        assert trace.reward == pytest.approx(sum(data["rewards"]))
        assert trace.metrics["turns"] == len(data["rewards"]) == trace.num_turns
        assert trace.stop_condition == ("env_terminated" if data["terminated"] else "max_turns")
    return [records[seed] for seed, _ in episodes]


# -- OpenEnv ------------------------------------------------------------------


def play_openenv(
    env_id: str,
    kwargs: dict[str, Any],
    episodes: list[Episode],
    tmp_path: Any = None,
    **server_options: Any,
) -> list[Record]:
    """`server_options`: for ``serve_in_background`` (``send_privileged``)."""
    pytest.importorskip("openenv")
    pytest.importorskip("uvicorn")
    from envgym.integrations.openenv import (
        EnvgymAction,
        EnvgymEnvClient,
        EnvgymObservation,
        EnvgymState,
    )
    from envgym.remote import serve_in_background

    records = []
    with serve_in_background(env_id, kwargs, **server_options) as address:
        with EnvgymEnvClient(base_url=address.base_url).sync() as client:
            for seed, replies in episodes:
                result = client.reset(seed=seed)
                obs = result.observation
                assert isinstance(obs, EnvgymObservation)
                assert result.done is False and obs.turn == 0
                record = Record(
                    seed=seed,
                    first=obs.text,
                    task_id=obs.info.get("task_id"),
                    system_prompt=obs.info.get("system_prompt") or None,
                    rewards=[],
                    terminated=False,
                    truncated=False,
                    success=bool(obs.info.get("success")),
                    reward_components=[],
                    # The client receives the text and the info dict.
                    shown=[obs.text, json.dumps(obs.info), *_strings(obs.info)],
                )
                record.prompt = list(record.shown)
                for reply in replies:
                    assert not result.done
                    result = client.step(EnvgymAction(action=reply))
                    obs = result.observation
                    record.rewards.append(float(result.reward))
                    record.reward_components.append(dict(obs.info.get("reward_components") or {}))
                    if result.done:  # the last observation goes to the trainer, not the model
                        break
                    record.shown += [obs.text, json.dumps(obs.info), *_strings(obs.info)]
                record.terminated, record.truncated = obs.terminated, obs.truncated
                record.success = bool(obs.info.get("success"))
                assert obs.turn == record.turns
                state = client.state()
                assert isinstance(state, EnvgymState)
                assert state.env_id == env_id and state.step_count == record.turns
                assert state.episode_return == pytest.approx(sum(record.rewards))
                records.append(record)
    return records


def _strings(value: Any) -> list[str]:
    """Every string inside a JSON-like value."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list | tuple):
        return [s for v in value for s in _strings(v)]
    return []


# -- SkyRL --------------------------------------------------------------------


def play_in_skyrl(env_id: str, seed: int, env_kwargs: dict, actions: list[str]) -> dict:
    """Make `env_id` through skyrl_gym as SkyRL's generator does and play `actions`."""
    import skyrl_gym
    from skyrl_gym.envs.base_text_env import BaseTextEnv

    env = skyrl_gym.make(
        env_id,
        env_config={},
        extras={"seed": seed, "env_kwargs": json.dumps(env_kwargs), "max_turns": 100},
    )
    assert isinstance(env, BaseTextEnv)
    chat, metadata = env.init([{"role": "user", "content": "placeholder"}])
    outputs = []
    for action in actions:
        out = env.step(action)
        outputs.append(out)
        if out["done"]:
            break
    metrics = env.get_metrics()
    env.close()
    return {"chat": chat, "metadata": metadata, "outputs": outputs, "metrics": metrics}


def play_skyrl(
    env_id: str, kwargs: dict[str, Any], episodes: list[Episode], tmp_path: Any = None
) -> list[Record]:
    pytest.importorskip("skyrl_gym")
    import envgym.integrations.skyrl  # noqa: F401 - registers envgym's ids with skyrl_gym

    records = []
    for seed, replies in episodes:
        played = play_in_skyrl(env_id, seed, kwargs, replies)
        chat, outputs = played["chat"], played["outputs"]
        assert [out["done"] for out in outputs] == [False] * (len(outputs) - 1) + [True]
        assert outputs[-1]["observations"] == []  # done: nothing more to answer
        last = outputs[-1]["metadata"]
        system = [m["content"] for m in chat if m["role"] == "system"]
        shown = [m["content"] for m in chat]
        if played["metadata"].get("tools"):
            shown.append(json.dumps(played["metadata"]["tools"]))
        prompt = list(shown)
        for out in outputs:
            shown += [m["content"] for m in out["observations"]]
        record = Record(
            seed=played["metadata"]["seed"],
            first=next(m["content"] for m in chat if m["role"] == "user"),
            task_id=played["metadata"].get("task_id"),
            system_prompt=system[0] if system else None,
            rewards=[float(out["reward"]) for out in outputs],
            terminated=last["terminated"],
            truncated=last["truncated"],
            success=last["success"],
            reward_components=[dict(out["metadata"]["reward_components"]) for out in outputs],
            shown=shown,
            prompt=prompt,
        )
        assert played["metrics"] == {
            "return": pytest.approx(sum(record.rewards)),
            "success": float(record.success),
            "turns": record.turns,
            "truncated": float(record.truncated),
        }
        # The metadata SkyRL hands the trainer carries no privileged data either.
        for metadata in [played["metadata"], *(out["metadata"] for out in outputs)]:
            assert "privileged" not in metadata
        records.append(record)
    return records


# -- verl ---------------------------------------------------------------------

VERL_LOGPROB = -0.25
VERL_TRAINER_CONFIG = "verl/trainer/config/_generated_ppo_trainer.yaml"


@functools.cache
def verl_scripted_client_class() -> type:
    """verl's LLMServerClient with ``generate`` answered from scripts instead of
    a Ray-routed vLLM/SGLang server: the conversation whose first observation
    is a key of `scripts` gets its replies in order (turn = assistant headers
    in the prompt, less the one awaiting the reply), each ending with the
    end-of-turn token, with a log-prob of `VERL_LOGPROB` per token."""
    from verl.workers.rollout.llm_server import LLMServerClient
    from verl.workers.rollout.replica import TokenOutput

    class ScriptedServerClient(LLMServerClient):
        def __init__(self, config, tokenizer, scripts: dict[str, list[str]]):
            super().__init__(config)
            self.tokenizer = tokenizer
            self.scripts = scripts
            self.end = tokenizer.convert_tokens_to_ids("<|im_end|>")

        async def generate(self, request_id, *, prompt_ids, sampling_params, **kwargs):
            text = self.tokenizer.decode(prompt_ids)
            [key] = [k for k in self.scripts if k in text]
            turn = text.count("<|im_start|>assistant") - 1
            ids = self.tokenizer.encode(self.scripts[key][turn], add_special_tokens=False)
            ids.append(self.end)
            return TokenOutput(
                token_ids=ids, log_probs=[VERL_LOGPROB] * len(ids), stop_reason="completed"
            )

    return ScriptedServerClient


def build_tiny_qwen2(path: Any) -> str:
    """A model folder verl's HFModelConfig reads: the tiny ChatML tokenizer and a
    Qwen2 config (so verl picks its Qwen Continuous Token builder); no weights."""
    from envgym.trainers.common.tiny import save_tiny_qwen2_config

    return save_tiny_qwen2_config(path)


def verl_trainer_config(model_dir: str, max_response_length: int = 6144, agent_loop_config=None):
    """verl's own generated PPO trainer config, pointed at `model_dir`."""
    import verl
    from omegaconf import OmegaConf

    root = verl.__path__[0].rsplit("/verl", 1)[0]
    cfg = OmegaConf.load(f"{root}/{VERL_TRAINER_CONFIG}")
    cfg.actor_rollout_ref.model.path = model_dir
    cfg.actor_rollout_ref.rollout.name = "vllm"
    cfg.data.max_prompt_length = 6144
    cfg.data.max_response_length = max_response_length
    cfg.actor_rollout_ref.rollout.agent.agent_loop_config_path = agent_loop_config
    return cfg


def verl_worker(cfg, scripts: dict[str, list[str]]) -> Any:
    """verl's AgentLoopWorker, its LLM client the scripted one."""
    from transformers import AutoTokenizer
    from verl.experimental.agent_loop.agent_loop import AgentLoopWorker

    tokenizer = AutoTokenizer.from_pretrained(cfg.actor_rollout_ref.model.path)
    client = verl_scripted_client_class()(cfg, tokenizer, scripts)
    return AgentLoopWorker(cfg, llm_client=client)


def verl_batch(rows: list[dict]) -> Any:
    """Dataset rows as the DataProto batch verl's trainer hands the worker."""
    from verl.protocol import DataProto

    columns = {key: np.array([row[key] for row in rows], dtype=object) for key in rows[0]}
    columns["raw_prompt"] = columns.pop("prompt")
    return DataProto.from_dict(non_tensors=columns)


def verl_unpadded(out: Any, i: int) -> tuple[list[int], list[int], list[int], list[float]]:
    """Row `i`'s prompt ids, response ids, response mask and rollout log-probs, padding removed."""
    prompts, responses = out.batch["prompts"][i], out.batch["responses"][i]
    attention = out.batch["attention_mask"][i]
    prompt_len = prompts.shape[0]
    prompt = prompts[attention[:prompt_len].bool()].tolist()
    valid = attention[prompt_len:].bool()
    response = responses[valid].tolist()
    mask = out.batch["response_mask"][i][valid].tolist()
    logprobs = out.batch["rollout_log_probs"][i][valid].tolist()
    return prompt, response, mask, logprobs


@functools.cache
def _tiny_qwen2_dir() -> str:
    path = tempfile.mkdtemp(prefix="envgym-tiny-qwen2-")
    atexit.register(shutil.rmtree, path, ignore_errors=True)
    return build_tiny_qwen2(path)


CHATML = re.compile(r"<\|im_start\|>(\w+)\n(.*?)<\|im_end\|>", re.DOTALL)


def play_verl(
    env_id: str, kwargs: dict[str, Any], episodes: list[Episode], tmp_path: Any = None
) -> list[Record]:
    pytest.importorskip("verl.experimental.agent_loop")
    import envgym.integrations.verl as adapter

    scripts = {gym.make(env_id, **kwargs).reset(seed=s)[0]: r for s, r in episodes}
    assert len(scripts) == len(episodes)  # the client tells them apart by the first observation
    worker = verl_worker(verl_trainer_config(_tiny_qwen2_dir()), scripts)
    tokenizer = worker.tokenizer
    rows = adapter.dataset_rows(env_id, [s for s, _ in episodes], kwargs)
    out = asyncio.run(worker.generate_sequences(verl_batch(rows)))
    assert "privileged" not in out.non_tensor_batch
    records = []
    for i, (seed, _) in enumerate(episodes):
        prompt, response, mask, _ = verl_unpadded(out, i)
        # What the model reads: the prompt and the env's tokens (mask 0) of the response.
        prompt_text = tokenizer.decode(prompt)
        shown, run = [prompt_text], []
        for token, m in zip([*response, None], [*mask, 1], strict=True):
            if m == 0:
                run.append(token)
            elif run:
                shown.append(tokenizer.decode(run))
                run = []
        messages = CHATML.findall(prompt_text)
        system = [text for role, text in messages if role == "system"]
        batch = out.non_tensor_batch
        assert batch["seed"][i] == seed  # rows come back in order
        assert not batch["length_cut"][i]
        records.append(
            Record(
                seed=int(batch["seed"][i]),
                first=next(text for role, text in messages if role == "user"),
                task_id=None,  # verl's batch carries the seed, not the task id
                system_prompt=system[0] if system else None,
                rewards=[float(r) for r in batch["turn_scores"][i]],
                terminated=bool(batch["terminated"][i]),
                truncated=bool(batch["truncated"][i]),
                success=bool(batch["success"][i]),
                reward_components=None,  # not in verl's batch
                shown=shown,
                prompt=[prompt_text],
            )
        )
        assert batch["env_turns"][i] == records[-1].turns
        scores = out.batch["rm_scores"][i]
        assert scores[len(response) - 1].item() == pytest.approx(sum(records[-1].rewards), abs=1e-5)
    return records


#: The drivers, by adapter (envgym.integrations.<name>).
DRIVERS: dict[str, Callable[..., list[Record]]] = {
    "verifiers": play_verifiers,
    "openenv": play_openenv,
    "skyrl": play_skyrl,
    "verl": play_verl,
}
