"""Generation backends: token prompts in, sampled token ids out.

A trainer hands a backend the token ids of every live episode's prompt and
gets back each reply's ids, ending with a stop token when the reply ended
there (`GenerationBackend`). Prompts and replies stay token ids on both
sides, so the update scores exactly what was sampled.

`TransformersBackend` runs the policy model itself with transformers'
``generate`` on the CPU or a GPU: prompts are left-padded into batches of
``batch_size``, sampling follows `SamplingParams`, and each reply stops at
the first stop token (the chat template's end of turn) or at
``max_new_tokens``. It shares the trainer's model, so there is no weight sync.
`envgym.trainers.common.vllm_backend.VLLMBackend` puts a colocated vLLM engine
behind the same interface.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

__all__ = ["GenerationBackend", "SamplingParams", "TransformersBackend"]


@dataclass(frozen=True)
class SamplingParams:
    """How replies are sampled."""

    temperature: float = 1.0  # 0 decodes greedily
    top_p: float = 1.0  # nucleus sampling's mass
    top_k: int = 0  # 0: no top-k cut
    max_new_tokens: int = 64  # longest reply, in tokens

    def __post_init__(self) -> None:
        if self.temperature < 0:
            raise ValueError(f"temperature must be >= 0, got {self.temperature}")
        if not 0 < self.top_p <= 1:
            raise ValueError(f"top_p must be in (0, 1], got {self.top_p}")
        if self.top_k < 0:
            raise ValueError(f"top_k must be >= 0 (0 turns it off), got {self.top_k}")
        if self.max_new_tokens < 1:
            raise ValueError(f"max_new_tokens must be >= 1, got {self.max_new_tokens}")


class GenerationBackend(Protocol):
    """What a trainer needs from a generation engine."""

    stop_token_ids: tuple[int, ...]

    def generate(self, prompts: Sequence[Sequence[int]], params: SamplingParams) -> list[list[int]]:
        """One reply per prompt: its new token ids, ending with a stop token
        when the reply stopped before ``max_new_tokens``."""
        ...

    def sync_weights(self, model: Any) -> None:
        """Make the next `generate` sample from ``model``'s current weights."""
        ...

    def sleep(self) -> None:
        """Give the engine's memory back for the update (the next `generate` wakes it)."""
        ...

    def close(self) -> None:
        """Free the engine."""
        ...


class TransformersBackend:
    """Batched ``model.generate`` on the model's own device.

    Args:
        model: a transformers causal LM (the policy being trained).
        pad_token_id: the id prompts are left-padded with.
        stop_token_ids: the ids that end a reply.
        batch_size: most prompts per ``generate`` call (None: all at once).
    """

    def __init__(
        self,
        model: Any,
        pad_token_id: int,
        stop_token_ids: Sequence[int],
        batch_size: int | None = None,
    ) -> None:
        if not stop_token_ids:
            raise ValueError("stop_token_ids is empty; pass the chat template's end-of-turn id")
        if batch_size is not None and batch_size < 1:
            raise ValueError(f"batch_size must be >= 1 or None, got {batch_size}")
        self.model = model
        self.pad_token_id = int(pad_token_id)
        self.stop_token_ids = tuple(int(t) for t in stop_token_ids)
        self.batch_size = batch_size

    def sync_weights(self, model: Any) -> None:
        self.model = model  # same module, same weights: nothing to copy

    def sleep(self) -> None:
        """Nothing to free: the engine is the trained model."""

    def close(self) -> None:
        """Nothing to free: the engine is the trained model."""

    def generate(self, prompts: Sequence[Sequence[int]], params: SamplingParams) -> list[list[int]]:
        size = self.batch_size or max(1, len(prompts))
        out: list[list[int]] = []
        for start in range(0, len(prompts), size):
            out += self._generate_batch(prompts[start : start + size], params)
        return out

    def _generate_batch(
        self, prompts: Sequence[Sequence[int]], params: SamplingParams
    ) -> list[list[int]]:
        import torch

        if any(len(p) == 0 for p in prompts):
            raise ValueError("a prompt is empty; every prompt needs at least one token")
        device = next(self.model.parameters()).device
        width = max(len(p) for p in prompts)
        input_ids = torch.full((len(prompts), width), self.pad_token_id, dtype=torch.long)
        attention = torch.zeros((len(prompts), width), dtype=torch.long)
        for row, prompt in enumerate(prompts):
            input_ids[row, width - len(prompt) :] = torch.tensor(list(prompt), dtype=torch.long)
            attention[row, width - len(prompt) :] = 1
        sampling: dict[str, Any] = {"do_sample": params.temperature > 0}
        if params.temperature > 0:
            sampling.update(temperature=params.temperature, top_p=params.top_p, top_k=params.top_k)
        was_training = self.model.training
        self.model.eval()
        try:
            with torch.no_grad():
                generated = self.model.generate(
                    input_ids=input_ids.to(device),
                    attention_mask=attention.to(device),
                    max_new_tokens=params.max_new_tokens,
                    eos_token_id=list(self.stop_token_ids),
                    pad_token_id=self.pad_token_id,
                    **sampling,
                )
        finally:
            self.model.train(was_training)
        replies = []
        for row in generated[:, width:].tolist():
            reply = []
            for token in row:
                reply.append(token)
                if token in self.stop_token_ids:
                    break
            replies.append(reply)
        return replies
