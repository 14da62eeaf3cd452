"""Sokoban data for verl's GRPO, and the CPU part of the loop: envgym's agent loop in verl's worker.

Run it (CPU, ``pip install 'envgym[verl]'``; about half a minute, most of it
importing verl)::

    python examples/verl_sokoban.py --data-dir data/verl_sokoban

It writes ``train.parquet`` and ``val.parquet`` (one row per seed, from
`envgym.integrations.verl.dataset_rows`), the files
``examples/verl_grpo_sokoban.yaml`` trains on. Then, unless ``--no-check``,
it runs the rollout side the way verl does, on the CPU: verl's own
``AgentLoopWorker`` (from verl's PPO trainer config, with a tiny tokenizer
built here, or ``--model PATH`` for a model folder you have) reads a batch of
those rows and runs `EnvgymAgentLoop` for each. verl's inference server
(vLLM/SGLang on a GPU) is the one part replaced: a subclass of verl's
``LLMServerClient`` answers each turn with a scripted move. It prints each
episode's per-turn rewards, the return verl puts on the last token
(``rm_scores``), and how many response tokens are the model's
(``response_mask`` 1) and the env's (0), with the first env segment.

Training itself (``python -m verl.trainer.main_ppo --config-path="$PWD/examples"
--config-name=verl_grpo_sokoban``) needs GPUs, vLLM and verl's FSDP workers:
docs/integrations/verl.md.
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
from pathlib import Path

import numpy as np

from envgym.integrations.verl import dataset_rows

ENV_ID = "envgym/Sokoban-v0"
MOVES = ["<answer>Up</answer>", "<answer>Left</answer>", "<answer>Down</answer>"]


def write_data(data_dir: Path, train_seeds: range, val_seeds: range, env_kwargs: dict) -> None:
    import pandas as pd

    data_dir.mkdir(parents=True, exist_ok=True)
    for name, seeds in (("train", train_seeds), ("val", val_seeds)):
        rows = dataset_rows(ENV_ID, list(seeds), env_kwargs)
        pd.DataFrame(rows).to_parquet(data_dir / f"{name}.parquet")
        print(f"wrote {len(rows)} rows to {data_dir / f'{name}.parquet'}")


def tiny_model_dir() -> str:
    """A model folder verl reads: the tiny ChatML tokenizer and a Qwen2 config (no weights)."""
    from envgym.trainers.common.tiny import save_tiny_qwen2_config

    return save_tiny_qwen2_config(tempfile.mkdtemp(prefix="tiny-qwen2-"))


def cpu_check(data_dir: Path, model_dir: str, rows: int) -> None:
    import pandas as pd
    import verl
    from omegaconf import OmegaConf
    from transformers import AutoTokenizer
    from verl.experimental.agent_loop.agent_loop import AgentLoopWorker
    from verl.protocol import DataProto
    from verl.workers.rollout.llm_server import LLMServerClient
    from verl.workers.rollout.replica import TokenOutput

    tokenizer = AutoTokenizer.from_pretrained(model_dir)

    class ScriptedServerClient(LLMServerClient):
        """verl's server client with generate() scripted: turn t gets MOVES[t % 3]."""

        async def generate(self, request_id, *, prompt_ids, sampling_params, **kwargs):
            turn = tokenizer.decode(prompt_ids).count("<|im_start|>assistant") - 1
            ids = tokenizer.encode(MOVES[turn % len(MOVES)], add_special_tokens=False)
            ids.append(tokenizer.eos_token_id)
            return TokenOutput(token_ids=ids, log_probs=[0.0] * len(ids))

    root = Path(verl.__path__[0]).parent
    cfg = OmegaConf.load(root / "verl/trainer/config/_generated_ppo_trainer.yaml")
    cfg.actor_rollout_ref.model.path = model_dir
    cfg.actor_rollout_ref.rollout.name = "vllm"
    cfg.data.max_prompt_length = 2048
    cfg.data.max_response_length = 4096
    cfg.actor_rollout_ref.rollout.agent.agent_loop_config_path = str(
        Path(__file__).with_name("verl_agent_loops.yaml")
    )
    worker = AgentLoopWorker(cfg, llm_client=ScriptedServerClient(cfg))

    frame = pd.read_parquet(data_dir / "val.parquet").head(rows)
    columns = {k: np.array(list(frame[k]), dtype=object) for k in frame.columns}
    columns["raw_prompt"] = columns.pop("prompt")
    out = asyncio.run(worker.generate_sequences(DataProto.from_dict(non_tensors=columns)))

    prompt_len = out.batch["prompts"].shape[1]
    for i in range(len(out)):
        valid = out.batch["attention_mask"][i, prompt_len:].bool()
        response = out.batch["responses"][i][valid]
        mask = out.batch["response_mask"][i][valid]
        first_env = response[mask == 0][:40]  # tokens of the first observation (and more)
        extras = out.non_tensor_batch
        rewards = [round(r, 2) for r in extras["turn_scores"][i]]
        print(
            f"seed {extras['seed'][i]}: rewards {rewards}, return on the last token "
            f"{out.batch['rm_scores'][i].sum().item():.2f}, success {extras['success'][i]}, "
            f"truncated {extras['truncated'][i]}; response tokens: {int(mask.sum())} model "
            f"(mask 1), {int((mask == 0).sum())} env (mask 0)"
        )
        print(f"   env tokens begin: {tokenizer.decode(first_env)!r}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data-dir", default="data/verl_sokoban")
    parser.add_argument("--train-seeds", type=int, default=1000)
    parser.add_argument("--val-seeds", type=int, default=64)
    parser.add_argument("--difficulty", default="easy")
    parser.add_argument("--model", help="model folder for the CPU check (default: a tiny one)")
    parser.add_argument("--rows", type=int, default=3, help="rows of val.parquet the check plays")
    parser.add_argument("--no-check", action="store_true", help="only write the data")
    args = parser.parse_args()

    data_dir = Path(args.data_dir)
    # Validation seeds follow the training ones, so no task is in both.
    train = range(args.train_seeds)
    val = range(args.train_seeds, args.train_seeds + args.val_seeds)
    write_data(data_dir, train, val, {"difficulty": args.difficulty})
    if not args.no_check:
        cpu_check(data_dir, args.model or tiny_model_dir(), args.rows)


if __name__ == "__main__":
    main()
