"""`VLLMBackend`: rollouts on a vLLM engine in the trainer's process, synced after each update.

The engine lives on the trainer's GPU (colocated, as TRL's ``vllm_mode="colocate"``)
and takes token ids in and gives token ids out, like `TransformersBackend`
(`envgym.trainers.common.generation`): each reply ends with a stop token when
it stopped, and only the ``stop_token_ids`` end a reply. After an update the
trainer calls ``sync_weights(model)``; the engine copies the model's tensors
into its own (no disk, no second process) and drops its prefix cache, whose
KV blocks the old weights computed. With ``sleep=True`` the trainer calls
`VLLMBackend.sleep` after a step's rollouts: the engine gives its GPU memory
(KV cache and weights) back for the update, and the next ``generate`` wakes it
and, when the weights were dropped or changed, loads them from the trainer's
model first.

The engine needs a model folder: given a live model, the backend saves it
(the causal LM only, `lm_weights`) with its tokenizer in a temporary folder.

Needs vllm (``pip install 'envgym[vllm]'`` on a CUDA machine), imported when a
backend is made; the pure helpers here (`vllm_sampling_kwargs`, `lm_weights`,
`trim_reply`, `save_model_folder`) run without it.

vLLM entry points relied on, read in vLLM's source (a late-2026 main:
``vllm/entrypoints/llm.py``, ``vllm/v1/executor/uniproc_executor.py``,
``vllm/v1/worker/worker_base.py``, ``vllm/config/parallel.py``,
``vllm/sampling_params.py``), its sleep-mode docs (0.10.2 and latest), and TRL
1.16's colocate mode, which syncs weights the same way against vLLM 0.22 to
0.31 (``trl/generation/vllm_generation.py``, ``VLLMGeneration.sync_weights``);
hence ``vllm>=0.22`` in the ``vllm`` extra:

- ``vllm.LLM(model=folder, dtype=, seed=, gpu_memory_utilization=,
  max_model_len=, enable_sleep_mode=, distributed_executor_backend=
  "external_launcher")``. The external launcher runs the engine in this
  process (vLLM sets ``VLLM_ENABLE_V1_MULTIPROCESSING=0`` for it) and takes its
  rank from torchrun's ``RANK``, ``LOCAL_RANK``, ``WORLD_SIZE``, ``MASTER_ADDR``
  and ``MASTER_PORT``; a process started without torchrun gets rank 0 of 1 here.
  Under torchrun every rank builds its engine at the same time (vLLM takes the
  minimum free memory over the ranks).
- ``LLM.generate([{"prompt_token_ids": ids}, ...], sampling_params=, use_tqdm=False)``
  (a ``TokensPrompt`` is a plain dict): outputs in prompt order, each with
  ``outputs[0].token_ids`` and ``outputs[0].stop_reason`` (the stop token id
  when one of ``stop_token_ids`` ended it).
- ``vllm.SamplingParams``: temperature 0 is greedy; ``top_k=-1`` turns the
  cut off in every version (recent ones also take 0, which old ones
  rejected); ``ignore_eos=True`` so that only ``stop_token_ids`` end a reply, as
  in `TransformersBackend` (otherwise the tokenizer's and generation config's
  eos ids stop it too); ``detokenize=False``: nobody reads the text.
- Weights: the model object in this process,
  ``llm.llm_engine.model_executor.driver_worker.worker.model_runner.get_model()``
  (``.model`` where ``get_model`` is missing; ``driver_worker`` forwards
  attribute reads to ``.worker``), falling back to ``LLM.apply_model(fn)``;
  its ``load_weights(iterable of (HF name, tensor))`` maps Hugging Face names
  onto vLLM's fused ``qkv_proj``/``gate_up_proj`` and skips ``lm_head.weight``
  when the embeddings are tied. Then ``LLM.reset_prefix_cache()``.
- Sleep mode: ``LLM.sleep(level=2)`` frees weights and KV cache (the model's
  buffers, e.g. rotary caches, are kept on the CPU), so the weights must be
  loaded again after ``LLM.wake_up(tags=["weights"])``; level 1 (used while no
  live model has been given, so there is nothing to reload from) backs the
  weights up in CPU memory. ``wake_up(tags=["kv_cache"])`` then gives back the
  KV cache; loading weights before it keeps the peak low.
"""

from __future__ import annotations

import gc
import os
import socket
import tempfile
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from envgym.extras import require
from envgym.trainers.common.generation import SamplingParams

__all__ = [
    "NON_LM_PREFIXES",
    "VLLMBackend",
    "lm_weights",
    "save_model_folder",
    "trim_reply",
    "vllm_sampling_kwargs",
]

#: Parameter names that belong to the trainer, not to the causal LM vLLM runs
#: (PPO's value head); they are neither saved for the engine nor synced.
NON_LM_PREFIXES = ("value_head.",)


def _import_vllm() -> Any:
    return require(
        "vllm",
        extra="vllm",
        purpose="the vllm generation backend",
        note="on a CUDA machine, or use backend 'transformers'",
    )


def vllm_sampling_kwargs(params: SamplingParams, stop_token_ids: Sequence[int]) -> dict[str, Any]:
    """``vllm.SamplingParams`` keyword arguments for ``params``: one reply per
    prompt that ends only at ``stop_token_ids`` or ``max_new_tokens``."""
    greedy = params.temperature == 0
    return {
        "n": 1,
        "temperature": 0.0 if greedy else float(params.temperature),
        "top_p": 1.0 if greedy else float(params.top_p),
        "top_k": -1 if greedy or params.top_k == 0 else int(params.top_k),
        "max_tokens": int(params.max_new_tokens),
        "stop_token_ids": [int(t) for t in stop_token_ids],
        "ignore_eos": True,
        "detokenize": False,
    }


def lm_weights(
    model: Any, exclude_prefixes: Sequence[str] = NON_LM_PREFIXES
) -> Iterator[tuple[str, Any]]:
    """``(name, tensor)`` for the causal LM's weights under their Hugging Face
    names, in ``state_dict`` order: what ``save_pretrained`` writes and vLLM's
    ``load_weights`` reads. Names starting with ``exclude_prefixes`` are left
    out; a tensor tied under several names (input embeddings and ``lm_head``)
    comes once, under its first name. The tensors are the model's own, not copies."""
    seen: set[tuple[int, tuple[int, ...]]] = set()
    for name, tensor in model.state_dict().items():
        if name.startswith(tuple(exclude_prefixes)):
            continue
        key = (tensor.data_ptr(), tuple(tensor.shape))
        if tensor.numel() and key in seen:
            continue
        seen.add(key)
        yield name, tensor


def trim_reply(
    token_ids: Sequence[int], stop_token_ids: Sequence[int], stop_reason: Any = None
) -> list[int]:
    """A reply's ids up to and including its first stop token. vLLM keeps the
    stop token in ``token_ids``; should a version leave it out, its
    ``stop_reason`` (the stop token id) puts it back, so a stopped reply always
    ends with its stop token, as `TransformersBackend`'s do."""
    stops = {int(t) for t in stop_token_ids}
    reply: list[int] = []
    for token in token_ids:
        reply.append(int(token))
        if reply[-1] in stops:
            return reply
    if isinstance(stop_reason, int) and stop_reason in stops:
        reply.append(stop_reason)
    return reply


def save_model_folder(
    model: Any,
    tokenizer: Any,
    folder: str | Path,
    exclude_prefixes: Sequence[str] = NON_LM_PREFIXES,
) -> Path:
    """Save ``model``'s causal LM (without ``exclude_prefixes`` weights, which
    vLLM would reject) and ``tokenizer`` in ``folder`` for a vLLM engine to load."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    state = {
        name: tensor
        for name, tensor in model.state_dict().items()
        if not name.startswith(tuple(exclude_prefixes))
    }
    model.save_pretrained(folder, state_dict=state)
    if tokenizer is not None:
        tokenizer.save_pretrained(folder)
    return folder


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _launcher_env() -> None:
    """What vLLM's external launcher reads; torchrun sets it, a lone process is rank 0 of 1."""
    for key, value in (("RANK", "0"), ("LOCAL_RANK", "0"), ("WORLD_SIZE", "1")):
        os.environ.setdefault(key, value)
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    if "MASTER_PORT" not in os.environ:
        os.environ["MASTER_PORT"] = str(_free_port())


def _engine_model(llm: Any) -> Any:
    """The engine's ``nn.Module`` in this process, or None where it is not reachable."""
    executor = getattr(getattr(llm, "llm_engine", None), "model_executor", None)
    worker = getattr(executor, "driver_worker", None)
    worker = getattr(worker, "worker", worker)
    runner = getattr(worker, "model_runner", None)
    if runner is None:
        return None
    get_model = getattr(runner, "get_model", None)
    return get_model() if callable(get_model) else getattr(runner, "model", None)


class VLLMBackend:
    """Generation on a colocated vLLM engine whose weights follow the trainer's model.

    Args:
        model_dir_or_model: a folder saved by ``save_pretrained`` (with its
            tokenizer), or the live policy model, saved to a temporary folder
            for the engine to load; a live model is also what the engine reloads
            its weights from after sleeping.
        tokenizer: saved beside a live model (unused with a folder).
        stop_token_ids: the ids that end a reply.
        gpu_memory_utilization: share of the GPU's memory the engine may take
            (weights, activations, KV cache); the trainer needs the rest.
        seed: the engine's sampling seed (give each torchrun rank its own).
        dtype: the engine's dtype ("auto": the checkpoint's).
        max_model_len: longest prompt plus reply (None: the model's limit).
        sleep: free the engine's memory on `sleep` (vLLM's sleep mode).
        engine_options: more ``vllm.LLM`` arguments (e.g. ``enforce_eager``).
    """

    def __init__(
        self,
        model_dir_or_model: Any,
        tokenizer: Any,
        stop_token_ids: Sequence[int],
        *,
        gpu_memory_utilization: float = 0.3,
        seed: int = 0,
        dtype: str = "auto",
        max_model_len: int | None = None,
        sleep: bool = True,
        engine_options: dict[str, Any] | None = None,
    ) -> None:
        if not stop_token_ids:
            raise ValueError("stop_token_ids is empty; pass the chat template's end-of-turn id")
        if not 0 < gpu_memory_utilization <= 1:
            raise ValueError(
                f"gpu_memory_utilization must be in (0, 1], got {gpu_memory_utilization}"
            )
        self._vllm = _import_vllm()
        self.stop_token_ids = tuple(int(t) for t in stop_token_ids)
        self.sleep_enabled = bool(sleep)
        self._model: Any = None  # the live model the engine's weights come from
        self._folder: tempfile.TemporaryDirectory | None = None
        if isinstance(model_dir_or_model, str | os.PathLike):
            path = Path(model_dir_or_model)
            if not path.is_dir():
                raise FileNotFoundError(
                    f"{path}: no such model folder; pass a folder saved by save_pretrained "
                    "or the live model"
                )
        else:
            self._model = model_dir_or_model
            self._folder = tempfile.TemporaryDirectory(prefix="envgym-vllm-")
            path = save_model_folder(self._model, tokenizer, self._folder.name)
        _launcher_env()
        options: dict[str, Any] = {
            "model": str(path),
            "dtype": dtype,
            "seed": int(seed),
            "gpu_memory_utilization": float(gpu_memory_utilization),
            "enable_sleep_mode": self.sleep_enabled,
            "distributed_executor_backend": "external_launcher",
        }
        if max_model_len:
            options["max_model_len"] = int(max_model_len)
        options.update(engine_options or {})
        self.llm = self._vllm.LLM(**options)
        self._asleep = False
        self._weights_dropped = False  # a level-2 sleep freed them
        self._stale = False  # the model changed while the engine slept

    # ------------------------------------------------------------------ generation
    def generate(self, prompts: Sequence[Sequence[int]], params: SamplingParams) -> list[list[int]]:
        """One reply per prompt: its new token ids, ending with a stop token
        when the reply stopped before ``max_new_tokens``."""
        if any(len(p) == 0 for p in prompts):
            raise ValueError("a prompt is empty; every prompt needs at least one token")
        if not prompts:
            return []
        self._wake()
        sampling = self._vllm.SamplingParams(**vllm_sampling_kwargs(params, self.stop_token_ids))
        outputs = self.llm.generate(
            [{"prompt_token_ids": [int(t) for t in p]} for p in prompts],
            sampling_params=sampling,
            use_tqdm=False,
        )
        return [
            trim_reply(o.outputs[0].token_ids, self.stop_token_ids, o.outputs[0].stop_reason)
            for o in outputs
        ]

    # ------------------------------------------------------------------ weights
    def sync_weights(self, model: Any) -> None:
        """Make the next `generate` sample from ``model``'s current weights: copied
        into the engine now, or, while it sleeps, when `generate` wakes it."""
        self._model = model
        if self._asleep:
            self._stale = True
            return
        self._load(model)

    def read_engine_weights(self, names: Sequence[str]) -> dict[str, Any]:
        """CPU copies of the engine's parameters ``names`` (vLLM's names; the
        embeddings, norms, ``o_proj`` and ``down_proj`` keep the Hugging Face
        ones): what it samples from now. Wakes the engine."""
        self._wake()

        def read(engine_model: Any) -> dict[str, Any]:
            params = dict(engine_model.named_parameters())
            missing = [n for n in names if n not in params]
            if missing:
                raise KeyError(f"the engine's model has no parameters {missing}")
            return {n: params[n].detach().float().cpu().clone() for n in names}

        return self._on_engine_model(read)

    def _load(self, model: Any) -> None:
        import torch

        def load(engine_model: Any) -> None:
            with torch.no_grad():
                engine_model.load_weights(lm_weights(model))

        self._on_engine_model(load)
        self.llm.reset_prefix_cache()  # its KV blocks came from the old weights
        self._stale = False
        self._weights_dropped = False

    def _on_engine_model(self, fn: Callable[[Any], Any]) -> Any:
        engine_model = _engine_model(self.llm)
        if engine_model is not None:
            return fn(engine_model)
        if hasattr(self.llm, "apply_model"):
            return self.llm.apply_model(fn)[0]
        raise RuntimeError(
            "cannot reach the vLLM engine's model in this process; this vLLM version is not "
            "supported by envgym's vllm backend (see envgym/trainers/common/vllm_backend.py)"
        )

    # ------------------------------------------------------------------ memory
    def sleep(self) -> None:
        """Give the engine's GPU memory back until the next `generate` (call it
        after a step's rollouts, before the update). A no-op without ``sleep``."""
        if not self.sleep_enabled or self._asleep:
            return
        # Level 2 drops the weights: fine when a live model can reload them.
        level = 2 if self._model is not None else 1
        self.llm.sleep(level=level)
        self._asleep = True
        self._weights_dropped = level == 2

    def _wake(self) -> None:
        if not self._asleep:
            return
        self.llm.wake_up(tags=["weights"])
        if self._stale or self._weights_dropped:
            self._load(self._model)
        self.llm.wake_up(tags=["kv_cache"])
        self._asleep = False

    def close(self) -> None:
        """Drop the engine (its GPU memory goes back to torch) and the temporary folder."""
        if getattr(self, "llm", None) is not None:
            self.llm = None
            gc.collect()
            import torch

            if torch.cuda.is_available():
                torch.cuda.empty_cache()
        if self._folder is not None:
            self._folder.cleanup()
            self._folder = None

    def __enter__(self) -> VLLMBackend:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
