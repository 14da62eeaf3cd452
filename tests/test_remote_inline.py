"""``envgym serve``'s env calls on its event loop: envs that declare ``fast_calls``.

A declared-fast env steps on the loop (no hand-off to a thread); a step that
overruns moves its session to threads, and other sessions keep being served
while it is slow; ``calls="threads"`` (``--calls threads``) keeps every call
on a thread; hostile replies at the reply bound are answered as the env in
this process answers them. The slow-call and deadline tests of a thread-run
env are in test_remote.py. Servers run for real on Unix sockets under tmp_path.
"""

from __future__ import annotations

import json
import logging
import sys
import threading
import time
from pathlib import Path

import gymnasium as gym
import pytest

import envgym  # noqa: F401  (registers the ids)
from envgym.text import ACTION_MAX_LENGTH

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")
pytest.importorskip("websockets")

from test_remote import SleepyEnv  # noqa: E402
from websockets.sync.client import unix_connect  # noqa: E402

from envgym.remote import ServerConfig, serve_in_background  # noqa: E402
from envgym.remote.client import fetch_json  # noqa: E402
from envgym.remote.inline import InlineCalls  # noqa: E402
from envgym.remote.launcher import serve_command  # noqa: E402

SOKOBAN = "envgym/Sokoban-v0"
FAST_SLEEPY = "envgym-test/FastSleepy-v0"
THREAD_NAME = "envgym-env"  # what `envgym.remote.threads` names its threads


class FastSleepyEnv(SleepyEnv):
    """`test_remote`'s sleepy env (``step("sleep S")`` takes S seconds), declaring
    fast calls; ``info["thread"]`` names the thread each step ran on."""

    fast_calls = True

    def step(self, action):
        obs, reward, terminated, truncated, _ = super().step(action)
        return obs, reward, terminated, truncated, {"thread": threading.current_thread().name}


@pytest.fixture()
def fast_sleepy_id():
    gym.register(FAST_SLEEPY, entry_point=FastSleepyEnv)
    yield FAST_SLEEPY
    gym.registry.pop(FAST_SLEEPY, None)


def open_ws(address):
    return unix_connect(address.uds, address.ws_url, compression=None)


def ask(ws, message: dict) -> dict:
    ws.send(json.dumps(message))
    return json.loads(ws.recv(timeout=30))


def step(ws, action: str) -> dict:
    frame = ask(ws, {"type": "step", "data": {"action": action}})
    assert frame["type"] == "observation", frame
    return frame["data"]


def thread_of(ws, action: str = "move") -> str:
    return step(ws, action)["observation"]["info"]["thread"]


#: budgets no quick step overruns, even on a loaded machine (the defaults are 10 and 100 ms)
ROOMY_BUDGET_S = 0.25


def test_a_declared_fast_env_that_turns_slow_moves_to_threads(
    fast_sleepy_id, tmp_path, caplog, monkeypatch
):
    monkeypatch.setattr(InlineCalls, "BUDGET_S", ROOMY_BUDGET_S)
    monkeypatch.setattr(InlineCalls, "BLOCKED_S", ROOMY_BUDGET_S)
    caplog.set_level(logging.WARNING, logger="envgym.remote")
    with serve_in_background(fast_sleepy_id, uds=tmp_path / "fast.sock") as address:
        with open_ws(address) as slow, open_ws(address) as quick:
            for ws in (slow, quick):
                assert ask(ws, {"type": "reset", "data": {"seed": 0}})["type"] == "observation"
            # Declared fast: steps run on the event loop, not on an env thread.
            assert thread_of(slow) != THREAD_NAME
            assert thread_of(quick) != THREAD_NAME
            # A step past the budget holds the loop once, then its session moves to threads.
            assert step(slow, "sleep 0.4")["observation"]["text"] == "did sleep 0.4"
            assert "on threads from now on" in caplog.text and FAST_SLEEPY in caplog.text
            assert thread_of(slow) == THREAD_NAME
            assert thread_of(quick) != THREAD_NAME  # the other session stays on the loop
            # Now a slow step stalls only its own session.
            sent_at = time.monotonic()
            slow.send(json.dumps({"type": "step", "data": {"action": "sleep 2"}}))
            time.sleep(0.2)  # the slow step is under way
            for turn in range(20):
                assert step(quick, f"move {turn}")["observation"]["text"] == f"did move {turn}"
            others_done = time.monotonic()
            frame = json.loads(slow.recv(timeout=30))
            slow_done = time.monotonic()
        assert frame["data"]["observation"]["text"] == "did sleep 2"
        assert slow_done - sent_at >= 2.0
        assert others_done < sent_at + 1.5  # the other session did not wait for it


def test_after_a_few_overruns_every_session_moves_to_threads(fast_sleepy_id, tmp_path, caplog):
    caplog.set_level(logging.WARNING, logger="envgym.remote")
    over = InlineCalls.BLOCKED_S * 1.5
    with serve_in_background(fast_sleepy_id, uds=tmp_path / "overruns.sock") as address:
        for _ in range(InlineCalls.OVERRUNS):
            with open_ws(address) as ws:
                ask(ws, {"type": "reset", "data": {"seed": 0}})
                step(ws, f"sleep {over:g}")
        assert "every session runs its env calls on threads" in caplog.text
        with open_ws(address) as ws:
            ask(ws, {"type": "reset", "data": {"seed": 0}})
            assert thread_of(ws) == THREAD_NAME


def test_calls_threads_keeps_declared_fast_envs_off_the_loop(fast_sleepy_id, tmp_path):
    with serve_in_background(fast_sleepy_id, uds=tmp_path / "t.sock", calls="threads") as address:
        with open_ws(address) as ws:
            ask(ws, {"type": "reset", "data": {"seed": 0}})
            assert thread_of(ws) == THREAD_NAME
    assert serve_command(SOKOBAN, calls="threads")[-2:] == ["--calls", "threads"]
    with pytest.raises(ValueError, match="calls must be one of"):
        ServerConfig(env_id=SOKOBAN, calls="inline")


def test_a_long_action_to_a_declared_fast_env_runs_on_a_thread(
    fast_sleepy_id, tmp_path, monkeypatch
):
    monkeypatch.setattr(InlineCalls, "BUDGET_S", ROOMY_BUDGET_S)
    monkeypatch.setattr(InlineCalls, "BLOCKED_S", ROOMY_BUDGET_S)
    with serve_in_background(fast_sleepy_id, uds=tmp_path / "long.sock") as address:
        with open_ws(address) as ws:
            ask(ws, {"type": "reset", "data": {"seed": 0}})
            assert thread_of(ws, "m" * InlineCalls.ACTION_CHARS) != THREAD_NAME
            assert thread_of(ws, "m" * (InlineCalls.ACTION_CHARS + 1)) == THREAD_NAME


def hostile_replies(size: int) -> dict[str, str]:
    """benchmarks/reply_bound.py's replies built to trip parsers, `size` characters each."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
    try:
        from reply_bound import replies
    finally:
        sys.path.pop(0)
    return replies(size)


def test_hostile_replies_to_a_declared_fast_env_are_answered_as_in_process(tmp_path):
    local = gym.make(SOKOBAN)
    with serve_in_background(SOKOBAN, uds=tmp_path / "hostile.sock") as address:
        limit = fetch_json(address, "/schema")["max_message_bytes"]
        with open_ws(address) as ws:
            for size in (InlineCalls.ACTION_CHARS, ACTION_MAX_LENGTH):  # on the loop; a thread
                for name, reply in hostile_replies(size).items():
                    assert len(json.dumps(reply)) < limit
                    ask(ws, {"type": "reset", "data": {"seed": 3}})
                    local.reset(seed=3)
                    text, reward, terminated, truncated, _ = local.step(reply)
                    data = step(ws, reply)
                    got = (data["observation"]["text"], data["reward"], data["done"])
                    assert got == (text, reward, terminated or truncated), name
            # The session goes on as usual.
            ask(ws, {"type": "reset", "data": {"seed": 0}})
            assert step(ws, "<answer>Up</answer>")["observation"]["info"]["turn"] == 1


def test_messages_sent_without_waiting_are_all_answered_in_order(fast_sleepy_id, tmp_path):
    # The server reads on while a session's messages wait (envgym.remote.wire) and
    # stops reading once a few pile up; every one is answered, in order.
    with serve_in_background(fast_sleepy_id, uds=tmp_path / "pipelined.sock") as address:
        with open_ws(address) as ws:
            ask(ws, {"type": "reset", "data": {"seed": 0}})
            for turn in range(200):
                ws.send(json.dumps({"type": "step", "data": {"action": f"move {turn}"}}))
            texts = [
                json.loads(ws.recv(timeout=30))["data"]["observation"]["text"] for _ in range(200)
            ]
            assert texts == [f"did move {turn}" for turn in range(200)]
