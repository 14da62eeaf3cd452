"""An LLM plays the tool world's user: ``user="openai:URL#MODEL"`` on any tool world.

The default user (`user.py`) is deterministic and offline; this one is an
option for comparing agents against a model-played customer, as tau-bench
does. It plays the same hidden task from a fixed prompt built from it
(`user_prompt`: the goal, the facts it may tell only when asked, the change of
mind and the forbidden request, "never invent facts", "write ###STOP### when
done or stuck"), never the gold dialogue. Each answer is one request to an
OpenAI-compatible ``/chat/completions`` endpoint with temperature 0 and the
task's seed, so a server that honours both answers the same conversation the
same way. Needs httpx (``pip install 'envgym[agents]'``).

What the env reads from an answer:

- **The end.** An answer that contains ``###STOP###`` ends the conversation
  (the marker is not shown to the agent). Only the user's answer can end it:
  the agent writing ``###STOP###`` is just text the user reads.
- **Confirmation.** When the agent's message asks for confirmation (the same
  cues as the default user, `asks_confirmation`) and the answer is
  affirmative (`is_affirmative`: it says yes, confirm, go ahead, ... and does
  not start with no or say "don't"), the user has confirmed as many writes as
  the message names among the task's pending gold writes and its forbidden
  request, and at least one. A model cannot be asked which write it meant, so
  a vague "shall I proceed?" answered "yes" allows one write; whether it was
  the right one shows in the store.
- **Bounds.** An answer is made printable ASCII and cut at `REPLY_LIMIT`
  characters.

Failures: an answer that is not a usable completion (an HTTP error status
after `RETRIES` retries, a body that is not JSON, no text in it) never stops
the episode: the agent reads "(The user did not answer ...)" and the
conversation goes on. A server that cannot be reached at all (no connection, a
timeout, after the retries) is not the agent's fault: `step` raises
`LLMUserError`, which names the server.
"""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from typing import Any

from envgym.envs.toolworld.task import Task, mentions_all, normalize
from envgym.envs.toolworld.user import UserReply, asks_confirmation
from envgym.extras import require
from envgym.text import to_ascii

__all__ = [
    "LLMUser",
    "LLMUserError",
    "REPLY_LIMIT",
    "STOP",
    "is_affirmative",
    "parse_user_spec",
    "user_prompt",
]

#: The marker an LLM user writes to end the conversation.
STOP = "###STOP###"
#: The longest answer the agent reads, in characters.
REPLY_LIMIT = 2_000
#: The most tokens one answer may take.
MAX_TOKENS = 400
#: Retries after a failed request (no connection, a timeout, HTTP 429 or 5xx).
RETRIES = 2
BACKOFF_S = 0.25
TIMEOUT_S = 60.0
#: The agent's greeting, the first turn the model answers (with the task's opening).
GREETING = "Hello! How can I help you today?"

_YES = re.compile(
    r"\b(yes|yeah|yep|sure|confirm|confirmed|go ahead|please do|correct|that's right|"
    r"sounds good|ok|okay|proceed)\b"
)
_NO = re.compile(r"^\W*(no|nope|nah)\b|\b(don't|dont|do not|not yet)\b")


class LLMUserError(RuntimeError):
    """The LLM user's server could not be reached: not the agent's doing."""


def parse_user_spec(spec: Any) -> tuple[str, str] | None:
    """None for ``"scripted"``; (base URL, model) for ``"openai:URL#MODEL"``."""
    if spec == "scripted":
        return None
    if isinstance(spec, str) and spec.startswith("openai:"):
        url, hash_, model = spec[len("openai:") :].rpartition("#")
        if hash_ and model and url.startswith(("http://", "https://")):
            return url.rstrip("/"), model
    raise ValueError(
        f"user must be 'scripted' (the deterministic user) or 'openai:URL#MODEL' (a model "
        f"behind an OpenAI-compatible server, e.g. openai:http://127.0.0.1:8000/v1#Qwen/"
        f"Qwen3-8B); got {spec!r}"
    )


def is_affirmative(answer: str) -> bool:
    """A user's answer agrees (yes, confirm, go ahead, ...) and does not refuse."""
    text = " ".join(answer.lower().replace(STOP.lower(), " ").split())
    return bool(_YES.search(text)) and not _NO.search(text)


def user_prompt(task: Task) -> str:
    """The LLM user's system prompt: the task as the customer knows it, never the
    gold dialogue (no tool, argument or outcome the agent must find)."""
    lines = [
        "You are a customer chatting with a customer-service agent. Play the customer only; "
        "never write the agent's part, and never call tools.",
        "",
        f"Your goal: {task.request}",
        f'You opened the conversation with: "{task.opening}"',
        "",
        "What you know. Tell a fact only when the agent asks for it, exactly as written here:",
    ]
    lines += [f"- {fact.name.replace('_', ' ')}: {fact.value}" for fact in task.facts]
    lines += [
        "Never invent facts: when the agent asks for anything not in this list, say you do "
        "not know it.",
    ]
    if task.change_of_mind:
        first = " and ".join(task.change_of_mind)
        lines += [
            "",
            f"The first time the agent asks you to confirm {first}, change your mind and say: "
            f'"{task.change_message}"',
        ]
    if task.forbidden is not None:
        lines += [
            "",
            f"You also want the agent to {task.forbidden.summary}. If the agent explains that "
            "it cannot, accept that.",
        ]
    lines += [
        "",
        "When the agent asks you to confirm what it will do, answer yes if it matches your "
        "goal and no if it does not.",
        "Keep each message short: one to three sentences.",
        f"When your goal is done, or the conversation is going nowhere, end your message with "
        f"{STOP}.",
    ]
    return "\n".join(lines)


class LLMUser:
    """A user played by a model behind an OpenAI-compatible server (module docs).

    Args:
        task: the hidden task.
        seed: sent as each request's ``seed``.
        base_url: the API root, e.g. ``http://127.0.0.1:8000/v1``.
        model: the model name the server serves.
    """

    name = "openai"

    def __init__(self, task: Task, seed: int, base_url: str, model: str) -> None:
        require("httpx", extra="agents", purpose="the LLM user (user='openai:URL#MODEL')")
        self.task = task
        self.seed = int(seed)
        self.base_url = base_url
        self.model = model
        self.messages: list[dict[str, str]] = [
            {"role": "system", "content": user_prompt(task)},
            {"role": "user", "content": GREETING},
            {"role": "assistant", "content": task.opening},
        ]
        self.failures = 0
        # What the env's state key reads of a user.
        self.revealed: set[str] = set()
        self.changed = False
        self.stuck = 0
        self._client: Any = None

    # The HTTP client is not conversation state: copies (snapshots) leave it out.
    def __getstate__(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if k != "_client"}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._client = None

    def opening(self) -> str:
        return self.task.opening

    def reply(self, message: str, done: Sequence[bool]) -> UserReply:
        """Send `message` to the model and read its answer (module docs)."""
        self.messages.append({"role": "user", "content": message})
        answer, problem = self._complete()
        if answer is None:
            self.failures += 1
            self.messages.pop()  # a retry of the same message asks the same question
            return UserReply(f"(The user did not answer: {problem}.)")
        self.messages.append({"role": "assistant", "content": answer})
        ended = STOP in answer
        text = to_ascii(" ".join(answer.replace(STOP, " ").split()))
        if len(text) > REPLY_LIMIT:
            text = text[:REPLY_LIMIT] + " ..."
        if not text:
            text = "(The user ends the conversation.)" if ended else "(The user says nothing.)"
        for fact in self.task.facts:
            if fact.value.lower() in answer.lower():
                self.revealed.add(fact.name)
        confirmed = 0
        asked = normalize(message)
        if not ended and asks_confirmation(asked) and is_affirmative(answer):
            named = sum(
                1
                for i, action in enumerate(self.task.actions)
                if not done[i] and mentions_all(asked, action.mentions)
            )
            forbidden = self.task.forbidden
            named += forbidden is not None and mentions_all(asked, forbidden.mentions)
            confirmed = max(1, named)
        return UserReply(text, confirmed=confirmed, ended=ended)

    # ------------------------------------------------------------------ the server
    def _complete(self) -> tuple[str | None, str]:
        """The model's answer, or (None, what was wrong with the server's reply)."""
        httpx = require("httpx", extra="agents", purpose="the LLM user")
        if self._client is None:
            self._client = httpx.Client(timeout=httpx.Timeout(TIMEOUT_S, connect=10.0))
        url = f"{self.base_url}/chat/completions"
        body = {
            "model": self.model,
            "messages": self.messages,
            "temperature": 0,
            "seed": self.seed,
            "max_tokens": MAX_TOKENS,
        }
        problem = ""
        for attempt in range(RETRIES + 1):
            if attempt:
                time.sleep(BACKOFF_S * 2 ** (attempt - 1))
            try:
                response = self._client.post(url, json=body)
            except httpx.TransportError as exc:
                problem = f"{type(exc).__name__}: {exc}"
                continue
            if response.status_code == 429 or response.status_code >= 500:
                problem = f"HTTP {response.status_code}"
                continue
            if not response.is_success:
                return None, f"its server answered HTTP {response.status_code}"
            try:
                content = response.json()["choices"][0]["message"]["content"]
            except (ValueError, KeyError, IndexError, TypeError):
                return None, "its server's reply was not a chat completion"
            if not isinstance(content, str):
                return None, "its server's reply held no text"
            return content[: REPLY_LIMIT * 4], ""  # what the conversation keeps is bounded too
        if problem.startswith("HTTP"):
            return None, f"its server answered {problem}"
        raise LLMUserError(
            f"the LLM user's server at {url} could not be reached ({problem}) after "
            f"{RETRIES + 1} tries; start it, or play with user='scripted'"
        )

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None
