"""A small but real tool world for the base's tests: a library.

Members (authenticated by email), books, loans (renewable at most twice; the
tool itself does not refuse a third renewal, the policy does) and fines. Tasks:

- easy: renew one loan; the user states the email.
- medium: renew one loan and pay the fine; the email is told only when asked.
- hard: as medium, plus a change of mind (the user first names another loan)
  and a forbidden request (renewing a loan already renewed twice).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from envgym.envs.toolworld import Action, Domain, Fact, Store, Task, Tool, ToolError, ToolWorldEnv

MEMBERS = 300
LOANS_PER_MEMBER = 3
NEW_DUE = "2026-12-15"
TITLES = (
    "Moby Dick",
    "Middlemarch",
    "Dracula",
    "Emma",
    "Ulysses",
    "Beloved",
    "Walden",
    "Persuasion",
    "Frankenstein",
    "Rebecca",
)

SCHEMA = """
CREATE TABLE members (member_id TEXT PRIMARY KEY, name TEXT, email TEXT UNIQUE,
                      fine TEXT NOT NULL DEFAULT '0.00');
CREATE TABLE loans (loan_id TEXT PRIMARY KEY, member_id TEXT REFERENCES members,
                    title TEXT, due TEXT, renewals INTEGER);
"""

POLICY = """# Library desk policy

You help library members with their loans and fines.

- Authenticate the member first: find them by their email. Never read or change
  a member's account before that.
- Before any change (a renewal, a payment), list what you will do and get the
  member's explicit "yes".
- A loan may be renewed at most twice. Refuse a third renewal.
- A fine is paid whole, and you tell the member the amount paid.
"""


def member_id(i: int) -> str:
    return f"M{i:04d}"


def loan_id(i: int) -> str:
    return f"L{i:05d}"


def build_world(seed: int) -> Store:
    rng = np.random.default_rng(seed)
    store = Store(SCHEMA)
    store.executemany(
        "INSERT INTO members VALUES (?, ?, ?, '0.00')",
        [(member_id(i), f"Member {i}", f"member{i}@example.com") for i in range(MEMBERS)],
    )
    loans = []
    for n in range(MEMBERS * LOANS_PER_MEMBER):
        title = TITLES[int(rng.integers(len(TITLES)))]
        loans.append((loan_id(n), member_id(n % MEMBERS), title, "2026-12-01", 0))
    store.executemany("INSERT INTO loans VALUES (?, ?, ?, ?, ?)", loans)
    return store


# ---------------------------------------------------------------------- tools
def find_member_by_email(store: Store, email: str) -> str:
    found = store.value("SELECT member_id FROM members WHERE email = ?", (email,))
    if found is None:
        raise ToolError(f"no member has the email {email}; ask the member to check it")
    return found


def get_member(store: Store, member_id: str) -> dict[str, Any]:
    found = store.row("SELECT * FROM members WHERE member_id = ?", (member_id,))
    if found is None:
        raise ToolError(f"no member {member_id}")
    return found


def get_loans(store: Store, member_id: str) -> list[dict[str, Any]]:
    return store.rows("SELECT * FROM loans WHERE member_id = ? ORDER BY loan_id", (member_id,))


def renew_loan(store: Store, loan_id: str) -> dict[str, Any]:
    if store.row("SELECT 1 FROM loans WHERE loan_id = ?", (loan_id,)) is None:
        raise ToolError(f"no loan {loan_id}; get_loans lists a member's loans")
    store.execute(
        "UPDATE loans SET renewals = renewals + 1, due = ? WHERE loan_id = ?", (NEW_DUE, loan_id)
    )
    return {"loan_id": loan_id, "due": NEW_DUE}


def pay_fine(store: Store, member_id: str) -> dict[str, Any]:
    fine = store.value("SELECT fine FROM members WHERE member_id = ?", (member_id,))
    if fine is None:
        raise ToolError(f"no member {member_id}")
    if fine == "0.00":
        raise ToolError(f"{member_id} has no fine to pay")
    store.execute("UPDATE members SET fine = '0.00' WHERE member_id = ?", (member_id,))
    return {"member_id": member_id, "paid": fine}


def search_loans_by_title(store: Store, title: str) -> list[dict[str, Any]]:
    return store.rows("SELECT * FROM loans WHERE title = ?", (title,))


def _loan_owner(store: Store, arguments: dict[str, Any]) -> str | None:
    return store.value("SELECT member_id FROM loans WHERE loan_id = ?", (arguments["loan_id"],))


def _member(store: Store, arguments: dict[str, Any]) -> str:
    return arguments["member_id"]


STRING = {"type": "string"}
TOOLS = (
    Tool(
        "find_member_by_email",
        "The member id of the member with this email (authenticates them).",
        {"email": STRING},
        find_member_by_email,
        authenticates=True,
    ),
    Tool(
        "get_member",
        "A member's details and fine.",
        {"member_id": STRING},
        get_member,
        account=_member,
    ),
    Tool("get_loans", "A member's loans.", {"member_id": STRING}, get_loans, account=_member),
    Tool(
        "search_loans_by_title",
        "Every loan of a title (no account).",
        {"title": STRING},
        search_loans_by_title,
    ),
    Tool(
        "renew_loan",
        "Renew a loan; it becomes due on " + NEW_DUE + ".",
        {"loan_id": STRING},
        renew_loan,
        writes=True,
        account=_loan_owner,
    ),
    Tool(
        "pay_fine",
        "Pay a member's whole fine.",
        {"member_id": STRING},
        pay_fine,
        writes=True,
        account=_member,
    ),
)
ASKABLE = {"email": ("email", "e-mail"), "phone": ("phone",)}


# ---------------------------------------------------------------------- tasks
def make_task(store: Store, rng: np.random.Generator, difficulty: str, task_id: str) -> Task:
    i = int(rng.integers(MEMBERS))
    member = member_id(i)
    email = f"member{i}@example.com"
    loans = get_loans(store, member)
    first, second, third = loans[0], loans[1], loans[2]
    facts = (Fact("email", email, f"My email is {email}."),)
    renew = Action(
        "renew_loan",
        {"loan_id": first["loan_id"]},
        summary=f"renew your loan {first['loan_id']} ({first['title']})",
        mentions=(first["loan_id"],),
    )
    actions = [renew]
    outputs = [NEW_DUE]
    request = f"I want to renew my loan {first['loan_id']}."
    change: tuple[str, ...] = ()
    change_message = ""
    forbidden = None
    if difficulty != "easy":
        fine = f"{int(rng.integers(1, 40))}.{int(rng.integers(100)):02d}"
        store.execute("UPDATE members SET fine = ? WHERE member_id = ?", (fine, member))
        actions.append(
            Action(
                "pay_fine",
                {"member_id": member},
                summary=f"pay your fine of ${fine}",
                mentions=(fine,),
            )
        )
        outputs.append(fine)
        request = f"I want to renew my loan {first['loan_id']} and pay my fine."
    if difficulty == "hard":
        change = (second["loan_id"],)
        change_message = (
            f"Actually, wait: not {second['loan_id']}. Please renew {first['loan_id']} instead."
        )
        store.execute("UPDATE loans SET renewals = 2 WHERE loan_id = ?", (third["loan_id"],))
        forbidden = Action(
            "renew_loan",
            {"loan_id": third["loan_id"]},
            summary=f"renew your loan {third['loan_id']} a third time",
            mentions=(third["loan_id"],),
        )
        opening = (
            f"Hello. I'd like to renew my loan {second['loan_id']} and also "
            f"{third['loan_id']}, and pay my fine."
        )
        request = f"Please renew {third['loan_id']} too, and pay my fine."
    elif difficulty == "medium":
        opening = f"Hi, I'd like to renew my loan {first['loan_id']} and pay my fine."
    else:
        opening = f"Hi, I'd like to renew my loan {first['loan_id']}. My email is {email}."
    inform = "Done. " + " ".join(
        f"Your fine of ${o} is paid." if "." in o else f"Your loan is now due {o}." for o in outputs
    )
    return Task(
        task_id=task_id,
        user_id=member,
        opening=opening,
        request=request,
        facts=facts,
        stated=("email",) if difficulty == "easy" else (),
        lookups=(
            Action("find_member_by_email", {"email": email}),
            Action("get_loans", {"member_id": member}),
        ),
        actions=tuple(actions),
        outputs=tuple(outputs),
        inform=inform,
        change_of_mind=change,
        change_message=change_message,
        forbidden=forbidden,
        forbidden_reason="a loan may be renewed at most twice." if forbidden else "",
        difficulty=difficulty,
    )


LIBRARY = Domain("library", POLICY, TOOLS, ASKABLE, build_world, make_task)


class LibraryEnv(ToolWorldEnv):
    """A library desk: renew loans and pay fines for an authenticated member."""

    domain = LIBRARY
