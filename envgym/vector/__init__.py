"""Batches of text envs for RL trainers: grouped resets and same-step autoreset.

`TextVectorEnv` is a `gymnasium.vector.VectorEnv` whose sub-envs speak text::

    import envgym

    with envgym.make_vec("envgym/Sokoban-v0", num_envs=8, group_size=4,
                         workers="subprocess", difficulty="hard") as envs:
        obs, infos = envs.reset(seed=0)       # obs: tuple of 8 str; envs 0-3 alike, 4-7 alike
        obs, rewards, terminated, truncated, infos = envs.step(replies)  # replies: 8 str

Batching follows Gymnasium's own rules for Text spaces: observations come back
as a tuple of str (``batch_space(Text)`` is a ``Tuple`` of Text spaces), rewards
and done flags as numpy arrays, and ``infos`` as a dict of arrays with a ``_key``
mask per key (object arrays for values that are not numbers, nested dicts for
dict values), as ``VectorEnv._add_info`` builds them.

Groups (GRPO, GiGPO). Envs ``g*group_size .. (g+1)*group_size - 1`` form group
``g``. The seed rule:

- ``reset(seed=s)`` starts group ``g`` on seed ``s + g`` (Gymnasium's "seed plus
  index" rule, per group), so ``gym.make(id).reset(seed=s + g)`` replays it.
- ``reset(seed=[s0, s1, ...])`` (one seed per env, as Gymnasium's vector envs
  take them) starts env ``i`` on ``s_i``; the caller keeps groups alike.
- ``reset()`` without a seed draws one fresh seed per group from the vector
  env's own generator (seeded by the last ``reset(seed=s)``).
- Autoreset keeps groups aligned by episode count, not by time: the ``j``-th
  episode of every member of group ``g`` is the same task (its seed is derived
  from the group's first seed and ``j``), whenever each member gets there.
  ``episode_seeds`` and ``episode_counts`` say which task each env is on now.
  ``reset()`` starts every group over in step.

Task queue (evaluation). ``reset(queue=[seeds...])`` plays each seed once: every
env starts on the next seed left and, when its episode ends, autoresets to the
next one; with none left it goes idle (``active[i]`` False, observation
``""``, its action ignored). A multi-task batch takes one list per entry of
``envs`` (``source_index`` says which entry each env runs). `env_info(i)` and
`final_info(i)` give one env's info dicts exactly as the env returned them, and
`env_attr(i, name)` reads an attribute of its unwrapped env where it lives.

Branching (tree rollouts, search). ``branch(i, k)`` puts ``k`` envs into
copies of env ``i``'s current state and returns their indices: an int ``k``
takes the ``k`` envs after ``i``, wrapping over the batch (``i+1 .. i+k``
modulo ``num_envs``, so they are ``i``'s group-mates whenever the group has
room after ``i``); a sequence names them. The copy is the env's own
``unwrapped.snapshot()`` run in ``i``'s worker and ``restore(snapshot)`` in
each target's (pickled across processes and Ray actors; a ``RemoteEnv``'s
snapshot is a handle its server restores), so every worker kind branches.
The vector env's bookkeeping follows: each target takes ``i``'s observation,
info, episode seed and episode count, so its next step is the step ``i``
would take; the episode it abandons ends without a ``final_info``; its group
does not change, and after the copied episode it goes on with its own
group's tasks. The source must be running an episode, targets must differ
from it and from each other, and task-queue mode refuses (it plays each seed
once). A failed restore leaves the batch needing ``reset()``.

Same-step autoreset (``metadata["autoreset_mode"] == AutoresetMode.SAME_STEP``):
the step that ends an episode already returns the next episode's first
observation; the last observation and info of the finished episode are in
``infos["final_obs"]`` and ``infos["final_info"]`` (masks ``_final_obs``,
``_final_info``). No generation is spent on a dead env. Autoresets pass no
``options``.

Workers (``workers=``):

- ``"sync"``: every env in this process, stepped one after another.
- ``"subprocess"``: ``num_workers`` processes (default: one per CPU), each
  holding a contiguous chunk of envs, fed pickled messages over pipes. No
  shared memory: text does not fit fixed buffers. With ``prefetch=True`` a
  worker resets a spare copy of each env to its next episode seed while it
  waits for the next step, and swaps it in when the episode ends.
- ``"ray"``: the same chunks as Ray actors (`envgym.vector.ray`), for one
  machine or a cluster.
- ``"remote"``: envs built in this process by ``env_fns`` (for example
  ``lambda: RemoteEnv(url)``), each step in its own thread, for envs whose work
  happens elsewhere and that mostly wait on I/O.

Failures never hang a batch. A worker that dies (killed, crashed) or does not
answer within ``step_timeout_s`` is replaced; an env whose ``step`` raises is
rebuilt from its factory. Either way the episode it was running ends in that
step with ``truncated=True``, reward 0, ``infos["error"]`` (mask ``_error``)
saying what happened and ``final_info["error"]`` the same, and the env starts
its next episode, so a trainer drops the broken trajectory and carries on.
(``"sync"`` cannot interrupt a step that hangs.) Errors in ``reset()`` that
come from the caller, such as an unknown reset option, are raised.

Inside the package, one job per module:

- `envgym.vector.env`: `TextVectorEnv` and `make_vec`, the caller's side.
- `envgym.vector.sources`: env ids or ``env_fns`` to one factory per env.
- `envgym.vector.seeds`: the seed rules and `SeedQueue`, the task queue.
- `envgym.vector.branching`: ``branch``'s checks and copies.
- `envgym.vector.chunk`: `EnvChunk`, the envs a worker holds and the messages
  that drive them.
- `envgym.vector.spares`: spare envs reset ahead (``prefetch=True``).
- `envgym.vector.workers`: `Workers` and `LostWorker`, the interface a kind of
  worker implements; `envgym.vector.in_process` (sync, threads),
  `envgym.vector.processes` (subprocesses) and `envgym.vector.ray` (Ray
  actors) implement it.
"""

from envgym.vector.chunk import EnvChunk
from envgym.vector.env import WORKER_KINDS, TextVectorEnv, make_vec
from envgym.vector.seeds import SeedQueue
from envgym.vector.workers import LostWorker, Workers

__all__ = [
    "WORKER_KINDS",
    "EnvChunk",
    "LostWorker",
    "SeedQueue",
    "TextVectorEnv",
    "Workers",
    "make_vec",
]
