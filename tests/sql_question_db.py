"""A small clinic database for the SQL question-grammar tests: five tables with
foreign keys, NULLs, dates, REAL and INTEGER columns, a few hundred rows."""

from __future__ import annotations

import sqlite3
from datetime import date, timedelta

import numpy as np

from envgym.envs.sql.schema import Column, Database, ForeignKey, Schema, Table

FIRST = [
    "Ana",
    "Ben",
    "Chloe",
    "Dmitri",
    "Emma",
    "Farid",
    "Grace",
    "Hugo",
    "Ines",
    "Jonas",
    "Kaito",
    "Lena",
    "Mateo",
    "Nora",
    "Omar",
    "Priya",
    "Quinn",
    "Rosa",
    "Sven",
    "Tara",
]
LAST = [
    "Adams",
    "Berg",
    "Costa",
    "Diaz",
    "Evans",
    "Fischer",
    "Garcia",
    "Hansen",
    "Ito",
    "Jensen",
    "Kim",
    "Lopez",
    "Moreau",
    "Novak",
    "Olsen",
    "Park",
    "O'Neil",
    "Rossi",
    "Silva",
    "Tanaka",
]
CITIES = ["Oslo", "Lyon", "Porto", "Graz", "Turku", "Bergen", "Lille", "Braga"]
DRUGS = ["amoxicillin", "ibuprofen", "metformin", "lisinopril", "atorvastatin", "omeprazole"]

SCHEMA = Schema(
    name="clinic",
    tables=(
        Table("departments", (
            Column("id", "INTEGER", primary_key=True, description="the department's id"),
            Column("name", "TEXT", description="the department's name"),
            Column("floor", "INTEGER", description="the floor the department is on"),
        ), noun="a department"),
        Table("doctors", (
            Column("id", "INTEGER", primary_key=True, description="the doctor's id"),
            Column("name", "TEXT", description="the doctor's name"),
            Column("department_id", "INTEGER", description="the doctor's department"),
            Column("salary", "REAL", description="the doctor's yearly salary"),
            Column("hired_on", "DATE", description="the date the doctor was hired"),
        ), noun="a doctor"),
        Table("patients", (
            Column("id", "INTEGER", primary_key=True, description="the patient's id"),
            Column("name", "TEXT", description="the patient's name"),
            Column("city", "TEXT", description="the patient's home city"),
            Column("birth_date", "DATE", description="the patient's date of birth"),
            Column("weight_kg", "REAL", nullable=True, description="the patient's weight in kg"),
            Column("insurer", "TEXT", nullable=True, description="the patient's insurer"),
        ), noun="a patient"),
        Table("visits", (
            Column("id", "INTEGER", primary_key=True, description="the visit's id"),
            Column("patient_id", "INTEGER", description="the patient seen"),
            Column("doctor_id", "INTEGER", description="the doctor seen"),
            Column("visit_date", "DATE", description="the date of the visit"),
            Column("cost", "REAL", description="the visit's cost in euros"),
            Column("minutes", "INTEGER", description="the visit's length in minutes"),
        ), noun="a visit"),
        Table("prescriptions", (
            Column("id", "INTEGER", primary_key=True, description="the prescription's id"),
            Column("visit_id", "INTEGER", description="the visit it was written at"),
            Column("drug", "TEXT", description="the drug prescribed"),
            Column("dose_mg", "INTEGER", description="the dose in mg"),
            Column("refills", "INTEGER", nullable=True, description="the number of refills"),
        ), noun="a prescription"),
    ),
    foreign_keys=(
        ForeignKey("doctors", "department_id", "departments", "id"),
        ForeignKey("visits", "patient_id", "patients", "id"),
        ForeignKey("visits", "doctor_id", "doctors", "id"),
        ForeignKey("prescriptions", "visit_id", "visits", "id"),
    ),
)  # fmt: skip


def day(rng: np.random.Generator, start: date, span: int) -> str:
    return (start + timedelta(days=int(rng.integers(span)))).isoformat()


def clinic_rows(seed: int = 0, scale: int = 1) -> dict[str, list[tuple]]:
    """The rows of every table, drawn from ``seed``; ``scale`` multiplies the
    patients, visits and prescriptions (names repeat past 380 patients)."""
    rng = np.random.default_rng(seed)
    names = [f"{f} {last}" for f in FIRST for last in LAST]
    rng.shuffle(names)
    depts = ["Cardiology", "Oncology", "Pediatrics", "Radiology", "Neurology"]
    rows: dict[str, list[tuple]] = {"departments": [], "doctors": [], "patients": []}
    rows["departments"] = [(i + 1, d, int(rng.integers(1, 6))) for i, d in enumerate(depts)]
    for i in range(20):
        salary = round(float(rng.normal(120000, 25000)), 2)
        hired = day(rng, date(2005, 1, 1), 6000)
        rows["doctors"].append((i + 1, "Dr " + names[i], int(rng.integers(1, 6)), salary, hired))
    for i in range(150 * scale):
        weight = None if rng.random() < 0.15 else round(float(rng.normal(75, 14)), 1)
        insurer = None if rng.random() < 0.2 else str(rng.choice(["Acme", "Bluecare", "Civis"]))
        birth = day(rng, date(1940, 1, 1), 25000)
        rows["patients"].append(
            (i + 1, names[20 + i % 380], str(rng.choice(CITIES)), birth, weight, insurer)
        )
    rows["visits"] = [
        (i + 1, int(rng.integers(1, 150 * scale + 1)), int(rng.integers(1, 21)),
         day(rng, date(2021, 1, 1), 1300), round(float(rng.gamma(3, 40)), 2),
         int(rng.integers(10, 90)))
        for i in range(400 * scale)
    ]  # fmt: skip
    rows["prescriptions"] = [
        (i + 1, int(rng.integers(1, 400 * scale + 1)), str(rng.choice(DRUGS)),
         int(rng.choice([5, 10, 20, 40, 250, 500])),
         None if rng.random() < 0.3 else int(rng.integers(0, 6)))
        for i in range(300 * scale)
    ]  # fmt: skip
    return rows


def clinic_database(seed: int = 0, scale: int = 1) -> Database:
    rows = clinic_rows(seed, scale)
    conn = sqlite3.connect(":memory:")
    conn.executescript(SCHEMA.ddl())
    for table in SCHEMA.tables:
        marks = ", ".join("?" for _ in table.columns)
        conn.executemany(f'INSERT INTO "{table.name}" VALUES ({marks})', rows[table.name])
    conn.commit()
    data = conn.serialize()
    conn.close()
    counts = {name: len(r) for name, r in rows.items()}
    return Database(f"clinic-{seed}" + (f"x{scale}" if scale > 1 else ""), SCHEMA, data, counts)
