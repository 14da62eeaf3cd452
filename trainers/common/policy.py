"""The policy model as the trainers use it: loading, batching, log-probs.

`load_policy` builds or loads the causal LM a trainer trains (``tiny`` or a
``save_pretrained`` folder), `pad_tokens` lays a batch of tokenized
episodes out as right-padded tensors with each turn's value (an advantage,
a return) on that turn's reply tokens, and `token_logprobs` scores every
token given the ones before it. `make_backend` picks the generation engine
(transformers' ``generate`` on the model itself, or a colocated vLLM).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from envgym.trainers.common.tokenization import EpisodeTokens

__all__ = [
    "BACKENDS",
    "load_policy",
    "logprobs_from_logits",
    "make_backend",
    "pad_tokens",
    "token_logprobs",
]

#: The generation engines `make_backend` knows.
BACKENDS = ("transformers", "vllm")


def load_policy(model: str, seed: int, device: str) -> tuple[Any, Any]:
    """(model in train mode on ``device``, tokenizer): ``model`` is ``"tiny"``
    (a small random model built here, weights from ``seed``) or a folder saved
    by ``save_pretrained`` with a chat template."""
    if model == "tiny":
        from envgym.trainers.common.tiny import build_tiny_model

        policy, tokenizer = build_tiny_model(seed=seed)
    else:
        from transformers import AutoModelForCausalLM, AutoTokenizer

        if not Path(model).is_dir():
            raise FileNotFoundError(
                f"--model {model}: no such folder; pass a folder saved by save_pretrained "
                "(model and tokenizer with a chat template) or 'tiny'"
            )
        tokenizer = AutoTokenizer.from_pretrained(model)
        policy = AutoModelForCausalLM.from_pretrained(model)
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token
    return policy.to(device).train(), tokenizer


#: Scored positions per chunk when the entropy is computed without a graph
#: (a chunk is one ``[chunk, vocab]`` float tensor: 1 GB at 150k tokens).
ENTROPY_CHUNK = 2048


def token_logprobs(
    model: Any,
    ids: Any,
    attention: Any,
    temperature: float,
    mask: Any = None,
    *,
    entropy_grad: bool = False,
) -> tuple[Any, Any]:
    """Per-token log-prob of each token given the ones before it, and the
    entropy there; both ``[batch, len - 1]`` (position t scores token t + 1).
    With ``mask`` (``[batch, len - 1]``, as `pad_tokens` gives), only its
    nonzero positions are scored and the rest are 0. The entropy carries a
    gradient only with ``entropy_grad`` (an entropy bonus in the loss)."""
    logits = model(input_ids=ids, attention_mask=attention).logits
    return logprobs_from_logits(logits, ids, temperature, mask, entropy_grad=entropy_grad)


def logprobs_from_logits(
    logits: Any, ids: Any, temperature: float, mask: Any = None, *, entropy_grad: bool = False
) -> tuple[Any, Any]:
    """`token_logprobs` from a forward pass's ``logits`` ``[batch, len, vocab]``
    (for a trainer that needs more of the same pass, e.g. hidden states).

    Only the scored positions are copied to float32 and normalised, so the
    memory beyond ``logits`` is one ``[scored positions, vocab]`` float tensor
    (kept for the backward pass): with a 150k-token vocabulary, float copies
    of a whole micro-batch's logits and of each softmax intermediate would be
    tens of GB. Without ``entropy_grad`` the entropy is computed without a
    graph, in chunks."""
    import torch

    targets = ids[:, 1:]
    if mask is None:
        mask = torch.ones(targets.shape, dtype=torch.bool, device=targets.device)
    rows, cols = mask.nonzero(as_tuple=True)
    picked = logits[:, :-1][rows, cols].float()  # [scored positions, vocab]
    if temperature > 0:
        picked = picked / temperature
    logp_all = torch.log_softmax(picked, dim=-1)
    chosen = logp_all.gather(-1, targets[rows, cols].unsqueeze(-1)).squeeze(-1)
    with torch.set_grad_enabled(entropy_grad and torch.is_grad_enabled()):
        source = logp_all if entropy_grad else logp_all.detach()
        parts = [-(part.exp() * part).sum(-1) for part in source.split(ENTROPY_CHUNK)]
        entropy_at = torch.cat(parts) if parts else chosen.detach()
    logp = chosen.new_zeros(targets.shape).index_put((rows, cols), chosen)
    entropy = entropy_at.new_zeros(targets.shape).index_put((rows, cols), entropy_at)
    return logp, entropy


def pad_tokens(
    tokens: Sequence[EpisodeTokens],
    per_turn: Sequence[Sequence[float]] | None,
    pad_id: int,
) -> dict[str, Any]:
    """Right-padded tensors of a batch of episodes.

    ``ids`` and ``attention`` are ``[batch, width]``; ``mask`` (the policy's
    tokens) and ``adv`` (``per_turn[i][t]`` on every token of episode ``i``'s
    turn ``t``; zeros when ``per_turn`` is None) are ``[batch, width - 1]``,
    shifted to the positions that score them, as `token_logprobs` returns.
    """
    import torch

    width = max(len(t.ids) for t in tokens)
    ids = torch.full((len(tokens), width), pad_id, dtype=torch.long)
    attention = torch.zeros((len(tokens), width), dtype=torch.long)
    mask = torch.zeros((len(tokens), width), dtype=torch.float32)
    adv = torch.zeros((len(tokens), width), dtype=torch.float32)
    for row, t in enumerate(tokens):
        n = len(t.ids)
        ids[row, :n] = torch.tensor(t.ids)
        attention[row, :n] = 1
        mask[row, :n] = torch.tensor(t.loss_mask, dtype=torch.float32)
        if per_turn is not None:
            for (start, end), value in zip(t.spans, per_turn[row], strict=True):
                adv[row, start:end] = float(value)
    return {"ids": ids, "attention": attention, "mask": mask[:, 1:], "adv": adv[:, 1:]}


def make_backend(
    kind: str,
    model: Any,
    tokenizer: Any,
    stop_token_ids: Sequence[int],
    *,
    gpu_memory_utilization: float = 0.3,
    seed: int = 0,
) -> Any:
    """The generation engine ``kind`` (one of `BACKENDS`) for ``model``.

    ``transformers`` samples with the trained model itself; ``vllm`` starts a
    colocated vLLM engine on the same GPU holding
    ``gpu_memory_utilization`` of its memory, and the trainer pushes the new
    weights into it after every update (``sync_weights``).
    """
    if kind == "transformers":
        from envgym.trainers.common.generation import TransformersBackend

        return TransformersBackend(model, tokenizer.pad_token_id, stop_token_ids)
    if kind == "vllm":
        if next(model.parameters()).device.type != "cuda":
            raise ValueError(
                "--backend vllm needs a CUDA GPU (--device cuda); on the CPU use "
                "--backend transformers"
            )
        from envgym.trainers.common.vllm_backend import VLLMBackend

        return VLLMBackend(
            model,
            tokenizer,
            stop_token_ids,
            gpu_memory_utilization=gpu_memory_utilization,
            seed=seed,
        )
    raise ValueError(f"backend must be one of {list(BACKENDS)}, got {kind!r}")
