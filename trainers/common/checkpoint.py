"""Checkpoints a run resumes from exactly, and a model folder agents load.

`save_checkpoint` writes ``DIR/step_000010/``::

    model/              model and tokenizer by save_pretrained, so
                        ``--agent hf:DIR/step_000010/model`` plays with it
    trainer_state.pt    {"step", "optimizer": optimizer.state_dict(),
                         "rng": {"torch", "numpy", "python", "cuda"}, "extra"}
    config.json         the run's config

It builds the folder under a temporary name and renames it when complete, so a
crash never leaves a half checkpoint, then points ``DIR/latest`` (a text file
holding the folder's name) at it.

`load_checkpoint` puts the saved weights into the given model, the optimizer
state into the given optimizer, and restores every random number generator, so
the next update after resuming is bit for bit the one the run would have made
had it never stopped. Anything else the trainer needs to resume (a scheduler's
state, the data order) goes in ``extra``; it is loaded with
``torch.load(weights_only=True)``, so keep it to dicts, lists, tuples, strings,
numbers and tensors.
"""

from __future__ import annotations

import json
import os
import random
import re
import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from envgym.trainers.common.run_log import config_to_dict, write_json

__all__ = [
    "CheckpointError",
    "latest_checkpoint",
    "load_checkpoint",
    "save_checkpoint",
]

MODEL_DIR = "model"
STATE_FILE = "trainer_state.pt"
CONFIG_FILE = "config.json"
LATEST_FILE = "latest"
STEP_DIR = re.compile(r"^step_(\d+)$")


class CheckpointError(RuntimeError):
    """A checkpoint is missing, incomplete or does not fit the model."""


def save_checkpoint(
    dir: str | Path,
    *,
    step: int,
    model: Any,
    tokenizer: Any,
    optimizer: Any,
    config: Mapping[str, Any] | Any,
    extra: dict[str, Any] | None = None,
) -> Path:
    """Save everything a run needs to resume at ``step`` to ``dir/step_{step:06d}``
    and return that folder; ``dir/latest`` then names it.

    ``model`` is saved by ``save_pretrained`` (a plain ``torch.nn.Module`` by
    safetensors), ``tokenizer`` by ``save_pretrained`` next to it (None: none),
    ``optimizer`` by its ``state_dict`` (None: none). Saving a step that already
    has a folder replaces it."""
    import torch

    root = Path(dir)
    root.mkdir(parents=True, exist_ok=True)
    name = f"step_{step:06d}"
    final = root / name
    # A dot name, so latest_checkpoint never takes a folder still being written.
    tmp = Path(tempfile.mkdtemp(prefix=f".{name}.", suffix=".tmp", dir=root))
    try:
        model_dir = tmp / MODEL_DIR
        if hasattr(model, "save_pretrained"):
            model.save_pretrained(model_dir)
        else:
            from safetensors.torch import save_model

            model_dir.mkdir()
            save_model(model, str(model_dir / "model.safetensors"))
        if tokenizer is not None:
            tokenizer.save_pretrained(model_dir)
        state = {
            "step": int(step),
            "optimizer": None if optimizer is None else optimizer.state_dict(),
            "rng": rng_states(),
            "extra": extra,
        }
        torch.save(state, tmp / STATE_FILE)
        write_json(tmp / CONFIG_FILE, config_to_dict(config))
        if final.exists():
            # A directory cannot be renamed onto a non-empty one: move the old
            # one aside first, and delete it only once the new one is in place.
            old = Path(tempfile.mkdtemp(prefix=f".{name}.", suffix=".old", dir=root))
            os.replace(final, old / name)
            os.replace(tmp, final)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.replace(tmp, final)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    latest_tmp = root / (LATEST_FILE + ".tmp")
    latest_tmp.write_text(name + "\n")
    os.replace(latest_tmp, root / LATEST_FILE)
    return final


def latest_checkpoint(dir: str | Path) -> Path | None:
    """The folder ``dir/latest`` names; with no ``latest`` file, the ``step_*``
    folder of the highest step; None when ``dir`` holds no checkpoint.
    A ``latest`` that names a folder that is gone is a CheckpointError."""
    root = Path(dir)
    latest = root / LATEST_FILE
    if latest.is_file():
        path = root / latest.read_text().strip()
        if not (path / STATE_FILE).is_file():
            raise CheckpointError(
                f"{latest} names {path}, which is not a complete checkpoint (no {STATE_FILE}); "
                f"delete {latest} to fall back on the highest step_* folder, "
                f"or load a step folder by its path"
            )
        return path
    if not root.is_dir():
        return None
    steps = [
        (int(match.group(1)), child)
        for child in root.iterdir()
        if (match := STEP_DIR.match(child.name)) and child.is_dir()
    ]
    return max(steps)[1] if steps else None


def load_checkpoint(path: str | Path, *, model: Any, optimizer: Any) -> dict[str, Any]:
    """Load the checkpoint at ``path`` (a ``step_*`` folder, or a run's checkpoint
    dir, meaning its latest) into ``model`` and ``optimizer`` (None: skip), and
    restore the torch, numpy, Python and CUDA random states.

    Returns ``{"step", "config", "extra"}``. A missing or damaged checkpoint,
    or one whose weights do not fit ``model``, is a CheckpointError naming the path."""
    import torch

    path = Path(path)
    if path.is_dir() and not (path / STATE_FILE).exists():
        # A run's checkpoint dir rather than one step's folder: take its latest.
        path = latest_checkpoint(path) or path
    if not path.is_dir():
        raise CheckpointError(f"no checkpoint at {path}: the folder does not exist")
    state_path = path / STATE_FILE
    config_path = path / CONFIG_FILE
    for needed in (state_path, config_path, path / MODEL_DIR):
        if not needed.exists():
            raise CheckpointError(
                f"{path} is not a complete checkpoint: {needed.name} is missing; "
                f"save_checkpoint writes all of {MODEL_DIR}/, {STATE_FILE} and {CONFIG_FILE}"
            )
    try:
        state = torch.load(state_path, map_location="cpu", weights_only=True)
        config = json.loads(config_path.read_text())
    except Exception as error:
        raise CheckpointError(f"cannot read {path}: {type(error).__name__}: {error}") from error
    load_weights(path / MODEL_DIR, model)
    if optimizer is not None:
        if state["optimizer"] is None:
            raise CheckpointError(f"{state_path} holds no optimizer state; pass optimizer=None")
        try:
            optimizer.load_state_dict(state["optimizer"])
        except (ValueError, KeyError) as error:
            raise CheckpointError(
                f"the optimizer state in {state_path} does not fit this optimizer: {error}"
            ) from error
    set_rng_states(state["rng"])
    return {"step": state["step"], "config": config, "extra": state["extra"]}


def load_weights(model_dir: Path, model: Any) -> None:
    """Copy the safetensors weights in ``model_dir`` into ``model``, exactly.

    Tied weights (an lm_head sharing the embedding) are stored once; a key
    missing from the files is fine when it shares its storage with one loaded."""
    from safetensors import SafetensorError
    from safetensors.torch import load_file

    files = sorted(model_dir.glob("*.safetensors"))
    if not files:
        raise CheckpointError(f"no *.safetensors weights in {model_dir}")
    weights: dict[str, Any] = {}
    try:
        for file in files:
            weights.update(load_file(str(file)))
    except (SafetensorError, OSError) as error:
        raise CheckpointError(f"cannot read the weights in {model_dir}: {error}") from error
    own = model.state_dict()
    unexpected = sorted(set(weights) - set(own))
    loaded_storage = {own[key].data_ptr() for key in weights if key in own}
    missing = sorted(
        key for key in set(own) - set(weights) if own[key].data_ptr() not in loaded_storage
    )
    # Checked before copying anything: load_state_dict copies what fits before it
    # raises, which would leave the model half loaded.
    reshaped = sorted(
        f"{key} {tuple(tensor.shape)} vs {tuple(own[key].shape)}"
        for key, tensor in weights.items()
        if key in own and tensor.shape != own[key].shape
    )
    if unexpected or missing or reshaped:
        raise CheckpointError(
            f"the weights in {model_dir} do not fit this model: missing {missing[:5]}, "
            f"unexpected {unexpected[:5]}, other shapes (saved vs model) {reshaped[:5]}; "
            f"build the model that {model_dir / 'config.json'} describes"
        )
    model.load_state_dict(weights, strict=False)


def rng_states() -> dict[str, Any]:
    """Every random state a training step may draw from. numpy's is kept as
    plain ints, so ``torch.load(weights_only=True)`` reads it back."""
    import torch

    kind, keys, pos, has_gauss, cached_gaussian = np.random.get_state(legacy=True)
    return {
        "torch": torch.get_rng_state(),
        "numpy": (kind, keys.tolist(), int(pos), int(has_gauss), float(cached_gaussian)),
        "python": random.getstate(),
        "cuda": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else None,
    }


def set_rng_states(states: Mapping[str, Any]) -> None:
    """Restore what `rng_states` saved."""
    import torch

    torch.set_rng_state(states["torch"])
    kind, keys, pos, has_gauss, cached_gaussian = states["numpy"]
    np.random.set_state((kind, np.array(keys, dtype=np.uint32), pos, has_gauss, cached_gaussian))
    # weights_only loading turns the state's tuples into lists; setstate wants tuples.
    version, internal, gauss = states["python"]
    random.setstate((version, tuple(internal), gauss))
    if states["cuda"] is not None and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(states["cuda"])
