"""envgym envs as a verl agent loop (``pip install 'envgym[verl]'``).

`EnvgymAgentLoop` is a ``verl.experimental.agent_loop.AgentLoopBase`` (verl
0.9), registered with verl's agent-loop registry as ``envgym_agent``. verl's
``AgentLoopWorker`` makes one per dataset row (with ``hydra.utils.instantiate``)
and awaits its ``run(sampling_params, **row)``, which plays one envgym episode:

1. ``gym.make(env_id, **env_kwargs).reset(seed=seed)``: the env's system
   prompt and first observation are the conversation, tokenized with verl's
   Continuous Token builder (the dataset's ``raw_prompt`` is not used: the
   task comes from the seed).
2. Each turn the rollout server (``server_manager.generate``, vLLM or SGLang
   in training) writes a reply; its tokens join the response with
   ``response_mask`` 1. The decoded reply is the action, ``env.step(reply)``.
3. Unless the episode ended, the next observation is appended as a user
   message; its tokens (and the chat template's turn markers) join the
   response with ``response_mask`` 0, so the policy loss never trains on env
   text.
4. The episode ends when the env ends it (terminated or truncated, envgym's
   own turn limit) or when the response would pass ``rollout.response_length``
   tokens (then ``extra_fields["length_cut"]`` is true and the env is left
   unfinished).

The output's ``reward_score`` is the episode's return (the sum of envgym's
per-turn rewards), which verl puts on the last response token
(``rm_scores``), so no reward function is needed. ``extra_fields`` holds
``turn_scores`` (each turn's reward), ``turn_token_ends`` (for each turn, the
index in the response just past the reply's tokens, for per-turn credit),
``tool_rewards`` (empty, as in verl's tool loop) and ``reward_extra_info``
(``success``, ``return``, ``env_turns``, ``terminated``, ``truncated``,
``length_cut``, which verl logs). ``info["privileged"]`` never reaches the
conversation nor the output.

Which env a row plays, from the row's ``extra_info`` (verl passes every
dataset column to ``run``): ``env_id``, ``seed``, ``task_id`` (replays a task)
and ``env_kwargs`` (a dict or JSON text); ``env_id`` and ``env_kwargs`` may
also be set once in the agent-loop config file
(``rollout.agent.agent_loop_config_path``), whose entries verl passes to the
constructor. `dataset_rows` writes such rows; see docs/integrations/verl.md.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any
from uuid import uuid4

import gymnasium as gym

import envgym  # noqa: F401 - registers the envgym ids with Gymnasium
from envgym.extras import missing_extra

try:
    from verl.experimental.agent_loop.agent_loop import (
        AgentLoopBase,
        AgentLoopMetrics,
        AgentLoopOutput,
        register,
    )
except ImportError as exc:  # pragma: no cover - tested with the package hidden
    raise missing_extra(
        exc.name or "verl", extra="verl", purpose="envgym.integrations.verl"
    ) from exc

__all__ = ["AGENT_NAME", "EnvgymAgentLoop", "dataset_rows"]

#: The name the loop is registered under: a row's ``agent_name`` column, or
#: ``rollout.agent.default_agent_loop``.
AGENT_NAME = "envgym_agent"


def _kwargs(value: Any) -> dict[str, Any]:
    """`env_kwargs` given as a mapping, as JSON text of one, or None."""
    if value is None:
        return {}
    if isinstance(value, str):
        value = json.loads(value) if value.strip() else {}
    if not isinstance(value, Mapping):
        try:
            from omegaconf import OmegaConf

            value = OmegaConf.to_container(value, resolve=True)
        except Exception as exc:  # noqa: BLE001
            raise TypeError(f"env_kwargs must be a mapping, got {type(value).__name__}") from exc
    return dict(value)  # type: ignore[arg-type]


@register(AGENT_NAME)
class EnvgymAgentLoop(AgentLoopBase):
    """Plays one envgym episode per row; see the module docstring.

    `env_id` and `env_kwargs` are defaults for rows whose ``extra_info`` does
    not name them (set in an agent-loop config file entry). ``tools`` (verl's
    configured tools, which every agent loop is handed) are not used: an envgym
    env's tools are part of the env, called in the reply's text.
    """

    def __init__(
        self,
        *args: Any,
        env_id: str | None = None,
        env_kwargs: Mapping[str, Any] | None = None,
        tools: Any = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        self.env_id = env_id
        self.env_kwargs = _kwargs(env_kwargs)
        self.prompt_length = self.rollout_config.prompt_length
        self.response_length = self.rollout_config.response_length

    def _episode_spec(self, row: Mapping[str, Any]) -> tuple[str, dict[str, Any], Any, Any]:
        extra_info = row.get("extra_info") or {}
        env_id = extra_info.get("env_id") or self.env_id
        if not isinstance(env_id, str):
            raise ValueError(
                f"{AGENT_NAME}: the row's extra_info names no env_id and the agent-loop "
                "config sets none"
            )
        env_kwargs = {**self.env_kwargs, **_kwargs(extra_info.get("env_kwargs"))}
        seed = extra_info.get("seed")
        if seed is not None:
            seed = int(seed)
        task_id = extra_info.get("task_id")
        options = {"task_id": task_id} if task_id is not None else None
        return env_id, env_kwargs, seed, options

    async def _in_executor(self, fn: Any, *args: Any) -> Any:
        """Run env code off the event loop (a sandboxed env may block for seconds)."""
        return await self.loop.run_in_executor(None, lambda: fn(*args))

    async def run(self, sampling_params: dict[str, Any], **kwargs: Any) -> AgentLoopOutput:
        env_id, env_kwargs, seed, options = self._episode_spec(kwargs)
        env = await self._in_executor(lambda: gym.make(env_id, **env_kwargs))
        try:
            return await self._play(env, seed, options, sampling_params, kwargs)
        finally:
            await self._in_executor(env.close)

    async def _play(
        self,
        env: gym.Env,
        seed: int | None,
        options: dict[str, Any] | None,
        sampling_params: dict[str, Any],
        row: Mapping[str, Any],
    ) -> AgentLoopOutput:
        obs, info = await self._in_executor(lambda: env.reset(seed=seed, options=options))
        messages: list[dict[str, Any]] = []
        if info.get("system_prompt"):
            messages.append({"role": "system", "content": info["system_prompt"]})
        messages.append({"role": "user", "content": obs})

        metrics: dict[str, Any] = {}
        prompt_ids = await self.ct_build_initial_tokens(messages)
        token_ids = list(prompt_ids)  # prompt, then the response as it grows
        response_mask: list[int] = []
        logprobs: list[float] | None = None
        rewards: list[float] = []
        turn_token_ends: list[int] = []
        terminated = truncated = length_cut = False
        observations = 0  # observations appended after the first
        success = bool(info.get("success", False))
        request_id = uuid4().hex
        extra_fields: dict[str, Any] = {}

        while True:
            output = await self.server_manager.generate(
                request_id=request_id, prompt_ids=token_ids, sampling_params=sampling_params
            )
            if not extra_fields:
                extra_fields.update(output.extra_fields)
            if output.num_preempted is not None:
                metrics["num_preempted"] = metrics.get("num_preempted", 0) + output.num_preempted
            if output.log_probs and logprobs is None:
                logprobs = [0.0] * len(response_mask)
            merged, response_mask, logprobs = await self.ct_merge_assistant_token(
                token_ids,
                output.token_ids,
                response_mask,
                logprobs,
                assistant_logprobs=output.log_probs if logprobs is not None else None,
            )
            token_ids = merged.token_ids
            turn_token_ends.append(len(response_mask))

            reply = self.tokenizer.decode(output.token_ids, skip_special_tokens=True)
            obs, reward, terminated, truncated, info = await self._in_executor(env.step, reply)
            rewards.append(float(reward))
            success = bool(info.get("success", False))
            if terminated or truncated:
                break
            if len(response_mask) >= self.response_length:
                length_cut = True
                break

            # The reply is already in the tokens; only the observation is appended.
            messages.append({"role": "assistant", "content": reply})
            previous = list(messages)
            messages.append({"role": "user", "content": obs})
            merged, new_mask, new_logprobs = await self.ct_merge_context_msg(
                previous, messages, token_ids, response_mask, logprobs
            )
            if len(new_mask) >= self.response_length:
                length_cut = True
                break
            token_ids, response_mask, logprobs = merged.token_ids, new_mask, new_logprobs
            observations += 1

        response_ids = token_ids[len(token_ids) - len(response_mask) :]
        prompt_ids = token_ids[: len(token_ids) - len(response_mask)]
        episode_return = float(sum(rewards))
        extra_fields.update(
            {
                "turn_scores": rewards,
                "tool_rewards": [],
                "turn_token_ends": [min(end, self.response_length) for end in turn_token_ends],
                "reward_extra_info": {
                    "success": success,
                    "return": episode_return,
                    "env_turns": len(rewards),
                    "terminated": bool(terminated),
                    "truncated": bool(truncated),
                    "length_cut": length_cut,
                },
                "length_cut": length_cut,
                "env_id": env.spec.id if env.spec is not None else None,
                "seed": seed,
            }
        )
        return AgentLoopOutput(
            prompt_ids=prompt_ids,
            response_ids=response_ids[: self.response_length],
            response_mask=response_mask[: self.response_length],
            response_logprobs=logprobs[: self.response_length] if logprobs else None,
            reward_score=episode_return,
            num_turns=1 + len(rewards) + observations,
            metrics=AgentLoopMetrics(**metrics),
            extra_fields=extra_fields,
        )


def dataset_rows(
    env_id: str,
    seeds: Sequence[int],
    env_kwargs: Mapping[str, Any] | None = None,
    data_source: str | None = None,
    agent_name: str = AGENT_NAME,
) -> list[dict[str, Any]]:
    """One verl dataset row per seed, for ``pandas.DataFrame(rows).to_parquet``:
    ``prompt`` (the env's first conversation, which verl's dataset tokenizes to
    filter long prompts; the loop rebuilds it from the seed), ``data_source``,
    ``agent_name`` (`AGENT_NAME`, or the name of an agent-loop config entry)
    and ``extra_info`` with ``env_id``, ``seed`` and ``env_kwargs`` (JSON text)."""
    kwargs = dict(env_kwargs or {})
    env = gym.make(env_id, **kwargs)
    rows = []
    try:
        for index, seed in enumerate(seeds):
            obs, info = env.reset(seed=int(seed))
            prompt = [{"role": "system", "content": info["system_prompt"]}] * bool(
                info.get("system_prompt")
            ) + [{"role": "user", "content": obs}]
            rows.append(
                {
                    "data_source": data_source or env_id,
                    "prompt": prompt,
                    "agent_name": agent_name,
                    "extra_info": {
                        "index": index,
                        "env_id": env_id,
                        "seed": int(seed),
                        "env_kwargs": json.dumps(kwargs),
                    },
                }
            )
    finally:
        env.close()
    return rows
