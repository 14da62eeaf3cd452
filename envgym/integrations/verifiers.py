"""envgym envs as verifiers environments (the environment interface of prime-rl).

``load_environment("envgym/Sokoban-v0")`` returns a `verifiers.v1` environment
that plays any envgym id; `environment_config` returns its config, which
verifiers' own eval runner (``verifiers.v1.cli.eval.runner.run_eval``) and
prime-rl take::

    from envgym.integrations.verifiers import environment_config, load_environment

    env = load_environment("envgym/Sokoban-v0", num_tasks=64, difficulty="easy")
    config = environment_config("envgym/Retail-v0", seeds=[0, 1, 2])

How an episode maps onto verifiers (0.4's ``verifiers.v1``):

- The taskset's rows are seeds (``seeds``, or ``seed_start`` and ``num_tasks``
  of them): row ``i`` is ``gym.make(env_id, **env_kwargs).reset(seed=s)``, so
  the rollouts of a group (``num_rollouts``) play the same task.
- `EnvgymEnv.run` resets the env and opens the ``player`` seat's interaction:
  the env's ``info["system_prompt"]`` is the system message, its ``info["tools"]``
  go in every model request's ``tools``, the first observation is the first user
  turn. Each model response is one ``env.step``: its text plus one
  ``<tool_call>{...}</tool_call>`` per tool call, the reply an envgym env reads
  (as `envgym.agents.OpenAIChatAgent` sends it). The next observation answers
  the tool calls as a ``tool`` message, else comes as a user turn.
- The trace's reward ``reward`` is the episode's return, the sum of envgym's
  own per-turn rewards. Its metrics: ``success``, ``turns``, ``terminated``,
  ``truncated``, and ``reward_components/NAME``, each component summed over the
  turns. ``trace.info["envgym"]`` holds the id, seed, task id, the per-turn
  rewards and components, and how the episode ended.
- A terminated episode stops the trace with ``env_terminated``, one cut by
  the env's turn limit with ``max_turns`` (verifiers counts that as truncated,
  ``trace.is_truncated``); one cut by verifiers' own limits (``max_turns`` of
  the seat, token limits) keeps verifiers' reason and reports ``terminated``
  and ``truncated`` as 0.
- ``info["privileged"]`` and every other info key stay on this side: the model
  sees observations, the system prompt and the tool schemas only.

The seat's harness is `EnvgymHarness`: each turn is one chat completion
through verifiers' interception endpoint (so the trace records the model call
and its tokens), made by a stdlib-only program run with this interpreter, on
verifiers' subprocess runtime by default; no sandbox, uv or network is needed
beyond the model endpoint.

verifiers finds tasksets, envs and harnesses by id; this module is the plugin
for the id `TASKSET_ID` (``envgym-verifiers``), registered when it is imported.

Needs the verifiers extra: ``pip install 'envgym[verifiers]'``.
"""

from __future__ import annotations

import hashlib
import json
import sys
from collections.abc import Iterator
from typing import Any

import gymnasium as gym
from pydantic import Field

import envgym  # noqa: F401 - registers the envgym ids with Gymnasium
from envgym.agents.chat import tool_call_text
from envgym.extras import missing_extra

try:
    import verifiers.v1 as vf
    from verifiers.v1.dialects.chat import message_to_wire
except ImportError as exc:  # pragma: no cover - exercised without the extra
    raise missing_extra(
        "verifiers", extra="verifiers", purpose="envgym.integrations.verifiers"
    ) from exc

__all__ = [
    "TASKSET_ID",
    "EnvgymData",
    "EnvgymEnv",
    "EnvgymEnvConfig",
    "EnvgymHarness",
    "EnvgymHarnessConfig",
    "EnvgymTask",
    "EnvgymTaskset",
    "EnvgymTasksetConfig",
    "environment_config",
    "load_environment",
]

#: The taskset (and env, and harness) id verifiers resolves to this module.
TASKSET_ID = "envgym-verifiers"
# verifiers imports a plugin id as a top-level module (``envgym-verifiers`` ->
# ``envgym_verifiers``); a dotted module path is not an id it can import.
sys.modules.setdefault(TASKSET_ID.replace("-", "_"), sys.modules[__name__])

#: What the tool messages after the first of a turn say (the whole observation
#: answers the first call: envgym envs reply to all of a turn's calls at once).
OTHER_CALLS_NOTE = "The result of this call is in the first tool message of this turn."


class EnvgymTasksetConfig(vf.TasksetConfig):
    """Which envgym id, with which arguments, and which seeds are the rows."""

    id: str = TASKSET_ID
    env_id: str = "envgym/Sokoban-v0"
    """The envgym (Gymnasium) id every row plays."""
    env_kwargs: dict[str, Any] = Field(default_factory=dict)
    """Arguments of ``gym.make(env_id, ...)``: difficulty, settings, max_turns."""
    seeds: list[int] | None = None
    """The rows' seeds; None: ``seed_start``, ``seed_start + 1``, ... (``num_tasks`` of them)."""
    seed_start: int = Field(0, ge=0)
    num_tasks: int = Field(100, ge=1)


class EnvgymData(vf.TaskData):
    """One row: the id, its arguments and the seed of ``reset``. `EnvgymEnv.run`
    fills ``system_prompt`` and ``tools`` from the env's reset info."""

    env_id: str
    env_kwargs: dict[str, Any] = Field(default_factory=dict)
    seed: int
    tools: list[dict[str, Any]] = Field(default_factory=list)
    """OpenAI function schemas, sent in each model request (``info["tools"]``)."""


class EnvgymTask(vf.Task[EnvgymData]):
    """A row of `EnvgymTaskset`; scored by `EnvgymEnv.run` from the env's rewards."""


class EnvgymTaskset(vf.Taskset[EnvgymTask, EnvgymTasksetConfig]):
    """One task per seed. Prompt-less: the env's first observation opens the exchange."""

    def load(self) -> Iterator[EnvgymTask]:
        config = self.config
        spec = gym.spec(config.env_id)  # an unknown id fails here, before any rollout
        seeds = config.seeds
        if seeds is None:
            seeds = range(config.seed_start, config.seed_start + config.num_tasks)
        for seed in seeds:
            yield EnvgymTask(
                EnvgymData(
                    id=f"{spec.id}#{seed}",
                    name=f"{spec.id} seed {seed}",
                    prompt=None,
                    env_id=spec.id,
                    env_kwargs=dict(config.env_kwargs),
                    seed=int(seed),
                ),
                config.task,
            )


# The harness's program: one chat completion through the rollout's endpoint.
# Standard library only, so any Python (this one, by default) runs it.
_PROGRAM = r"""
import json, sys, urllib.error, urllib.request

base_url, request_path, api_key = sys.argv[1:4]
with open(request_path, "rb") as f:
    body = f.read()
request = urllib.request.Request(
    base_url.rstrip("/") + "/chat/completions",
    data=body,
    headers={"Content-Type": "application/json", "Authorization": "Bearer " + api_key},
)
try:
    with urllib.request.urlopen(request) as response:
        response.read()
except urllib.error.HTTPError as error:
    sys.stderr.write(f"chat completion failed: HTTP {error.code}: {error.read()[:2000]!r}\n")
    sys.exit(1)
"""
_PROGRAM_NAME = f".envgym-chat-{hashlib.sha256(_PROGRAM.encode()).hexdigest()[:16]}.py"


class EnvgymHarnessConfig(vf.HarnessConfig):
    """`EnvgymHarness`'s settings."""

    python: str = sys.executable
    """The interpreter that runs the one-request program (any Python 3)."""


class EnvgymHarness(vf.Harness[EnvgymHarnessConfig]):
    """One model call per segment: the conversation so far (system prompt, then the
    turns) and the env's tools, sent to the rollout's interception endpoint. The
    env, not the harness, answers tool calls, so every call is one env step."""

    APPENDS_SYSTEM_PROMPT = True
    SUPPORTS_RESUME = True
    EXECUTES_CODE = False
    NEEDS_CONTAINER = False

    async def launch(
        self,
        ctx: Any,
        trace: Any,
        runtime: Any,
        endpoint: str,
        secret: str,
        mcp_urls: dict[str, str],
        data: Any,
        tool_interception_url: str | None = None,
    ) -> Any:
        system, prompt = self.resolve_prompt(data)
        messages: list[dict[str, Any]] = []
        if system:
            messages.append({"role": "system", "content": system})
        if isinstance(prompt, str):
            messages.append({"role": "user", "content": prompt})
        elif prompt:
            messages.extend(message_to_wire(message) for message in prompt)
        body: dict[str, Any] = {"model": ctx.model, "messages": messages}
        tools = getattr(data, "tools", None)
        if tools:
            body["tools"] = list(tools)
        request_path = f".envgym-request-{trace.id}.json"
        await runtime.write(_PROGRAM_NAME, _PROGRAM.encode())
        await runtime.write(request_path, json.dumps(body).encode())
        return await runtime.run_program(
            [self.config.python, _PROGRAM_NAME, endpoint, request_path, secret],
            dict(self.config.resolved_env),
        )


class EnvgymEnvConfig(vf.EnvConfig):
    """The env's config: the taskset (`EnvgymTasksetConfig`) and the ``player`` seat,
    on verifiers' subprocess runtime unless set otherwise."""

    taskset: EnvgymTasksetConfig = EnvgymTasksetConfig()
    player: vf.AgentConfig = vf.AgentConfig(runtime=vf.SubprocessConfig())


def _reply_action(message: Any) -> tuple[str, list[str]]:
    """(the reply an envgym env reads, the ids of its tool calls) for one assistant message."""
    content = (message.content or "") if message is not None else ""
    calls = (message.tool_calls or []) if message is not None else []
    texts = [tool_call_text(call.name, call.arguments) for call in calls]
    reply = "\n".join(([content] if content else []) + texts)
    return reply, [call.id for call in calls]


def _next_turn(observation: str, call_ids: list[str]) -> str | list[dict[str, Any]]:
    """The observation as the next turn: tool messages answering `call_ids`, else a user turn."""
    if not call_ids:
        return observation
    first, *rest = call_ids
    return [
        {"role": "tool", "tool_call_id": first, "content": observation},
        *({"role": "tool", "tool_call_id": i, "content": OTHER_CALLS_NOTE} for i in rest),
    ]


class EnvgymEnv(vf.Env[EnvgymEnvConfig]):
    """Plays one envgym episode per task on the ``player`` seat (see the module doc)."""

    async def run(self, task: Any, agents: Any) -> None:
        data = task.data
        env = gym.make(data.env_id, **data.env_kwargs)
        try:
            observation, info = env.reset(seed=data.seed)
            task = task.with_data(
                system_prompt=info.get("system_prompt") or None,
                tools=list(info.get("tools") or []),
            )
            rewards: list[float] = []
            components: list[dict[str, float]] = []
            terminated = truncated = False
            async with agents.player.interaction(task) as interaction:
                turn: str | list[dict[str, Any]] = observation
                while True:
                    segment = await interaction.turn(turn)
                    if segment.terminated:
                        break
                    replies = [m for m in segment.messages if m.role == "assistant"]
                    reply, call_ids = _reply_action(replies[-1] if replies else None)
                    observation, reward, terminated, truncated, info = env.step(reply)
                    rewards.append(float(reward))
                    components.append(
                        {k: float(v) for k, v in (info.get("reward_components") or {}).items()}
                    )
                    if terminated or truncated:
                        interaction.trace.stop("env_terminated" if terminated else "max_turns")
                        break
                    turn = _next_turn(observation, call_ids)
            trace = interaction.trace
        finally:
            env.close()
        summed: dict[str, float] = {}
        for step in components:
            for name, value in step.items():
                summed[name] = summed.get(name, 0.0) + value
        trace.record_reward("reward", sum(rewards))
        trace.record_metrics(
            {
                "success": float(bool(info.get("success"))),
                "turns": float(len(rewards)),
                "terminated": float(bool(terminated)),
                "truncated": float(bool(truncated)),
                **{f"reward_components/{name}": value for name, value in summed.items()},
            }
        )
        trace.info["envgym"] = {
            "env_id": data.env_id,
            "env_kwargs": dict(data.env_kwargs),
            "seed": data.seed,
            "task_id": info.get("task_id"),
            "rewards": rewards,
            "reward_components": components,
            "success": bool(info.get("success")),
            "terminated": bool(terminated),
            "truncated": bool(truncated),
        }


def environment_config(
    env_id: str,
    *,
    seeds: list[int] | None = None,
    seed_start: int = 0,
    num_tasks: int = 100,
    agent_max_turns: int | None = None,
    **env_kwargs: Any,
) -> EnvgymEnvConfig:
    """The verifiers env config that plays `env_id` (``gym.make(env_id, **env_kwargs)``)
    on the given seeds; `agent_max_turns` caps the seat's model calls on verifiers'
    side (the env's own turn limit is its ``max_turns`` argument, in `env_kwargs`)."""
    return EnvgymEnvConfig(
        taskset=EnvgymTasksetConfig(
            env_id=env_id,
            env_kwargs=env_kwargs,
            seeds=seeds,
            seed_start=seed_start,
            num_tasks=num_tasks,
        ),
        player=vf.AgentConfig(runtime=vf.SubprocessConfig(), max_turns=agent_max_turns),
    )


def load_environment(env_id: str, **kwargs: Any) -> EnvgymEnv:
    """A verifiers environment that plays `env_id`; `kwargs` as for `environment_config`."""
    return vf.load_environment(environment_config(env_id, **kwargs))
