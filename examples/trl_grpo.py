"""Train an envgym env with TRL's GRPOTrainer, through TRL's environment interface.

Run it (CPU, the tiny random model, two updates, a few seconds)::

    python examples/trl_grpo.py --env envgym/GuessNumber-v0 --model tiny \
        --max-steps 2 --kwarg high=2

or with a tool-calling model saved on disk (Qwen2.5/Qwen3 and the other chat
templates TRL knows; see `trl.chat_template_utils.add_response_schema`)::

    python examples/trl_grpo.py --env envgym/GuessNumber-v0 --model ./Qwen3-0.6B --max-steps 200

What it shows: an envgym env plugged into TRL 1.16's `environment_factory`
(`GRPOTrainer(environment_factory=...)`, documented in TRL's
`trl/trainer/grpo_trainer.py`, GRPOTrainer docstring, argument
``environment_factory``). TRL builds one `EnvgymEnvironment` per rollout,
calls its ``reset(**row)`` with the dataset row (so the ``seed`` column seeds
the episode) and appends the returned text to the last user message, exposes
its public method `EnvgymEnvironment.step` to the model as a tool, runs the
model's tool calls until it stops calling (tool results are masked out of the
loss), then scores the rollout with ``get_reward()``: here the envgym episode
return. The tool schema comes from the method's type hints and docstring.

Why `environment_factory` and not `rollout_func`: it is TRL's documented
environment interface and works with a tokenizer built here, as long as the chat
template is one TRL can parse tool calls from. So ``--model tiny`` gives the
tiny tokenizer TRL's own ``qwen2_5.jinja`` template (its special strings are
added to the BPE corpus so they encode in few tokens). A random model never
writes a well-formed tool call, so ``--model tiny`` first teaches it the
format with a few supervised steps on random moves (`teach_tool_calls`);
a real instruct model needs no such step.

What differs from envgym's own trainer (``envgym train grpo``): there, every
assistant reply is an action (``env.step(reply)``), episodes run to their end
and turn-level advantages (GiGPO, per-turn returns) are available. Here the
model acts only through tool calls, a rollout ends when the model stops
calling the tool or reaches ``--max-completion-length`` tokens (all turns
share that budget), and the whole rollout gets one advantage from its return.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import gymnasium as gym

import envgym  # noqa: F401 - registers the envgym/ ids

#: Told to the model after the env's own system prompt: TRL turns the env's
#: replies into tool results, so the model must answer through the tool.
TOOL_HINT = "Send each reply with the `step` tool; its result is what the environment answers."


@dataclass
class Args:
    env: str = "envgym/GuessNumber-v0"  # registered envgym id
    model: str = "tiny"  # "tiny" (random, built here) or a path a tool-calling model was saved to
    kwarg: list[str] = field(default_factory=list)  # env arguments KEY=VALUE (VALUE read as JSON)
    max_steps: int = 2  # optimizer updates
    num_generations: int = 4  # rollouts per seed (the GRPO group)
    batch_size: int = 4  # rollouts per update; a multiple of num_generations
    max_completion_length: int = 96  # tokens of all turns of a rollout, tool results included
    max_tool_calls: int | None = None  # tool calls per rollout (None: until the budget runs out)
    learning_rate: float = 1e-4
    temperature: float = 1.0
    beta: float = 0.0  # KL penalty against the starting model (0: no reference model kept)
    num_seeds: int = 64  # rows in the prompt dataset, one env seed each
    teach_steps: int = 100  # supervised steps that teach the tiny model the tool-call format
    output_dir: str = "runs/trl_grpo"
    seed: int = 0


@dataclass
class EpisodeRecord:
    """One rollout as the env saw it: what the model sent, what the env paid."""

    seed: int | None
    replies: list[str] = field(default_factory=list)
    rewards: list[float] = field(default_factory=list)
    done: bool = False

    @property
    def episode_return(self) -> float:
        return float(sum(self.rewards))


class EnvgymEnvironment:
    """One envgym env as a TRL environment: ``reset``, the ``step`` tool, ``get_reward``.

    TRL exposes every public method but ``reset`` and ``get_reward`` as a tool,
    so helpers here start with an underscore. Each episode is appended to
    ``episode_log`` at reset, so a caller sees every rollout TRL ran, in order.
    """

    def __init__(self, env_id: str, env_kwargs: dict[str, Any], episode_log: list[EpisodeRecord]):
        self._env = gym.make(env_id, **env_kwargs)
        self._log = episode_log
        self._episode = EpisodeRecord(seed=None, done=True)

    def reset(self, **row: Any) -> str:
        """Start the episode of the dataset row's seed; the first observation goes to the model."""
        seed = row.get("seed")
        observation, _ = self._env.reset(seed=None if seed is None else int(seed))
        self._episode = EpisodeRecord(seed=seed)
        self._log.append(self._episode)
        return observation

    def step(self, reply: str) -> str:
        """Send one reply to the environment and read what it answers.

        Args:
            reply: Your reply, in the format the instructions ask for, e.g. "<answer>50</answer>".

        Returns:
            The environment's answer to the reply.
        """
        if self._episode.done:
            # Calls after the end change nothing; say so, so a model can learn to stop.
            return "The episode is over; stop calling tools."
        observation, reward, terminated, truncated, _ = self._env.step(str(reply))
        self._episode.replies.append(str(reply))
        self._episode.rewards.append(float(reward))
        self._episode.done = bool(terminated or truncated)
        return observation + ("\nThe episode is over." if self._episode.done else "")

    def get_reward(self) -> float:
        """The episode's return so far: TRL calls this once, after the rollout."""
        return self._episode.episode_return


def parse_env_kwargs(pairs: Sequence[str]) -> dict[str, Any]:
    """``["high=2", "difficulty=easy"]`` -> ``{"high": 2, "difficulty": "easy"}``."""
    kwargs: dict[str, Any] = {}
    for pair in pairs:
        key, sep, text = pair.partition("=")
        if not sep or not key:
            raise SystemExit(f"--kwarg takes KEY=VALUE, got {pair!r}; e.g. --kwarg high=2")
        try:
            kwargs[key] = json.loads(text)
        except json.JSONDecodeError:
            kwargs[key] = text
    return kwargs


def build_prompts(env_id: str, env_kwargs: dict[str, Any], num_seeds: int) -> Any:
    """A `datasets.Dataset` of chat prompts (the env's system prompt, an empty user
    turn that ``reset`` fills with the first observation) and a ``seed`` column."""
    from datasets import Dataset

    env = gym.make(env_id, **env_kwargs)
    _, info = env.reset(seed=0)
    env.close()
    system = f"{info.get('system_prompt', '')}\n{TOOL_HINT}".strip()
    rows = [
        {
            "prompt": [{"role": "system", "content": system}, {"role": "user", "content": ""}],
            "seed": seed,
        }
        for seed in range(num_seeds)
    ]
    return Dataset.from_list(rows)


def tool_call_demos(
    env_id: str, env_kwargs: dict[str, Any], count: int, seed: int
) -> list[list[dict]]:
    """Conversations in which the assistant sends a random move through the ``step`` tool."""
    rng = random.Random(seed)
    env = gym.make(env_id, **env_kwargs)
    demos = []
    for episode in range(count):
        observation, info = env.reset(seed=10_000 + episode)  # seeds the training rows do not use
        system = f"{info.get('system_prompt', '')}\n{TOOL_HINT}".strip()
        moves = list(info.get("admissible_actions") or [str(n) for n in range(1, 10)])
        reply = f"<answer>{rng.choice(moves)}</answer>"
        call = {"type": "function", "function": {"name": "step", "arguments": {"reply": reply}}}
        demos.append(
            [
                {"role": "system", "content": system},
                {"role": "user", "content": observation},
                {"role": "assistant", "content": "", "tool_calls": [call]},
            ]
        )
    env.close()
    return demos


def build_tiny(env_id: str, env_kwargs: dict[str, Any], seed: int) -> tuple[Any, Any]:
    """The tiny random Llama with a tokenizer whose chat template TRL can parse tool calls from."""
    from trl.chat_template_utils import qwen2_5_chat_template

    from envgym.trainers.common.tiny import build_tiny_model, build_tiny_tokenizer, env_corpus

    schema_text = json.dumps(_tool_schema())
    demos = tool_call_demos(env_id, env_kwargs, count=8, seed=seed)
    # The template's own text and a few tool calls: so <tool_call>, <tools> and the JSON
    # around a call become a few tokens each rather than dozens of bytes.
    corpus = env_corpus([env_id]) + [qwen2_5_chat_template, schema_text]
    corpus += [json.dumps(d[-1]["tool_calls"][0]["function"]) for d in demos]
    tokenizer = build_tiny_tokenizer(corpus=corpus, chat_template=qwen2_5_chat_template)
    return build_tiny_model(tokenizer=tokenizer, seed=seed)


def _tool_schema() -> dict:
    from transformers.utils import get_json_schema

    return get_json_schema(EnvgymEnvironment.step)


def teach_tool_calls(
    model: Any, tokenizer: Any, demos: list[list[dict]], steps: int, seed: int
) -> float:
    """A few supervised steps on the assistant turn of ``demos`` so a random model
    writes well-formed tool calls; returns the last loss. Tiny model only."""
    import torch

    tools = [_tool_schema()]
    rows = []
    for demo in demos:
        prompt = tokenizer.apply_chat_template(
            demo[:-1], tools=tools, add_generation_prompt=True, tokenize=False
        )
        full = tokenizer.apply_chat_template(demo, tools=tools, tokenize=False)
        prompt_ids = tokenizer(prompt, add_special_tokens=False)["input_ids"]
        full_ids = tokenizer(full, add_special_tokens=False)["input_ids"]
        labels = [-100] * len(prompt_ids) + full_ids[len(prompt_ids) :]
        rows.append((full_ids, labels))
    width = max(len(ids) for ids, _ in rows)
    input_ids = torch.tensor(
        [ids + [tokenizer.pad_token_id] * (width - len(ids)) for ids, _ in rows]
    )
    labels = torch.tensor([lab + [-100] * (width - len(lab)) for _, lab in rows])
    attention = torch.tensor([[1] * len(ids) + [0] * (width - len(ids)) for ids, _ in rows])
    torch.manual_seed(seed)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
    model.train()
    loss = torch.tensor(float("nan"))
    for _ in range(steps):
        loss = model(input_ids=input_ids, attention_mask=attention, labels=labels).loss
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return float(loss.detach())


@dataclass
class TrainResult:
    trainer: Any  # the GRPOTrainer, trained; `trainer.state.log_history` holds TRL's metrics
    episodes: list[EpisodeRecord]  # every rollout, in the order TRL ran them
    initial_state: dict[str, Any]  # the model's weights before GRPO (after teaching, for tiny)


def train(args: Args) -> TrainResult:
    """Build the env, model and dataset, run TRL's GRPOTrainer for ``args.max_steps`` updates."""
    # environment_factory is experimental in TRL 1.16 and warns so on every run: noise here.
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    from trl import GRPOConfig, GRPOTrainer

    env_kwargs = parse_env_kwargs(args.kwarg)
    if args.model == "tiny":
        model, tokenizer = build_tiny(args.env, env_kwargs, args.seed)
        demos = tool_call_demos(args.env, env_kwargs, count=32, seed=args.seed)
        loss = teach_tool_calls(model, tokenizer, demos, steps=args.teach_steps, seed=args.seed)
        print(f"taught the tiny model tool calls: loss {loss:.3f} after {args.teach_steps} steps")
    else:
        model, tokenizer = args.model, None  # TRL loads both from the path
    initial = model if not isinstance(model, str) else None
    initial_state = (
        {} if initial is None else {k: v.detach().clone() for k, v in initial.state_dict().items()}
    )

    episodes: list[EpisodeRecord] = []
    config = GRPOConfig(
        output_dir=args.output_dir,
        max_steps=args.max_steps,
        per_device_train_batch_size=args.batch_size,
        num_generations=args.num_generations,
        max_completion_length=args.max_completion_length,
        max_tool_calling_iterations=args.max_tool_calls,
        learning_rate=args.learning_rate,
        temperature=args.temperature,
        beta=args.beta,
        use_cpu=not _cuda_available(),
        bf16=False,
        logging_steps=1,
        save_strategy="no",
        report_to="none",
        seed=args.seed,
    )
    trainer = GRPOTrainer(
        model=model,
        args=config,
        train_dataset=build_prompts(args.env, env_kwargs, args.num_seeds),
        processing_class=tokenizer,
        environment_factory=functools.partial(EnvgymEnvironment, args.env, env_kwargs, episodes),
    )
    if initial is None:
        initial_state = {k: v.detach().clone() for k, v in trainer.model.state_dict().items()}
    episodes.clear()  # TRL builds one env up front to read its tools; only rollouts count
    trainer.train()
    return TrainResult(trainer=trainer, episodes=episodes, initial_state=initial_state)


def _cuda_available() -> bool:
    import torch

    return torch.cuda.is_available()


def parse_args(argv: Sequence[str] | None = None) -> Args:
    defaults = Args()
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--env", default=defaults.env)
    parser.add_argument("--model", default=defaults.model, help='"tiny" or a saved model path')
    parser.add_argument(
        "--kwarg", action="append", default=[], metavar="KEY=VALUE", help="env argument"
    )
    for name in (
        "max_steps",
        "num_generations",
        "batch_size",
        "max_completion_length",
        "num_seeds",
        "teach_steps",
        "seed",
    ):
        parser.add_argument(
            f"--{name.replace('_', '-')}", type=int, default=getattr(defaults, name)
        )
    parser.add_argument("--max-tool-calls", type=int, default=None)
    for name in ("learning_rate", "temperature", "beta"):
        parser.add_argument(
            f"--{name.replace('_', '-')}", type=float, default=getattr(defaults, name)
        )
    parser.add_argument("--output-dir", default=defaults.output_dir)
    return Args(**vars(parser.parse_args(argv)))


def main(argv: Sequence[str] | None = None) -> TrainResult:
    args = parse_args(argv)
    if args.model != "tiny" and not Path(args.model).exists():
        raise SystemExit(
            f"--model {args.model}: no such folder; give a saved model's path or 'tiny'"
        )
    result = train(args)
    print(f"{'step':>4} {'reward':>8} {'reward_std':>10} {'tool calls':>10}")
    for entry in result.trainer.state.log_history:
        if "reward" in entry:
            print(
                f"{entry['step']:>4} {entry['reward']:>8.3f} {entry['reward_std']:>10.3f}"
                f" {entry.get('tools/call_frequency', 0.0):>10.2f}"
            )
    solved = sum(1 for e in result.episodes if e.episode_return > 0)
    print(f"{len(result.episodes)} episodes, {solved} with a positive return")
    return result


if __name__ == "__main__":
    main()
