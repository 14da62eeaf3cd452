"""TextVectorEnv: groups, same-step autoreset, worker kinds, recovery from dead workers."""

from __future__ import annotations

import os
import signal
import threading
import time

import gymnasium as gym
import numpy as np
import pytest
from gymnasium import spaces
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space
from gymnasium.wrappers.vector import DictInfoToList, RecordEpisodeStatistics

import envgym
from envgym.vector import TextVectorEnv

SOKOBAN = "envgym/Sokoban-v0"
FROZEN = "envgym/FrozenLake-v0"


def first_obs(env_id: str, seed: int, **kwargs) -> str:
    return gym.make(env_id, **kwargs).reset(seed=int(seed))[0]


def replies(infos: dict, rng: np.random.Generator) -> list[str]:
    """A legal move for each env, drawn from its own admissible actions, and now
    and then a reply that does not parse."""
    out = []
    for moves in infos["admissible_actions"]:
        if rng.random() < 0.1:
            out.append("I am not sure.")
        else:
            out.append(f"<answer>{moves[int(rng.integers(len(moves)))]}</answer>")
    return out


def rollout(
    envs: TextVectorEnv, steps: int, seed: int, options: dict | None = None, pause_s: float = 0.0
) -> list:
    """Everything a trainer sees over `steps` steps, for comparing worker kinds;
    `pause_s` between steps stands for a trainer generating."""
    rng = np.random.default_rng(seed)
    obs, infos = envs.reset(seed=seed, options=options)
    seen = [obs]
    for _ in range(steps):
        time.sleep(pause_s)
        obs, rewards, terminated, truncated, infos = envs.step(replies(infos, rng))
        finals = list(infos.get("final_obs", [None] * envs.num_envs))
        seen.append((obs, rewards.tolist(), terminated.tolist(), truncated.tolist(), finals))
    assert "error" not in infos
    return seen


def test_groups_reset_to_the_same_task_and_groups_differ():
    with envgym.make_vec(SOKOBAN, num_envs=8, group_size=4, difficulty="medium") as envs:
        obs, infos = envs.reset(seed=5)
        assert isinstance(obs, tuple) and len(obs) == 8
        assert len(set(obs[:4])) == 1 and len(set(obs[4:])) == 1
        assert obs[0] != obs[4]
        # Group g starts on seed + g: a single env replays it.
        assert obs[0] == first_obs(SOKOBAN, 5, difficulty="medium")
        assert obs[4] == first_obs(SOKOBAN, 6, difficulty="medium")
        assert list(infos["task_id"][:4]) == [infos["task_id"][0]] * 4
        # reset() without a seed moves every group to a new task, still in step.
        again, _ = envs.reset()
        assert len(set(again[:4])) == 1 and len(set(again[4:])) == 1
        assert {again[0], again[4]}.isdisjoint({obs[0], obs[4]})
        assert list(envs.episode_seeds[:4]) == [envs.episode_seeds[0]] * 4


def test_unseeded_resets_follow_the_first_seed():
    def three_resets():
        with envgym.make_vec(FROZEN, num_envs=4, group_size=2) as envs:
            return [envs.reset(seed=9)[0], envs.reset()[0], envs.reset()[0]]

    assert three_resets() == three_resets()


def test_group_members_meet_the_same_tasks_after_autoresets_at_different_times():
    """Member 0 plays (and falls into holes early); member 1 only ever times out.
    Their j-th episodes are still the same task."""
    rng = np.random.default_rng(0)
    with envgym.make_vec(FROZEN, num_envs=2, group_size=2, max_turns=6) as envs:
        obs, infos = envs.reset(seed=1)
        tasks = [[infos["task_id"][0]], [infos["task_id"][1]]]
        for _ in range(60):
            moves = infos["admissible_actions"][0]
            action = f"<answer>{moves[int(rng.integers(len(moves)))]}</answer>"
            obs, rewards, terminated, truncated, infos = envs.step([action, "no tags"])
            for i in range(2):
                if terminated[i] or truncated[i]:
                    tasks[i].append(infos["task_id"][i])
    assert len(tasks[0]) > len(tasks[1]) >= 5, "member 0 should finish more episodes"
    assert tasks[0][: len(tasks[1])] == tasks[1]
    assert len(set(tasks[1])) == len(tasks[1]), "each episode is a new task"


def test_same_step_autoreset_returns_the_new_episode_and_keeps_the_final_one():
    with envgym.make_vec(SOKOBAN, num_envs=4, group_size=2, max_turns=2) as envs:
        assert envs.metadata["autoreset_mode"] == AutoresetMode.SAME_STEP
        envs.reset(seed=3)
        obs, rewards, terminated, truncated, infos = envs.step(["<answer>Up</answer>"] * 4)
        assert "final_obs" not in infos and not truncated.any()
        obs, rewards, terminated, truncated, infos = envs.step(["Left?"] * 4)
        assert truncated.all() and not terminated.any()
        assert infos["_final_obs"].all() and infos["_final_info"].all()
        assert list(infos["final_info"]["turn"]) == [2, 2, 2, 2]
        assert list(infos["turn"]) == [0, 0, 0, 0], "the info of the new episode"
        # The final observation is what a single env shows after the same replies.
        single = gym.make(SOKOBAN, max_turns=2)
        single.reset(seed=3)
        single.step("<answer>Up</answer>")
        assert infos["final_obs"][0] == single.step("Left?")[0]
        # The returned observation already starts the next episode, on the group's
        # next seed; the members of a group still agree.
        assert list(envs.episode_counts) == [1, 1, 1, 1]
        assert obs[0] == obs[1] and obs[2] == obs[3] and obs[0] != obs[2]
        assert obs[0] == first_obs(SOKOBAN, envs.episode_seeds[0], max_turns=2)
        assert obs[0] != infos["final_obs"][0]


def test_sync_subprocess_and_remote_workers_give_identical_results():
    kinds = {}
    for workers in ("sync", "subprocess", "remote"):
        if workers == "remote":
            ids = [SOKOBAN, SOKOBAN, FROZEN, FROZEN] * 2
            sources = {"env_fns": [lambda env_id=env_id: gym.make(env_id) for env_id in ids]}
        else:
            sources = {"envs": [SOKOBAN, FROZEN], "num_envs": 8}
        with TextVectorEnv(**sources, group_size=2, workers=workers, num_workers=3) as envs:
            kinds[workers] = rollout(envs, steps=40, seed=11)
    assert kinds["sync"] == kinds["subprocess"] == kinds["remote"]
    # The run did cover autoresets.
    assert any(any(f is not None for f in step[4]) for step in kinds["sync"][1:])


def test_prefetch_swaps_in_a_spare_already_reset_to_the_next_seed():
    from envgym.vector import EnvChunk

    def make():
        return gym.make(SOKOBAN, max_turns=1)

    chunk = EnvChunk([make, make], prefetch=True)
    assert chunk.handle(("reset", [(1, None, 101), (2, None, 102)]))[0] == "ok"
    while chunk.prefetch_one():  # what a worker does while it waits
        pass
    spares = [spare.env for spare in chunk.spares.slots]
    assert not any(spare is env for spare, env in zip(spares, chunk.envs, strict=True))
    status, results = chunk.handle(("step", [("<answer>Up</answer>", 101), ("x", 102)]))
    assert status == "ok"
    # max_turns=1 ends both episodes: the spares came in, on the next seeds.
    assert chunk.envs[0] is spares[0] and chunk.envs[1] is spares[1]
    assert [r[0] for r in results] == [first_obs(SOKOBAN, s, max_turns=1) for s in (101, 102)]
    assert all(r[5] is not None for r in results)  # the finished episodes' final obs
    chunk.close()


def test_prefetching_subprocess_workers_give_the_same_results_as_sync():
    source = {"envs": [SOKOBAN, (FROZEN, {"max_turns": 3})], "num_envs": 8, "group_size": 2}
    with TextVectorEnv(**source, workers="sync") as envs:
        want = rollout(envs, steps=30, seed=5)
        want_options = rollout(envs, steps=12, seed=6, options={"difficulty": "hard"})
    with TextVectorEnv(**source, workers="subprocess", num_workers=2, prefetch=True) as envs:
        # The pauses give the workers time to reset spares ahead.
        assert rollout(envs, steps=30, seed=5, pause_s=0.01) == want
        # An env reset with options (here a harder level that later episodes
        # keep) may differ from a fresh copy, so it gets no spare.
        assert rollout(envs, steps=12, seed=6, options={"difficulty": "hard"}, pause_s=0.01) == (
            want_options
        )
    assert any(any(f is not None for f in step[4]) for step in want[1:])


def test_prefetch_needs_subprocess_workers():
    with pytest.raises(ValueError, match="prefetch=True needs workers='subprocess'"):
        TextVectorEnv(SOKOBAN, num_envs=2, workers="sync", prefetch=True)


def test_remote_workers_over_envgym_serve_sessions_match_local_envs():
    pytest.importorskip("websockets")
    pytest.importorskip("uvicorn")
    from envgym.remote import RemoteEnv, serve_in_background

    with serve_in_background(FROZEN, host="127.0.0.1", port=0) as address:
        fns = [lambda: RemoteEnv(address)] * 4
        with TextVectorEnv(env_fns=fns, group_size=2, workers="remote") as envs:
            remote = rollout(envs, steps=30, seed=3)
    with TextVectorEnv(FROZEN, num_envs=4, group_size=2) as envs:
        assert remote == rollout(envs, steps=30, seed=3)


def test_multi_task_batch_runs_each_id_with_its_kwargs():
    sources = [SOKOBAN, (FROZEN, {"slippery": True, "difficulty": "medium"})]
    with TextVectorEnv(sources, num_envs=8, group_size=2) as envs:
        assert envs.env_ids == (SOKOBAN,) * 2 + (FROZEN,) * 2 + (SOKOBAN,) * 2 + (FROZEN,) * 2
        obs, _ = envs.reset(seed=20)
        assert obs[0] == first_obs(SOKOBAN, 20)
        assert obs[2] == first_obs(FROZEN, 21, slippery=True, difficulty="medium")
        assert obs[6] == first_obs(FROZEN, 23, slippery=True, difficulty="medium")
    # Without num_envs there is one group per listed id.
    with envgym.make_vec((SOKOBAN, FROZEN), group_size=3) as envs:
        assert envs.num_envs == 6 and envs.num_groups == 2
    with envgym.make_vec((FROZEN, {"difficulty": "hard"}), 2) as envs:
        assert envs.reset(seed=0)[0][0] == first_obs(FROZEN, 0, difficulty="hard")


def test_killed_subprocess_worker_gives_an_errored_episode_and_a_fresh_worker():
    options = {"num_workers": 2}
    with envgym.make_vec(SOKOBAN, 4, 2, workers="subprocess", vector_kwargs=options) as envs:
        envs.reset(seed=0)
        envs.step(["<answer>Up</answer>"] * 4)
        before = envs.worker_pids()
        os.kill(before[0], signal.SIGKILL)
        obs, rewards, terminated, truncated, infos = envs.step(["<answer>Down</answer>"] * 4)
        assert list(infos["_error"]) == [True, True, False, False]
        assert "SIGKILL" in infos["error"][0]
        assert list(truncated) == [True, True, False, False] and not terminated.any()
        assert rewards[0] == 0.0
        assert infos["final_info"]["error"][0] == infos["error"][0]
        assert infos["final_obs"][0] is not None
        # The lost envs are on their next episode, in a new process; the rest go on.
        assert list(envs.episode_counts) == [1, 1, 0, 0]
        assert obs[0] == obs[1] == first_obs(SOKOBAN, envs.episode_seeds[0])
        after = envs.worker_pids()
        assert after[0] != before[0] and after[1] == before[1]
        obs, rewards, terminated, truncated, infos = envs.step(["<answer>Left</answer>"] * 4)
        assert "error" not in infos and list(infos["turn"]) == [1, 1, 3, 3]
        # A worker lost between episodes is replaced by reset() without fuss.
        os.kill(after[1], signal.SIGKILL)
        obs, infos = envs.reset(seed=0)
        assert obs[2] == first_obs(SOKOBAN, 1) and envs.worker_pids()[1] != after[1]


def test_a_hung_subprocess_worker_is_replaced_after_the_step_timeout():
    options = {"num_workers": 2, "step_timeout_s": 1.0}
    with envgym.make_vec(FROZEN, 2, workers="subprocess", vector_kwargs=options) as envs:
        envs.reset(seed=0)
        stuck = envs.worker_pids()[1]
        os.kill(stuck, signal.SIGSTOP)
        obs, rewards, terminated, truncated, infos = envs.step(["<answer>Down</answer>"] * 2)
        assert list(infos["_error"]) == [False, True]
        assert "no answer within 1.0 s" in infos["error"][1]
        assert truncated[1] and envs.worker_pids()[1] != stuck
        with pytest.raises(ProcessLookupError):
            os.kill(stuck, 0)  # killed and reaped, not left behind


class FlakyEnv(gym.Env):
    """Counts turns; the reply "crash" raises and "hang" blocks until released."""

    release = threading.Event()

    def __init__(self):
        self.observation_space = spaces.Text(100)
        self.action_space = spaces.Text(100)
        self.turn = 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.turn = 0
        return f"start {seed}", {"turn": 0}

    def step(self, action):
        if action == "crash":
            raise RuntimeError("the env fell over")
        if action == "hang":
            self.release.wait()
        self.turn += 1
        return f"turn {self.turn}", 1.0, False, self.turn >= 5, {"turn": self.turn}


@pytest.mark.parametrize("workers", ["sync", "remote"])
def test_an_env_that_raises_in_step_is_rebuilt_and_its_episode_errored(workers):
    with TextVectorEnv(env_fns=[FlakyEnv] * 2, workers=workers) as envs:
        envs.reset(seed=4)
        envs.step(["go", "go"])
        obs, rewards, terminated, truncated, infos = envs.step(["go", "crash"])
        assert list(infos["_error"]) == [False, True]
        assert "RuntimeError: the env fell over" in infos["error"][1]
        assert infos["final_obs"][1] == "turn 1", "the last observation it did give"
        assert obs == ("turn 2", f"start {envs.episode_seeds[1]}")
        assert list(rewards) == [1.0, 0.0] and list(truncated) == [False, True]


def test_a_remote_env_that_hangs_is_abandoned_after_the_step_timeout():
    FlakyEnv.release.clear()
    try:
        with TextVectorEnv(env_fns=[FlakyEnv] * 2, workers="remote", step_timeout_s=0.5) as envs:
            envs.reset(seed=0)
            obs, rewards, terminated, truncated, infos = envs.step(["hang", "go"])
            assert list(infos["_error"]) == [True, False]
            assert "no answer within 0.5 s" in infos["error"][0]
            obs, *_, infos = envs.step(["go", "go"])
            assert obs == ("turn 1", "turn 2") and "error" not in infos
    finally:
        FlakyEnv.release.set()


def test_bad_arguments_are_clear_errors():
    with pytest.raises(ValueError, match="not divisible by group_size=4"):
        TextVectorEnv(SOKOBAN, num_envs=6, group_size=4)
    with pytest.raises(ValueError, match="unknown workers='threads'; choose one of 'sync'"):
        TextVectorEnv(SOKOBAN, num_envs=2, workers="threads")
    with pytest.raises(ValueError, match="cannot be shared evenly among 2 env ids"):
        TextVectorEnv([SOKOBAN, FROZEN], num_envs=3)
    with pytest.raises(gym.error.VersionNotFound, match="v9"):
        TextVectorEnv("envgym/Sokoban-v9", num_envs=2)
    with pytest.raises(ValueError, match="ids or env_fns, not both"):
        TextVectorEnv(SOKOBAN, env_fns=[FlakyEnv])
    with TextVectorEnv(SOKOBAN, num_envs=2) as envs:
        with pytest.raises(gym.error.ResetNeeded, match="reset"):
            envs.step(["a", "b"])
        envs.reset(seed=0)
        with pytest.raises(ValueError, match="got 3 actions for 2 envs"):
            envs.step(["a", "b", "c"])
        with pytest.raises(TypeError, match="got a single string"):
            envs.step("<answer>Up</answer>")
        with pytest.raises(ValueError, match=r"unknown reset option\(s\) \['level'\]"):
            envs.reset(seed=0, options={"level": 2})
    with pytest.raises(RuntimeError, match="closed"):
        envs.reset()


def test_gymnasium_vector_api_and_wrappers():
    with envgym.make_vec(FROZEN, num_envs=4, group_size=2, max_turns=3) as envs:
        assert isinstance(envs, VectorEnv) and envs.num_envs == 4
        assert isinstance(envs.single_observation_space, spaces.Text)
        # Text does not batch into arrays: Gymnasium makes a Tuple of Text spaces.
        assert envs.observation_space == batch_space(envs.single_observation_space, 4)
        assert envs.action_space == batch_space(envs.single_action_space, 4)
        obs, infos = envs.reset(seed=0)
        assert obs in envs.observation_space
        envs.action_space.seed(0)
        obs, rewards, terminated, truncated, infos = envs.step(envs.action_space.sample())
        assert obs in envs.observation_space
        assert rewards.dtype == np.float64 and rewards.shape == (4,)
        assert terminated.dtype == np.bool_ and truncated.shape == (4,)
        assert infos["_turn"].all() and infos["turn"].dtype.kind == "i"
        assert infos["admissible_actions"].dtype == object
        assert set(infos["reward_components"]) and isinstance(infos["reward_components"], dict)

        wrapped = DictInfoToList(RecordEpisodeStatistics(envs))
        wrapped.reset(seed=1)
        for _ in range(3):
            *_, infos = wrapped.step(["<answer>Down</answer>"] * 4)
        assert [info["episode"]["l"] for info in infos] == [3, 3, 3, 3]
        assert all("final_obs" in info for info in infos)


def test_render_gives_each_envs_text():
    with envgym.make_vec(FROZEN, num_envs=2, workers="subprocess", render_mode="ansi") as envs:
        obs, _ = envs.reset(seed=0)
        assert envs.render_mode == "ansi"
        frames = envs.render()
        assert isinstance(frames, tuple) and len(frames) == 2
        single = gym.make(FROZEN, render_mode="ansi")
        single.reset(seed=0)
        assert frames[0] == single.render() and frames[0] != frames[1]


def test_close_stops_every_worker_process():
    envs = TextVectorEnv(SOKOBAN, num_envs=4, workers="subprocess", num_workers=2)
    pids = envs.worker_pids()
    envs.reset(seed=0)
    envs.close()
    for pid in pids:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)
    envs.close()  # a second close does nothing
