"""The LLM user of the tool worlds (``user="openai:URL#MODEL"``) against a real
OpenAI-compatible server on 127.0.0.1.

The server is a small FastAPI app defined here that plays the customer from
the prompt it is sent: it tells a fact listed in the prompt when the agent's
last message asks for it, says yes to a confirmation, changes its mind and
accepts a refusal as the prompt says, and ends with ###STOP### once the agent
says it is done. It records every request, so the tests check what the user
was told (the task's facts, never the gold dialogue), determinism, the end,
confirmations, and that no server answer crashes a step.
"""

from __future__ import annotations

import json
import pickle
import re
import subprocess
import sys
from typing import Any

import pytest
from toolworld_library import LibraryEnv

from envgym.envs.toolworld.llm_user import (
    REPLY_LIMIT,
    STOP,
    LLMUserError,
    is_affirmative,
    parse_user_spec,
)
from envgym.envs.toolworld.oracle import ToolWorldOracle, gold_dialogue
from envgym.serving import AppServer
from envgym.sockets import listening_socket

fastapi = pytest.importorskip("fastapi")
pytest.importorskip("httpx")

MODEL = "customer-model"


class CustomerServer:
    """Plays the customer from its prompt; `mode` makes it misbehave:
    ``garbage`` (a body that is not JSON), ``500``/``400`` (that status), ``null``
    (no text), ``huge`` (a megabyte of text), ``stop`` (ends at once)."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.mode = "play"
        app = fastapi.FastAPI()
        app.post("/v1/chat/completions")(self.completions)
        self.server = AppServer(app, listening_socket())

    async def completions(self, request: fastapi.Request) -> Any:
        body = await request.json()
        self.requests.append(body)
        responses = fastapi.responses
        if self.mode == "garbage":
            return responses.PlainTextResponse("this is not json {")
        if self.mode in ("500", "400"):
            return responses.JSONResponse({"error": "scripted"}, status_code=int(self.mode))
        special = {"null": None, "huge": "yes " * 250_000, "stop": f"Bye. {STOP}"}
        content = special[self.mode] if self.mode in special else customer(body["messages"])
        message = {"role": "assistant", "content": content}
        return {"choices": [{"index": 0, "message": message, "finish_reason": "stop"}]}

    def __enter__(self) -> str:
        self.server.start()
        return f"openai:{self.server.url}/v1#{MODEL}"

    def __exit__(self, *exc: object) -> None:
        self.server.close()


def customer(messages: list[dict[str, str]]) -> str:
    """The customer's answer to the agent's last message, from the prompt alone."""
    prompt = messages[0]["content"]
    said = messages[-1]["content"].lower()
    facts = dict(re.findall(r"^- (.+?): (.+)$", prompt, re.MULTILINE))
    change = re.search(r'confirm (.+?), change your mind and say: "(.+)"', prompt)
    earlier = " ".join(m["content"] for m in messages[3:-1] if m["role"] == "assistant")
    if said.startswith("done"):
        return f"Thank you, that's all. {STOP}"
    if "cannot" in said:
        return "Okay, I understand."
    if "proceed" in said:
        if change and change[1].lower() in said and change[2] not in earlier:
            return change[2]
        return "Yes, please go ahead."
    told = [f"My {name} is {value}." for name, value in facts.items() if name in said]
    return " ".join(told) or "I don't know that."


@pytest.fixture
def live():
    """A fresh server per test (its requests and mode are the test's own)."""
    srv = CustomerServer()
    with srv as spec:
        yield srv, spec


def play_oracle(env: LibraryEnv, **reset) -> tuple[float, dict, list[str]]:
    obs, info = env.reset(**reset)
    oracle = ToolWorldOracle(env)
    seen, done = [obs], False
    while not done:
        obs, reward, terminated, truncated, info = env.step(oracle.act(obs, info))
        seen.append(obs)
        done = terminated or truncated
    assert terminated
    return reward, info, seen


# ---------------------------------------------------------------- whole episodes
@pytest.mark.parametrize("difficulty", ["easy", "medium", "hard"])
def test_the_oracle_scores_one_against_the_llm_user(live, difficulty):
    srv, spec = live
    env = LibraryEnv(difficulty=difficulty, user=spec)
    for seed in range(3):
        reward, info, seen = play_oracle(env, seed=seed)
        assert reward == 1.0 and info["success"], info["grade"]
        assert STOP not in seen[-1] and "(The user has left the conversation.)" in seen[-1]
    assert srv.requests and all(r["model"] == MODEL for r in srv.requests)
    env.close()


def test_the_prompt_holds_the_tasks_facts_and_never_the_gold_dialogue(live):
    srv, spec = live
    env = LibraryEnv(difficulty="hard", user=spec)
    play_oracle(env, seed=4)
    task = env.task
    prompt = srv.requests[0]["messages"][0]["content"]
    assert all(r["messages"][0]["content"] == prompt for r in srv.requests)  # fixed
    for fact in task.facts:
        assert fact.value in prompt
    assert task.request in prompt and task.change_message in prompt
    assert "never invent facts" in prompt.lower() and STOP in prompt
    for action in (*task.actions, *task.lookups):
        assert action.tool not in prompt
        for value in action.arguments.values():
            assert json.dumps({"loan_id": value}) not in prompt
    for output in task.outputs:
        assert output not in prompt
    assert task.inform not in prompt
    assert {r["temperature"] for r in srv.requests} == {0}
    assert {r["seed"] for r in srv.requests} == {int(task.task_id.rsplit("-", 1)[1])}


def test_the_same_task_sends_the_same_requests(live):
    srv, spec = live
    env = LibraryEnv(difficulty="medium", user=spec)
    play_oracle(env, seed=5)
    first, task_id = list(srv.requests), env.task_id
    srv.requests.clear()
    play_oracle(LibraryEnv(difficulty="medium", user=spec), options={"task_id": task_id})
    assert srv.requests == first
    srv.requests.clear()
    play_oracle(env, seed=6)
    assert srv.requests[0]["seed"] != first[0]["seed"]


def test_stop_from_the_user_ends_the_episode_and_from_the_agent_does_not(live):
    srv, spec = live
    env = LibraryEnv(user=spec)
    env.reset(seed=1)
    obs, reward, terminated, *_ = env.step(f"Hello. {STOP}")  # the agent's words
    assert not terminated and STOP not in obs
    srv.mode = "stop"
    obs, reward, terminated, truncated, info = env.step("How can I help?")
    assert terminated and not truncated and reward == 0
    assert STOP not in obs and "Bye." in obs and "(The user has left" in obs


# ---------------------------------------------------------------- confirmations
def test_an_affirmative_answer_to_a_confirmation_request_allows_the_writes_it_names(live):
    srv, spec = live
    env = LibraryEnv(difficulty="medium", user=spec)
    env.reset(seed=2)
    renew, pay = env.task.actions
    script = list(gold_dialogue(env.task))[:3]  # the email, then the lookups
    for reply in script:
        env.step(reply)
    env.step(f"I will {renew.summary} and {pay.summary}. Shall I proceed?")
    assert env._confirmations == 2
    env.step(f"<tool_call>{json.dumps(renew.as_dict())}</tool_call>")
    env.step(f"<tool_call>{json.dumps(pay.as_dict())}</tool_call>")
    *_, reward, terminated, _, info = env.step(env.task.inform)
    assert terminated and reward == 1.0 and info["grade"]["violations"] == []


def test_a_yes_to_a_message_that_asks_nothing_confirms_nothing(live):
    srv, spec = live
    env = LibraryEnv(user=spec)
    env.reset(seed=3)
    for reply in list(gold_dialogue(env.task))[:2]:
        env.step(reply)
    env.step("I am renewing your loan now.")  # no question: the answer confirms nothing
    assert env._confirmations == 0
    renew = env.task.actions[0]
    *_, info = env.step(f"<tool_call>{json.dumps(renew.as_dict())}</tool_call>")
    assert "without the user's confirmation" in env.grade()["violations"][0]


@pytest.mark.parametrize(
    "answer, yes",
    [
        ("Yes, please go ahead.", True),
        ("Sure, do it.", True),
        ("I confirm.", True),
        ("That's correct, go ahead ###STOP###", True),
        ("No, that's not what I want.", False),
        ("Nope.", False),
        ("Please don't do that.", False),
        ("Hmm, let me think about it.", False),
        ("", False),
    ],
)
def test_affirmative_answers(answer, yes):
    assert is_affirmative(answer) is yes


# ---------------------------------------------------------------- robustness
@pytest.mark.parametrize("mode", ["garbage", "500", "400", "null"])
def test_a_bad_server_answer_never_crashes_a_step(live, mode):
    srv, spec = live
    env = LibraryEnv(user=spec)
    env.reset(seed=1)
    srv.mode = mode
    obs, reward, terminated, truncated, info = env.step("What is your email?")
    assert "(The user did not answer" in obs and not terminated and reward == 0
    assert env.observation_space.contains(obs)
    srv.mode = "play"  # the conversation goes on where it was
    obs, *_ = env.step("What is your email?")
    assert env.task.facts[0].value in obs


def test_a_huge_answer_is_cut(live):
    srv, spec = live
    env = LibraryEnv(user=spec)
    env.reset(seed=1)
    srv.mode = "huge"
    obs, *_ = env.step("Shall I proceed?")
    assert len(obs) <= REPLY_LIMIT + 10 and env.observation_space.contains(obs)
    srv.mode = "play"
    env.step("Anything else?")
    assert len(json.dumps(srv.requests[-1])) < 20_000  # the conversation keeps it bounded


def test_an_unreachable_server_is_a_clear_error_that_names_it():
    with listening_socket() as sock:  # a port that nothing answers on once closed
        port = sock.getsockname()[1]
    url = f"http://127.0.0.1:{port}/v1"
    env = LibraryEnv(user=f"openai:{url}#m")
    env.reset(seed=0)
    with pytest.raises(LLMUserError, match=re.escape(f"{url}/chat/completions")):
        env.step("What is your email?")


def test_bad_user_specs_say_what_to_write():
    for spec in ("llm", "openai:127.0.0.1:8000#m", "openai:http://x/v1", "", None, 3):
        with pytest.raises(ValueError, match="'scripted'.*'openai:URL#MODEL'"):
            LibraryEnv(user=spec)
    assert parse_user_spec("scripted") is None
    assert parse_user_spec("openai:http://h:1/v1/#org/model") == ("http://h:1/v1", "org/model")


def test_without_httpx_the_error_names_the_extra():
    code = (
        "import sys; sys.modules['httpx'] = None; sys.path.insert(0, 'tests')\n"
        "from toolworld_library import LibraryEnv\n"
        "LibraryEnv().reset(seed=0)\n"  # the scripted user needs no httpx
        "LibraryEnv(user='openai:http://127.0.0.1:9/v1#m')\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode != 0
    assert "pip install 'envgym[agents]'" in done.stderr and "LLM user" in done.stderr


# ---------------------------------------------------------------- snapshots
def test_snapshot_and_restore_keep_the_conversation_not_the_client(live):
    srv, spec = live
    env = LibraryEnv(difficulty="medium", user=spec)
    env.reset(seed=7)
    script = list(gold_dialogue(env.task))
    for reply in script[:4]:
        env.step(reply)
    snap = env.snapshot()
    assert "_client" not in vars(snap["attrs"]["user"]) or snap["attrs"]["user"]._client is None
    rest = [env.step(r) for r in script[4:]]
    assert rest[-1][1] == 1.0
    for copy_ in (snap, pickle.loads(pickle.dumps(snap))):
        env.restore(copy_)
        again = [env.step(r) for r in script[4:]]
        assert [s[0] for s in again] == [s[0] for s in rest] and again[-1][1] == 1.0
    env.close()
