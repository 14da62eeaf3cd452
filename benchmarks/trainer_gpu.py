"""GPU section of ``benchmarks/trainer.py``: envgym's GRPO beside TRL's GRPOTrainer.

One randomly initialised model of Qwen2-0.5B's shape (bf16 where supported,
its 151,936-row embedding included, over the tiny tokenizer), one env, one
batch (``num_groups x group_size`` episodes per step), four runs:

- ``envgym transformers``: `envgym.trainers.grpo` with ``backend="transformers"``.
- ``envgym vllm``: the same with ``backend="vllm"`` (a colocated vLLM engine,
  weights synced after each update, sleeping during the update).
- ``trl transformers`` / ``trl vllm``: TRL's ``GRPOTrainer`` through its
  ``environment_factory`` (as in ``examples/trl_grpo.py``), the model loaded in
  bf16, without and with TRL's colocated vLLM (sleep mode on).

Per step: rollout tokens/s (generated tokens over generation seconds), the
seconds left for the update (step minus generation), the step's seconds, and
trained tokens/s: reply tokens in the loss per step over the step's seconds
(envgym: ``update/trained_tokens`` where the trainer logs it, else every
generated token, since no group is dropped here; TRL: the completion tokens
the model wrote, tool results excluded). Medians over the steps after the
first. A random model never calls TRL's tool, so a TRL rollout is one reply of
``max_turns x 64`` tokens where envgym's is up to ``max_turns`` replies of 64
(the same token budget per episode).

Each run is a fresh Python process (this file with ``--run SPEC``), so one
run's vLLM engine, CUDA memory and torch.distributed state never reach the
next. A run whose package is missing (vllm, trl) is skipped with a note.
"""

from __future__ import annotations

import importlib.util
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

GPU_ENVS = ("envgym/Sokoban-v0", "envgym/Household-v0")
#: (runner, backend) pairs, in table order.
RUNS = (("envgym", "transformers"), ("envgym", "vllm"), ("trl", "transformers"), ("trl", "vllm"))
REPLY_TOKENS = 64  # per turn
HEADERS = [
    "env",
    "run",
    "rollout tokens/s",
    "generation s",
    "update s",
    "step s",
    "trained tokens/step",
    "trained tokens/s",
    "vs TRL",
    "env share",
]
EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "trl_grpo.py"


def build_qwen2_shaped_model(folder: Path, num_layers: int = 24) -> str:
    """Save a random model of Qwen2-0.5B's shape (its 151,936-row embedding
    included) with the tiny tokenizer in `folder`; returns the dtype saved."""
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM

    from envgym.trainers.common.tiny import build_tiny_tokenizer

    tokenizer = build_tiny_tokenizer()
    config = Qwen2Config(
        hidden_size=896,
        intermediate_size=4864,
        num_hidden_layers=num_layers,
        num_attention_heads=14,
        num_key_value_heads=2,
        vocab_size=151936,
        max_position_embeddings=32768,
        tie_word_embeddings=True,
        pad_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.eos_token_id,
        bos_token_id=tokenizer.bos_token_id,
    )
    cuda = torch.cuda.is_available()
    dtype = torch.bfloat16 if cuda and torch.cuda.is_bf16_supported() else torch.float32
    torch.manual_seed(0)
    with torch.device("cuda" if cuda else "cpu"):  # initialising 0.5B floats is slow on a CPU
        model = Qwen2ForCausalLM(config).to(dtype)
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    del model
    return str(dtype).removeprefix("torch.")


# ---------------------------------------------------------------- one run (child process)
def run_envgym(spec: dict[str, Any]) -> dict[str, Any]:
    """envgym's GRPO on ``spec``: the medians `trainer.measure` reads from metrics.jsonl."""
    from trainer import measure  # benchmarks/trainer.py, beside this file

    overrides: dict[str, Any] = {
        "model": spec["folder"],
        "device": spec["device"],
        "steps": spec["steps"],
        "max_new_tokens": REPLY_TOKENS,
        "num_groups": spec["num_groups"],
        "group_size": spec["group_size"],
        "env_kwargs": {"max_turns": spec["max_turns"]},
        "seed": 0,
    }
    if spec["backend"] != "transformers":  # the trainer's default backend
        overrides["backend"] = spec["backend"]
        overrides["vllm_gpu_memory_utilization"] = spec["vllm_memory"]
    return measure(spec["env"], **overrides)


def _load_example() -> Any:
    spec = importlib.util.spec_from_file_location("trl_grpo_example", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up while it runs
    spec.loader.exec_module(module)
    return module


def run_trl(spec: dict[str, Any]) -> dict[str, Any]:
    """TRL's GRPOTrainer on ``spec``; per-step times from a callback and from
    wrapping the trainer's ``_generate`` (its rollouts)."""
    import functools
    import os

    import torch
    from transformers import TrainerCallback

    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    from trl import GRPOConfig, GRPOTrainer

    example = _load_example()
    env_id, env_kwargs = spec["env"], {"max_turns": spec["max_turns"]}
    cuda = spec["device"] == "cuda"
    # TRL parses tool calls from the chat template: the tiny tokenizer with TRL's
    # Qwen2.5 template, as examples/trl_grpo.py builds it (its tiny model is unused).
    _, tokenizer = example.build_tiny(env_id, env_kwargs, seed=0)
    batch = spec["num_groups"] * spec["group_size"]

    def sync() -> None:
        if cuda:
            torch.cuda.synchronize()

    class StepTimes(TrainerCallback):
        def __init__(self) -> None:
            self.seconds: list[float] = []
            self._start = 0.0

        def on_step_begin(self, args, state, control, **kwargs):
            sync()
            self._start = time.perf_counter()

        def on_step_end(self, args, state, control, **kwargs):
            sync()
            self.seconds.append(time.perf_counter() - self._start)

    steps = StepTimes()
    episodes: list[Any] = []
    with tempfile.TemporaryDirectory() as out_dir:
        config = GRPOConfig(
            output_dir=out_dir,
            max_steps=spec["steps"],
            per_device_train_batch_size=batch,
            num_generations=spec["group_size"],
            gradient_accumulation_steps=1,
            max_completion_length=spec["max_turns"] * REPLY_TOKENS,
            max_tool_calling_iterations=spec["max_turns"],
            learning_rate=1e-6,
            temperature=1.0,
            beta=0.0,
            # Pure bf16 weights, as envgym's trainer loads the folder (no autocast).
            model_init_kwargs={"dtype": spec["dtype"]},
            bf16=False,
            use_cpu=not cuda,
            use_vllm=spec["backend"] == "vllm",
            vllm_mode="colocate",
            vllm_gpu_memory_utilization=spec["vllm_memory"],
            vllm_enable_sleep_mode=spec["backend"] == "vllm",
            logging_steps=1,
            save_strategy="no",
            report_to="none",
            seed=0,
        )
        trainer = GRPOTrainer(
            model=spec["folder"],
            args=config,
            train_dataset=example.build_prompts(env_id, env_kwargs, spec["steps"] * batch),
            processing_class=tokenizer,
            environment_factory=functools.partial(
                example.EnvgymEnvironment, env_id, env_kwargs, episodes
            ),
            callbacks=[steps],
        )
        generation_s: list[float] = []
        generated: list[int] = []
        generate = trainer._generate

        def timed_generate(prompts):
            sync()
            start = time.perf_counter()
            out = generate(prompts)
            sync()
            generation_s.append(time.perf_counter() - start)
            completion_ids, tool_mask = out[1], out[2]  # tool_mask: 1 on the model's tokens
            generated.append(
                sum(sum(m) for m in tool_mask)
                if tool_mask is not None
                else sum(len(c) for c in completion_ids)
            )
            return out

        trainer._generate = timed_generate
        trainer.train()
    per_step = list(zip(steps.seconds, generation_s, generated, strict=False))[1:]
    if not per_step:
        raise ValueError("--gpu-steps must be at least 2: the first step is left out as warm-up")
    return {
        "rollout/generation_s": statistics.median(g for _, g, _ in per_step),
        "update/update_s": statistics.median(s - g for s, g, _ in per_step),
        "time/step_s": statistics.median(s for s, _, _ in per_step),
        "tokens_per_s": statistics.median(n / g for _, g, n in per_step),
        "trained_tokens": statistics.median(n for _, _, n in per_step),
        "trained_tokens_per_s": statistics.median(n / s for s, _, n in per_step),
        "env_share_pct": None,
        "measured_steps": len(per_step),
    }


# ---------------------------------------------------------------- the section (parent)
def _run_child(spec: dict[str, Any]) -> dict[str, Any]:
    """Run ``spec`` in a fresh process; its last stdout line is the JSON row."""
    done = subprocess.run(
        [sys.executable, __file__, "--run", json.dumps(spec)],
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
        return {"error": " | ".join(tail) or f"exit status {done.returncode}"}
    return json.loads(done.stdout.strip().splitlines()[-1])


def _missing(runner: str, backend: str) -> str | None:
    found = importlib.util.find_spec
    if backend == "vllm" and found("vllm") is None:
        return "vllm is not installed (pip install 'envgym[vllm]')"
    if runner == "trl" and (found("trl") is None or found("datasets") is None):
        return "trl is not installed (pip install 'envgym[trl]')"
    return None


def gpu_section(
    console: Any,
    *,
    steps: int,
    num_groups: int,
    group_size: int,
    max_turns: int,
    vllm_memory: float,
    env_ids: tuple[str, ...] = GPU_ENVS,
    device: str = "cuda",
) -> list[dict[str, Any]]:
    """Measure every (env, run) pair, print the table and the notes; returns the rows."""
    import torch

    from envgym.cli.output import print_table

    notes: dict[str, str] = {}
    records: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as folder:
        with console.status("building a random Qwen2-0.5B-shaped model ...", spinner="dots"):
            dtype = build_qwen2_shaped_model(Path(folder))
        for env_id in env_ids:
            for runner, backend in RUNS:
                name = f"{runner} {backend}"
                why = _missing(runner, backend)
                if why is not None:
                    notes[name] = f"{name} skipped: {why}"
                    continue
                spec = {
                    "runner": runner,
                    "backend": backend,
                    "env": env_id,
                    "folder": folder,
                    "dtype": dtype,
                    "device": device,
                    "steps": steps,
                    "num_groups": num_groups,
                    "group_size": group_size,
                    "max_turns": max_turns,
                    "vllm_memory": vllm_memory,
                }
                if not console.is_terminal:  # a pipe gets no spinner: say what runs
                    print(f"{name} on {env_id} ...", flush=True)
                with console.status(f"GPU: {name} on {env_id} ...", spinner="dots"):
                    row = _run_child(spec)
                if "error" in row:
                    notes[f"{name} {env_id}"] = f"{name} on {env_id} failed: {row['error']}"
                    continue
                records.append({"env": env_id, "run": name, **row})
    gpu = torch.cuda.get_device_name() if torch.cuda.is_available() else device
    console.print(
        f"\nGPU ({gpu}), Qwen2-0.5B shape, random, {dtype}, {steps} steps, "
        f"{num_groups}x{group_size} episodes of at most {max_turns} x {REPLY_TOKENS} reply tokens"
    )
    print_table(HEADERS, [_cells(r, records) for r in records], right=HEADERS[2:], console=console)
    for note in notes.values():
        console.print(note)
    return records


def _cells(row: dict[str, Any], records: list[dict[str, Any]]) -> list[str]:
    """A table row; ``vs TRL``: envgym's trained tokens/s over TRL's with the same backend."""
    versus = "-"
    if row["run"].startswith("envgym"):
        twin = row["run"].replace("envgym", "trl", 1)
        trl = [r for r in records if r["env"] == row["env"] and r["run"] == twin]
        if trl and trl[0]["trained_tokens_per_s"] > 0:
            versus = f"{row['trained_tokens_per_s'] / trl[0]['trained_tokens_per_s']:.2f}x"
    share = row.get("env_share_pct")
    return [
        row["env"],
        row["run"],
        f"{row['tokens_per_s']:,.0f}",
        f"{row['rollout/generation_s']:.3f}",
        f"{row['update/update_s']:.3f}",
        f"{row['time/step_s']:.3f}",
        f"{row['trained_tokens']:,.0f}",
        f"{row['trained_tokens_per_s']:,.0f}",
        versus,
        "-" if share is None else f"{share:.2f}%",
    ]


def main(argv: list[str] | None = None) -> int:
    """``--run SPEC``: one run in this process, its row printed as the last line."""
    import argparse

    parser = argparse.ArgumentParser(description="one run of the trainer benchmark's GPU section")
    parser.add_argument("--run", required=True, help="the run's spec as JSON")
    spec = json.loads(parser.parse_args(argv).run)
    import envgym  # noqa: F401 - registers the ids

    row = run_trl(spec) if spec["runner"] == "trl" else run_envgym(spec)
    print(json.dumps(row), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
