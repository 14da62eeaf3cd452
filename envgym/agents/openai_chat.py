"""`OpenAIChatAgent`: an agent that asks any OpenAI-compatible chat endpoint.

Made by ``make_agent("openai:http://127.0.0.1:8000/v1#MODEL", env)`` (or
``--agent openai:URL#MODEL`` on the CLI). A vLLM server (``vllm serve MODEL``),
SGLang, llama.cpp's server and OpenAI itself all answer
``POST {base_url}/chat/completions``.

Each slot (an episode in flight) keeps its conversation (`envgym.agents.chat`):
the env's system prompt, observations as user turns, replies as assistant
turns. The env's tools go in the request's ``tools``; a response that calls
tools becomes the reply text the env reads, one ``<tool_call>{...}</tool_call>``
per call after any content, while the history keeps the assistant message
with its ``tool_calls`` and answers them with ``tool`` messages, as servers
expect. ``act_batch`` sends the slots' requests at once from a thread pool.
Failed requests (no connection, a timeout, HTTP 429 or 5xx) are retried with
exponential backoff, honouring ``Retry-After``.

Needs httpx (``pip install 'envgym[agents]'``), imported when an agent is made.
"""

from __future__ import annotations

import json
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor, wait
from typing import Any

from envgym.agents.chat import ChatSlots, SlotChatAgent, tool_call_text
from envgym.extras import require

__all__ = ["ChatCompletionError", "OpenAIChatAgent"]

#: Longest wait a Retry-After header may ask for; longer asks wait this long.
MAX_RETRY_AFTER_S = 60.0
_RETRY_STATUS = frozenset({408, 409, 429})
_EXCERPT = 500


class ChatCompletionError(RuntimeError):
    """A chat completion request failed for good (after its retries, or at once for a 4xx).

    `status` is the last HTTP status (None when no response came) and `body`
    the start of the last response body.
    """

    def __init__(self, message: str, status: int | None = None, body: str = "") -> None:
        super().__init__(message)
        self.status = status
        self.body = body


class OpenAIChatAgent(SlotChatAgent):
    """An LLM behind an OpenAI-compatible ``/v1/chat/completions`` endpoint.

    Args:
        base_url: the API root, e.g. ``http://127.0.0.1:8000/v1``.
        model: the model name the server serves (``--served-model-name`` in vLLM).
        api_key: sent as a bearer token; defaults to ``$OPENAI_API_KEY``, else none.
        temperature: sampling temperature (0 is greedy).
        max_tokens: longest reply, in tokens.
        timeout_s: how long one request may take.
        max_retries: retries after the first try, for connection errors,
            timeouts, 408/409/429 and 5xx.
        backoff_s: the first retry's wait; each later retry waits twice as long.
        max_concurrency: most requests in flight at once in `act_batch`.
        system_prompt: used instead of the env's ``info["system_prompt"]``.
        history: send each episode's conversation so far (False: the system
            message and the current observation only).
        seed: sent as the request's ``seed`` (servers that sample use it).
        extra_body: more request fields (e.g. ``{"top_p": 0.9}``).
    """

    name = "openai"

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key: str | None = None,
        temperature: float = 0.0,
        max_tokens: int = 1024,
        timeout_s: float = 120.0,
        max_retries: int = 4,
        backoff_s: float = 0.5,
        max_concurrency: int = 32,
        system_prompt: str | None = None,
        history: bool = True,
        seed: int | None = None,
        extra_body: dict[str, Any] | None = None,
    ) -> None:
        httpx = require("httpx", extra="agents", purpose="the openai agent")
        if not isinstance(base_url, str) or not base_url.startswith(("http://", "https://")):
            raise ValueError(
                f"base_url must start with http:// or https://, e.g. "
                f"http://127.0.0.1:8000/v1, got {base_url!r}"
            )
        if not isinstance(model, str) or not model:
            raise ValueError("model must name the model the server serves, e.g. 'Qwen/Qwen3-8B'")
        if isinstance(max_retries, bool) or not isinstance(max_retries, int) or max_retries < 0:
            raise ValueError(f"max_retries must be a whole number >= 0, got {max_retries!r}")
        if isinstance(max_concurrency, bool) or not isinstance(max_concurrency, int):
            raise ValueError(
                f"max_concurrency must be a whole number >= 1, got {max_concurrency!r}"
            )
        if max_concurrency < 1:
            raise ValueError(
                f"max_concurrency must be a whole number >= 1, got {max_concurrency!r}"
            )
        self.base_url = base_url.rstrip("/")
        self.url = self.base_url + "/chat/completions"
        self.model = model
        self.temperature = float(temperature)
        self.max_tokens = int(max_tokens)
        self.max_retries = max_retries
        self.backoff_s = float(backoff_s)
        self.max_concurrency = max_concurrency
        self.seed = seed
        self.extra_body = dict(extra_body or {})
        self.chats = ChatSlots(system_prompt, history)
        key = api_key if api_key is not None else os.environ.get("OPENAI_API_KEY")
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        self._httpx = httpx
        # One client for every thread: httpx.Client is thread-safe and pools connections.
        self._client = httpx.Client(
            headers=headers,
            timeout=httpx.Timeout(timeout_s, connect=min(timeout_s, 10.0)),
            limits=httpx.Limits(max_connections=max_concurrency),
        )
        self._pool: ThreadPoolExecutor | None = None
        self._pool_lock = threading.Lock()

    # ------------------------------------------------------------ the batch protocol
    def act_batch(
        self, slots: list[int], observations: list[str], infos: list[dict[str, Any]]
    ) -> list[str]:
        """One reply per slot, the slots' requests sent concurrently.

        A slot's conversation changes only once its request succeeded; if any
        fails for good, `ChatCompletionError` is raised after the others finish.
        """
        self.check_batch(slots, observations, infos)
        if not slots:
            return []
        if len(slots) == 1:
            return [self._turn(slots[0], observations[0], infos[0])]
        futures = [
            self._executor().submit(self._turn, slot, obs, info)
            for slot, obs, info in zip(slots, observations, infos, strict=True)
        ]
        wait(futures)  # every slot's turn ends (and is kept) before any error is raised
        return [future.result() for future in futures]

    def close(self) -> None:
        """Close the HTTP connections and the thread pool."""
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None
        self._client.close()

    def __enter__(self) -> OpenAIChatAgent:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # ------------------------------------------------------------ one request
    def _executor(self) -> ThreadPoolExecutor:
        with self._pool_lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(
                    max_workers=self.max_concurrency, thread_name_prefix="envgym-openai"
                )
            return self._pool

    def _turn(self, slot: int, observation: str, info: dict[str, Any]) -> str:
        messages = self.chats.prompt(slot, str(observation), info)
        body: dict[str, Any] = {
            "model": self.model,
            "messages": messages,
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
        }
        tools = self.chats.tools(slot)
        if tools:
            body["tools"] = tools
        seed = self.chats.seed(slot)
        if seed is None:
            seed = self.seed
        if seed is not None:
            body["seed"] = seed
        body.update(self.extra_body)
        response = self._post(body)
        try:
            message = response["choices"][0]["message"]
        except (KeyError, IndexError, TypeError) as exc:
            raise ChatCompletionError(
                f"{self.url} answered without choices[0].message; is it an OpenAI-compatible "
                f"chat endpoint? Got: {str(response)[:_EXCERPT]}"
            ) from exc
        reply, kept = _reply_text(message)
        usage = response.get("usage") or {}
        self.chats.record(
            slot,
            messages,
            kept,
            int(usage.get("prompt_tokens") or 0),
            int(usage.get("completion_tokens") or 0),
        )
        return reply

    def _post(self, body: dict[str, Any]) -> dict[str, Any]:
        """POST `body`, retrying what a retry can fix; the decoded JSON response."""
        httpx = self._httpx
        tries = self.max_retries + 1
        problem = ""
        status: int | None = None
        text = ""
        for attempt in range(tries):
            wait = self.backoff_s * 2**attempt
            try:
                response = self._client.post(self.url, json=body)
            except httpx.TransportError as exc:
                status, text = None, ""
                problem = f"{type(exc).__name__}: {exc}"
            else:
                status, text = response.status_code, response.text
                if response.is_success:
                    try:
                        return response.json()
                    except ValueError:
                        raise ChatCompletionError(
                            f"{self.url} answered HTTP {status} with a body that is not JSON: "
                            f"{text[:_EXCERPT]!r}",
                            status,
                            text[:_EXCERPT],
                        ) from None
                problem = f"HTTP {status}: {text[:_EXCERPT]}"
                if status not in _RETRY_STATUS and status < 500:
                    raise ChatCompletionError(
                        f"{self.url} refused the request ({problem}); check the model name "
                        f"({self.model!r}), the API key and the request options",
                        status,
                        text[:_EXCERPT],
                    )
                wait = _retry_after(response.headers.get("retry-after"), wait)
            if attempt + 1 < tries:
                time.sleep(wait)
        raise ChatCompletionError(
            f"{self.url} failed {tries} tries (the last: {problem}); check that the server "
            "is up and serving the model, or raise max_retries / timeout_s",
            status,
            text[:_EXCERPT],
        )


def _retry_after(header: str | None, default: float) -> float:
    """Seconds a ``Retry-After`` header asks for (capped), or `default` when it asks
    for nothing readable (an HTTP date counts as unreadable: servers that throttle
    LLM calls send seconds)."""
    if header is None:
        return default
    try:
        seconds = float(header)
    except ValueError:
        return default
    if seconds != seconds or seconds < 0:  # NaN or negative
        return default
    return min(seconds, MAX_RETRY_AFTER_S)


def _reply_text(message: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """(the reply as the env reads it, the assistant message to keep in the history)."""
    content = message.get("content") or ""
    if not isinstance(content, str):  # content parts: keep the text ones
        content = "".join(part.get("text", "") for part in content if isinstance(part, dict))
    calls = message.get("tool_calls") or []
    kept: dict[str, Any] = {"role": "assistant", "content": content}
    if not calls:
        return content, kept
    texts, kept_calls = [], []
    for index, call in enumerate(calls):
        function = call.get("function") or {}
        name = str(function.get("name") or "")
        arguments = function.get("arguments")
        texts.append(tool_call_text(name, arguments if arguments is not None else {}))
        kept_calls.append(
            {
                "id": str(call.get("id") or f"call_{index}"),
                "type": "function",
                "function": {"name": name, "arguments": _arguments_json(arguments)},
            }
        )
    kept["tool_calls"] = kept_calls
    if not content:
        kept["content"] = None
    reply = "\n".join(([content] if content else []) + texts)
    return reply, kept


def _arguments_json(arguments: Any) -> str:
    """Tool-call arguments as the JSON text servers expect in a history."""
    if isinstance(arguments, str):
        return arguments
    return json.dumps(arguments if arguments is not None else {})
