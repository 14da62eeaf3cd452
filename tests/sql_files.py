"""Small Spider and BIRD releases for the tests, in their own formats.

Spider and BIRD cannot be downloaded here, so these write two tiny databases per
dataset (``.sqlite`` files with keys and foreign keys), their ``tables.json``
entries and a few questions with gold queries, laid out as the unzipped releases
are: ``tables.json``, ``dev.json``, ``database/<db_id>/<db_id>.sqlite`` for
Spider; ``dev.json``, ``dev_tables.json``, ``dev_databases/<db_id>/<db_id>.sqlite``
(with BIRD's ``evidence`` and ``difficulty``) for BIRD.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

SPIDER_DDL = {
    "concert_singer": """
        CREATE TABLE stadium (Stadium_ID INT PRIMARY KEY, Location TEXT, Name TEXT,
                              Capacity INT, Average INT);
        CREATE TABLE singer (Singer_ID INT PRIMARY KEY, Name TEXT NOT NULL, Country TEXT,
                             Age INT);
        CREATE TABLE concert (concert_ID INT PRIMARY KEY, concert_Name TEXT, Year TEXT,
                              Stadium_ID TEXT REFERENCES stadium(Stadium_ID));
        CREATE TABLE singer_in_concert (concert_ID INT REFERENCES concert(concert_ID),
                                        Singer_ID TEXT REFERENCES singer(Singer_ID),
                                        PRIMARY KEY (concert_ID, Singer_ID));
        INSERT INTO stadium VALUES (1, 'Raith Rovers', 'Stark''s Park', 10104, 864),
                                   (2, 'Ayr United', 'Somerset Park', 11998, 1477),
                                   (3, 'East Fife', 'Bayview Stadium', 2000, 1980);
        INSERT INTO singer VALUES (1, 'Joe Sharp', 'Netherlands', 52),
                                  (2, 'Timbaland', 'United States', 32),
                                  (3, 'Justin Brown', 'France', 29),
                                  (4, 'Rose White', 'France', 41);
        INSERT INTO concert VALUES (1, 'Auditions', '2014', '1'),
                                   (2, 'Super bootcamp', '2014', '2'),
                                   (3, 'Home Visits', '2015', '2');
        INSERT INTO singer_in_concert VALUES (1, '2'), (1, '3'), (2, '3'), (3, '4');
    """,
    "pets_1": """
        CREATE TABLE Student (StuID INTEGER PRIMARY KEY, LName VARCHAR(12), Fname VARCHAR(12),
                              Age INTEGER, Sex VARCHAR(1));
        CREATE TABLE Pets (PetID INTEGER PRIMARY KEY, PetType VARCHAR(20), pet_age INTEGER,
                           weight REAL);
        CREATE TABLE Has_Pet (StuID INTEGER REFERENCES Student(StuID),
                              PetID INTEGER REFERENCES Pets(PetID));
        INSERT INTO Student VALUES (1001, 'Smith', 'Linda', 18, 'F'),
                                   (1002, 'Kim', 'Tracy', 19, 'F'),
                                   (1003, 'Jones', 'Shiela', 21, 'F');
        INSERT INTO Pets VALUES (2001, 'cat', 3, 12.0), (2002, 'dog', 2, 13.4),
                                (2003, 'dog', 1, 9.3);
        INSERT INTO Has_Pet VALUES (1001, 2001), (1001, 2002), (1002, 2003);
    """,
}

SPIDER_TABLES: list[dict[str, Any]] = [
    {
        "db_id": "concert_singer",
        "table_names_original": ["stadium", "singer", "concert", "singer_in_concert"],
        "table_names": ["stadium", "singer", "concert", "singer in concert"],
        "column_names_original": [
            [-1, "*"],
            [0, "Stadium_ID"],
            [0, "Location"],
            [0, "Name"],
            [0, "Capacity"],
            [0, "Average"],
            [1, "Singer_ID"],
            [1, "Name"],
            [1, "Country"],
            [1, "Age"],
            [2, "concert_ID"],
            [2, "concert_Name"],
            [2, "Year"],
            [2, "Stadium_ID"],
            [3, "concert_ID"],
            [3, "Singer_ID"],
        ],
        "column_names": [
            [-1, "*"],
            [0, "stadium id"],
            [0, "location"],
            [0, "name"],
            [0, "capacity"],
            [0, "average"],
            [1, "singer id"],
            [1, "name"],
            [1, "country"],
            [1, "age"],
            [2, "concert id"],
            [2, "concert name"],
            [2, "year"],
            [2, "stadium id"],
            [3, "concert id"],
            [3, "singer id"],
        ],
        "column_types": ["text"]
        + ["number", "text", "text", "number", "number"]
        + ["number", "text", "text", "number"]
        + ["number", "text", "text", "text"]
        + ["number", "text"],
        "primary_keys": [1, 6, 10, 14],
        "foreign_keys": [[13, 1], [15, 6], [14, 10]],
    },
    {
        "db_id": "pets_1",
        "table_names_original": ["Student", "Has_Pet", "Pets"],
        "table_names": ["student", "has pet", "pets"],
        "column_names_original": [
            [-1, "*"],
            [0, "StuID"],
            [0, "LName"],
            [0, "Fname"],
            [0, "Age"],
            [0, "Sex"],
            [1, "StuID"],
            [1, "PetID"],
            [2, "PetID"],
            [2, "PetType"],
            [2, "pet_age"],
            [2, "weight"],
        ],
        "column_names": [
            [-1, "*"],
            [0, "student id"],
            [0, "last name"],
            [0, "first name"],
            [0, "age"],
            [0, "sex"],
            [1, "student id"],
            [1, "pet id"],
            [2, "pet id"],
            [2, "pet type"],
            [2, "pet age"],
            [2, "weight"],
        ],
        "column_types": ["text", "number", "text", "text", "number", "text"]
        + ["number", "number", "number", "text", "number", "number"],
        "primary_keys": [1, 8],
        "foreign_keys": [[6, 1], [7, 8]],
    },
]

SPIDER_QUESTIONS: list[dict[str, Any]] = [
    {
        "db_id": "concert_singer",
        "question": "How many singers do we have?",
        "query": "SELECT count(*) FROM singer",
    },
    {
        "db_id": "concert_singer",
        "question": "Show name, country, age for all singers ordered by age from the oldest.",
        "query": "SELECT name ,  country ,  age FROM singer ORDER BY age DESC",
    },
    {
        "db_id": "concert_singer",
        "question": "Show the stadium name and the number of concerts in each stadium.",
        "query": "SELECT T2.name ,  count(*) FROM concert AS T1 JOIN stadium AS T2 ON "
        "T1.stadium_id  =  T2.stadium_id GROUP BY T1.stadium_id",
    },
    {
        "db_id": "pets_1",
        "question": "Find the first name of students who have both cat and dog pets.",
        "query": "SELECT T1.Fname FROM student AS T1 JOIN has_pet AS T2 ON T1.stuid  =  "
        "T2.stuid JOIN pets AS T3 ON T3.petid  =  T2.petid WHERE T3.pettype  =  'cat' "
        "INTERSECT SELECT T1.Fname FROM student AS T1 JOIN has_pet AS T2 ON T1.stuid  =  "
        "T2.stuid JOIN pets AS T3 ON T3.petid  =  T2.petid WHERE T3.pettype  =  'dog'",
    },
    {
        "db_id": "pets_1",
        "question": "What is the average weight for each type of pet?",
        "query": "SELECT avg(weight) ,  pettype FROM pets GROUP BY pettype",
    },
]
SPIDER_EXPECTED = [  # (difficulty, ordered) of each question above
    ("easy", False),
    ("easy", True),
    ("medium", False),
    ("hard", False),
    ("medium", False),
]

BIRD_DDL = {
    "california_schools": """
        CREATE TABLE schools (CDSCode TEXT NOT NULL PRIMARY KEY, County TEXT, School TEXT,
                              OpenDate DATE);
        CREATE TABLE frpm (CDSCode TEXT NOT NULL PRIMARY KEY REFERENCES schools(CDSCode),
                           "Free Meal Count (K-12)" REAL, "Enrollment (K-12)" REAL);
        INSERT INTO schools VALUES ('01100170109835', 'Alameda', 'FAME Public Charter',
                                    '2005-08-29'),
                                   ('01100170112607', 'Alameda', 'Envision Academy',
                                    '2006-08-28'),
                                   ('19647330100289', 'Los Angeles', 'Ocean Charter',
                                    '1999-09-01');
        INSERT INTO frpm VALUES ('01100170109835', 182, 1087), ('01100170112607', 171, 395),
                                ('19647330100289', 67, 451);
    """,
    "debit_card_specializing": """
        CREATE TABLE customers (CustomerID INTEGER NOT NULL PRIMARY KEY, Segment TEXT,
                                Currency TEXT);
        CREATE TABLE yearmonth (CustomerID INTEGER NOT NULL REFERENCES customers,
                                Date TEXT NOT NULL, Consumption REAL,
                                PRIMARY KEY (Date, CustomerID));
        INSERT INTO customers VALUES (3, 'SME', 'EUR'), (5, 'LAM', 'EUR'), (6, 'SME', 'CZK'),
                                     (7, 'KAM', 'CZK');
        INSERT INTO yearmonth VALUES (3, '201201', 528.3), (5, '201202', 1598.28),
                                     (6, '201205', 56.1), (7, '201301', 9012.5),
                                     (3, '201307', 11.2);
    """,
}

BIRD_TABLES: list[dict[str, Any]] = [
    {
        "db_id": "california_schools",
        "table_names_original": ["schools", "frpm"],
        "table_names": ["schools", "free or reduced price meals"],
        "column_names_original": [
            [-1, "*"],
            [0, "CDSCode"],
            [0, "County"],
            [0, "School"],
            [0, "OpenDate"],
            [1, "CDSCode"],
            [1, "Free Meal Count (K-12)"],
            [1, "Enrollment (K-12)"],
        ],
        "column_names": [
            [-1, "*"],
            [0, "cdscode"],
            [0, "county"],
            [0, "school"],
            [0, "open date"],
            [1, "cdscode"],
            [1, "free meal count (k-12)"],
            [1, "enrollment (k-12)"],
        ],
        "column_types": ["text", "text", "text", "text", "date", "text", "real", "real"],
        "primary_keys": [1, 5],
        "foreign_keys": [[5, 1]],
    },
    {
        "db_id": "debit_card_specializing",
        "table_names_original": ["customers", "yearmonth"],
        "table_names": ["customers", "year and month"],
        "column_names_original": [
            [-1, "*"],
            [0, "CustomerID"],
            [0, "Segment"],
            [0, "Currency"],
            [1, "CustomerID"],
            [1, "Date"],
            [1, "Consumption"],
        ],
        "column_names": [
            [-1, "*"],
            [0, "customer id"],
            [0, "client segment"],
            [0, "currency"],
            [1, "customer id"],
            [1, "date"],
            [1, "consumption"],
        ],
        "column_types": ["text", "integer", "text", "text", "integer", "text", "real"],
        "primary_keys": [1, [5, 4]],
        "foreign_keys": [[4, 1]],
    },
]

BIRD_QUESTIONS: list[dict[str, Any]] = [
    {
        "question_id": 0,
        "db_id": "california_schools",
        "question": "What is the highest eligible free rate for K-12 students in the schools in "
        "Alameda County?",
        "evidence": "Eligible free rate for K-12 = `Free Meal Count (K-12)` / `Enrollment (K-12)`",
        "SQL": "SELECT `Free Meal Count (K-12)` / `Enrollment (K-12)` FROM frpm WHERE "
        "`CDSCode` IN (SELECT CDSCode FROM schools WHERE County = 'Alameda') ORDER BY "
        "(CAST(`Free Meal Count (K-12)` AS REAL) / `Enrollment (K-12)`) DESC LIMIT 1",
        "difficulty": "simple",
    },
    {
        "question_id": 1,
        "db_id": "debit_card_specializing",
        "question": "How many customers in the SME segment pay in Czech koruna?",
        "evidence": "Czech koruna refers to Currency = 'CZK'",
        "SQL": "SELECT COUNT(CustomerID) FROM customers WHERE Segment = 'SME' AND Currency = 'CZK'",
        "difficulty": "simple",
    },
    {
        "question_id": 2,
        "db_id": "debit_card_specializing",
        "question": "What was the total consumption of the customers paying in EUR in 2012?",
        "evidence": "Year 2012 can be presented as Between 201201 And 201212",
        "SQL": "SELECT SUM(T2.Consumption) FROM customers AS T1 INNER JOIN yearmonth AS T2 ON "
        "T1.CustomerID = T2.CustomerID WHERE T1.Currency = 'EUR' AND T2.Date BETWEEN "
        "'201201' AND '201212'",
        "difficulty": "moderate",
    },
    {
        "question_id": 3,
        "db_id": "debit_card_specializing",
        "question": "Which segment had the least consumption?",
        "evidence": "",
        "SQL": "SELECT T1.Segment FROM customers AS T1 INNER JOIN yearmonth AS T2 ON "
        "T1.CustomerID = T2.CustomerID GROUP BY T1.Segment ORDER BY SUM(T2.Consumption) ASC "
        "LIMIT 1",
        "difficulty": "challenging",
    },
]
BIRD_EXPECTED = [("easy", True), ("easy", False), ("medium", False), ("hard", True)]


def write_sqlite(path: Path, script: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(path)
    try:
        conn.executescript(script)
        conn.commit()
    finally:
        conn.close()
    return path


def _dump(path: Path, data: Any) -> None:
    path.write_text(json.dumps(data, indent=2), encoding="utf-8")


def write_spider(folder: Path) -> Path:
    """An unzipped Spider release in miniature: tables.json, dev.json, database/."""
    folder.mkdir(parents=True, exist_ok=True)
    for db_id, script in SPIDER_DDL.items():
        write_sqlite(folder / "database" / db_id / f"{db_id}.sqlite", script)
    _dump(folder / "tables.json", SPIDER_TABLES)
    _dump(folder / "dev.json", SPIDER_QUESTIONS)
    return folder


def write_bird(folder: Path) -> Path:
    """An unzipped BIRD dev release in miniature: dev.json, dev_tables.json, dev_databases/."""
    folder.mkdir(parents=True, exist_ok=True)
    for db_id, script in BIRD_DDL.items():
        write_sqlite(folder / "dev_databases" / db_id / f"{db_id}.sqlite", script)
    _dump(folder / "dev_tables.json", BIRD_TABLES)
    _dump(folder / "dev.json", BIRD_QUESTIONS)
    return folder
