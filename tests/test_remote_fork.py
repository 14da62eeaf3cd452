"""Fork over the wire: ``snapshot``, ``restore`` and ``fork`` in ``envgym serve``,
`RemoteEnv.snapshot/restore/fork`, and the same for docker-backed envs.

Servers run for real in this process (`serve_in_background`) on Unix sockets
under tmp_path; what a forked or restored session does is compared step by step
with an in-process env restored from ``env.unwrapped.snapshot()``.
"""

from __future__ import annotations

import json
import pickle

import gymnasium as gym
import pytest
from sandbox_backends import require_backend

import envgym  # noqa: F401  (registers the ids)

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")
pytest.importorskip("websockets")

from websockets.exceptions import ConnectionClosed  # noqa: E402
from ws_clients import ask, open_ws, wait_until  # noqa: E402

from envgym.remote import (  # noqa: E402
    RemoteEnv,
    RemoteEnvError,
    RemoteSnapshot,
    ServerAddress,
    ServerUnreachable,
    SessionRejected,
    serve_in_background,
)
from envgym.remote.client import fetch_json  # noqa: E402
from envgym.remote.protocol import CLOSE_UNKNOWN_FORK, public_info  # noqa: E402

SOKOBAN = "envgym/Sokoban-v0"
HOUSEHOLD = "envgym/Household-v0"


def health(address: ServerAddress) -> dict:
    return fetch_json(address, "/health")


def pick(env_id: str, info: dict, turn: int) -> str:
    """A fixed, deterministic policy: the same action for the same info and turn."""
    if env_id == HOUSEHOLD:
        actions = info["admissible_actions"]
        return f"<answer>{actions[(3 * turn + 1) % len(actions)]}</answer>"
    return "<answer>" + ("Up", "Left", "Down", "Right", "Up", "garbage")[turn % 6] + "</answer>"


# ------------------------------------------------------------ same as in-process
@pytest.mark.parametrize("env_id", [SOKOBAN, HOUSEHOLD])
def test_forked_and_restored_sessions_step_like_an_in_process_restore(env_id, tmp_path):
    seed, prefix, after = 4, 3, 6
    with serve_in_background(env_id, uds=tmp_path / "env.sock") as address:
        remote, local = RemoteEnv(address), gym.make(env_id)
        remote.reset(seed=seed)
        _, info = local.reset(seed=seed)
        for turn in range(prefix):
            action = pick(env_id, info, turn)
            *_, info = local.step(action)
            remote.step(action)
        snap, local_snap = remote.snapshot(), local.unwrapped.snapshot()
        assert isinstance(snap, RemoteSnapshot) and snap.server == address
        forks = remote.fork(2, snap) + remote.fork()  # from the handle, and from "now"
        third = RemoteEnv(address)  # a session with no episode of its own
        third.restore(snap)
        # The in-process reference: a fresh env restored from the local snapshot.
        replay = gym.make(env_id)
        replay.reset(seed=0)
        replay.unwrapped.restore(local_snap)
        sessions = [remote, *forks, third]
        for env in sessions:
            state = env.state()
            assert (state["step_count"], state["running"]) == (prefix, True)
            assert env.episode_id == remote.episode_id == state["episode_id"]
        for turn in range(prefix, prefix + after):
            action = pick(env_id, info, turn)
            want = replay.step(action)
            info = want[4]
            for env in sessions:
                got = env.step(action)
                assert got == (*want[:4], public_info(want[4])), (env_id, turn)
            if want[2] or want[3]:
                break
        returns = {env.state()["episode_return"] for env in sessions}
        assert len(returns) == 1
        # Restoring rewinds the session that took the snapshot too.
        remote.restore(snap)
        assert remote.state()["step_count"] == prefix
        for env in (*sessions, local, replay):
            env.close()


def test_fork_is_a_real_copy_each_branch_goes_its_own_way(tmp_path):
    with serve_in_background(SOKOBAN, uds=tmp_path / "env.sock") as address:
        env = RemoteEnv(address)
        env.reset(seed=1)
        left, right = env.fork(2)
        a = left.step("<answer>Left</answer>")[0]
        b = right.step("<answer>Right</answer>")[0]
        assert a != b
        assert env.state()["step_count"] == 0  # the parent did not move
        assert (left.state()["step_count"], right.state()["step_count"]) == (1, 1)
        # A snapshot pickles (for a worker) to its handle and address, and its repr
        # leaves the handle (a capability) out.
        snap = left.snapshot()
        assert pickle.loads(pickle.dumps(snap)) == snap
        assert snap.handle not in repr(snap)
        env.restore(snap)
        assert env.step("<answer>Up</answer>")[0] == left.step("<answer>Up</answer>")[0]
        for e in (env, left, right):
            e.close()


# ------------------------------------------------------------------- bounds
def test_snapshot_bounds_are_refused_with_the_flag_to_raise(tmp_path):
    with serve_in_background(SOKOBAN, uds=tmp_path / "a.sock", max_snapshots=2) as address:
        env, other = RemoteEnv(address), RemoteEnv(address)
        env.reset(seed=0)
        other.reset(seed=0)
        kept = [env.snapshot(), env.snapshot()]
        with pytest.raises(RemoteEnvError, match="--max-snapshots") as refused:
            env.snapshot()
        assert refused.value.code == "SNAPSHOT_LIMIT"
        assert "restore or fork sooner" in str(refused.value)
        other.snapshot()  # the bound is per session
        env.restore(kept[0])  # the session goes on; refusals evict nothing
        env.restore(kept[1])
        assert health(address)["snapshots"] == 3
        # Releasing one makes room, once.
        assert env.release(kept[0]) is True
        assert env.release(kept[0]) is False
        kept[0] = env.snapshot()
        # A session's handles die with it.
        env.close()
        assert wait_until(lambda: health(address)["snapshots"] == 1)
        with pytest.raises(RemoteEnvError, match="session that took it closed") as gone:
            other.restore(kept[0])
        assert gone.value.code == "UNKNOWN_SNAPSHOT"
        other.close()
    with serve_in_background(SOKOBAN, uds=tmp_path / "b.sock", max_snapshot_bytes=100) as address:
        with RemoteEnv(address) as env:
            env.reset(seed=0)
            with pytest.raises(RemoteEnvError, match="higher --max-snapshot-bytes") as big:
                env.snapshot()
            assert big.value.code == "SNAPSHOT_LIMIT"
            assert env.step("<answer>Up</answer>")[4]["turn"] == 1


def test_handles_and_unattached_forks_expire_after_their_ttl(tmp_path):
    sock = tmp_path / "ttl.sock"
    with serve_in_background(SOKOBAN, uds=sock, snapshot_ttl_s=0.2) as address:
        assert fetch_json(address, "/schema")["snapshot_ttl_s"] == 0.2
        with open_ws(address) as ws:
            ask(ws, {"type": "reset", "data": {"seed": 0}})
            handle = ask(ws, {"type": "snapshot"})["data"]["handle"]
            reply = ask(ws, {"type": "fork", "data": {"handle": handle, "n": 1}})
            assert reply["type"] == "fork" and reply["data"]["expires_in_s"] == 0.2
            assert health(address)["pending_forks"] == 1
            assert wait_until(lambda: health(address)["pending_forks"] == 0, 10)
            assert wait_until(lambda: health(address)["snapshots"] == 0, 10)
            frame = ask(ws, {"type": "restore", "data": {"handle": handle}})
            assert frame["data"]["code"] == "UNKNOWN_SNAPSHOT"
            assert "--snapshot-ttl" in frame["data"]["message"]
            [token] = reply["data"]["sessions"]
        # The expired fork's token is refused like an unknown one.
        with open_ws(address, f"?fork={token}") as late:
            frame = json.loads(late.recv(timeout=30))
            assert frame["data"]["code"] == "UNKNOWN_FORK"
            with pytest.raises(ConnectionClosed) as closed:
                late.recv(timeout=30)
        assert closed.value.rcvd.code == CLOSE_UNKNOWN_FORK


def test_a_fork_past_the_session_limit_makes_none(tmp_path):
    with serve_in_background(SOKOBAN, uds=tmp_path / "s.sock", max_sessions=3) as address:
        env = RemoteEnv(address)
        env.reset(seed=2)
        with pytest.raises(SessionRejected, match="higher --max-sessions") as refused:
            env.fork(3)
        assert refused.value.code == "CAPACITY_REACHED"
        now = health(address)
        assert (now["sessions"], now["pending_forks"]) == (1, 0)
        forks = env.fork(2)  # what fits is made; the parent goes on
        assert env.step("<answer>Up</answer>")[4]["turn"] == 1
        with pytest.raises(SessionRejected, match="--max-sessions"):
            RemoteEnv(address)  # forks count against the limit like any session
        for e in (env, *forks):
            e.close()


def test_bad_handles_tokens_and_timing_get_errors_that_say_what_to_do(tmp_path):
    with (
        serve_in_background(SOKOBAN, uds=tmp_path / "one.sock") as one,
        serve_in_background(SOKOBAN, uds=tmp_path / "two.sock") as two,
    ):
        env, elsewhere = RemoteEnv(one), RemoteEnv(two)
        with pytest.raises(gym.error.ResetNeeded, match="reset"):
            env.snapshot()  # no episode yet
        with pytest.raises(gym.error.ResetNeeded, match="reset"):
            env.fork()
        env.reset(seed=0)
        with pytest.raises(RemoteEnvError, match="Take a new one") as unknown:
            env.restore(RemoteSnapshot("no-such-handle", one))
        assert unknown.value.code == "UNKNOWN_SNAPSHOT"
        snap = env.snapshot()
        with pytest.raises(ValueError, match="only on its own server"):
            elsewhere.restore(snap)
        with pytest.raises(TypeError, match="takes a RemoteSnapshot"):
            env.restore(env.unwrapped)
        with pytest.raises(ValueError, match="n >= 1"):
            env.fork(0)
        with open_ws(two) as ws:  # the other server never heard of the handle
            ask(ws, {"type": "reset", "data": {"seed": 0}})
            frame = ask(ws, {"type": "restore", "data": {"handle": snap.handle}})
            assert frame["data"]["code"] == "UNKNOWN_SNAPSHOT"
            for message, text in [
                ({"type": "restore"}, "restore needs 'data'"),
                ({"type": "restore", "data": {"hndl": "x"}}, "restore takes 'handle'"),
                ({"type": "fork", "data": {"n": 0}}, "n must be a whole number from 1"),
                ({"type": "fork", "data": {"handle": 3}}, "handle must be a handle"),
            ]:
                frame = ask(ws, message)
                assert frame["data"]["code"] == "VALIDATION_ERROR", frame
                assert text in frame["data"]["message"], frame
        # A fork token attaches once.
        reply = env._request({"type": "fork", "data": {"n": 1}}, expect="fork")
        [token] = reply["sessions"]
        with open_ws(one, f"?fork={token}") as ws:
            state = ask(ws, {"type": "state"})["data"]
            assert state["running"] is True and state["step_count"] == 0
            frame = ask(ws, {"type": "step", "data": {"action": "<answer>Up</answer>"}})
            assert frame["data"]["metadata"]["turn"] == 1
        with pytest.raises(SessionRejected, match="attach to each token once"):
            env._attached(token, "")
        # After the episode ends there is nothing to snapshot.
        done = False
        while not done:
            *_, terminated, truncated, _ = env.step("<answer>Up</answer>")
            done = terminated or truncated
        with pytest.raises(gym.error.ResetNeeded, match="episode has ended"):
            env.snapshot()
        schema = fetch_json(one, "/schema")
        assert (schema["max_snapshots"], schema["max_snapshot_bytes"]) == (64, 64 * 1024 * 1024)
        env.close()
        elsewhere.close()


# --------------------------------------------------------------- privileged
def test_no_snapshot_restore_or_fork_frame_carries_privileged_data(tmp_path):
    env_id, seed = "envgym/PythonMath-v0", 0
    local = gym.make(env_id)
    _, info = local.reset(seed=seed)
    gold = info["privileged"]["answer"]
    assert gold
    frames: list[str] = []

    def send(ws, message: dict) -> dict:
        ws.send(json.dumps(message))
        frames.append(ws.recv(timeout=30))
        return json.loads(frames[-1])

    with serve_in_background(env_id, uds=tmp_path / "math.sock") as address:
        with open_ws(address) as ws:
            send(ws, {"type": "reset", "data": {"seed": seed}})
            send(ws, {"type": "step", "data": {"action": "Let me think."}})
            handle = send(ws, {"type": "snapshot"})["data"]["handle"]
            send(ws, {"type": "restore", "data": {"handle": handle}})
            tokens = send(ws, {"type": "fork", "data": {"handle": handle, "n": 2}})["data"]
            for token in tokens["sessions"]:
                with open_ws(address, f"?fork={token}") as forked:
                    send(forked, {"type": "state"})
                    reply = send(forked, {"type": "step", "data": {"action": "Still thinking."}})
                    assert reply["type"] == "observation"
    assert len(frames) == 9
    assert not [frame for frame in frames if gold in frame or '"privileged"' in frame]


# ------------------------------------------------------------------- docker
@pytest.mark.docker
def test_a_docker_env_forks_like_an_in_process_restore():
    """Needs the runtime image built with this server code (``envgym sandbox build``)."""
    require_backend("docker")
    env = gym.make(SOKOBAN, backend="docker")
    local = gym.make(SOKOBAN)
    try:
        env.reset(seed=6)
        local.reset(seed=6)
        for move in ("Up", "Left"):
            env.step(f"<answer>{move}</answer>")
            local.step(f"<answer>{move}</answer>")
        snap = env.unwrapped.snapshot()
        local_snap = local.unwrapped.snapshot()
        forks = env.unwrapped.fork(2, snap)
        replay = gym.make(SOKOBAN)
        replay.reset(seed=0)
        replay.unwrapped.restore(local_snap)
        for move in ("Down", "Right", "Up", "Up"):
            want = replay.step(f"<answer>{move}</answer>")
            for forked in forks:
                # The container's server is this process's alone: it sends the privileged part.
                assert forked.step(f"<answer>{move}</answer>") == want
        env.unwrapped.restore(snap)
        assert env.unwrapped.state()["step_count"] == 2
        for forked in forks:
            forked.close()
    finally:
        env.close()


def test_a_one_client_server_waits_for_its_pending_forks_then_stops(tmp_path):
    sock = tmp_path / "once.sock"
    options = {"exit_after_sessions": 1, "snapshot_ttl_s": 1.0}
    with serve_in_background(SOKOBAN, uds=sock, **options) as address:
        env = RemoteEnv(address)
        env.reset(seed=0)
        env._request({"type": "fork", "data": {"n": 1}}, expect="fork")
        env.close()  # its client is gone, but a fork of it may still be attached to
        assert health(address)["pending_forks"] == 1

        def stopped() -> bool:
            try:
                health(address)
            except ServerUnreachable:
                return True
            return False

        assert wait_until(stopped, 20)  # once the fork expires unattached
