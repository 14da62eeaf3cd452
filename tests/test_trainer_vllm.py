"""The vLLM generation backend (envgym.trainers.common.vllm_backend).

On the CPU: the pure helpers (sampling mapping, the weights sent to the engine,
reply trimming, the folder the engine loads), the error without vllm, and the
backend's sleep/sync bookkeeping against a stand-in engine (`FakeLLM`) that
runs the saved model with transformers and, like vLLM, forgets its weights in a
level-2 sleep and refuses work while asleep. With a CUDA GPU and vllm: the real
engine samples from the trainer's weights after an optimizer step and a sync
(``pytest -m gpu``).
"""

from __future__ import annotations

import importlib.util
import sys
import types
from types import SimpleNamespace

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from envgym.trainers.common.generation import SamplingParams, TransformersBackend  # noqa: E402
from envgym.trainers.common.tiny import build_tiny_model  # noqa: E402
from envgym.trainers.common.vllm_backend import (  # noqa: E402
    VLLMBackend,
    lm_weights,
    save_model_folder,
    trim_reply,
    vllm_sampling_kwargs,
)

torch.set_num_threads(1)
GREEDY = SamplingParams(temperature=0.0, max_new_tokens=8)


def chat_prompts(tokenizer, texts=("Move left.", "Where is the goal?", "<answer>3</answer>")):
    prompts = []
    for text in texts:
        rendered = tokenizer.apply_chat_template(
            [{"role": "user", "content": text}], add_generation_prompt=True, tokenize=False
        )
        prompts.append(tokenizer(rendered, add_special_tokens=False)["input_ids"])
    return prompts


def stop_id(tokenizer) -> int:
    return tokenizer.convert_tokens_to_ids("<|im_end|>")


def perturb(model, seed: int) -> None:
    """Stands in for an update: every weight moves."""
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(0.05 * torch.randn(p.shape, generator=generator).to(p.device, p.dtype))


# ---------------------------------------------------------------- pure helpers
def test_greedy_sampling_turns_every_cut_off():
    kwargs = vllm_sampling_kwargs(
        SamplingParams(temperature=0.0, top_p=0.5, top_k=5, max_new_tokens=7), [3, 9]
    )
    assert kwargs["temperature"] == 0.0
    assert kwargs["top_p"] == 1.0 and kwargs["top_k"] == -1
    assert kwargs["max_tokens"] == 7 and kwargs["n"] == 1
    # Only the given stop ids end a reply, as with TransformersBackend.
    assert kwargs["stop_token_ids"] == [3, 9] and kwargs["ignore_eos"] is True


def test_sampled_params_carry_over_and_top_k_zero_means_off():
    off = vllm_sampling_kwargs(SamplingParams(temperature=0.7, top_p=0.9, top_k=0), [1])
    assert (off["temperature"], off["top_p"], off["top_k"]) == (0.7, 0.9, -1)
    cut = vllm_sampling_kwargs(SamplingParams(temperature=1.0, top_k=20), [1])
    assert cut["top_k"] == 20


def test_lm_weights_cover_the_state_dict_once_and_leave_out_the_value_head():
    model, _ = build_tiny_model(seed=0)
    model.value_head = torch.nn.Linear(model.config.hidden_size, 1)
    sent = dict(lm_weights(model))
    state = model.state_dict()
    assert not [n for n in sent if n.startswith("value_head.")]
    lm_names = [n for n in state if not n.startswith("value_head.")]
    pointers = {t.data_ptr() for t in sent.values()}
    # Every weight of the causal LM reaches the engine, the tied lm_head through the embeddings.
    assert all(n in sent or state[n].data_ptr() in pointers for n in lm_names)
    assert "model.embed_tokens.weight" in sent and "lm_head.weight" not in sent
    assert len(sent) == len(lm_names) - 1
    # The model's own tensors, not copies: nothing is allocated per sync.
    assert sent["model.norm.weight"].data_ptr() == model.model.norm.weight.data_ptr()


def test_lm_weights_send_an_untied_lm_head():
    from transformers import LlamaForCausalLM

    tied, _ = build_tiny_model(seed=0)
    config = tied.config
    config.tie_word_embeddings = False
    model = LlamaForCausalLM(config)
    sent = dict(lm_weights(model))
    assert "lm_head.weight" in sent and "model.embed_tokens.weight" in sent
    assert set(sent) == set(model.state_dict())


def test_trim_reply_keeps_the_first_stop_token():
    assert trim_reply([5, 6, 2, 7], [2]) == [5, 6, 2]
    assert trim_reply([5, 6, 7], [2]) == [5, 6, 7]  # cut at max_new_tokens: no stop token
    assert trim_reply([5, 6], [2, 4], stop_reason=4) == [5, 6, 4]  # put back if left out
    assert trim_reply([5, 6], [2], stop_reason="</s>") == [5, 6]  # a stop string is no token


def test_saved_folder_loads_as_the_causal_lm_without_the_value_head(tmp_path):
    from safetensors import safe_open
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model, tokenizer = build_tiny_model(seed=0)
    model.value_head = torch.nn.Linear(model.config.hidden_size, 1)
    save_model_folder(model, tokenizer, tmp_path)
    with safe_open(str(tmp_path / "model.safetensors"), "pt") as fh:
        assert not [k for k in fh.keys() if k.startswith("value_head.")]
    loaded = AutoModelForCausalLM.from_pretrained(tmp_path)
    for name, tensor in loaded.state_dict().items():
        assert torch.equal(tensor, model.state_dict()[name]), name
    assert AutoTokenizer.from_pretrained(tmp_path).chat_template == tokenizer.chat_template


def test_without_vllm_the_error_says_how_to_install_it():
    if importlib.util.find_spec("vllm") is not None:
        pytest.skip("vllm is installed here")
    with pytest.raises(ImportError, match=r"pip install 'envgym\[vllm\]' on a CUDA machine"):
        VLLMBackend("model-folder", None, [2])


# ---------------------------------------------------------------- a stand-in engine
class FakeEngineModel:
    """The engine's model: the saved checkpoint run by transformers."""

    def __init__(self, folder: str):
        from transformers import AutoModelForCausalLM

        self.hf = AutoModelForCausalLM.from_pretrained(folder).eval()
        self.unmapped = False  # weights' memory released (sleeping)

    def named_parameters(self):
        return self.hf.named_parameters()

    def load_weights(self, weights):
        if self.unmapped:
            raise RuntimeError("load_weights into weights that are asleep")
        params = self.hf.state_dict()
        for name, tensor in weights:
            if name not in params:  # as vLLM: a checkpoint name the model does not have
                raise ValueError(f"There is no module or parameter named {name!r}")
            params[name].copy_(tensor)


class FakeLLM:
    """What `VLLMBackend` uses of ``vllm.LLM``, with vLLM's sleep semantics."""

    def __init__(self, model: str, **options):
        self.options = options
        self.engine_model = FakeEngineModel(model)
        runner = SimpleNamespace(model=self.engine_model)
        worker = SimpleNamespace(worker=SimpleNamespace(model_runner=runner))
        self.llm_engine = SimpleNamespace(model_executor=SimpleNamespace(driver_worker=worker))
        self.asleep: set[str] = set()
        self.calls: list[tuple] = []

    def generate(self, prompts, sampling_params, use_tqdm=True):
        if self.asleep:
            raise RuntimeError(f"generate while {sorted(self.asleep)} sleep")
        kw = sampling_params.kwargs
        assert kw["temperature"] == 0.0, "the stand-in only decodes greedily"
        hf = self.engine_model.hf
        runner = TransformersBackend(hf, hf.config.pad_token_id, kw["stop_token_ids"])
        replies = runner.generate(
            [p["prompt_token_ids"] for p in prompts], SamplingParams(0.0, 1.0, 0, kw["max_tokens"])
        )
        return [
            SimpleNamespace(outputs=[SimpleNamespace(token_ids=r, stop_reason=None)])
            for r in replies
        ]

    def sleep(self, level=1):
        self.calls.append(("sleep", level))
        self.asleep = {"weights", "kv_cache"}
        self.engine_model.unmapped = True
        if level == 2:  # the weights are discarded
            with torch.no_grad():
                for p in self.engine_model.hf.parameters():
                    p.zero_()

    def wake_up(self, tags=None):
        self.calls.append(("wake_up", tuple(tags or ())))
        self.asleep -= set(tags or ("weights", "kv_cache"))
        self.engine_model.unmapped = "weights" in self.asleep

    def reset_prefix_cache(self):
        self.calls.append(("reset_prefix_cache",))


@pytest.fixture
def fake_vllm(monkeypatch):
    module = types.ModuleType("vllm")
    module.LLM = FakeLLM
    module.SamplingParams = lambda **kwargs: SimpleNamespace(kwargs=kwargs)
    monkeypatch.setitem(sys.modules, "vllm", module)
    for key, value in (("RANK", "0"), ("LOCAL_RANK", "0"), ("WORLD_SIZE", "1")):
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("MASTER_ADDR", "127.0.0.1")
    monkeypatch.setenv("MASTER_PORT", "29555")
    return module


def test_engine_options_reach_vllm(fake_vllm):
    model, tokenizer = build_tiny_model(seed=0)
    backend = VLLMBackend(
        model,
        tokenizer,
        [stop_id(tokenizer)],
        gpu_memory_utilization=0.25,
        seed=3,
        dtype="bfloat16",
        max_model_len=512,
        engine_options={"enforce_eager": True},
    )
    options = backend.llm.options
    assert options["gpu_memory_utilization"] == 0.25 and options["seed"] == 3
    assert options["dtype"] == "bfloat16" and options["max_model_len"] == 512
    assert options["enable_sleep_mode"] is True and options["enforce_eager"] is True
    assert options["distributed_executor_backend"] == "external_launcher"
    backend.close()


def test_after_sleep_and_sync_the_engine_samples_from_the_trainers_weights(fake_vllm):
    model, tokenizer = build_tiny_model(seed=0)
    model.value_head = torch.nn.Linear(model.config.hidden_size, 1)  # PPO's: never sent
    reference = TransformersBackend(model, tokenizer.pad_token_id, [stop_id(tokenizer)])
    prompts = chat_prompts(tokenizer)
    with VLLMBackend(model, tokenizer, [stop_id(tokenizer)]) as backend:
        first = backend.generate(prompts, GREEDY)
        assert first == reference.generate(prompts, GREEDY)

        backend.sleep()  # rollouts done: level 2 frees the engine's weights
        perturb(model, seed=1)
        backend.sync_weights(model)  # asleep: loaded when generate wakes the engine
        second = backend.generate(prompts, GREEDY)
        assert second == reference.generate(prompts, GREEDY)
        assert second != first  # the update changed what greedy decoding says

        perturb(model, seed=2)
        backend.sync_weights(model)  # awake: loaded now
        names = ["model.embed_tokens.weight", "model.layers.0.mlp.down_proj.weight"]
        engine = backend.read_engine_weights(names)
        for name in names:
            assert torch.equal(engine[name], model.state_dict()[name].float())
        calls = backend.llm.calls
    assert calls[:4] == [
        ("sleep", 2),
        ("wake_up", ("weights",)),
        ("reset_prefix_cache",),  # the old weights' KV blocks are dropped
        ("wake_up", ("kv_cache",)),
    ]
    assert calls[4:] == [("reset_prefix_cache",)]


def test_a_folder_engine_keeps_its_weights_through_sleep(fake_vllm, tmp_path):
    model, tokenizer = build_tiny_model(tmp_path, seed=0)
    reference = TransformersBackend(model, tokenizer.pad_token_id, [stop_id(tokenizer)])
    prompts = chat_prompts(tokenizer)
    with VLLMBackend(str(tmp_path), None, [stop_id(tokenizer)]) as backend:
        backend.sleep()  # no live model to reload from: level 1 keeps the weights
        assert backend.generate(prompts, GREEDY) == reference.generate(prompts, GREEDY)
        assert backend.llm.calls[0] == ("sleep", 1)


def test_without_sleep_mode_the_engine_stays_awake(fake_vllm):
    model, tokenizer = build_tiny_model(seed=0)
    with VLLMBackend(model, tokenizer, [stop_id(tokenizer)], sleep=False) as backend:
        backend.sleep()
        backend.generate(chat_prompts(tokenizer)[:1], GREEDY)
        assert backend.llm.options["enable_sleep_mode"] is False
        assert backend.llm.calls == []


def test_missing_folder_is_named(fake_vllm, tmp_path):
    with pytest.raises(FileNotFoundError, match="no such model folder"):
        VLLMBackend(str(tmp_path / "nope"), None, [2])


# ---------------------------------------------------------------- the real engine
def _gpu_and_vllm() -> bool:
    return torch.cuda.is_available() and importlib.util.find_spec("vllm") is not None


@pytest.mark.gpu
@pytest.mark.skipif(not _gpu_and_vllm(), reason="needs a CUDA GPU and vllm")
def test_vllm_samples_from_the_weights_of_one_update():
    vllm = pytest.importorskip("vllm")
    # head_dim 64: a size every vLLM attention backend takes.
    model, tokenizer = build_tiny_model(hidden_size=128, num_heads=2, seed=0)
    model = model.to("cuda", torch.bfloat16).train()
    stop = stop_id(tokenizer)
    prompts = chat_prompts(tokenizer)
    names = [
        "model.embed_tokens.weight",
        "model.layers.0.mlp.down_proj.weight",
        "model.norm.weight",
    ]

    def trainer_weights():
        state = model.state_dict()
        return {n: state[n].detach().float().cpu() for n in names}

    def first_token_logprob(backend):
        params = vllm.SamplingParams(max_tokens=1, temperature=0.0, logprobs=0, detokenize=False)
        out = backend.llm.generate(
            [{"prompt_token_ids": prompts[0]}], sampling_params=params, use_tqdm=False
        )[0].outputs[0]
        return out.logprobs[0][out.token_ids[0]].logprob

    backend = VLLMBackend(
        model,
        tokenizer,
        [stop],
        gpu_memory_utilization=0.2,
        dtype="bfloat16",
        max_model_len=1024,
        engine_options={"enforce_eager": True},
    )
    try:
        replies = backend.generate(prompts, GREEDY)
        assert len(replies) == len(prompts)
        for reply in replies:
            assert reply and (reply[-1] == stop or len(reply) == GREEDY.max_new_tokens)
            assert stop not in reply[:-1]
        before = backend.read_engine_weights(names)
        start = trainer_weights()
        for n in names:  # vLLM pads the embedding rows to a multiple of 64
            assert torch.equal(before[n][: start[n].shape[0]], start[n]), n
        logprob_before = first_token_logprob(backend)

        # One optimizer step on the prompts' language-model loss.
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
        ids = torch.tensor([prompts[0]], device="cuda")
        model(input_ids=ids, labels=ids).loss.backward()
        optimizer.step()

        backend.sleep()
        backend.sync_weights(model)
        backend.generate(prompts, GREEDY)
        after = backend.read_engine_weights(names)
        new = trainer_weights()
        for n in names:
            assert not torch.equal(after[n], before[n]), f"{n} did not change in the engine"
            assert torch.equal(after[n][: new[n].shape[0]], new[n]), n
        assert first_token_logprob(backend) != logprob_before
    finally:
        backend.close()


def test_the_vllm_backend_on_the_cpu_is_refused_with_the_fix(tmp_path):
    from envgym.trainers.grpo import GRPOConfig, train

    config = GRPOConfig(
        backend="vllm", device="cpu", steps=1, out_dir=str(tmp_path / "run"), progress=False
    )
    with pytest.raises(ValueError, match="--backend vllm needs a CUDA GPU.*--backend transformers"):
        train(config)
    assert not (tmp_path / "run" / "metrics.jsonl").exists()  # refused before it trained
