"""The ``school`` domain: a college's departments, teachers, students, courses,
course sections, enrollments with grades, and clubs with their members."""

from __future__ import annotations

from typing import Any

import numpy as np

from envgym.envs.sql.generate import Gen, ids, text_days
from envgym.envs.sql.schema import Column, ForeignKey, Schema, Table

__all__ = ["SCHEMA", "fill"]

C = Column

SCHEMA = Schema(
    name="school",
    tables=(
        Table(
            "departments",
            (
                C("department_id", "INTEGER", primary_key=True, description="department id"),
                C("name", "TEXT", description="department name"),
                C("building", "TEXT", description="building the department is in"),
                C("budget", "REAL", description="yearly budget in dollars"),
                C("founded_year", "INTEGER", description="year the department was founded"),
            ),
            noun="department",
        ),
        Table(
            "teachers",
            (
                C("teacher_id", "INTEGER", primary_key=True, description="teacher id"),
                C("first_name", "TEXT", description="first name"),
                C("last_name", "TEXT", description="last name"),
                C("department_id", "INTEGER", description="department of the teacher"),
                C("title", "TEXT", description="academic title"),
                C("hire_date", "DATE", description="date the teacher was hired"),
                C("salary", "REAL", description="yearly salary in dollars"),
                C("email", "TEXT", True, description="email address"),
            ),
            noun="teacher",
        ),
        Table(
            "students",
            (
                C("student_id", "INTEGER", primary_key=True, description="student id"),
                C("first_name", "TEXT", description="first name"),
                C("last_name", "TEXT", description="last name"),
                C("birth_date", "DATE", description="date of birth"),
                C("city", "TEXT", description="home city"),
                C("enrollment_year", "INTEGER", description="year the student enrolled"),
                C("major_id", "INTEGER", True, description="major department (NULL: undeclared)"),
                C("advisor_id", "INTEGER", True, description="teacher who advises the student"),
                C("gpa", "REAL", True, description="grade point average from 0 to 4"),
            ),
            noun="student",
        ),
        Table(
            "courses",
            (
                C("course_id", "INTEGER", primary_key=True, description="course id"),
                C("code", "TEXT", description="course code"),
                C("title", "TEXT", description="course title"),
                C("department_id", "INTEGER", description="department offering the course"),
                C("credits", "INTEGER", description="credit hours"),
                C("level", "INTEGER", description="course level (100 to 400)"),
            ),
            noun="course",
        ),
        Table(
            "sections",
            (
                C("section_id", "INTEGER", primary_key=True, description="section id"),
                C("course_id", "INTEGER", description="course taught"),
                C("teacher_id", "INTEGER", True, description="teacher (NULL: not yet assigned)"),
                C("term", "TEXT", description="term, such as Fall 2023"),
                C("room", "TEXT", description="classroom"),
                C("capacity", "INTEGER", description="seats in the section"),
                C("start_date", "DATE", description="first day of classes"),
            ),
            noun="course section",
        ),
        Table(
            "enrollments",
            (
                C("enrollment_id", "INTEGER", primary_key=True, description="enrollment id"),
                C("student_id", "INTEGER", description="student enrolled"),
                C("section_id", "INTEGER", description="section enrolled in"),
                C("enrolled_date", "DATE", description="date of enrollment"),
                C("score", "REAL", True, description="final score out of 100"),
                C("grade", "TEXT", True, description="letter grade (NULL: no grade yet)"),
            ),
            noun="enrollment",
        ),
        Table(
            "clubs",
            (
                C("club_id", "INTEGER", primary_key=True, description="club id"),
                C("name", "TEXT", description="club name"),
                C("founded_date", "DATE", description="date the club was founded"),
                C("advisor_id", "INTEGER", True, description="teacher advising the club"),
                C("budget", "REAL", description="yearly club budget in dollars"),
            ),
            noun="club",
        ),
        Table(
            "club_members",
            (
                C("membership_id", "INTEGER", primary_key=True, description="membership id"),
                C("club_id", "INTEGER", description="club joined"),
                C("student_id", "INTEGER", description="student member"),
                C("joined_date", "DATE", description="date the student joined"),
                C("role", "TEXT", description="role in the club"),
            ),
            noun="club membership",
        ),
    ),
    foreign_keys=(
        ForeignKey("teachers", "department_id", "departments", "department_id"),
        ForeignKey("students", "major_id", "departments", "department_id"),
        ForeignKey("students", "advisor_id", "teachers", "teacher_id"),
        ForeignKey("courses", "department_id", "departments", "department_id"),
        ForeignKey("sections", "course_id", "courses", "course_id"),
        ForeignKey("sections", "teacher_id", "teachers", "teacher_id"),
        ForeignKey("enrollments", "student_id", "students", "student_id"),
        ForeignKey("enrollments", "section_id", "sections", "section_id"),
        ForeignKey("clubs", "advisor_id", "teachers", "teacher_id"),
        ForeignKey("club_members", "club_id", "clubs", "club_id"),
        ForeignKey("club_members", "student_id", "students", "student_id"),
    ),
)

# Department: (code, the subjects its courses are about).
DEPARTMENTS = {
    "Computer Science": ("CS", ("Programming", "Algorithms", "Databases", "Networks", "AI")),
    "Mathematics": ("MATH", ("Calculus", "Linear Algebra", "Statistics", "Number Theory")),
    "Physics": ("PHYS", ("Mechanics", "Electromagnetism", "Optics", "Thermodynamics")),
    "Chemistry": ("CHEM", ("Organic Chemistry", "Biochemistry", "Lab Methods")),
    "Biology": ("BIO", ("Genetics", "Ecology", "Cell Biology", "Microbiology")),
    "History": ("HIST", ("World History", "Ancient Rome", "Modern Europe", "Asian History")),
    "English": ("ENG", ("Composition", "Poetry", "Shakespeare", "Creative Writing")),
    "Economics": ("ECON", ("Microeconomics", "Macroeconomics", "Econometrics", "Finance")),
    "Psychology": ("PSY", ("Cognition", "Social Psychology", "Development", "Research Methods")),
    "Art": ("ART", ("Drawing", "Painting", "Sculpture", "Art History")),
    "Music": ("MUS", ("Music Theory", "Composition", "Jazz", "Choir")),
    "Philosophy": ("PHIL", ("Logic", "Ethics", "Metaphysics", "Philosophy of Mind")),
}
BUILDINGS = ("North Hall", "South Hall", "Science Center", "Main Building", "Arts Center", "Annex")
TITLES = ("Lecturer", "Assistant Professor", "Associate Professor", "Professor")
TITLE_PAY = (58000.0, 78000.0, 92000.0, 121000.0)
PREFIXES = ("Introduction to", "Topics in", "Advanced", "Seminar in", "Applied", "Foundations of")
CLUBS = (
    "Chess Club", "Debate Society", "Robotics Team", "Drama Club", "Photography Club",
    "Hiking Club", "Film Society", "Student Newspaper", "Jazz Band", "Coding Club",
    "Environmental Club", "Volunteer Corps", "Math Circle", "Dance Team", "Astronomy Club",
    "Book Club", "Cooking Club", "Model United Nations",
)  # fmt: skip
YEARS = (2020, 2021, 2022, 2023, 2024)


def fill(g: Gen) -> dict[str, dict[str, list[Any]]]:
    """Every table's columns for one seed."""
    rng = g.rng
    out: dict[str, dict[str, list[Any]]] = {}

    n_dep = g.count(8, 12)
    dep_names = [list(DEPARTMENTS)[i] for i in sorted(rng.choice(12, n_dep, replace=False))]
    out["departments"] = {
        "department_id": ids(n_dep),
        "name": dep_names,
        "building": g.zipf(n_dep, BUILDINGS, 0.7),
        "budget": g.money(n_dep, 1_200_000, 0.45, 200_000),
        "founded_year": g.ints(n_dep, 1890, 1995),
    }

    n_tea = g.count(60, 120)
    dep_of = g.refs(n_tea, ids(n_dep), 0.5)
    title = np.asarray(g.choice(n_tea, range(4), (25, 30, 25, 20)))
    tf, tl = g.first_names(n_tea), g.last_names(n_tea)
    emails = [
        f"{f[0]}{la}{i}@college.edu".lower()
        for i, (f, la) in enumerate(zip(tf, tl, strict=True), 1)
    ]
    out["teachers"] = {
        "teacher_id": ids(n_tea),
        "first_name": tf,
        "last_name": tl,
        "department_id": dep_of,
        "title": [TITLES[t] for t in title.tolist()],
        "hire_date": text_days(g.days(n_tea, "1990-01-01", "2023-08-15")),
        "salary": g.money(n_tea, np.asarray(TITLE_PAY)[title], 0.12, 40000),
        "email": g.nullify(emails, 0.1),
    }

    n_stu = g.count(1500, 3000)
    enroll_year = np.asarray(g.choice(n_stu, YEARS, (22, 21, 20, 19, 18)))
    birth = np.asarray(
        [np.datetime64(f"{y - 18}-01-01") for y in enroll_year.tolist()], dtype="datetime64[D]"
    ) + rng.integers(-400, 366, size=n_stu)
    cities = g.cities(n_stu, 1.1)
    gpa = np.rint(rng.beta(6.0, 2.0, n_stu) * 400) / 100  # mean 3.0, rarely exactly 4.00
    gpa_values: list[float | None] = gpa.tolist()
    for i in np.flatnonzero(enroll_year == 2024)[::3].tolist():
        gpa_values[i] = None  # a third of the newest students have no grades yet
    out["students"] = {
        "student_id": ids(n_stu),
        "first_name": g.first_names(n_stu),
        "last_name": g.last_names(n_stu),
        "birth_date": text_days(birth),
        "city": [c for c, _ in cities],
        "enrollment_year": enroll_year.tolist(),
        "major_id": g.nullify(g.refs(n_stu, ids(n_dep), 0.7), 0.15),
        "advisor_id": g.nullify(g.refs(n_stu, ids(n_tea), 0.3), 0.25),
        "gpa": g.nullify(gpa_values, 0.01),
    }

    courses: dict[str, list[Any]] = {c: [] for c in ("code", "title", "department_id", "level")}
    for dep, name in enumerate(dep_names, start=1):
        code, subjects = DEPARTMENTS[name]
        numbers: set[int] = set()
        for _ in range(g.count(8, 13)):
            level = g.pick((100, 100, 200, 200, 300, 400))
            number = level + int(rng.integers(1, 99))
            while number in numbers:
                number = level + int(rng.integers(1, 99))
            numbers.add(number)
            courses["code"].append(f"{code} {number}")
            courses["title"].append(f"{g.pick(PREFIXES)} {g.pick(subjects)}")
            courses["department_id"].append(dep)
            courses["level"].append(level)
    n_cou = len(courses["code"])
    out["courses"] = {
        "course_id": ids(n_cou),
        "code": courses["code"],
        "title": courses["title"],
        "department_id": courses["department_id"],
        "credits": g.choice(n_cou, (3, 4, 2, 1, 5), (60, 22, 9, 5, 4)),
        "level": courses["level"],
    }

    # Sections: each course in some terms, taught by a teacher of its department.
    teachers_of = {d: [t for t, dt in enumerate(dep_of, 1) if dt == d] for d in ids(n_dep)}
    sec: dict[str, list[Any]] = {c: [] for c in ("course", "teacher", "term", "year", "day")}
    for course, dep in enumerate(courses["department_id"], start=1):
        for year in YEARS:
            for season, month in (("Spring", 1), ("Fall", 8)):
                if rng.random() < 0.45:
                    staff = teachers_of[dep] or list(range(1, n_tea + 1))
                    sec["course"].append(course)
                    sec["teacher"].append(g.pick(staff))
                    sec["term"].append(f"{season} {year}")
                    sec["year"].append(year)
                    sec["day"].append(f"{year}-{month:02d}-{int(rng.integers(10, 29)):02d}")
    n_sec = len(sec["course"])
    start = np.asarray(sec["day"], dtype="datetime64[D]")
    rooms = [
        f"{g.pick(('N', 'S', 'M', 'A'))}{int(rng.integers(1, 4))}{n:02d}"
        for n in rng.integers(1, 40, n_sec).tolist()
    ]
    out["sections"] = {
        "section_id": ids(n_sec),
        "course_id": sec["course"],
        "teacher_id": g.nullify(sec["teacher"], 0.04),
        "term": sec["term"],
        "room": rooms,
        "capacity": np.clip(np.rint(rng.lognormal(np.log(36), 0.45, n_sec)), 8, 250)
        .astype(int)
        .tolist(),
        "start_date": text_days(start),
    }

    # Enrollments: a section's students enrolled in or before its year.
    n_enr = g.count(10000, 17000)
    section = np.asarray(g.refs(n_enr, ids(n_sec), 0.3))
    sec_year = np.asarray(sec["year"])[section - 1]
    student = np.empty(n_enr, dtype=np.int64)
    for year in YEARS:
        rows = np.flatnonzero(sec_year == year)
        eligible = np.flatnonzero(enroll_year <= year) + 1
        student[rows] = g.refs(len(rows), eligible.tolist(), 0.2)
    score = np.rint(rng.beta(7.0, 2.3, n_enr) * 1000) / 10  # mean 75, few perfect scores
    grade = np.select([score >= 90, score >= 80, score >= 70, score >= 60], list("ABCD"), "F")
    open_ = (sec_year == 2024) & (rng.random(n_enr) < 0.5) | (rng.random(n_enr) < 0.03)
    out["enrollments"] = {
        "enrollment_id": ids(n_enr),
        "student_id": student.tolist(),
        "section_id": section.tolist(),
        "enrolled_date": text_days(g.after(start[section - 1], -60, -1)),
        "score": [None if o else s for o, s in zip(open_.tolist(), score.tolist(), strict=True)],
        "grade": [None if o else s for o, s in zip(open_.tolist(), grade.tolist(), strict=True)],
    }

    n_club = g.count(10, len(CLUBS))
    founded = g.days(n_club, "1975-01-01", "2019-12-31")
    out["clubs"] = {
        "club_id": ids(n_club),
        "name": [CLUBS[i] for i in sorted(rng.choice(len(CLUBS), n_club, replace=False))],
        "founded_date": text_days(founded),
        "advisor_id": g.nullify(g.refs(n_club, ids(n_tea), 0.0), 0.2),
        "budget": g.money(n_club, 2500, 0.7, 100),
    }

    n_mem = g.count(800, 2000)
    member = np.asarray(g.refs(n_mem, ids(n_stu), 0.2))
    first_day = np.asarray([np.datetime64(f"{y}-08-20") for y in YEARS], dtype="datetime64[D]")
    joined_from = first_day[enroll_year[member - 1] - YEARS[0]]
    span = (np.datetime64("2024-12-15", "D") - joined_from).astype(int)
    out["club_members"] = {
        "membership_id": ids(n_mem),
        "club_id": g.refs(n_mem, ids(n_club), 0.8),
        "student_id": member.tolist(),
        "joined_date": text_days(joined_from + np.floor(rng.random(n_mem) * span).astype(int)),
        "role": g.choice(n_mem, ("member", "officer", "treasurer", "president"), (86, 8, 3, 3)),
    }
    return out
