"""The ``library`` domain: a library system's authors, publishers, books,
branches, copies of books, members, loans and holds."""

from __future__ import annotations

from typing import Any

import numpy as np

from envgym.envs.sql.generate import CITIES, Gen, ids, text_days, zipf_weights
from envgym.envs.sql.schema import Column, ForeignKey, Schema, Table

__all__ = ["SCHEMA", "fill"]

C = Column

SCHEMA = Schema(
    name="library",
    tables=(
        Table(
            "authors",
            (
                C("author_id", "INTEGER", primary_key=True, description="author id"),
                C("first_name", "TEXT", description="first name"),
                C("last_name", "TEXT", description="last name"),
                C("birth_year", "INTEGER", True, description="year the author was born"),
                C("country", "TEXT", description="country of the author"),
            ),
            noun="author",
        ),
        Table(
            "publishers",
            (
                C("publisher_id", "INTEGER", primary_key=True, description="publisher id"),
                C("name", "TEXT", description="publisher name"),
                C("city", "TEXT", description="city of the publisher"),
                C("founded_year", "INTEGER", description="year the publisher was founded"),
            ),
            noun="publisher",
        ),
        Table(
            "books",
            (
                C("book_id", "INTEGER", primary_key=True, description="book id"),
                C("title", "TEXT", description="book title"),
                C("author_id", "INTEGER", description="author of the book"),
                C("publisher_id", "INTEGER", True, description="publisher (NULL: self-published)"),
                C("genre", "TEXT", description="genre"),
                C("published_year", "INTEGER", description="year of publication"),
                C("pages", "INTEGER", description="number of pages"),
                C("list_price", "REAL", description="list price in dollars"),
            ),
            noun="book",
        ),
        Table(
            "branches",
            (
                C("branch_id", "INTEGER", primary_key=True, description="branch id"),
                C("name", "TEXT", description="branch name"),
                C("city", "TEXT", description="city of the branch"),
                C("opened_date", "DATE", description="date the branch opened"),
            ),
            noun="library branch",
        ),
        Table(
            "copies",
            (
                C("copy_id", "INTEGER", primary_key=True, description="copy id"),
                C("book_id", "INTEGER", description="book this is a copy of"),
                C("branch_id", "INTEGER", description="branch holding the copy"),
                C("acquired_date", "DATE", description="date the copy was acquired"),
                C("condition", "TEXT", description="physical condition"),
            ),
            noun="book copy",
        ),
        Table(
            "members",
            (
                C("member_id", "INTEGER", primary_key=True, description="member id"),
                C("first_name", "TEXT", description="first name"),
                C("last_name", "TEXT", description="last name"),
                C("email", "TEXT", True, description="email address"),
                C("birth_date", "DATE", True, description="date of birth"),
                C("join_date", "DATE", description="date the member joined"),
                C("membership_type", "TEXT", description="kind of membership"),
                C("home_branch_id", "INTEGER", description="branch the member belongs to"),
            ),
            noun="library member",
        ),
        Table(
            "loans",
            (
                C("loan_id", "INTEGER", primary_key=True, description="loan id"),
                C("copy_id", "INTEGER", description="copy borrowed"),
                C("member_id", "INTEGER", description="member who borrowed it"),
                C("loan_date", "DATE", description="date borrowed"),
                C("due_date", "DATE", description="date due back"),
                C("return_date", "DATE", True, description="date returned (NULL: not yet)"),
                C("fine", "REAL", True, description="late fine in dollars (NULL: no fine)"),
            ),
            noun="loan",
        ),
        Table(
            "holds",
            (
                C("hold_id", "INTEGER", primary_key=True, description="hold id"),
                C("book_id", "INTEGER", description="book requested"),
                C("member_id", "INTEGER", description="member waiting for it"),
                C("placed_date", "DATE", description="date the hold was placed"),
                C("status", "TEXT", description="hold status"),
            ),
            noun="hold request",
        ),
    ),
    foreign_keys=(
        ForeignKey("books", "author_id", "authors", "author_id"),
        ForeignKey("books", "publisher_id", "publishers", "publisher_id"),
        ForeignKey("copies", "book_id", "books", "book_id"),
        ForeignKey("copies", "branch_id", "branches", "branch_id"),
        ForeignKey("members", "home_branch_id", "branches", "branch_id"),
        ForeignKey("loans", "copy_id", "copies", "copy_id"),
        ForeignKey("loans", "member_id", "members", "member_id"),
        ForeignKey("holds", "book_id", "books", "book_id"),
        ForeignKey("holds", "member_id", "members", "member_id"),
    ),
)

GENRES = (
    "Fiction", "Mystery", "Science Fiction", "Fantasy", "Romance", "Biography", "History",
    "Science", "Children", "Poetry", "Travel", "Cooking",
)  # fmt: skip
ADJECTIVES = (
    "Silent", "Hidden", "Last", "Golden", "Broken", "Distant", "Forgotten", "Crimson", "Quiet",
    "Endless", "Secret", "Burning", "Frozen", "Wild", "Little", "Final", "Lost", "Bright",
)  # fmt: skip
NOUNS = (
    "River", "Garden", "Kingdom", "Station", "Letter", "Mountain", "Island", "Orchard", "City",
    "Voyage", "Promise", "Shadow", "Harbor", "Forest", "Clock", "Bridge", "Winter", "Empire",
    "Lighthouse", "Door",
)  # fmt: skip
PUBLISHER_WORDS = (
    "Penrose", "Hartwell", "Bluebird", "Ironwood", "Marlowe", "Oakleaf", "Saltmarsh", "Wexford",
    "Kestrel", "Larkspur", "Thornbury", "Quillon", "Ashgrove", "Fenwick", "Redfern", "Stillwater",
)  # fmt: skip
PUBLISHER_KINDS = ("Press", "Books", "Publishing", "House")
BRANCH_AREAS = (
    "Central", "Riverside", "Northgate", "Oak Park", "Hillcrest", "Eastside", "Westfield",
    "Lakeview", "Old Town", "Harborview", "Southbank", "Maple Grove",
)  # fmt: skip
CONDITIONS = ("good", "fair", "new", "worn", "damaged")
MEMBERSHIPS = ("standard", "student", "senior", "family")
HOLD_STATUSES = ("waiting", "ready", "fulfilled", "cancelled")
FINE_PER_DAY = 0.25
TODAY = "2024-12-31"


def fill(g: Gen) -> dict[str, dict[str, list[Any]]]:
    """Every table's columns for one seed."""
    rng = g.rng
    out: dict[str, dict[str, list[Any]]] = {}

    n_auth = g.count(200, 450)
    origin = g.cities(n_auth, 0.7)
    out["authors"] = {
        "author_id": ids(n_auth),
        "first_name": g.first_names(n_auth),
        "last_name": g.last_names(n_auth),
        "birth_year": g.nullify(g.normal_ints(n_auth, 1962, 18, 1900, 2000), 0.12),
        "country": [k for _, k in origin],
    }

    n_pub = g.count(15, 30)
    pairs = [(w, k) for w in PUBLISHER_WORDS for k in PUBLISHER_KINDS]
    picked = sorted(rng.choice(len(pairs), n_pub, replace=False).tolist())
    out["publishers"] = {
        "publisher_id": ids(n_pub),
        "name": [" ".join(pairs[i]) for i in picked],
        "city": [c for c, _ in g.cities(n_pub, 1.2)],
        "founded_year": g.ints(n_pub, 1820, 2015),
    }

    n_book = g.count(1000, 2500)
    titles: list[str] = []
    seen: set[str] = set()
    while len(titles) < n_book:
        shape = int(rng.integers(4))
        a, n, m = g.pick(ADJECTIVES), g.pick(NOUNS), g.pick(NOUNS)
        title = (f"The {a} {n}", f"{a} {n}", f"The {n} of the {a} {m}", f"A {n} in {m}")[shape]
        if title in seen:
            title = f"{title} {g.pick(('II', 'III', 'Returns', 'Again'))}"
        if title not in seen:
            seen.add(title)
            titles.append(title)
    author = g.refs(n_book, ids(n_auth), 0.8)
    genre = g.zipf(n_book, GENRES, 0.9)
    birth = out["authors"]["birth_year"]
    # Published from the author's 22nd year (1950 at the earliest) to 2024.
    since = np.asarray([max((birth[a - 1] or 1960) + 22, 1950) for a in author])
    year = (since + np.floor(rng.random(n_book) * (2025 - since))).astype(int).tolist()
    out["books"] = {
        "book_id": ids(n_book),
        "title": titles,
        "author_id": author,
        "publisher_id": g.nullify(g.refs(n_book, ids(n_pub), 0.8), 0.07),
        "genre": genre,
        "published_year": year,
        "pages": np.clip(np.rint(rng.lognormal(np.log(300), 0.35, n_book)), 48, 1400)
        .astype(int)
        .tolist(),
        "list_price": g.money(n_book, 17.0, 0.35, 4.99),
    }

    n_br = g.count(5, 10)
    areas = [BRANCH_AREAS[i] for i in sorted(rng.choice(len(BRANCH_AREAS), n_br, False))]
    towns = [CITIES[i] for i in rng.choice(len(CITIES), n_br, False, zipf_weights(len(CITIES)))]
    out["branches"] = {
        "branch_id": ids(n_br),
        "name": [f"{a} Library" for a in areas],
        "city": [c for c, _ in towns],
        "opened_date": text_days(g.days(n_br, "1955-01-01", "2015-12-31")),
    }

    n_copy = g.count(3000, 7000)
    book = np.asarray(g.refs(n_copy, ids(n_book), 0.5))
    book_year = np.asarray(year)[book - 1]
    from_day = np.maximum(
        np.asarray([np.datetime64(f"{y}-01-01") for y in book_year.tolist()], "datetime64[D]"),
        np.datetime64("2005-01-01", "D"),
    )
    span = (np.datetime64("2024-09-30", "D") - from_day).astype(int)
    acquired = from_day + np.floor(rng.random(n_copy) * (span + 1)).astype(int)
    out["copies"] = {
        "copy_id": ids(n_copy),
        "book_id": book.tolist(),
        "branch_id": g.refs(n_copy, ids(n_br), 0.6),
        "acquired_date": text_days(acquired),
        "condition": g.choice(n_copy, CONDITIONS, (45, 25, 15, 12, 3)),
    }

    n_mem = g.count(1500, 4000)
    joined = g.days(n_mem, "2010-01-01", "2024-10-31")
    mf, ml = g.first_names(n_mem), g.last_names(n_mem)
    emails = [
        f"{f}{la[0]}{i}@mail.com".lower() for i, (f, la) in enumerate(zip(mf, ml, strict=True), 1)
    ]
    out["members"] = {
        "member_id": ids(n_mem),
        "first_name": mf,
        "last_name": ml,
        "email": g.nullify(emails, 0.2),
        "birth_date": g.nullify(text_days(g.days(n_mem, "1940-01-01", "2016-12-31")), 0.25),
        "join_date": text_days(joined),
        "membership_type": g.choice(n_mem, MEMBERSHIPS, (68, 16, 11, 5)),
        "home_branch_id": g.refs(n_mem, ids(n_br), 0.6),
    }

    # Loans: after the copy arrived and the member joined; 21 days each.
    n_loan = g.count(10000, 18000)
    copy = np.asarray(g.refs(n_loan, ids(n_copy), 0.4))
    member = np.asarray(g.refs(n_loan, ids(n_mem), 0.6))
    start = np.maximum(
        np.maximum(acquired[copy - 1], joined[member - 1]), np.datetime64("2020-01-01")
    )
    span = (np.datetime64("2024-12-20", "D") - start).astype(int)
    loaned = start + np.floor(rng.random(n_loan) * (span + 1)).astype(int)
    due = loaned + 21
    kept = np.rint(rng.gamma(2.2, 8.0, n_loan)).astype(int) + 1
    returned = loaned + kept
    out_now = returned > np.datetime64(TODAY)
    out_now |= rng.random(n_loan) < 0.01
    out_now[int(rng.integers(n_loan))] = True
    late = np.maximum((returned - due).astype(int), 0)
    fine = [
        None if o or d == 0 else round(d * FINE_PER_DAY, 2)
        for o, d in zip(out_now.tolist(), late.tolist(), strict=True)
    ]
    out["loans"] = {
        "loan_id": ids(n_loan),
        "copy_id": copy.tolist(),
        "member_id": member.tolist(),
        "loan_date": text_days(loaned),
        "due_date": text_days(due),
        "return_date": [
            None if o else d for o, d in zip(out_now.tolist(), text_days(returned), strict=True)
        ],
        "fine": fine,
    }

    n_hold = g.count(400, 1500)
    hold_member = np.asarray(g.refs(n_hold, ids(n_mem), 0.3))
    hfrom = np.maximum(joined[hold_member - 1], np.datetime64("2022-01-01"))
    span = (np.datetime64(TODAY, "D") - hfrom).astype(int)
    out["holds"] = {
        "hold_id": ids(n_hold),
        "book_id": g.refs(n_hold, ids(n_book), 1.0),
        "member_id": hold_member.tolist(),
        "placed_date": text_days(hfrom + np.floor(rng.random(n_hold) * (span + 1)).astype(int)),
        "status": g.choice(n_hold, HOLD_STATUSES, (20, 8, 62, 10)),
    }
    return out
