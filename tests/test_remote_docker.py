"""gym.make(id, backend="docker"): the env served from a container, same results as local."""

from __future__ import annotations

import os
import stat
import subprocess

import gymnasium as gym
import pytest
from gymnasium.utils.env_checker import check_env
from sandbox_backends import require_backend

import envgym  # noqa: F401
from envgym.remote import RemoteEnv
from envgym.sandbox.images import CONTAINER_LABEL

pytestmark = pytest.mark.docker


@pytest.fixture(scope="module")
def docker_env():
    require_backend("docker")
    env = gym.make("envgym/Sokoban-v0", backend="docker", difficulty="medium")
    yield env
    env.close()


def test_container_env_plays_like_the_local_env(docker_env):
    local = gym.make("envgym/Sokoban-v0", difficulty="medium")
    assert isinstance(docker_env.unwrapped, RemoteEnv)
    # Its server is this process's alone, so it sends info["privileged"] like the local env.
    assert docker_env.unwrapped.privileged_sent is True
    for seed in (0, 5):
        remote_obs, remote_info = docker_env.reset(seed=seed)
        local_obs, local_info = local.reset(seed=seed)
        assert (remote_obs, remote_info) == (local_obs, local_info)
        assert "privileged" in remote_info
        for move in ("Up", "Left", "Down", "Right", "garbage", "Up"):
            got = docker_env.step(f"<answer>{move}</answer>")
            want = local.step(f"<answer>{move}</answer>")
            assert got == want
            if got[2] or got[3]:
                break


def test_container_env_passes_the_gymnasium_checker(docker_env):
    check_env(docker_env.unwrapped, skip_render_check=True)


def test_closing_removes_the_container():
    require_backend("docker")
    import docker

    env = gym.make("envgym/FrozenLake-v0", backend="docker")
    container = env.unwrapped.container
    env.reset(seed=1)
    env.close()
    client = docker.from_env()
    left = client.containers.list(all=True, filters={"label": CONTAINER_LABEL}, ignore_removed=True)
    assert container.id not in {c.id for c in left}


def test_a_killed_owner_leaves_its_env_container_stopped():
    require_backend("docker")
    import subprocess
    import sys
    import time

    import docker

    owner = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import time, gymnasium as gym, envgym; "
            "env = gym.make('envgym/FrozenLake-v0', backend='docker'); env.reset(seed=0); "
            "print(env.unwrapped.container.id, flush=True); time.sleep(600)",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    container_id = owner.stdout.readline().strip()
    client = docker.from_env()
    container = client.containers.get(container_id)
    assert container.status == "running"
    owner.kill()  # SIGKILL: no close(), no exit hook
    owner.wait()
    # Its session's socket closes with it: the one-session server stops, and so
    # does the container. `envgym sandbox gc` removes what is left.
    for _ in range(300):
        container.reload()
        if container.status != "running":
            break
        time.sleep(0.2)
    assert container.status == "exited"
    from envgym.sandbox import gc

    gc(only_dead_owners=True)
    left = client.containers.list(all=True, filters={"label": CONTAINER_LABEL}, ignore_removed=True)
    assert container_id not in {c.id for c in left}


def test_one_container_serves_a_vector_envs_sessions():
    require_backend("docker")
    import numpy as np

    from envgym.remote.container import ContainerServer
    from envgym.vector import TextVectorEnv

    def play(envs: TextVectorEnv) -> list:
        rng = np.random.default_rng(0)
        obs, infos = envs.reset(seed=7)
        seen = [obs]
        for _ in range(12):
            moves = [m[int(rng.random() * len(m))] for m in infos["admissible_actions"]]
            obs, rewards, terminated, truncated, infos = envs.step(
                [f"<answer>{m}</answer>" for m in moves]
            )
            seen.append((obs, rewards.tolist(), terminated.tolist(), truncated.tolist()))
        assert "error" not in infos
        return seen

    with ContainerServer("envgym/Sokoban-v0", max_sessions=4) as server:
        fns = [lambda: RemoteEnv(server.address)] * 4
        with TextVectorEnv(env_fns=fns, group_size=2, workers="remote") as envs:
            served = play(envs)
        container = server.container
    assert server.container is None
    with pytest.raises(Exception, match="404|No such container"):
        container.reload()
    with TextVectorEnv("envgym/Sokoban-v0", num_envs=4, group_size=2) as envs:
        assert served == play(envs)


CONNECT = "import socket, sys; socket.socket(socket.AF_UNIX).connect(sys.argv[1]); print('in')"


def connect_as(uid: int, path: str) -> subprocess.CompletedProcess:
    """Try to connect to the Unix socket at `path` from a process running as `uid`."""
    python = "/usr/bin/python3"  # one every uid may run (this venv's may sit in /root)
    if not os.path.exists(python):
        pytest.skip(f"{python} is needed to connect as another user")
    return subprocess.run(
        [python, "-c", CONNECT, path], user=uid, group=uid, capture_output=True, text=True
    )


def test_container_socket_is_its_owners_alone():
    require_backend("docker")
    from envgym.remote.container import SERVER_UID, ContainerServer

    with ContainerServer("envgym/Sokoban-v0") as server:
        folder = os.path.dirname(server.socket_path)
        folder_stat, socket_stat = os.stat(folder), os.stat(server.socket_path)
        assert stat.S_IMODE(folder_stat.st_mode) == 0o700
        assert stat.S_IMODE(socket_stat.st_mode) == 0o600
        user = server.container.attrs["Config"]["User"]
        if os.getuid() == 0:
            # The server runs as a uid of its own, never root; the folder is handed to it.
            assert user == f"{SERVER_UID}:{SERVER_UID}"
            assert (folder_stat.st_uid, socket_stat.st_uid) == (SERVER_UID, SERVER_UID)
            for uid in (65534, 65533):  # nobody, as host daemons run, and any other uid
                other = connect_as(uid, server.socket_path)
                assert other.returncode != 0 and "PermissionError" in other.stderr
        else:
            assert user == f"{os.getuid()}:{os.getgid() or SERVER_UID}"
            assert folder_stat.st_uid == socket_stat.st_uid == os.getuid()
        # Its owner connects; a ContainerServer keeps info["privileged"] back unless asked.
        with RemoteEnv(server.address) as env:
            assert env.privileged_sent is False
            assert "privileged" not in env.reset(seed=0)[1]


def test_unknown_backend_is_a_clear_error():
    with pytest.raises(ValueError, match="unknown env backend 'kubernetes'"):
        gym.make("envgym/Sokoban-v0", backend="kubernetes")


def test_bad_env_kwargs_surface_the_servers_error():
    require_backend("docker")
    from envgym.sandbox import SandboxError

    with pytest.raises(SandboxError, match="difficulty"):
        gym.make("envgym/Sokoban-v0", backend="docker", difficulty="impossible")
