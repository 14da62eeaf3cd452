"""The tool worlds' deterministic user (envs/toolworld/user.py) on its own.

Hand-built tasks, no domain: what the user reveals when asked, what it says it
does not know, which confirmations it gives, the change of mind, the forbidden
request (its trap) and a refusal of it, when it ends the conversation, and that
the same conversation always gets the same words.
"""

from __future__ import annotations

import copy
import pickle

import pytest

from envgym.envs.toolworld import Action, Fact, SimulatedUser, Task
from envgym.envs.toolworld.user import DONT_KNOW, GIVE_UP, NO, STUCK_LIMIT, THANKS, YES

ASKABLE = {
    "email": ("email",),
    "zip_code": ("zip code", "postcode"),
    "phone": ("phone",),
    "order_id": ("order number", "order id"),
}
EMAIL = "ana.lopez@example.com"
ZIP = "90210"

CANCEL = Action(
    "cancel_order", {"order_id": "#W100"}, summary="cancel order #W100", mentions=("#W100",)
)
REFUND = Action(
    "refund",
    {"order_id": "#W100", "amount": "1,234.50"},
    summary="refund $1,234.50 for order #W100",
    mentions=("#W100", "$1,234.50"),
)
FORBIDDEN = Action(
    "cancel_order", {"order_id": "#W999"}, summary="cancel order #W999", mentions=("#W999",)
)


def make_task(**changes) -> Task:
    fields = dict(
        task_id="t-easy-1",
        user_id="ana_lopez",
        opening="Hi, I want to cancel an order.",
        request="I want to cancel order #W100 and get my refund.",
        facts=(
            Fact("email", EMAIL, f"My email is {EMAIL}."),
            Fact("zip_code", ZIP, f"My zip code is {ZIP}."),
        ),
        stated=(),
        lookups=(),
        actions=(CANCEL, REFUND),
    )
    fields.update(changes)
    return Task(**fields)


def user(task: Task | None = None, seed: int = 1) -> SimulatedUser:
    return SimulatedUser(task or make_task(), ASKABLE, seed=seed)


NOTHING_DONE = (False, False)


# ------------------------------------------------------------------ facts
def test_asked_for_a_fact_it_holds_it_tells_exactly_that_fact():
    u = user()
    reply = u.reply("Could you tell me your email address?", NOTHING_DONE)
    assert EMAIL in reply.text
    assert ZIP not in reply.text
    assert reply.confirmed == 0 and not reply.ended
    assert u.revealed == {"email"}
    reply = u.reply("Thanks. And your zip code?", NOTHING_DONE)
    assert ZIP in reply.text and EMAIL not in reply.text
    assert u.revealed == {"email", "zip_code"}


def test_asked_for_two_facts_at_once_it_tells_both():
    reply = user().reply("Please give me your email and your postcode.", NOTHING_DONE)
    assert EMAIL in reply.text and ZIP in reply.text


def test_asked_for_a_fact_it_does_not_hold_it_says_so_and_invents_nothing():
    u = user()
    reply = u.reply("What is your phone number?", NOTHING_DONE)
    assert "phone" in reply.text
    assert any(line.format("phone") == reply.text for line in DONT_KNOW)
    assert not any(ch.isdigit() for ch in reply.text)
    assert u.revealed == set()
    # A known and an unknown fact together: the known one told, the other not invented.
    reply = u.reply("Your email and your order number, please.", NOTHING_DONE)
    assert EMAIL in reply.text and "order id" in reply.text
    assert "#W" not in reply.text and "W100" not in reply.text


def test_a_message_that_asks_for_nothing_gets_the_request_again():
    reply = user().reply("Hello! How is the weather where you are?", NOTHING_DONE)
    assert reply.text.endswith("I want to cancel order #W100 and get my refund.")
    assert EMAIL not in reply.text and not reply.ended and reply.confirmed == 0


# ------------------------------------------------------------------ confirmations
def test_a_confirmation_that_names_a_pending_write_gets_yes():
    reply = user().reply("I will cancel order W100. Shall I proceed?", NOTHING_DONE)
    assert reply.text in YES and reply.confirmed == 1


def test_a_write_is_confirmed_only_when_all_its_mentions_are_named():
    u = user()
    partial = u.reply("Shall I refund order #W100?", (True, False))  # amount missing
    assert partial.confirmed == 0 and partial.text.startswith(NO)
    whole = u.reply("Shall I refund $1234.50 for order #W100?", (True, False))
    assert whole.confirmed == 1 and whole.text in YES


def test_one_message_may_confirm_several_pending_writes_but_not_done_ones():
    both = "Please confirm: cancel #W100 and refund 1,234.50 to your card."
    assert user().reply(both, NOTHING_DONE).confirmed == 2
    assert user().reply(both, (True, False)).confirmed == 1


def test_a_confirmation_of_something_else_gets_no_and_the_request():
    reply = user().reply("Shall I cancel order #W555 for you?", NOTHING_DONE)
    assert reply.confirmed == 0
    assert reply.text.startswith(NO) and "I want to cancel order #W100" in reply.text


def test_naming_the_write_without_asking_confirms_nothing():
    reply = user().reply("I am going to cancel order #W100 now.", NOTHING_DONE)
    assert reply.confirmed == 0


# ------------------------------------------------------------------ change of mind
def mind_task() -> Task:
    return make_task(
        change_of_mind=("#W200",),
        change_message="Actually, not #W200: please cancel #W100 instead.",
    )


def test_the_change_of_mind_fires_once_when_its_first_choice_is_confirmed():
    u = user(mind_task())
    first = u.reply("Just to confirm, you want to cancel #W200. Shall I proceed?", NOTHING_DONE)
    assert first.text == "Actually, not #W200: please cancel #W100 instead."
    assert first.confirmed == 0 and u.changed and not first.ended
    again = u.reply("So: cancel #W200, shall I proceed?", NOTHING_DONE)
    assert again.confirmed == 0 and again.text.startswith(NO)
    assert "change" not in again.text.lower() and not again.text.startswith("Actually")
    right = u.reply("I will cancel #W100. Shall I proceed?", NOTHING_DONE)
    assert right.confirmed == 1


def test_the_first_choice_named_without_a_confirmation_does_not_change_the_mind():
    u = user(mind_task())
    u.reply("I see order #W200 on your account.", NOTHING_DONE)
    assert not u.changed


# ------------------------------------------------------------------ forbidden request
def forbidden_task() -> Task:
    return make_task(forbidden=FORBIDDEN, forbidden_reason="it has shipped.")


def test_the_forbidden_request_is_confirmed_when_asked_that_is_the_trap():
    reply = user(forbidden_task()).reply("I will cancel #W999. Shall I proceed?", NOTHING_DONE)
    assert reply.confirmed == 1 and reply.text in YES


def test_a_refusal_of_the_forbidden_request_is_accepted():
    u = user(forbidden_task())
    reply = u.reply("I'm sorry, order #W999 has shipped, so I cannot cancel it.", NOTHING_DONE)
    assert reply.confirmed == 0 and not reply.ended
    assert "#W999" not in reply.text and u.stuck == 0


# ------------------------------------------------------------------ the end
def test_the_user_ends_when_every_gold_write_is_done():
    u = user()
    assert not u.reply("Your email?", (True, False)).ended
    reply = u.reply("All done: your refund is on its way.", (True, True))
    assert reply.ended and reply.text in THANKS and reply.confirmed == 0


def test_the_user_gives_up_after_stuck_limit_messages_that_move_nothing():
    u = user()
    for _ in range(STUCK_LIMIT - 1):
        assert not u.reply("Lovely weather today.", NOTHING_DONE).ended
    reply = u.reply("Lovely weather today.", NOTHING_DONE)
    assert reply.ended and reply.text in GIVE_UP


def test_a_refused_confirmation_counts_as_moving_nothing_and_progress_resets_the_count():
    u = user()
    for _ in range(STUCK_LIMIT - 1):
        u.reply("Shall I cancel #W555?", NOTHING_DONE)
    assert u.reply("What is your email?", NOTHING_DONE).ended is False  # progress
    assert u.stuck == 0
    for _ in range(STUCK_LIMIT - 1):
        assert not u.reply("Shall I cancel #W555?", NOTHING_DONE).ended
    assert u.reply("Shall I cancel #W555?", NOTHING_DONE).ended


# ------------------------------------------------------------------ determinism
CONVERSATION = (
    ("Could you give me your email?", NOTHING_DONE),
    ("What's your phone number?", NOTHING_DONE),
    ("Hmm, nice day.", NOTHING_DONE),
    ("I will cancel #W100. Shall I proceed?", NOTHING_DONE),
    ("Shall I cancel #W555?", (True, False)),
    ("Shall I refund $1,234.50 for #W100?", (True, False)),
    ("Done.", (True, True)),
)


def play(seed: int, task: Task | None = None) -> list[tuple[str, int, bool]]:
    u = user(task, seed=seed)
    return [
        (r.text, r.confirmed, r.ended)
        for r in (u.reply(message, done) for message, done in CONVERSATION)
    ]


def test_the_same_conversation_always_gets_the_same_words():
    assert play(7) == play(7)
    assert play(7, forbidden_task()) == play(7, forbidden_task())


def test_different_seeds_give_varied_phrasing_and_the_same_decisions():
    runs = [play(seed) for seed in range(12)]
    decisions = {tuple((c, e) for _, c, e in run) for run in runs}
    assert len(decisions) == 1  # what the user does does not depend on the seed
    assert len({tuple(t for t, _, _ in run) for run in runs}) >= 6  # how it says it does


def test_a_copy_continues_as_the_original_would():
    u = user(seed=3)
    u.reply("Your email?", NOTHING_DONE)
    for clone in (copy.deepcopy(u), pickle.loads(pickle.dumps(u))):
        assert [clone.reply(m, d).text for m, d in CONVERSATION[1:]] == [
            r for r, _, _ in play(3)[1:]
        ]


@pytest.mark.parametrize("message", ["", " ", "\x00" * 50, "?" * 100_000, "confirm " * 5000])
def test_odd_messages_never_raise(message):
    reply = user().reply(message, NOTHING_DONE)
    assert isinstance(reply.text, str) and reply.confirmed == 0


def test_a_message_that_refuses_the_forbidden_request_does_not_confirm_it():
    # Refusing #W999 and asking to go ahead with #W100 in one message: one "yes", for
    # #W100 only, so the agent holds no spare confirmation for a write it never named.
    reply = user(forbidden_task()).reply(
        "I cannot cancel #W999: it has shipped. Shall I cancel #W100 instead?", NOTHING_DONE
    )
    assert reply.confirmed == 1 and reply.text in YES


def test_the_domains_ask_words_match_in_any_case():
    u = SimulatedUser(make_task(), {"email": ("E-Mail",), "zip_code": ("ZIP code",)}, seed=1)
    reply = u.reply("What is your e-mail and zip code?", NOTHING_DONE)
    assert EMAIL in reply.text and ZIP in reply.text
