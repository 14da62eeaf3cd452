"""GPU section of ``benchmarks/trainer.py``: envgym's GRPO beside TRL's GRPOTrainer.

One randomly initialised model of Qwen2-0.5B's shape (bf16 where supported,
its 151,936-row embedding included, over the tiny tokenizer), one env, one
batch (``num_groups x group_size`` episodes per step), up to four runs:

- ``envgym-transformers``: `envgym.trainers.grpo` with ``backend="transformers"``.
- ``envgym-vllm``: the same with ``backend="vllm"`` (a colocated vLLM engine,
  weights synced after each update, sleeping during the update).
- ``trl-transformers`` / ``trl-vllm``: TRL's ``GRPOTrainer`` through its
  ``environment_factory`` (as in ``examples/trl_grpo.py``), the model loaded in
  bf16, without and with TRL's colocated vLLM (sleep mode on).

Per step: rollout tokens/s (generated tokens over generation seconds), the
seconds left for the update (step minus generation), the step's seconds,
trained tokens/s: reply tokens in the loss per step over the step's seconds
(envgym: ``update/trained_tokens`` where the trainer logs it, else every
generated token, since no group is dropped here; TRL: the completion tokens
the model wrote, tool results excluded), the env's share of the step (envgym:
its ``rollout/env_s``; TRL: the time inside the environment's ``reset`` and
``step``) and the run's peak GPU memory. Medians over the steps after the
first. A random model never calls TRL's tool, so a TRL rollout is one reply of
``max_turns x 64`` tokens where envgym's is up to ``max_turns`` replies of 64
(the same token budget per episode).

Each run is a fresh Python process (this file with ``--run SPEC``), so one
run's vLLM engine, CUDA memory and torch.distributed state never reach the
next. A run whose package is missing (vllm, trl) is skipped with a note, one
that fails or passes ``--run-timeout`` gives a row with its error. The
``tiny`` shape and ``device="cpu"`` run the same code without a GPU (the GPU
check's dry run, `scripts/gpu_check.sh --dry-run`).
"""

from __future__ import annotations

import importlib.util
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
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


#: Model shapes: Qwen2-0.5B's (24 layers, its 151,936-row embedding), and a
#: tiny one of the same class for a dry run on the CPU (`scripts/gpu_check.sh
#: --dry-run`), whose vocabulary covers the tiny tokenizers of both runners.
MODEL_SHAPES = {
    "qwen2-0.5b": dict(
        hidden_size=896,
        intermediate_size=4864,
        num_hidden_layers=24,
        num_attention_heads=14,
        num_key_value_heads=2,
        vocab_size=151936,
    ),
    "tiny": dict(
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        vocab_size=1024,
    ),
}


def build_qwen2_shaped_model(folder: Path, shape: str = "qwen2-0.5b", device: str = "cuda") -> str:
    """Save a random Qwen2 model of ``shape`` (`MODEL_SHAPES`) with the tiny
    tokenizer in `folder`; returns the dtype saved (bf16 on a GPU that has it)."""
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM

    from envgym.trainers.common.tiny import build_tiny_tokenizer

    tokenizer = build_tiny_tokenizer()
    sizes = MODEL_SHAPES[shape]
    if sizes["vocab_size"] < len(tokenizer):
        raise ValueError(f"shape {shape!r}: vocab_size is below the tokenizer's {len(tokenizer)}")
    config = Qwen2Config(
        **sizes,
        max_position_embeddings=32768,
        tie_word_embeddings=True,
        pad_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.eos_token_id,
        bos_token_id=tokenizer.bos_token_id,
    )
    cuda = device.startswith("cuda")
    dtype = torch.bfloat16 if cuda and torch.cuda.is_bf16_supported() else torch.float32
    torch.manual_seed(0)
    with torch.device(device):  # initialising 0.5B floats is slow on a CPU
        model = Qwen2ForCausalLM(config).to(dtype)
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    del model
    return str(dtype).removeprefix("torch.")


# ---------------------------------------------------------------- one run (child process)
def run_envgym(spec: dict[str, Any]) -> dict[str, Any]:
    """envgym's GRPO on ``spec``: the medians `trainer_measure.measure` reads from metrics.jsonl."""
    from trainer_measure import measure  # beside this file

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

    env_seconds = [0.0]  # time inside the env's reset and step, over the whole run

    class TimedEnvironment(example.EnvgymEnvironment):
        """The example's environment, timing what the env itself takes."""

        def reset(self, **row: Any) -> str:
            start = time.perf_counter()
            try:
                return super().reset(**row)
            finally:
                env_seconds[0] += time.perf_counter() - start

        def step(self, reply: str) -> str:
            start = time.perf_counter()
            try:
                return super().step(reply)
            finally:
                env_seconds[0] += time.perf_counter() - start

    # TRL builds the `step` tool's schema from the method's docstring.
    TimedEnvironment.step.__doc__ = example.EnvgymEnvironment.step.__doc__

    class StepTimes(TrainerCallback):
        def __init__(self) -> None:
            self.seconds: list[float] = []
            self.env_seconds: list[float] = []
            self._start = self._env_start = 0.0

        def on_step_begin(self, args, state, control, **kwargs):
            sync()
            self._start, self._env_start = time.perf_counter(), env_seconds[0]

        def on_step_end(self, args, state, control, **kwargs):
            sync()
            self.seconds.append(time.perf_counter() - self._start)
            self.env_seconds.append(env_seconds[0] - self._env_start)

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
            environment_factory=functools.partial(TimedEnvironment, env_id, env_kwargs, episodes),
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
    per_step = list(zip(steps.seconds, generation_s, generated, steps.env_seconds, strict=False))[
        1:
    ]
    if not per_step:
        raise ValueError("--gpu-steps must be at least 2: the first step is left out as warm-up")
    return {
        "rollout/generation_s": statistics.median(g for _, g, _, _ in per_step),
        "update/update_s": statistics.median(s - g for s, g, _, _ in per_step),
        "time/step_s": statistics.median(s for s, _, _, _ in per_step),
        "tokens_per_s": statistics.median(n / g for _, g, n, _ in per_step),
        "trained_tokens": statistics.median(n for _, _, n, _ in per_step),
        "trained_tokens_per_s": statistics.median(n / s for s, _, n, _ in per_step),
        "env_share_pct": statistics.median(100 * e / s for s, _, _, e in per_step),
        "measured_steps": len(per_step),
    }


# ---------------------------------------------------------------- the section (parent)
def _run_child(spec: dict[str, Any], timeout: float | None) -> dict[str, Any]:
    """Run ``spec`` in a fresh process (at most ``timeout`` seconds); its last
    stdout line is the JSON row, else the row is ``{"error": ...}``."""
    try:
        done = subprocess.run(
            [sys.executable, __file__, "--run", json.dumps(spec)],
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired:
        return {"error": f"did not finish in {timeout:.0f} s (--run-timeout)"}
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


def run_names() -> list[str]:
    """The runs `gpu_section` knows, as ``--gpu-runs`` names them (``envgym-vllm``)."""
    return [f"{runner}-{backend}" for runner, backend in RUNS]


def gpu_section(
    console: Any,
    *,
    steps: int,
    num_groups: int,
    group_size: int,
    max_turns: int,
    vllm_memory: float,
    env_ids: tuple[str, ...] = GPU_ENVS,
    runs: tuple[str, ...] | None = None,
    shape: str = "qwen2-0.5b",
    device: str = "cuda",
    run_timeout: float | None = None,
    on_record: Callable[[list[dict[str, Any]]], None] | None = None,
) -> list[dict[str, Any]]:
    """Measure every (env, run) pair, print the table and the notes; returns the
    rows, a run that failed or was skipped as ``{"env", "run", "error"}``.
    ``runs`` picks some of `run_names` (None: all); ``shape`` is a key of
    `MODEL_SHAPES`; ``device`` ``cpu`` runs the section without a GPU (the
    GPU check's dry run); ``on_record`` gets the rows so far after each run."""
    import torch

    from envgym.cli.output import print_table

    wanted = run_names() if runs is None else list(runs)
    unknown = sorted(set(wanted) - set(run_names()))
    if unknown or shape not in MODEL_SHAPES:
        raise ValueError(
            f"unknown runs {unknown} or shape {shape!r}; runs are {run_names()}, "
            f"shapes {sorted(MODEL_SHAPES)}"
        )
    records: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as folder:
        with console.status(f"building a random {shape}-shaped Qwen2 model ...", spinner="dots"):
            dtype = build_qwen2_shaped_model(Path(folder), shape, device)
        if device.startswith("cuda"):
            torch.cuda.empty_cache()  # the runs are other processes: leave them the memory
        for env_id in env_ids:
            for runner, backend in RUNS:
                name = f"{runner} {backend}"
                if f"{runner}-{backend}" not in wanted:
                    continue
                why = _missing(runner, backend)
                if why is not None:
                    records.append({"env": env_id, "run": name, "error": f"skipped: {why}"})
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
                    row = _run_child(spec, run_timeout)
                records.append({"env": env_id, "run": name, **row})
                if on_record is not None:
                    on_record(records)
    done = [r for r in records if "error" not in r]
    gpu = torch.cuda.get_device_name() if device.startswith("cuda") else device
    console.print(
        f"\nGPU section on {gpu}: {shape} shape, random, {dtype}, {steps} steps, "
        f"{num_groups}x{group_size} episodes of at most {max_turns} x {REPLY_TOKENS} reply tokens"
    )
    print_table(HEADERS, [_cells(r, done) for r in done], right=HEADERS[2:], console=console)
    for r in records:
        if "error" in r:
            console.print(f"{r['run']} on {r['env']}: {r['error']}")
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
    if spec["device"].startswith("cuda"):
        import torch

        row["peak_memory_gib"] = torch.cuda.max_memory_allocated() / 2**30
    print(json.dumps(row), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
