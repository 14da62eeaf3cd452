"""Data parallelism across processes started by ``torchrun``.

Every process (rank) holds the whole policy, plays its share of each step's
episodes, and computes the loss of its own episodes divided by the count
over *all* ranks (tokens or episodes, from `Distributed.all_sum`). Summing
the gradients across ranks (`Distributed.sum_gradients`) then gives exactly
the gradient one process would compute on the whole batch, so every rank
takes the same optimizer step and the weights stay identical. Rank 0 alone
writes logs, checkpoints and evaluations. ::

    torchrun --standalone --nproc_per_node 8 -m envgym.trainers.grpo --env envgym/Sokoban-v0 ...

Without torchrun's variables (``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK``) this
is a world of one and every collective is a no-op, so a trainer runs the
same code either way. GPUs use NCCL (rank ``r`` on ``cuda:LOCAL_RANK``), the
CPU uses Gloo (set ``GLOO_SOCKET_IFNAME=lo`` to keep a one-machine run on
the loopback interface).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

__all__ = ["Distributed", "init_distributed"]


@dataclass
class Distributed:
    """This process's place in the run, and the collectives the trainers use."""

    rank: int = 0
    world_size: int = 1
    local_rank: int = 0
    device: str = "cpu"

    @property
    def is_main(self) -> bool:
        """True on rank 0, the one that logs, saves and evaluates."""
        return self.rank == 0

    @property
    def active(self) -> bool:
        return self.world_size > 1

    def shard(self, n: int, what: str = "--num-groups") -> range:
        """This rank's share of ``n`` items (``n`` must split evenly)."""
        if n % self.world_size:
            raise ValueError(
                f"{what} {n} does not split over {self.world_size} processes; "
                f"use a multiple of {self.world_size}"
            )
        size = n // self.world_size
        return range(self.rank * size, (self.rank + 1) * size)

    def all_sum(self, value: float) -> float:
        """``value`` summed over every rank."""
        if not self.active:
            return float(value)
        import torch
        import torch.distributed as dist

        t = torch.tensor([float(value)], dtype=torch.float64, device=self.device)
        dist.all_reduce(t)
        return float(t.item())

    def gather(self, obj: Any) -> list[Any]:
        """Every rank's ``obj``, in rank order (any picklable value)."""
        if not self.active:
            return [obj]
        import torch.distributed as dist

        out: list[Any] = [None] * self.world_size
        dist.all_gather_object(out, obj)
        return out

    def sum_gradients(self, model: Any) -> None:
        """Sum every parameter's gradient over the ranks (a missing gradient
        counts as zero), in one flat buffer per dtype."""
        if not self.active:
            return
        import torch
        import torch.distributed as dist

        params = [p for p in model.parameters() if p.requires_grad]
        for p in params:
            if p.grad is None:
                p.grad = torch.zeros_like(p)
        by_dtype: dict[Any, list[Any]] = {}
        for p in params:
            by_dtype.setdefault(p.grad.dtype, []).append(p.grad)
        for grads in by_dtype.values():
            flat = torch.cat([g.reshape(-1) for g in grads])
            dist.all_reduce(flat)
            offset = 0
            for g in grads:
                g.copy_(flat[offset : offset + g.numel()].view_as(g))
                offset += g.numel()

    def broadcast_model(self, model: Any) -> None:
        """Give every rank rank 0's weights."""
        if not self.active:
            return
        import torch
        import torch.distributed as dist

        with torch.no_grad():
            for tensor in list(model.parameters()) + list(model.buffers()):
                dist.broadcast(tensor.data, src=0)

    def barrier(self) -> None:
        if self.active:
            import torch.distributed as dist

            dist.barrier()

    def close(self) -> None:
        if self.active:
            import torch.distributed as dist

            if dist.is_initialized():
                # Every rank reaches teardown before any destroys the group: a
                # rank whose peer tore gloo down under it can abort at exit
                # ("terminate called without an active exception").
                dist.barrier()
                dist.destroy_process_group()


def init_distributed(device: str = "") -> Distributed:
    """Join the process group torchrun set up (or a world of one).

    ``device`` is the trainer's ``--device`` ('' takes CUDA when there is
    one); under torchrun each rank gets its own GPU, ``cuda:LOCAL_RANK``.
    """
    import torch

    world_size = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("RANK", "0"))
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    device = device or ("cuda" if torch.cuda.is_available() else "cpu")
    if world_size > 1:
        import torch.distributed as dist

        if device.startswith("cuda"):
            if torch.cuda.device_count() <= local_rank:
                raise ValueError(
                    f"torchrun started {world_size} processes on this machine but it has "
                    f"{torch.cuda.device_count()} GPUs; lower --nproc_per_node"
                )
            device = f"cuda:{local_rank}"
            torch.cuda.set_device(local_rank)
        if not dist.is_initialized():
            dist.init_process_group("nccl" if device.startswith("cuda") else "gloo")
    return Distributed(rank=rank, world_size=world_size, local_rank=local_rank, device=device)
