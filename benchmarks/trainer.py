"""Where a step of the reference GRPO trainer spends its time, by env.

Each row runs the real trainer (`envgym.trainers.grpo.train`) for a few
steps and reads back what it logged per step in ``metrics.jsonl``: seconds
generating replies, in env reset/step, tokenizing, and in the policy update
(``rollout/generation_s``, ``rollout/env_s``, ``rollout/tokenization_s``,
``update/update_s``), the whole step (``time/step_s``) and generated tokens
per second of generation time. Each number is the median over the steps
after the first, which pays warm-up costs (allocations, lazy imports). The
env's share of the step is env seconds over step seconds, both measured in
the same step, so it holds on a noisy machine.

Every step plays ``num_groups x group_size`` episodes of at most
``--max-turns`` turns. Groups whose rewards are all equal (every group of a
random policy) are kept, so the update runs with the work of a real one.

CPU section: the trainer's random tiny Llama (`--model tiny`), one torch
thread. GPU section, only where CUDA is available (`benchmarks/trainer_gpu.py`):
a randomly initialised model of Qwen2-0.5B's shape on Sokoban and Household,
envgym's GRPO with the transformers and the vLLM backend beside TRL's
GRPOTrainer on the same model, env and batch, each run in its own process:
rollout tokens/s, update seconds and trained tokens/s per step (reply tokens
in the loss over the step's seconds), with envgym's ratio to TRL.

    python benchmarks/trainer.py                     # CPU: FrozenLake, Sokoban, Household
    python benchmarks/trainer.py --envs envgym/Sokoban-v0 --steps 4 --json trainer.json
    python benchmarks/trainer.py --gpu-steps 6       # GPU section with more steps
    python benchmarks/trainer.py --no-cpu --gpu-runs envgym-transformers,trl-transformers
    python benchmarks/trainer.py --no-cpu --gpu-device cpu --gpu-shape tiny   # no GPU needed

``scripts/gpu_check.sh`` runs the reduced GPU section on a GPU machine.
"""

from __future__ import annotations

import argparse
import json
import platform
from typing import Any

from rich.console import Console
from trainer_gpu import GPU_ENVS, MODEL_SHAPES, gpu_section, run_names  # beside this file
from trainer_measure import COLUMNS, measure  # beside this file

import envgym
from envgym.cli.output import print_table, stdout_console

CPU_ENVS = ("envgym/FrozenLake-v0", "envgym/Sokoban-v0", "envgym/Household-v0")

HEADERS = ["env", *COLUMNS, "env share of step", "generated tokens/s"]


def section(
    console: Console, title: str, env_ids: list[str], **overrides: Any
) -> list[dict[str, Any]]:
    """Measure every env of a section and print its table."""
    records = []
    for env_id in env_ids:
        if not console.is_terminal:  # a pipe gets no spinner: say what runs
            print(f"training on {env_id} ...", flush=True)
        with console.status(f"{title}: training on {env_id} ...", spinner="dots"):
            records.append({"env": env_id, **measure(env_id, **overrides)})
    cells = [
        [
            r["env"],
            *(f"{r[key]:.3f}" for key in COLUMNS.values()),
            f"{r['env_share_pct']:.2f}%",
            f"{r['tokens_per_s']:,.0f}",
        ]
        for r in records
    ]
    console.print(f"\n{title}")
    print_table(HEADERS, cells, right=HEADERS[1:], console=console)
    return records


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--envs", nargs="+", help=f"CPU section's env ids (default: {CPU_ENVS})")
    parser.add_argument("--steps", type=int, default=6, help="trainer steps per env (CPU)")
    parser.add_argument("--max-turns", type=int, default=4, help="turn limit (0: env's default)")
    parser.add_argument("--num-groups", type=int, default=4, help="tasks per step")
    parser.add_argument("--group-size", type=int, default=8, help="episodes per task")
    parser.add_argument("--max-new-tokens", type=int, default=24, help="reply length (CPU)")
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads (CPU section)")
    parser.add_argument("--gpu-steps", type=int, default=4, help="trainer steps per env (GPU)")
    parser.add_argument(
        "--vllm-memory", type=float, default=0.3, help="GPU share of the vLLM engines (GPU)"
    )
    parser.add_argument("--no-gpu", action="store_true", help="skip the GPU section")
    parser.add_argument("--no-cpu", action="store_true", help="skip the CPU section")
    parser.add_argument(
        "--gpu-envs", nargs="+", default=list(GPU_ENVS), help="GPU section's env ids"
    )
    parser.add_argument(
        "--gpu-runs",
        default=",".join(run_names()),
        help="GPU section's runs, comma-separated (default: all)",
    )
    parser.add_argument(
        "--gpu-shape", default="qwen2-0.5b", choices=sorted(MODEL_SHAPES), help="GPU model shape"
    )
    parser.add_argument(
        "--gpu-device",
        default="cuda",
        help="GPU section's device; 'cpu' runs it without a GPU (the GPU check's --dry-run)",
    )
    parser.add_argument(
        "--run-timeout",
        type=float,
        default=None,
        help="seconds per GPU-section run (default: none)",
    )
    parser.add_argument("--json", help="also write the numbers to this file")
    args = parser.parse_args(argv)

    import torch

    known = {spec.id for spec in envgym.list_envs()}
    env_ids = args.envs or list(CPU_ENVS)
    unknown = [e for e in [*env_ids, *args.gpu_envs] if e not in known]
    if unknown:
        parser.error(f"unknown env ids {unknown}; `envgym list` shows the registered ones")
    gpu_runs = tuple(r.strip() for r in args.gpu_runs.split(",") if r.strip())
    if not set(gpu_runs) <= set(run_names()):
        parser.error(f"--gpu-runs: choose from {run_names()}, got {list(gpu_runs)}")
    shared = {
        "num_groups": args.num_groups,
        "group_size": args.group_size,
        "env_kwargs": {"max_turns": args.max_turns} if args.max_turns else {},
    }
    console = stdout_console()
    console.print(
        f"envgym {envgym.__version__}, torch {torch.__version__}, "
        f"Python {platform.python_version()}, {platform.machine()}"
    )
    console.print(
        f"{args.num_groups}x{args.group_size} episodes per step, at most "
        f"{args.max_turns or 'the env default'} turns; medians over steps 2..N; "
        "env share = env s / step s of the same step"
    )
    cpu = None
    if args.no_cpu:
        console.print("\nCPU section skipped (--no-cpu)")
    else:
        cpu = section(
            console,
            f"CPU, tiny model, {args.threads} torch thread(s), {args.steps} steps, "
            f"{args.max_new_tokens}-token replies",
            env_ids,
            model="tiny",
            device="cpu",
            torch_threads=args.threads,
            steps=args.steps,
            max_new_tokens=args.max_new_tokens,
            **shared,
        )

    def write_json(gpu_rows: list[dict[str, Any]] | None) -> None:
        if args.json:
            with open(args.json, "w") as fh:
                json.dump({"settings": vars(args), "cpu": cpu, "gpu": gpu_rows}, fh, indent=2)

    gpu = None
    if args.no_gpu:
        console.print("\nGPU section skipped (--no-gpu)")
    elif args.gpu_device.startswith("cuda") and not torch.cuda.is_available():
        console.print("\nno CUDA GPU here: GPU section skipped (--gpu-device cpu runs it anyway)")
    else:
        gpu = gpu_section(
            console,
            steps=args.gpu_steps,
            num_groups=args.num_groups,
            group_size=args.group_size,
            max_turns=args.max_turns or 4,
            vllm_memory=args.vllm_memory,
            env_ids=tuple(args.gpu_envs),
            runs=gpu_runs,
            shape=args.gpu_shape,
            device=args.gpu_device,
            run_timeout=args.run_timeout,
            on_record=write_json,  # each run's row as soon as it is measured
        )
    write_json(gpu)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
