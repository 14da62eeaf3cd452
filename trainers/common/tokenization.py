"""Multi-turn tokenization: one token sequence per episode, with the loss on
the policy's tokens only.

An episode is a chat: an optional system message (the env's
``info["system_prompt"]``), then the env's observations as user messages and
the policy's replies as assistant messages. `ChatTokenizer` builds its token
ids turn by turn with the model's chat template:

- the first prompt is the template's rendering of the system message and
  the first observation, with the generation prompt;
- the policy's tokens are the ids the model generated, kept as they are
  (never decoded and encoded again, so the update scores exactly the tokens
  that were sampled), ending with the end-of-turn token when it stopped;
- the env's tokens after a reply are what the template adds after the
  reply: the rest of the assistant message (a newline after
  ``<|im_end|>`` in ChatML), the next user message and the next generation
  prompt, found by rendering the conversation before and after.

Only the policy's tokens carry loss (`loss_mask` 1), and each turn's span
of them is known (`EpisodeTokens.spans`), so turn-level advantages land on
the right tokens. That needs a template under which a longer conversation
only appends text; templates that rewrite earlier turns (some drop past
reasoning) are refused with an error that says so.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = ["ChatTokenizer", "EpisodeTokens", "TemplateError"]


class TemplateError(ValueError):
    """The chat template cannot be extended turn by turn."""


@dataclass
class EpisodeTokens:
    """One episode's token ids so far, which of them carry loss, and each
    turn's ``[start, end)`` span of policy tokens."""

    ids: list[int] = field(default_factory=list)
    loss_mask: list[int] = field(default_factory=list)
    spans: list[tuple[int, int]] = field(default_factory=list)

    def add_env(self, ids: Sequence[int]) -> None:
        self.ids.extend(ids)
        self.loss_mask.extend([0] * len(ids))

    def add_policy(self, ids: Sequence[int]) -> None:
        start = len(self.ids)
        self.ids.extend(ids)
        self.loss_mask.extend([1] * len(ids))
        self.spans.append((start, len(self.ids)))


class ChatTokenizer:
    """Token ids of multi-turn episodes under ``tokenizer``'s chat template.

    Args:
        tokenizer: a Hugging Face tokenizer with a chat template.
        stop_token_ids: the tokens that end a reply (default: the tokenizer's
            eos token, which chat models end their turn with).
    """

    def __init__(self, tokenizer: Any, stop_token_ids: Sequence[int] | None = None) -> None:
        if getattr(tokenizer, "chat_template", None) is None:
            raise TemplateError(
                "the tokenizer has no chat template; set tokenizer.chat_template "
                "(a ChatML template works) and save it with the model"
            )
        if stop_token_ids is None:
            if tokenizer.eos_token_id is None:
                raise TemplateError(
                    "the tokenizer has no eos token to end a reply with; pass stop_token_ids"
                )
            stop_token_ids = [tokenizer.eos_token_id]
        self.tokenizer = tokenizer
        self.stop_token_ids = tuple(int(t) for t in stop_token_ids)

    # ------------------------------------------------------------ rendering
    def _render(self, messages: list[dict[str, str]], generation_prompt: bool) -> str:
        return self.tokenizer.apply_chat_template(
            messages, tokenize=False, add_generation_prompt=generation_prompt
        )

    def encode(self, text: str) -> list[int]:
        """Token ids of ``text``, with no special tokens added."""
        return list(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def decode_reply(self, ids: Sequence[int]) -> str:
        """The text of generated ids, special tokens (the stop token) left out."""
        return self.tokenizer.decode(list(ids), skip_special_tokens=True)

    # ------------------------------------------------------------ an episode
    def start(
        self, observation: str, system_prompt: str | None = None
    ) -> tuple[list[dict[str, str]], EpisodeTokens]:
        """The conversation and tokens of an episode's first prompt."""
        messages = [{"role": "system", "content": system_prompt}] if system_prompt else []
        messages.append({"role": "user", "content": observation})
        tokens = EpisodeTokens()
        tokens.add_env(self.encode(self._render(messages, generation_prompt=True)))
        return messages, tokens

    def add_reply(
        self, messages: list[dict[str, str]], tokens: EpisodeTokens, reply_ids: Sequence[int]
    ) -> str:
        """Append the policy's generated ids as its turn; returns the reply's text
        (what the env is sent) and records it in ``messages``."""
        reply = self.decode_reply(reply_ids)
        tokens.add_policy(reply_ids)
        messages.append({"role": "assistant", "content": reply})
        return reply

    def add_observation(
        self,
        messages: list[dict[str, str]],
        tokens: EpisodeTokens,
        observation: str,
        stopped: bool,
    ) -> None:
        """Append the env's tokens after the last reply: the end of the assistant
        message the template writes, the next observation and the generation
        prompt. ``stopped``: the reply ended with a stop token (else it was cut
        at the token limit and the template's end-of-turn text is the env's)."""
        assert messages and messages[-1]["role"] == "assistant"
        prompt = self._render(messages[:-1], generation_prompt=True)
        before = self._render(messages, generation_prompt=False)
        messages.append({"role": "user", "content": observation})
        after = self._render(messages, generation_prompt=True)
        reply = messages[-2]["content"]
        if not (before.startswith(prompt) and after.startswith(before)):
            raise TemplateError(
                "the chat template rewrites earlier turns when the conversation grows, so "
                "a multi-turn episode cannot be one token sequence; use a template under "
                "which each message only appends text (ChatML does)"
            )
        written = before[len(prompt) :]
        if written.startswith(reply):
            tail = written[len(reply) :]
        elif written.startswith(reply.strip()):  # templates that trim content
            tail = written[len(reply.strip()) :]
        else:
            raise TemplateError(
                f"the chat template changes the assistant's reply when rendering it "
                f"({reply[:40]!r} became {written[:40]!r}); the policy's tokens must appear "
                "in the conversation as generated"
            )
        if stopped:
            stop_text = self.tokenizer.decode(list(tokens.ids[-1:]))
            if tail.startswith(stop_text):
                tail = tail[len(stop_text) :]
        tokens.add_env(self.encode(tail + after[len(before) :]))
