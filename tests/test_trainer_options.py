"""The trainers' options: declared once in `RunOptions`, one rule for what a
resumed run may change, and the command line (`HfArgumentParser`) taking every
option as the trainers took it before (``--field-name VALUE``,
``--flag``/``--no-flag``, JSON objects, declared choices)."""

from __future__ import annotations

import ast
import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import pytest

import envgym  # noqa: F401 - registers the ids

pytest.importorskip("transformers")

from envgym.cli import main as cli_main  # noqa: E402
from envgym.trainers.common.options import (  # noqa: E402
    EnvRunOptions,
    RunOptions,
    parse_options,
    resumable_options,
    resume_conflicts,
)
from envgym.trainers.grpo import GRPOConfig  # noqa: E402
from envgym.trainers.ppo import PPOConfig  # noqa: E402
from envgym.trainers.selfplay import SelfPlayConfig  # noqa: E402

CONFIGS = (GRPOConfig, PPOConfig, SelfPlayConfig)
TRAINERS = Path(__file__).resolve().parents[1] / "trainers"


def _other_value(field: dataclasses.Field, default):
    """A value of the field's type that is not its default (and passes the checks)."""
    if isinstance(default, bool):
        return not default
    if field.metadata.get("choices"):
        return next(c for c in field.metadata["choices"] if c != default)
    if isinstance(default, dict):
        return {"max_turns": 6}
    if isinstance(default, int):
        return default + 1
    if isinstance(default, float):
        return default / 2 if default else 0.5
    return default + "x" if default else "x"


def _command_line(options: dict) -> list[str]:
    """The command line as the trainers have always taken it."""
    argv = []
    for name, value in options.items():
        flag = "--" + name.replace("_", "-")
        if isinstance(value, bool):
            argv.append(flag if value else "--no-" + name.replace("_", "-"))
        else:
            argv += [flag, json.dumps(value) if isinstance(value, dict) else str(value)]
    return argv


@pytest.mark.parametrize("cls", CONFIGS, ids=lambda c: c.__name__)
def test_every_option_is_taken_from_the_command_line_as_before(cls):
    free = {"game", "eval_levels", "out_dir", "model", "device", "env", "difficulty", "task_id"}
    changed = {}
    for f in dataclasses.fields(cls):
        default = getattr(cls(), f.name)
        if f.name not in free:
            changed[f.name] = _other_value(f, default)
    changed["steps"] = 3  # keeps the training seeds below --eval-seed
    if cls is SelfPlayConfig:
        changed.update(game="kuhn_poker", eval_levels="easy,hard", clip=0.3, temperature=0.7)
    if cls is GRPOConfig:  # one fork of width 3 into groups of 9, with rloo
        changed.update(tree_branch_turns="1")
    parsed = parse_options(cls, _command_line(changed))
    assert parsed == cls(**changed)
    # Every option is one an older command line could set, and none was left at its default.
    assert all(getattr(parsed, name) != getattr(cls(), name) for name in changed)


def test_booleans_json_and_choices_on_the_command_line():
    config = parse_options(
        GRPOConfig,
        ["--env-kwargs", '{"max_turns": 6}', "--no-progress", "--resume", "--tensorboard", "no"],
    )
    assert config.env_kwargs == {"max_turns": 6}
    assert (config.progress, config.resume, config.tensorboard) == (False, True, False)
    assert parse_options(GRPOConfig, ["--resume", "--no-resume"]).resume is False
    assert parse_options(GRPOConfig, ["--num_groups", "3"]).num_groups == 3  # HF's spelling too
    assert dataclasses.asdict(config)["env_kwargs"] == {"max_turns": 6}  # saved as plain JSON


@pytest.mark.parametrize(
    ("argv", "complaint"),
    [
        (["--env-kwargs", "[1]"], "expected a JSON object"),
        (["--env-kwargs", "{oops"], "not valid JSON"),
        (["--estimator", "best"], "invalid choice: 'best'"),
        (["--steps", "many"], "invalid int value: 'many'"),
        (["--no-such-option", "1"], "unrecognized arguments: --no-such-option"),
    ],
)
def test_a_malformed_option_exits_2_naming_it(argv, complaint, capsys):
    assert cli_main(["train", "grpo", *argv]) == 2
    assert complaint in capsys.readouterr().err


def test_options_that_do_not_fit_together_exit_2_naming_the_flag(capsys):
    assert cli_main(["train", "ppo", "--gae-lambda", "1.5"]) == 2
    assert "--gae-lambda" in capsys.readouterr().err
    assert cli_main(["train", "selfplay", "--game", "chess"]) == 2
    assert "invalid choice: 'chess'" in capsys.readouterr().err


@pytest.mark.parametrize("trainer", ["grpo", "ppo", "selfplay"])
def test_help_lists_every_option_with_its_help_and_default(trainer, capsys):
    assert cli_main(["train", trainer, "--help"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"usage: envgym train {trainer}")
    cls = dict(zip(("grpo", "ppo", "selfplay"), CONFIGS, strict=True))[trainer]
    for f in dataclasses.fields(cls):
        assert "--" + f.name.replace("_", "-") in out
    # One help text per shared option, whichever trainer shows it.
    assert "policy updates to run (default: 100)" in " ".join(out.split())
    default_episodes = 16 if trainer == "selfplay" else 32
    assert f"and seat) (default: {default_episodes})" in " ".join(out.split())


def test_train_without_a_trainer_lists_them(capsys):
    assert cli_main(["train"]) == 0
    out = capsys.readouterr().out
    assert all(name in out for name in ("grpo", "ppo", "selfplay"))


def test_the_envgym_command_starts_without_importing_transformers():
    code = "import sys; from envgym.cli import build_parser; build_parser(); "
    code += "print('transformers' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


# ------------------------------------------------------------ resuming
def test_one_rule_says_what_a_resumed_run_may_change():
    shared = {
        "steps", "resume", "progress", "tensorboard", "save_every", "eval_every",
        "eval_episodes", "eval_seed", "device", "torch_threads", "out_dir",
        "backend", "vllm_gpu_memory_utilization",
    }  # fmt: skip
    assert resumable_options(RunOptions) == shared
    assert resumable_options(GRPOConfig) == resumable_options(PPOConfig) == shared | {"workers"}
    assert resumable_options(SelfPlayConfig) == shared | {"eval_levels", "eval_temperature"}
    # What the run computes may not change: the model, the data, the update, the warm-up.
    for cls in CONFIGS:
        for name in ("model", "seed", "learning_rate", "temperature", "micro_batch_size"):
            assert name not in resumable_options(cls)


def test_resume_conflicts_name_the_flags_a_resumed_run_may_not_change():
    saved = dataclasses.asdict(GRPOConfig())
    moved = GRPOConfig(steps=200, backend="vllm", workers="subprocess", out_dir="elsewhere")
    assert resume_conflicts(moved, saved) == []
    assert resume_conflicts(GRPOConfig(learning_rate=0.5, kl_coef=0.1), saved) == [
        "--kl-coef",
        "--learning-rate",
    ]
    # A run saved before an option existed resumes: a missing key is unchanged.
    del saved["kl_coef"]
    assert resume_conflicts(GRPOConfig(kl_coef=0.1), saved) == []


def test_configs_extend_run_options_with_their_algorithm_fields_only():
    shared = {f.name for f in dataclasses.fields(RunOptions)}
    env = {f.name for f in dataclasses.fields(EnvRunOptions)} - shared
    assert issubclass(GRPOConfig, EnvRunOptions) and issubclass(PPOConfig, EnvRunOptions)
    assert issubclass(SelfPlayConfig, RunOptions) and not issubclass(SelfPlayConfig, EnvRunOptions)
    own = {
        cls: {n for n in vars(cls)["__annotations__"]} - shared - env  # declared in the class
        for cls in CONFIGS
    }
    assert own[GRPOConfig] >= {"estimator", "num_groups", "group_size", "kl_coef"}
    assert own[PPOConfig] >= {"num_episodes", "gae_lambda", "value_coef"}
    assert own[SelfPlayConfig] >= {"game", "pool_prob", "baseline_decay"}
    assert not own[GRPOConfig] & own[PPOConfig] - {"clip_low", "clip_high", "gamma"}


def test_no_trainer_imports_another():
    trainers = {"grpo", "ppo", "selfplay"}
    for path in sorted(TRAINERS.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module:
                last = node.module.rsplit(".", 1)[-1]
                imported = {last} | {a.name for a in node.names}
                if node.module.startswith("envgym.trainers"):
                    assert not (imported & trainers) - {path.stem}, f"{path} imports a trainer"
