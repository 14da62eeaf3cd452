"""`VLLMAgent`: a model run in this process by vLLM's offline engine (``vllm.LLM``).

Made by ``make_agent("vllm:PATH", env)`` (``--agent vllm:PATH``). Each slot
keeps its conversation (`envgym.agents.chat`); a batch of slots goes to one
``LLM.chat`` call (the model's chat template, the env's tools as ``tools=``),
which vLLM schedules together. Token counts come from the outputs' token ids.

Engines are cached per (path, engine options): the evaluation runner makes an
agent per episode, and a vLLM engine takes a while to start and holds the GPU.

Needs vllm (``pip install 'envgym[vllm]'``, a CUDA GPU), imported when an
agent is made.
"""

from __future__ import annotations

import functools
import json
from typing import Any

from envgym.agents.chat import ChatSlots, SlotChatAgent
from envgym.extras import MissingExtra, require

__all__ = ["VLLMAgent", "VLLMUnavailable"]


class VLLMUnavailable(MissingExtra):
    """vllm is not installed here."""


def _import_vllm() -> Any:
    return require(
        "vllm",
        extra="vllm",
        purpose="the vllm agent",
        note="(on a machine with a CUDA GPU), or use --agent hf:PATH (transformers) or "
        "--agent openai:URL#MODEL (a vLLM server elsewhere)",
        error=VLLMUnavailable,
    )


@functools.lru_cache(maxsize=1)
def _engine(model_path: str, options_json: str) -> Any:
    """The `vllm.LLM` for `model_path` with the engine options (as sorted JSON)."""
    return _import_vllm().LLM(model=model_path, **json.loads(options_json))


class VLLMAgent(SlotChatAgent):
    """A model on vLLM's offline engine, answering many slots with one ``LLM.chat``.

    Args:
        model_path: a model folder (or a name vLLM can load offline).
        max_tokens: longest reply, in tokens.
        temperature: 0 decodes greedily.
        top_p: nucleus sampling's mass.
        seed: the sampling seed (per request), so sampled runs repeat.
        system_prompt: used instead of the env's ``info["system_prompt"]``.
        history: send each episode's conversation so far (False: the system
            message and the current observation only).
        engine_options: `vllm.LLM` arguments (``gpu_memory_utilization``,
            ``max_model_len``, ``tensor_parallel_size``, ``dtype``...); JSON values.
    """

    name = "vllm"

    def __init__(
        self,
        model_path: str,
        *,
        max_tokens: int = 1024,
        temperature: float = 0.0,
        top_p: float = 1.0,
        seed: int | None = None,
        system_prompt: str | None = None,
        history: bool = True,
        engine_options: dict[str, Any] | None = None,
    ) -> None:
        vllm = _import_vllm()
        self.model_path = str(model_path)
        self.model = self.model_path
        self.llm = _engine(self.model_path, json.dumps(engine_options or {}, sort_keys=True))
        self.sampling = vllm.SamplingParams(
            temperature=float(temperature),
            top_p=float(top_p),
            max_tokens=int(max_tokens),
            seed=seed,
        )
        self.chats = ChatSlots(system_prompt, history)

    def _sampling(self, slots: list[int]) -> Any:
        """The sampling parameters for `slots`: the agent's, or one per slot where a
        slot has its own seed (a trial of a seed, from ``reset_slot(slot, seed)``)."""
        seeds = [self.chats.seed(slot) for slot in slots]
        if all(seed is None for seed in seeds):
            return self.sampling
        params = []
        for seed in seeds:
            own = self.sampling.clone()
            if seed is not None:
                own.seed = seed
            params.append(own)
        return params

    # ------------------------------------------------------------ the batch protocol
    def act_batch(
        self, slots: list[int], observations: list[str], infos: list[dict[str, Any]]
    ) -> list[str]:
        """One reply per slot; slots with the same tools share one ``LLM.chat`` call."""
        self.check_batch(slots, observations, infos)
        prompts = [
            self.chats.prompt(slot, str(obs), info)
            for slot, obs, info in zip(slots, observations, infos, strict=True)
        ]
        # LLM.chat takes one tools list per call: group the slots by the tools they have.
        groups: dict[str, list[int]] = {}
        for index, slot in enumerate(slots):
            key = json.dumps(self.chats.tools(slot), sort_keys=True)
            groups.setdefault(key, []).append(index)
        replies: list[str] = [""] * len(slots)
        for key, indices in groups.items():
            tools = json.loads(key)
            outputs = self.llm.chat(
                [prompts[i] for i in indices],
                sampling_params=self._sampling([slots[i] for i in indices]),
                tools=tools or None,
                use_tqdm=False,
            )
            for i, output in zip(indices, outputs, strict=True):
                completion = output.outputs[0]
                replies[i] = completion.text
                self.chats.record(
                    slots[i],
                    prompts[i],
                    {"role": "assistant", "content": completion.text},
                    len(output.prompt_token_ids or []),
                    len(completion.token_ids or []),
                )
        return replies
