"""The ``flights`` domain: airlines, airports, aircraft, flights, passengers and
their bookings."""

from __future__ import annotations

from typing import Any

import numpy as np

from envgym.envs.sql.generate import Gen, ids, text_days
from envgym.envs.sql.schema import Column, ForeignKey, Schema, Table

__all__ = ["SCHEMA", "fill"]

C = Column

SCHEMA = Schema(
    name="flights",
    tables=(
        Table(
            "airlines",
            (
                C("airline_id", "INTEGER", primary_key=True, description="airline id"),
                C("name", "TEXT", description="airline name"),
                C("code", "TEXT", description="two-letter airline code"),
                C("country", "TEXT", description="home country"),
                C("founded_year", "INTEGER", description="year the airline was founded"),
            ),
            noun="airline",
        ),
        Table(
            "airports",
            (
                C("airport_id", "INTEGER", primary_key=True, description="airport id"),
                C("code", "TEXT", description="three-letter airport code"),
                C("city", "TEXT", description="city served"),
                C("country", "TEXT", description="country of the airport"),
                C("runways", "INTEGER", description="number of runways"),
                C("opened_year", "INTEGER", True, description="year the airport opened"),
            ),
            noun="airport",
        ),
        Table(
            "aircraft",
            (
                C("aircraft_id", "INTEGER", primary_key=True, description="aircraft id"),
                C("airline_id", "INTEGER", description="airline operating it"),
                C("model", "TEXT", description="aircraft model"),
                C("registration", "TEXT", description="registration mark"),
                C("seats", "INTEGER", description="number of seats"),
                C("year_built", "INTEGER", description="year the aircraft was built"),
            ),
            noun="aircraft",
        ),
        Table(
            "flights",
            (
                C("flight_id", "INTEGER", primary_key=True, description="flight id"),
                C("flight_number", "TEXT", description="flight number, such as AB123"),
                C("airline_id", "INTEGER", description="airline flying it"),
                C("aircraft_id", "INTEGER", description="aircraft used"),
                C("origin_id", "INTEGER", description="departure airport"),
                C("destination_id", "INTEGER", description="arrival airport"),
                C("departure_date", "DATE", description="date of departure"),
                C("distance_km", "INTEGER", description="distance in kilometres"),
                C("duration_minutes", "INTEGER", description="scheduled flight time in minutes"),
                C("status", "TEXT", description="flight status"),
                C("delay_minutes", "INTEGER", True, description="delay (NULL unless delayed)"),
            ),
            noun="flight",
        ),
        Table(
            "passengers",
            (
                C("passenger_id", "INTEGER", primary_key=True, description="passenger id"),
                C("first_name", "TEXT", description="first name"),
                C("last_name", "TEXT", description="last name"),
                C("birth_date", "DATE", True, description="date of birth"),
                C("nationality", "TEXT", description="country of citizenship"),
                C("loyalty_tier", "TEXT", True, description="frequent flyer tier (NULL: none)"),
            ),
            noun="passenger",
        ),
        Table(
            "bookings",
            (
                C("booking_id", "INTEGER", primary_key=True, description="booking id"),
                C("passenger_id", "INTEGER", description="passenger travelling"),
                C("flight_id", "INTEGER", description="flight booked"),
                C("booking_date", "DATE", description="date the booking was made"),
                C("cabin", "TEXT", description="cabin class"),
                C("seat", "TEXT", True, description="seat (NULL: not yet assigned)"),
                C("price", "REAL", description="ticket price in dollars"),
                C("checked_bags", "INTEGER", description="number of checked bags"),
            ),
            noun="booking",
        ),
    ),
    foreign_keys=(
        ForeignKey("aircraft", "airline_id", "airlines", "airline_id"),
        ForeignKey("flights", "airline_id", "airlines", "airline_id"),
        ForeignKey("flights", "aircraft_id", "aircraft", "aircraft_id"),
        ForeignKey("flights", "origin_id", "airports", "airport_id"),
        ForeignKey("flights", "destination_id", "airports", "airport_id"),
        ForeignKey("bookings", "passenger_id", "passengers", "passenger_id"),
        ForeignKey("bookings", "flight_id", "flights", "flight_id"),
    ),
)

AIRLINES = (
    ("Skyward Air", "SW", "USA"), ("Northwind Airways", "NW", "Canada"),
    ("Blue Crane", "BC", "Japan"), ("Atlantic Express", "AX", "UK"),
    ("Sol Airlines", "SO", "Spain"), ("Aurora Air", "AU", "Norway"),
    ("Pacific Jet", "PJ", "Australia"), ("Condor Lines", "CL", "Germany"),
    ("Lotus Airways", "LO", "India"), ("Jaguar Air", "JA", "Mexico"),
    ("Harmattan Air", "HA", "Nigeria"), ("Kiwi Wings", "KW", "New Zealand"),
    ("Meridian Air", "MR", "France"), ("Andes Air", "AN", "Argentina"),
    ("Tulip Airlines", "TU", "Netherlands"), ("Phoenix Air", "PX", "USA"),
)  # fmt: skip
AIRPORTS = (
    ("JFK", "New York", "USA"), ("LHR", "London", "UK"), ("HND", "Tokyo", "Japan"),
    ("CDG", "Paris", "France"), ("ORD", "Chicago", "USA"), ("YYZ", "Toronto", "Canada"),
    ("FRA", "Frankfurt", "Germany"), ("MAD", "Madrid", "Spain"), ("LAX", "Los Angeles", "USA"),
    ("SYD", "Sydney", "Australia"), ("BOM", "Mumbai", "India"), ("ICN", "Seoul", "South Korea"),
    ("AMS", "Amsterdam", "Netherlands"), ("FCO", "Rome", "Italy"),
    ("SIN", "Singapore", "Singapore"), ("MEX", "Mexico City", "Mexico"),
    ("GRU", "Sao Paulo", "Brazil"), ("DUB", "Dublin", "Ireland"), ("ATL", "Atlanta", "USA"),
    ("DEN", "Denver", "USA"), ("SEA", "Seattle", "USA"), ("YVR", "Vancouver", "Canada"),
    ("MUC", "Munich", "Germany"), ("BCN", "Barcelona", "Spain"), ("LIS", "Lisbon", "Portugal"),
    ("VIE", "Vienna", "Austria"), ("ARN", "Stockholm", "Sweden"), ("OSL", "Oslo", "Norway"),
    ("NBO", "Nairobi", "Kenya"), ("LOS", "Lagos", "Nigeria"), ("CAI", "Cairo", "Egypt"),
    ("AKL", "Auckland", "New Zealand"), ("PRG", "Prague", "Czech Republic"),
    ("EZE", "Buenos Aires", "Argentina"), ("MAN", "Manchester", "UK"), ("BOS", "Boston", "USA"),
)  # fmt: skip
# Model: (typical seats, range in km it flies).
MODELS = {
    "A320": (174, 6000),
    "B737-800": (170, 5500),
    "A321": (200, 7000),
    "E190": (100, 4000),
    "B787-9": (290, 14000),
    "A350-900": (315, 15000),
    "B777-300": (370, 13500),
    "ATR 72": (70, 1500),
}
MODEL_WEIGHTS = (30, 26, 12, 10, 8, 6, 4, 4)
STATUSES = ("on time", "delayed", "cancelled", "diverted")
CABINS = ("economy", "premium economy", "business", "first")
CABIN_FARE = (1.0, 1.6, 3.8, 7.0)
TIERS = ("blue", "silver", "gold", "platinum")


def fill(g: Gen) -> dict[str, dict[str, list[Any]]]:
    """Every table's columns for one seed."""
    rng = g.rng
    out: dict[str, dict[str, list[Any]]] = {}

    n_air = g.count(8, len(AIRLINES))
    airlines = [AIRLINES[i] for i in sorted(rng.choice(len(AIRLINES), n_air, replace=False))]
    out["airlines"] = {
        "airline_id": ids(n_air),
        "name": [a[0] for a in airlines],
        "code": [a[1] for a in airlines],
        "country": [a[2] for a in airlines],
        "founded_year": g.ints(n_air, 1925, 2012),
    }

    n_port = g.count(24, len(AIRPORTS))
    ports = [AIRPORTS[i] for i in sorted(rng.choice(len(AIRPORTS), n_port, replace=False))]
    out["airports"] = {
        "airport_id": ids(n_port),
        "code": [p[0] for p in ports],
        "city": [p[1] for p in ports],
        "country": [p[2] for p in ports],
        "runways": g.choice(n_port, (1, 2, 3, 4, 5, 6), (10, 35, 25, 18, 8, 4)),
        "opened_year": g.nullify(g.ints(n_port, 1920, 2005), 0.15),
    }

    # Aircraft: each airline's fleet, big airlines with more planes.
    n_craft = g.count(100, 220)
    owner = np.asarray(sorted(ids(n_air) + g.refs(n_craft - n_air, ids(n_air), 0.7)))
    models = g.choice(n_craft, list(MODELS), MODEL_WEIGHTS)
    regs = rng.choice(26**3, n_craft, replace=False).tolist()
    letters = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
    out["aircraft"] = {
        "aircraft_id": ids(n_craft),
        "airline_id": owner.tolist(),
        "model": models,
        "registration": [
            f"{airlines[o - 1][1][0]}-{letters[r // 676]}{letters[r // 26 % 26]}{letters[r % 26]}"
            for o, r in zip(owner.tolist(), regs, strict=True)
        ],
        "seats": [MODELS[m][0] + int(rng.integers(-12, 13)) for m in models],
        "year_built": g.normal_ints(n_craft, 2011, 7, 1990, 2024),
    }

    # Routes: hubs (the first airports of a random order) on most of them.
    n_route = g.count(120, 260)
    origin = np.asarray(g.refs(n_route, ids(n_port), 0.9))
    dest = np.asarray(g.refs(n_route, ids(n_port), 0.9))
    same = origin == dest
    dest[same] = origin[same] % n_port + 1
    pair_km = np.rint(np.exp(rng.uniform(np.log(300), np.log(14000), (n_port, n_port))))
    pair_km = np.triu(pair_km, 1) + np.triu(pair_km, 1).T  # one distance per airport pair
    km = pair_km[origin - 1, dest - 1].astype(int)
    fleet = {a: [i for i, o in enumerate(owner.tolist(), 1) if o == a] for a in ids(n_air)}
    route_airline = g.refs(n_route, ids(n_air), 0.6)
    numbers = rng.choice(np.arange(10, 3000), n_route, replace=False).tolist()

    # Flights: a route flies on distinct days (one flight number, once a day at
    # most), and flight ids follow the departure dates.
    per_route = np.bincount(
        g.refs(g.count(3000, 6000), list(range(n_route)), 0.7), minlength=n_route
    )
    first_day, n_days = np.datetime64("2023-01-01", "D"), 731
    days = [rng.choice(n_days, min(k, n_days), replace=False) for k in per_route.tolist()]
    route = np.repeat(np.arange(n_route), [len(d) for d in days])
    offset = np.concatenate(days)
    order = np.lexsort((route, offset))
    route, departure = route[order], first_day + offset[order]
    n_fl = len(route)
    route_minutes = np.rint(km / 13.5).astype(int) + 35 + rng.integers(-5, 16, n_route)
    airline = np.asarray(route_airline)[route]
    able: dict[int, list[int]] = {}  # per route: its airline's planes with the range
    for r, a in enumerate(route_airline):
        able[r] = [c for c in fleet[a] if MODELS[models[c - 1]][1] >= km[r]] or fleet[a]
    craft = [g.pick(able[r]) for r in route.tolist()]
    status = np.asarray(g.choice(n_fl, STATUSES, (74, 21, 4, 1)))
    delay = np.rint(rng.exponential(45, n_fl)).astype(int) + 15
    out["flights"] = {
        "flight_id": ids(n_fl),
        "flight_number": [
            f"{airlines[a - 1][1]}{numbers[r]}" for a, r in zip(airline, route, strict=True)
        ],
        "airline_id": airline.tolist(),
        "aircraft_id": craft,
        "origin_id": origin[route].tolist(),
        "destination_id": dest[route].tolist(),
        "departure_date": text_days(departure),
        "distance_km": km[route].tolist(),
        "duration_minutes": route_minutes[route].tolist(),
        "status": status.tolist(),
        "delay_minutes": [
            d if s == "delayed" else None for s, d in zip(status, delay.tolist(), strict=True)
        ],
    }

    n_pas = g.count(2500, 5000)
    nation = g.cities(n_pas, 0.8)
    out["passengers"] = {
        "passenger_id": ids(n_pas),
        "first_name": g.first_names(n_pas),
        "last_name": g.last_names(n_pas),
        "birth_date": g.nullify(text_days(g.days(n_pas, "1940-01-01", "2020-12-31")), 0.1),
        "nationality": [k for _, k in nation],
        "loyalty_tier": g.nullify(g.choice(n_pas, TIERS, (56, 27, 13, 4)), 0.55),
    }

    n_book = g.count(10000, 18000)
    flight = np.asarray(g.refs(n_book, ids(n_fl), 0.3))
    cabin = np.asarray(g.choice(n_book, range(4), (78, 8, 11, 3)))
    fare = 40 + np.asarray(out["flights"]["distance_km"])[flight - 1] * 0.09
    rows = rng.integers(1, 45, n_book)
    seats = [f"{r}{g.pick('ABCDEF')}" for r in rows.tolist()]
    out["bookings"] = {
        "booking_id": ids(n_book),
        "passenger_id": g.refs(n_book, ids(n_pas), 0.5),
        "flight_id": flight.tolist(),
        "booking_date": text_days(g.after(departure[flight - 1], -200, -1)),
        "cabin": [CABINS[c] for c in cabin.tolist()],
        "seat": g.nullify(seats, 0.12),
        "price": g.money(n_book, fare * np.asarray(CABIN_FARE)[cabin], 0.3, 29),
        "checked_bags": g.choice(n_book, (0, 1, 2, 3), (38, 45, 14, 3)),
    }
    return out
