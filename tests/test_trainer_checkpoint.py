"""Checkpoints: resuming gives bit for bit the update an unstopped run makes, the
model folder loads with from_pretrained, a crash mid-save leaves no half
checkpoint, and a missing or damaged checkpoint is an error naming its path."""

from __future__ import annotations

import random

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("safetensors")

from envgym.trainers.common.checkpoint import (  # noqa: E402 - after the skips
    CheckpointError,
    latest_checkpoint,
    load_checkpoint,
    save_checkpoint,
)
from envgym.trainers.common.tiny import build_tiny_model, build_tiny_tokenizer  # noqa: E402

CONFIG = {"env_id": "envgym/GuessNumber-v0", "lr": 1e-3}


@pytest.fixture(scope="module")
def tokenizer():
    return build_tiny_tokenizer()


def new_model(tokenizer, seed=0):
    model, _ = build_tiny_model(tokenizer=tokenizer, hidden_size=32, num_heads=2, seed=seed)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    return model, optimizer


def train_step(model, optimizer, vocab_size):
    """One AdamW update on a batch drawn from all three random generators, so
    resuming with any of them in a different state changes the update."""
    length = random.randint(4, 12)
    rows = int(np.random.randint(1, 4))
    ids = torch.randint(0, vocab_size, (rows, length))
    loss = model(input_ids=ids, labels=ids).loss
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()


def seed_everything(seed):
    torch.manual_seed(seed)
    np.random.seed(seed)
    random.seed(seed)


def test_resume_gives_the_same_next_update(tmp_path, tokenizer):
    vocab = len(tokenizer)
    seed_everything(1)
    model, optimizer = new_model(tokenizer)
    for _ in range(3):
        train_step(model, optimizer, vocab)
    uninterrupted = {name: p.detach().clone() for name, p in model.named_parameters()}

    seed_everything(1)
    model, optimizer = new_model(tokenizer)
    for _ in range(2):
        train_step(model, optimizer, vocab)
    saved = save_checkpoint(
        tmp_path,
        step=2,
        model=model,
        tokenizer=tokenizer,
        optimizer=optimizer,
        config=CONFIG,
        extra={"episodes_seen": 16},
    )
    assert saved == tmp_path / "step_000002"

    # A new process: other weights, a fresh optimizer, other random states.
    seed_everything(99)
    model, optimizer = new_model(tokenizer, seed=7)
    loaded = load_checkpoint(latest_checkpoint(tmp_path), model=model, optimizer=optimizer)
    assert loaded == {"step": 2, "config": CONFIG, "extra": {"episodes_seen": 16}}
    train_step(model, optimizer, vocab)
    for name, param in model.named_parameters():
        assert torch.equal(param, uninterrupted[name]), name


def test_the_model_folder_loads_with_from_pretrained(tmp_path, tokenizer):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model, optimizer = new_model(tokenizer)
    folder = save_checkpoint(
        tmp_path, step=10, model=model, tokenizer=tokenizer, optimizer=optimizer, config=CONFIG
    )
    reloaded = AutoModelForCausalLM.from_pretrained(folder / "model")
    reloaded_tokenizer = AutoTokenizer.from_pretrained(folder / "model")
    messages = [{"role": "user", "content": "Guess a number between 1 and 100."}]
    text = reloaded_tokenizer.apply_chat_template(
        messages, tokenize=False, add_generation_prompt=True
    )
    assert text == tokenizer.apply_chat_template(
        messages, tokenize=False, add_generation_prompt=True
    )
    ids = torch.tensor([tokenizer(text)["input_ids"]])
    assert reloaded_tokenizer(text)["input_ids"] == ids[0].tolist()
    with torch.no_grad():
        assert torch.equal(reloaded(ids).logits, model(ids).logits)


def test_latest_follows_the_last_save(tmp_path, tokenizer):
    assert latest_checkpoint(tmp_path / "nothing-yet") is None
    assert latest_checkpoint(tmp_path) is None
    model, optimizer = new_model(tokenizer)
    for step in (5, 10):
        save_checkpoint(
            tmp_path, step=step, model=model, tokenizer=None, optimizer=optimizer, config=CONFIG
        )
    assert latest_checkpoint(tmp_path) == tmp_path / "step_000010"
    assert (tmp_path / "latest").read_text().strip() == "step_000010"
    # Resumed from step 5 and saved step 6: latest is 6, though 10 is higher.
    save_checkpoint(tmp_path, step=6, model=model, tokenizer=None, optimizer=optimizer, config={})
    assert latest_checkpoint(tmp_path) == tmp_path / "step_000006"
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "latest",
        "step_000005",
        "step_000006",
        "step_000010",
    ]
    # A run dir loads its latest checkpoint.
    assert load_checkpoint(tmp_path, model=model, optimizer=optimizer)["step"] == 6


def test_saving_a_step_again_replaces_it(tmp_path, tokenizer):
    model, optimizer = new_model(tokenizer)
    save_checkpoint(tmp_path, step=3, model=model, tokenizer=None, optimizer=optimizer, config={})
    save_checkpoint(
        tmp_path, step=3, model=model, tokenizer=None, optimizer=optimizer, config={"run": 2}
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["latest", "step_000003"]
    assert load_checkpoint(tmp_path, model=model, optimizer=None)["config"] == {"run": 2}


def test_a_crash_mid_save_leaves_no_half_checkpoint(tmp_path, tokenizer, monkeypatch):
    model, optimizer = new_model(tokenizer)
    save_checkpoint(tmp_path, step=1, model=model, tokenizer=None, optimizer=optimizer, config={})

    def crash(*args, **kwargs):
        raise KeyboardInterrupt

    # The model and tokenizer are written; the crash comes while saving the state.
    monkeypatch.setattr(torch, "save", crash)
    with pytest.raises(KeyboardInterrupt):
        save_checkpoint(
            tmp_path, step=2, model=model, tokenizer=tokenizer, optimizer=optimizer, config={}
        )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["latest", "step_000001"]
    assert latest_checkpoint(tmp_path) == tmp_path / "step_000001"


def test_missing_or_damaged_checkpoints_name_the_path(tmp_path, tokenizer):
    model, optimizer = new_model(tokenizer)
    missing = tmp_path / "no-such-run" / "step_000001"
    with pytest.raises(CheckpointError, match=str(missing)):
        load_checkpoint(missing, model=model, optimizer=optimizer)

    folder = save_checkpoint(
        tmp_path, step=1, model=model, tokenizer=None, optimizer=optimizer, config={}
    )
    (folder / "trainer_state.pt").write_bytes(b"not a torch file")
    with pytest.raises(CheckpointError, match=f"cannot read {folder}"):
        load_checkpoint(folder, model=model, optimizer=optimizer)

    folder = save_checkpoint(
        tmp_path, step=2, model=model, tokenizer=None, optimizer=optimizer, config={}
    )
    (folder / "model" / "model.safetensors").write_bytes(b"\x00" * 16)
    with pytest.raises(CheckpointError, match=str(folder / "model")):
        load_checkpoint(folder, model=model, optimizer=optimizer)

    (folder / "trainer_state.pt").unlink()
    with pytest.raises(CheckpointError, match="trainer_state.pt is missing"):
        load_checkpoint(folder, model=model, optimizer=optimizer)
    # latest still names step 2, which is no longer complete.
    with pytest.raises(CheckpointError, match=str(tmp_path / "latest")):
        latest_checkpoint(tmp_path)


def test_weights_of_another_model_are_refused(tmp_path, tokenizer):
    model, optimizer = new_model(tokenizer)
    folder = save_checkpoint(
        tmp_path, step=1, model=model, tokenizer=None, optimizer=optimizer, config={}
    )
    bigger, _ = build_tiny_model(tokenizer=tokenizer, hidden_size=64)
    before = {name: p.detach().clone() for name, p in bigger.named_parameters()}
    with pytest.raises(CheckpointError, match="do not fit this model"):
        load_checkpoint(folder, model=bigger, optimizer=None)
    assert all(torch.equal(p, before[name]) for name, p in bigger.named_parameters())
