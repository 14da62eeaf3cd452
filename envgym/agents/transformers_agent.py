"""`TransformersAgent`: a local causal LM (a path saved by ``save_pretrained``).

Made by ``make_agent("hf:PATH", env)`` (``--agent hf:PATH``). Each slot keeps
its conversation (`envgym.agents.chat`); a batch of slots is rendered with the
tokenizer's chat template (``add_generation_prompt=True``, the env's tools
passed as ``tools=``), left-padded, and answered by one ``generate`` call;
only the new tokens are decoded. Token counts come from the token ids.

Loaded models are cached per (path, device), so the evaluation runner, which
makes an agent per episode, loads a model once.

Needs torch and transformers (``pip install 'envgym[train]'``), imported
when an agent is made.
"""

from __future__ import annotations

import functools
from typing import Any

from envgym.agents.chat import ChatSlots, SlotChatAgent
from envgym.extras import require

__all__ = ["TransformersAgent"]


@functools.lru_cache(maxsize=2)
def _load(model_path: str, device: str) -> tuple[Any, Any]:
    """(tokenizer, model in eval mode on `device`) for `model_path`."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(model_path)
    # Left padding puts every prompt's last token in the last column, where
    # generation continues from.
    tokenizer.padding_side = "left"
    if tokenizer.pad_token is None:
        if tokenizer.eos_token is None:
            raise ValueError(
                f"the tokenizer in {model_path} has neither a pad nor an eos token; "
                "set one (tokenizer.pad_token = ...) and save it again"
            )
        tokenizer.pad_token = tokenizer.eos_token
    if getattr(tokenizer, "chat_template", None) is None:
        raise ValueError(
            f"the tokenizer in {model_path} has no chat template; the hf agent needs one "
            "(set tokenizer.chat_template and save it again)"
        )
    model = AutoModelForCausalLM.from_pretrained(model_path).to(device)
    model.eval()
    return tokenizer, model


class TransformersAgent(SlotChatAgent):
    """A local Hugging Face causal LM, answering many slots with one ``generate``.

    Args:
        model_path: a folder with the model and its tokenizer (chat template included).
        max_new_tokens: longest reply, in tokens.
        temperature: 0 decodes greedily; above 0 samples at that temperature.
        top_p: nucleus sampling's mass (when sampling).
        device: ``"cpu"``, ``"cuda"``, ``"cuda:1"``...; None takes cuda when there is one.
        batch_size: most slots per ``generate`` call; a larger batch is split.
        system_prompt: used instead of the env's ``info["system_prompt"]``.
        history: send each episode's conversation so far (False: the system
            message and the current observation only).
        seed: seeds torch's generator when sampling, so sampled runs repeat. One
            generator serves a whole batch, so a slot's own seed
            (``reset_slot(slot, seed)``, a trial of a seed) is not used: its
            draws already differ from the other trials'.
    """

    name = "hf"

    def __init__(
        self,
        model_path: str,
        *,
        max_new_tokens: int = 256,
        temperature: float = 0.0,
        top_p: float = 1.0,
        device: str | None = None,
        batch_size: int = 32,
        system_prompt: str | None = None,
        history: bool = True,
        seed: int | None = None,
    ) -> None:
        torch = require("torch", extra="train", purpose="the hf agent")
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise ValueError(f"batch_size must be a whole number >= 1, got {batch_size!r}")
        if temperature < 0:
            raise ValueError(f"temperature must be >= 0 (0 is greedy), got {temperature!r}")
        if device is None:
            device = "cuda" if torch.cuda.is_available() else "cpu"
        self._torch = torch
        self.model_path = str(model_path)
        self.model = self.model_path
        self.device = device
        self.tokenizer, self.lm = _load(self.model_path, device)
        self.max_new_tokens = int(max_new_tokens)
        self.temperature = float(temperature)
        self.top_p = float(top_p)
        self.batch_size = batch_size
        self.chats = ChatSlots(system_prompt, history)
        self._generator_seed = seed

    # ------------------------------------------------------------ the batch protocol
    def act_batch(
        self, slots: list[int], observations: list[str], infos: list[dict[str, Any]]
    ) -> list[str]:
        """One reply per slot, from one ``generate`` call per `batch_size` slots."""
        self.check_batch(slots, observations, infos)
        replies: list[str] = []
        for start in range(0, len(slots), self.batch_size):
            end = start + self.batch_size
            replies.extend(
                self._generate(slots[start:end], observations[start:end], infos[start:end])
            )
        return replies

    # ------------------------------------------------------------ generation
    def _render(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None) -> str:
        kwargs: dict[str, Any] = {"tokenize": False, "add_generation_prompt": True}
        if tools:
            kwargs["tools"] = tools
        return self.tokenizer.apply_chat_template(messages, **kwargs)

    def _generate(
        self, slots: list[int], observations: list[str], infos: list[dict[str, Any]]
    ) -> list[str]:
        torch = self._torch
        prompts = [
            self.chats.prompt(slot, str(obs), info)
            for slot, obs, info in zip(slots, observations, infos, strict=True)
        ]
        texts = [
            self._render(messages, self.chats.tools(slot))
            for slot, messages in zip(slots, prompts, strict=True)
        ]
        # The chat template already wrote the special tokens (BOS included).
        batch = self.tokenizer(
            texts, return_tensors="pt", padding=True, add_special_tokens=False
        ).to(self.device)
        sampling = self.temperature > 0
        options: dict[str, Any] = {
            "max_new_tokens": self.max_new_tokens,
            "do_sample": sampling,
            "pad_token_id": self.tokenizer.pad_token_id,
        }
        if sampling:
            options.update(temperature=self.temperature, top_p=self.top_p)
            if self._generator_seed is not None:
                torch.manual_seed(self._generator_seed)
                self._generator_seed += 1  # a new draw next turn, the same run each time
        else:  # silence "temperature is set but do_sample=False" from generation configs
            options.update(temperature=None, top_p=None, top_k=None)
        with torch.no_grad():
            output = self.lm.generate(**batch, **options)
        new_tokens = output[:, batch["input_ids"].shape[1] :]
        prompt_counts = batch["attention_mask"].sum(dim=1).tolist()
        replies = []
        for row, slot, messages, prompt_count in zip(
            new_tokens.tolist(), slots, prompts, prompt_counts, strict=True
        ):
            row = _until_eos(row, _eos_ids(self.lm, self.tokenizer))
            reply = self.tokenizer.decode(row, skip_special_tokens=True)
            self.chats.record(
                slot, messages, {"role": "assistant", "content": reply}, int(prompt_count), len(row)
            )
            replies.append(reply)
        return replies


def _eos_ids(model: Any, tokenizer: Any) -> set[int]:
    """Every token id that ends a reply: the generation config's and the tokenizer's."""
    ids: set[int] = set()
    configured = getattr(getattr(model, "generation_config", None), "eos_token_id", None)
    for value in (configured, tokenizer.eos_token_id):
        if isinstance(value, int):
            ids.add(value)
        elif value is not None:
            ids.update(int(v) for v in value)
    return ids


def _until_eos(row: list[int], eos: set[int]) -> list[int]:
    """`row` up to and including its first end token (generate pads after it)."""
    for index, token in enumerate(row):
        if token in eos:
            return row[: index + 1]
    return row
