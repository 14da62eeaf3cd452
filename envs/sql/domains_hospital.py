"""The ``hospital`` domain: departments, doctors, wards, patients, appointments,
admissions, medications and prescriptions."""

from __future__ import annotations

from typing import Any

import numpy as np

from envgym.envs.sql.generate import Gen, ids, text_days
from envgym.envs.sql.schema import Column, ForeignKey, Schema, Table

__all__ = ["SCHEMA", "fill"]

C = Column

SCHEMA = Schema(
    name="hospital",
    tables=(
        Table(
            "departments",
            (
                C("department_id", "INTEGER", primary_key=True, description="department id"),
                C("name", "TEXT", description="department name"),
                C("floor", "INTEGER", description="floor of the department"),
                C("budget", "REAL", description="yearly budget in dollars"),
            ),
            noun="department",
        ),
        Table(
            "doctors",
            (
                C("doctor_id", "INTEGER", primary_key=True, description="doctor id"),
                C("first_name", "TEXT", description="first name"),
                C("last_name", "TEXT", description="last name"),
                C("department_id", "INTEGER", description="department of the doctor"),
                C("position", "TEXT", description="position: Resident, Fellow, Attending or Chief"),
                C("hire_date", "DATE", description="date the doctor was hired"),
                C("salary", "REAL", description="yearly salary in dollars"),
                C("phone", "TEXT", True, description="phone extension"),
            ),
            noun="doctor",
        ),
        Table(
            "wards",
            (
                C("ward_id", "INTEGER", primary_key=True, description="ward id"),
                C("name", "TEXT", description="ward name"),
                C("department_id", "INTEGER", description="department running the ward"),
                C("beds", "INTEGER", description="number of beds"),
            ),
            noun="ward",
        ),
        Table(
            "patients",
            (
                C("patient_id", "INTEGER", primary_key=True, description="patient id"),
                C("first_name", "TEXT", description="first name"),
                C("last_name", "TEXT", description="last name"),
                C("sex", "TEXT", description="sex, F or M"),
                C("birth_date", "DATE", description="date of birth"),
                C("city", "TEXT", description="city the patient lives in"),
                C("blood_type", "TEXT", True, description="blood type, such as O+"),
                C("insurer", "TEXT", True, description="insurance company (NULL: uninsured)"),
                C("primary_doctor_id", "INTEGER", True, description="the patient's own doctor"),
            ),
            noun="patient",
        ),
        Table(
            "appointments",
            (
                C("appointment_id", "INTEGER", primary_key=True, description="appointment id"),
                C("patient_id", "INTEGER", description="patient seen"),
                C("doctor_id", "INTEGER", description="doctor seen"),
                C("appointment_date", "DATE", description="date of the appointment"),
                C("status", "TEXT", description="appointment status"),
                C("fee", "REAL", description="fee charged in dollars"),
                C("reason", "TEXT", True, description="reason for the visit"),
            ),
            noun="appointment",
        ),
        Table(
            "admissions",
            (
                C("admission_id", "INTEGER", primary_key=True, description="admission id"),
                C("patient_id", "INTEGER", description="patient admitted"),
                C("ward_id", "INTEGER", description="ward the patient stayed in"),
                C("admit_date", "DATE", description="date of admission"),
                C("discharge_date", "DATE", True, description="date of discharge (NULL: still in)"),
                C("diagnosis", "TEXT", description="main diagnosis"),
                C("total_cost", "REAL", True, description="bill in dollars (NULL: not billed)"),
            ),
            noun="hospital admission",
        ),
        Table(
            "medications",
            (
                C("medication_id", "INTEGER", primary_key=True, description="medication id"),
                C("name", "TEXT", description="medication name"),
                C("form", "TEXT", description="form, such as tablet or injection"),
                C("unit_price", "REAL", description="price per dose in dollars"),
                C("manufacturer", "TEXT", description="company making it"),
            ),
            noun="medication",
        ),
        Table(
            "prescriptions",
            (
                C("prescription_id", "INTEGER", primary_key=True, description="prescription id"),
                C("appointment_id", "INTEGER", description="appointment it was written at"),
                C("medication_id", "INTEGER", description="medication prescribed"),
                C("dose_mg", "INTEGER", description="dose in milligrams"),
                C("days", "INTEGER", description="days of treatment"),
                C("refills", "INTEGER", True, description="refills allowed"),
            ),
            noun="prescription",
        ),
    ),
    foreign_keys=(
        ForeignKey("doctors", "department_id", "departments", "department_id"),
        ForeignKey("wards", "department_id", "departments", "department_id"),
        ForeignKey("patients", "primary_doctor_id", "doctors", "doctor_id"),
        ForeignKey("appointments", "patient_id", "patients", "patient_id"),
        ForeignKey("appointments", "doctor_id", "doctors", "doctor_id"),
        ForeignKey("admissions", "patient_id", "patients", "patient_id"),
        ForeignKey("admissions", "ward_id", "wards", "ward_id"),
        ForeignKey("prescriptions", "appointment_id", "appointments", "appointment_id"),
        ForeignKey("prescriptions", "medication_id", "medications", "medication_id"),
    ),
)

# Department: (median visit fee, the reasons patients come, the diagnoses it admits).
DEPARTMENTS = {
    "Cardiology": (
        220.0,
        ("chest pain", "palpitations", "checkup"),
        ("heart failure", "arrhythmia"),
    ),
    "Oncology": (260.0, ("follow-up", "chemotherapy"), ("lymphoma", "breast cancer")),
    "Pediatrics": (110.0, ("fever", "vaccination", "checkup"), ("bronchiolitis", "dehydration")),
    "Orthopedics": (
        180.0,
        ("back pain", "fracture", "knee pain"),
        ("hip fracture", "knee surgery"),
    ),
    "Neurology": (210.0, ("headache", "dizziness", "seizure"), ("stroke", "epilepsy")),
    "Emergency": (320.0, ("injury", "chest pain", "fever"), ("trauma", "sepsis")),
    "General Surgery": (190.0, ("abdominal pain", "follow-up"), ("appendicitis", "hernia")),
    "Dermatology": (130.0, ("rash", "skin check", "acne"), ("cellulitis", "burns")),
    "Internal Medicine": (140.0, ("checkup", "fatigue", "cough"), ("pneumonia", "diabetes")),
    "Psychiatry": (170.0, ("anxiety", "depression", "follow-up"), ("depression", "psychosis")),
}
POSITIONS = ("Resident", "Attending", "Fellow", "Chief")
POSITION_PAY = (68000.0, 245000.0, 82000.0, 390000.0)
BLOOD = ("O+", "A+", "B+", "AB+", "O-", "A-", "B-", "AB-")
INSURERS = ("BlueShield", "Aetna", "UnitedHealth", "Cigna", "Kaiser", "Humana", "Medicare")
STATUSES = ("completed", "cancelled", "no-show", "scheduled")
MEDICATIONS = (
    "Amoxicillin", "Ibuprofen", "Lisinopril", "Metformin", "Atorvastatin", "Omeprazole",
    "Amlodipine", "Albuterol", "Sertraline", "Prednisone", "Gabapentin", "Losartan",
    "Levothyroxine", "Azithromycin", "Warfarin", "Insulin Glargine", "Furosemide", "Paracetamol",
    "Cetirizine", "Morphine", "Ceftriaxone", "Clopidogrel", "Fluoxetine", "Tramadol",
    "Hydrochlorothiazide", "Diazepam", "Doxycycline", "Simvastatin", "Pantoprazole", "Heparin",
    "Montelukast", "Naproxen", "Ondansetron", "Citalopram", "Methotrexate", "Tamoxifen",
)  # fmt: skip
FORMS = ("tablet", "capsule", "injection", "syrup", "inhaler", "cream")
MAKERS = ("Pfizer", "Novartis", "Roche", "Merck", "Sanofi", "Bayer", "Teva", "Sandoz")
TODAY = "2024-12-31"


def fill(g: Gen) -> dict[str, dict[str, list[Any]]]:
    """Every table's columns for one seed."""
    rng = g.rng
    out: dict[str, dict[str, list[Any]]] = {}

    n_dep = g.count(7, 10)
    dep_names = [list(DEPARTMENTS)[i] for i in sorted(rng.choice(10, n_dep, replace=False))]
    out["departments"] = {
        "department_id": ids(n_dep),
        "name": dep_names,
        "floor": g.ints(n_dep, 1, 8),
        "budget": g.money(n_dep, 4_000_000, 0.5, 500_000),
    }

    n_doc = g.count(60, 150)
    doc_dep = np.asarray(g.refs(n_doc, ids(n_dep), 0.4))
    position = np.asarray(g.choice(n_doc, range(4), (35, 45, 15, 5)))
    out["doctors"] = {
        "doctor_id": ids(n_doc),
        "first_name": g.first_names(n_doc),
        "last_name": g.last_names(n_doc),
        "department_id": doc_dep.tolist(),
        "position": [POSITIONS[p] for p in position.tolist()],
        "hire_date": text_days(g.days(n_doc, "1992-01-01", "2024-07-01")),
        "salary": g.money(n_doc, np.asarray(POSITION_PAY)[position], 0.15, 50000),
        "phone": g.nullify([f"x{n}" for n in rng.choice(9000, n_doc, replace=False) + 1000], 0.2),
    }

    ward_dep = ids(n_dep) + g.refs(g.count(8, 20), ids(n_dep), 0.5)
    ward_dep.sort()
    ward_names, seen = [], {}
    for dep in ward_dep:
        seen[dep] = seen.get(dep, 0) + 1
        ward_names.append(f"{dep_names[dep - 1]} Ward {'ABCDEFGHIJKLMNOP'[seen[dep] - 1]}")
    n_ward = len(ward_dep)
    out["wards"] = {
        "ward_id": ids(n_ward),
        "name": ward_names,
        "department_id": ward_dep,
        "beds": g.normal_ints(n_ward, 24, 9, 6, 60),
    }

    n_pat = g.count(2000, 5000)
    cities = g.cities(n_pat, 1.3)
    sex = g.choice(n_pat, ("F", "M"), (52, 48))
    out["patients"] = {
        "patient_id": ids(n_pat),
        "first_name": g.first_names(n_pat, sex),
        "last_name": g.last_names(n_pat),
        "sex": sex,
        "birth_date": text_days(g.days(n_pat, "1930-01-01", "2024-06-30")),
        "city": [c for c, _ in cities],
        "blood_type": g.nullify(g.choice(n_pat, BLOOD, (38, 34, 9, 3, 7, 6, 2, 1)), 0.08),
        "insurer": g.nullify(g.zipf(n_pat, INSURERS, 0.8), 0.1),
        "primary_doctor_id": g.nullify(g.refs(n_pat, ids(n_doc), 0.3), 0.3),
    }

    n_app = g.count(8000, 15000)
    doctor = np.asarray(g.refs(n_app, ids(n_doc), 0.5))
    status = np.asarray(g.choice(n_app, STATUSES, (76, 10, 7, 7)))
    day = g.days(n_app, "2020-01-01", TODAY)
    future = status == "scheduled"
    day[future] = g.days(int(future.sum()), "2025-01-02", "2025-03-31")
    dep_of = doc_dep[doctor - 1] - 1
    medians = np.asarray([DEPARTMENTS[dep_names[d]][0] for d in dep_of.tolist()])
    reasons = [g.pick(DEPARTMENTS[dep_names[d]][1]) for d in dep_of.tolist()]
    out["appointments"] = {
        "appointment_id": ids(n_app),
        "patient_id": g.refs(n_app, ids(n_pat), 0.4),
        "doctor_id": doctor.tolist(),
        "appointment_date": text_days(day),
        "status": status.tolist(),
        "fee": g.money(n_app, medians, 0.35, 25),
        "reason": g.nullify(reasons, 0.15),
    }

    n_adm = g.count(1000, 3000)
    ward = np.asarray(g.refs(n_adm, ids(n_ward), 0.4))
    admit = g.days(n_adm, "2020-01-01", TODAY)
    stay = np.ceil(rng.exponential(4.5, n_adm)).astype(int)
    discharge = admit + stay
    inside = discharge > np.datetime64(TODAY)
    inside[rng.random(n_adm) < 0.01] = True
    inside[int(rng.integers(n_adm))] = True
    inside = inside.tolist()
    cost = g.money(n_adm, 2400.0, 0.4, 300)
    cost = (np.rint(np.asarray(cost) * np.maximum(stay, 1) * 100) / 100).tolist()
    adm_dep = [ward_dep[w - 1] - 1 for w in ward.tolist()]
    out["admissions"] = {
        "admission_id": ids(n_adm),
        "patient_id": g.refs(n_adm, ids(n_pat), 0.3),
        "ward_id": ward.tolist(),
        "admit_date": text_days(admit),
        "discharge_date": [
            None if i else d for i, d in zip(inside, text_days(discharge), strict=True)
        ],
        "diagnosis": [g.pick(DEPARTMENTS[dep_names[d]][2]) for d in adm_dep],
        "total_cost": g.nullify(
            [None if i else c for i, c in zip(inside, cost, strict=True)], 0.04
        ),
    }

    n_med = g.count(24, len(MEDICATIONS))
    out["medications"] = {
        "medication_id": ids(n_med),
        "name": [MEDICATIONS[i] for i in sorted(rng.choice(len(MEDICATIONS), n_med, False))],
        "form": g.choice(n_med, FORMS, (50, 22, 14, 6, 4, 4)),
        "unit_price": g.money(n_med, 3.5, 1.1, 0.05),
        "manufacturer": g.zipf(n_med, MAKERS, 0.6),
    }

    done = np.flatnonzero(status == "completed") + 1
    n_pre = min(g.count(5000, 11000), len(done) * 2)
    out["prescriptions"] = {
        "prescription_id": ids(n_pre),
        "appointment_id": sorted(g.refs(n_pre, done.tolist(), 0.1)),
        "medication_id": g.refs(n_pre, ids(n_med), 0.9),
        "dose_mg": g.choice(n_pre, (5, 10, 20, 25, 40, 50, 100, 250, 500, 1000)),
        "days": g.choice(n_pre, (3, 5, 7, 10, 14, 30, 60, 90), (6, 14, 24, 16, 14, 16, 5, 5)),
        "refills": g.nullify(g.choice(n_pre, (0, 1, 2, 3, 5), (45, 25, 15, 10, 5)), 0.2),
    }
    return out
