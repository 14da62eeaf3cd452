"""The simulated user of a tool world: deterministic, offline, and documented.

The user holds a hidden `Task` and answers each message the agent sends it.
What it does, in this order (the docs' "The user" section says the same):

1. When every gold write of its task is done, it thanks the agent and ends the
   conversation (the episode terminates and is graded).
2. When the message asks for confirmation (it says "confirm", "proceed",
   "shall I", "go ahead", ...), it agrees to each write still to do whose
   `Action.mentions` the message names, and to the forbidden request if the
   message names that without refusing it. A confirmation of its first choice, in a task with a
   change of mind, gets the change instead. Anything else asked for
   confirmation gets a "no" and the request again.
3. When the message refuses its forbidden request (names it and says
   "cannot", "unable", "not allowed", ...), it accepts the refusal.
4. For every fact the message asks for (a keyword of the domain's
   vocabulary, e.g. "zip code", in any case), it tells the fact if its task holds it, and
   otherwise says it does not know it: it never invents one.
5. Anything else gets the request again; the third message in a row that
   moves nothing forward (a refused confirmation included) ends the
   conversation.

Phrasing is drawn from the task's seed and the number of replies so far, so
the same conversation always gets the same words, and a restored snapshot
continues as the original would.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from envgym.envs.toolworld.task import Task, mentions_all, normalize

__all__ = ["SimulatedUser", "UserReply", "STUCK_LIMIT", "asks_confirmation"]

#: Messages in a row that move nothing forward before the user gives up.
STUCK_LIMIT = 3

CONFIRM_CUES = (
    "confirm",
    "proceed",
    "go ahead",
    "shall i",
    "should i",
    "would you like me to",
    "do you want me to",
    "is that correct",
    "is that right",
    "is this correct",
    "yes/no",
    "okay to",
    "ok to",
)
REFUSAL_CUES = (
    "cannot",
    "can't",
    "can not",
    "unable",
    "not able",
    "not allowed",
    "not permitted",
    "not possible",
    "against our policy",
    "unfortunately",
)
YES = (
    "Yes, please go ahead.",
    "Yes, that's right. Please do it.",
    "Yes, I confirm.",
    "That's correct, go ahead.",
    "Yes please.",
)
NO = (
    "No, that's not what I asked for.",
    "No, that isn't right.",
    "No. That's not what I want.",
)
THANKS = (
    "Great, thank you! That's all I needed.",
    "Thanks a lot, that's everything. Bye!",
    "Perfect, thanks for your help.",
    "Thank you, that settles it. Goodbye.",
)
GIVE_UP = (
    "I don't think this is going anywhere. I'll try again later.",
    "Never mind, I'll call back another time.",
    "This isn't helping. Goodbye.",
)
ACCEPT = (
    "Oh, I see. Never mind that part then.",
    "Okay, I understand. Forget that one.",
    "Fine, if it's not possible, leave it.",
)
AGAIN = (
    "Sorry, I'm not sure what you mean. ",
    "I don't follow. ",
    "Let me say it again: ",
    "Hmm. ",
)
DONT_KNOW = (
    "I'm sorry, I don't know my {}.",
    "I don't have my {} with me.",
    "I can't tell you my {}, I don't remember it.",
)


def asks_confirmation(text: str) -> bool:
    """A normalized message asks the user to confirm something."""
    return any(cue in text for cue in CONFIRM_CUES)


def refuses(text: str) -> bool:
    """A normalized message says something cannot be done."""
    return any(cue in text for cue in REFUSAL_CUES)


def _names_forbidden(task: Task, text: str) -> bool:
    return task.forbidden is not None and mentions_all(text, task.forbidden.mentions)


@dataclass
class UserReply:
    """The user's answer to one message."""

    text: str
    #: how many writes the user has just agreed to
    confirmed: int = 0
    #: the user has ended the conversation
    ended: bool = False


@dataclass
class SimulatedUser:
    """The default user: plays `task` deterministically (see the module docs).

    Args:
        task: the hidden task.
        askable: the domain's vocabulary: fact name -> the words that ask for it.
        seed: draws the phrasing.
    """

    task: Task
    askable: Mapping[str, tuple[str, ...]]
    seed: int
    replies: int = 0
    stuck: int = 0
    changed: bool = False
    revealed: set[str] = field(default_factory=set)
    name: str = "scripted"

    def opening(self) -> str:
        return self.task.opening

    def reply(self, message: str, done: Sequence[bool]) -> UserReply:
        """Answer `message`; `done[i]` says whether gold write i has been made."""
        self.replies += 1
        rng = np.random.default_rng([self.seed, self.replies])

        def pick(options: Sequence[str]) -> str:
            return options[int(rng.integers(len(options)))]

        task = self.task
        if task.actions and all(done):
            return UserReply(pick(THANKS), ended=True)
        text = normalize(message)
        parts: list[str] = []
        confirmed = 0
        refused = False
        if asks_confirmation(text):
            if task.change_of_mind and not self.changed and mentions_all(text, task.change_of_mind):
                self.changed = True
                parts.append(task.change_message)
            else:
                confirmed = sum(
                    1
                    for i, action in enumerate(task.actions)
                    if not done[i] and mentions_all(text, action.mentions)
                )
                if _names_forbidden(task, text) and not refuses(text):
                    confirmed += 1
                refused = not confirmed
                parts.append(pick(YES) if confirmed else f"{pick(NO)} {task.request}")
        elif _names_forbidden(task, text) and refuses(text):
            parts.append(pick(ACCEPT))
        unknown = []
        for name, words in self.askable.items():
            if any(normalize(word) in text for word in words):
                fact = task.fact(name)
                if fact is None:
                    unknown.append(name.replace("_", " "))
                else:
                    self.revealed.add(name)
                    parts.append(fact.said)
        if unknown:
            parts.append(pick(DONT_KNOW).format(" or ".join(unknown)))
        if parts and not (refused and len(parts) == 1):
            self.stuck = 0
            return UserReply(" ".join(parts), confirmed=confirmed)
        self.stuck += 1
        if self.stuck >= STUCK_LIMIT:
            return UserReply(pick(GIVE_UP), ended=True)
        return UserReply(parts[0] if parts else pick(AGAIN) + task.request)
