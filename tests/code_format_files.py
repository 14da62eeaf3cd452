"""Small files in the published layouts of the standard code datasets (APPS,
TACO, CodeContests, LiveCodeBench, MBPP, MBPP+, HumanEval+), written the way
each project writes them, with the fields that trip loaders: JSON text
inside JSON, cases as lists of lines, LiveCodeBench's compressed pickles, a
Python 2 solution before the Python 3 one, MBPP's CRLF code, LeetCode's
``class Solution``.

`FILES` maps a file name to its records; `write_format` writes one (JSONL,
``.jsonl.gz``, JSON list or parquet by its suffix); `RIGHT` and `WRONG` hold a
correct and a wrong submission per task id. ``python tests/code_format_files.py``
rewrites tests/data/code_formats/, the copies the contract and reward-integrity
suites read at import (test_code_loaders checks they match these records).
"""

from __future__ import annotations

import base64
import gzip
import json
import pickle
import zlib
from pathlib import Path

DATA = Path(__file__).resolve().parent / "data" / "code_formats"


def lcb_compress(cases: list[dict]) -> str:
    """LiveCodeBench's private_test_cases: base64(zlib(pickle(JSON text)))."""
    return base64.b64encode(zlib.compress(pickle.dumps(json.dumps(cases)))).decode()


# A product, not a sum: Code-v0's own example answer for stdin problems sums the line.
PRODUCT_PROGRAM = "a, b = map(int, input().split())\nprint(a * b)\n"
PRODUCT_WRONG = "a, b = map(int, input().split())\nprint(a + b)\n"

APPS = [
    {
        "problem_id": 0,
        "question": "Read two integers a and b on one line and print a * b.",
        "solutions": json.dumps(
            [PRODUCT_PROGRAM, "import math\nprint(math.prod(map(int, input().split())))"]
        ),
        "input_output": json.dumps(
            {"inputs": ["1 2\n", "10 -3\n", "3 3\n"], "outputs": ["2\n", "-30\n", "9\n"]}
        ),
        "difficulty": "introductory",
        "url": "https://example.org/0",
        "starter_code": "",
    },
    {
        "problem_id": 1,
        "question": "The first line holds n, the second n integers: print their sum.",
        "solutions": json.dumps(["input()\nprint(sum(map(int, input().split())))\n"]),
        # APPS writes some cases as lists of lines.
        "input_output": json.dumps(
            {"inputs": [["1", "-5"], ["3", "1 2 3"]], "outputs": [["-5"], ["6"]]}
        ),
        "difficulty": "interview",
        "url": "https://example.org/1",
        "starter_code": "",
    },
    {
        "problem_id": 2,
        "question": "Return the smallest and the largest item of a list, in that order.",
        "solutions": json.dumps(["def min_max(xs):\n    return min(xs), max(xs)\n"]),
        # Call-based: inputs are argument lists; outputs wrapped in a list, as APPS does.
        "input_output": json.dumps(
            {"fn_name": "min_max", "inputs": [[[5]], [[3, 1, 2]]], "outputs": [[[5, 5]], [[1, 3]]]}
        ),
        "difficulty": "interview",
        "url": "https://example.org/2",
        "starter_code": "def min_max(xs):\n\t",
    },
]

TACO = [
    {
        "question": "Given a list of integers nums, return how many are even.",
        "solutions": json.dumps(
            [
                "class Solution:\n    def countEven(self, nums: List[int]) -> int:\n"
                "        return sum(1 for x in nums if x % 2 == 0)\n"
            ]
        ),
        "starter_code": "class Solution:\n    def countEven(self, nums: List[int]) -> int:\n\t\t",
        "input_output": json.dumps(
            {"fn_name": "countEven", "inputs": [[[]], [[1, 2, 4]]], "outputs": [0, 2]}
        ),
        "difficulty": "EASY",
        "raw_tags": "[]",
        "name": None,
        "source": "leetcode",
        "tags": "[]",
        "skill_types": "[]",
        "url": "https://leetcode.com/problems/x",
        "Expected Auxiliary Space": None,
        "time_limit": None,
        "date": None,
        "picture_num": "0",
        "memory_limit": None,
        "Expected Time Complexity": None,
    },
    {
        "question": "Print the word read from stdin reversed.",
        "solutions": json.dumps(["print raw_input()[::-1]\n", "print(input()[::-1])\n"]),
        "starter_code": "",
        "input_output": json.dumps({"inputs": ["x\n", "abc\n"], "outputs": ["x\n", "cba\n"]}),
        "difficulty": "MEDIUM_HARD",
        # TACO writes limits as text; a Python 2 solution comes first.
        "time_limit": "2 seconds",
        "memory_limit": "64 megabytes",
        "source": "codechef",
        "skill_types": "[]",
    },
]

CODECONTESTS = [
    {
        "name": "1000_A. Product of Two",
        "description": "Print the product of the two integers on the only line.",
        "public_tests": {"input": ["1 2\n"], "output": ["2\n"]},
        "private_tests": {"input": ["5 5\n"], "output": ["25\n"]},
        "generated_tests": {"input": ["-1 1\n", "100 -7\n"], "output": ["-1\n", "-700\n"]},
        "source": 2,
        "difficulty": 7,
        # A C++ and a Python 2 solution before the Python 3 one (language 3).
        "solutions": {
            "language": [2, 1, 3],
            "solution": [
                "int main(){}",
                "a, b = map(int, raw_input().split())\nprint a * b",
                "a, b = map(int, input().split())\nprint(a * b)",
            ],
        },
        "incorrect_solutions": {"language": [3], "solution": [PRODUCT_WRONG]},
        "cf_contest_id": 1000,
        "cf_index": "A",
        "cf_points": 500.0,
        "cf_rating": 800,
        "cf_tags": ["math"],
        "is_description_translated": False,
        "untranslated_description": "",
        "time_limit": {"seconds": 2, "nanos": 500000000},
        "memory_limit_bytes": 268435456,
        "input_file": "",
        "output_file": "",
    },
    {
        "name": "1001_B. Only C++",
        "description": "Print the maximum of the integers on the line.",
        "public_tests": {"input": ["1 9 3\n"], "output": ["9\n"]},
        "private_tests": {"input": [], "output": []},
        "generated_tests": {"input": [], "output": []},
        "source": 2,
        "difficulty": 9,
        "solutions": {"language": [2], "solution": ["int main(){}"]},
        "incorrect_solutions": {"language": [], "solution": []},
        "cf_contest_id": 1001,
        "cf_index": "B",
        "cf_points": 1000.0,
        "cf_rating": 0,
        "cf_tags": [],
        "is_description_translated": False,
        "untranslated_description": "",
        "time_limit": None,
        "memory_limit_bytes": 0,
        "input_file": "",
        "output_file": "",
    },
]

LCB_FUNCTIONAL_PUBLIC = [{"input": "[1, 2, 3]\n2", "output": "5", "testtype": "functional"}]
LCB_FUNCTIONAL_PRIVATE = [
    {"input": "[4, -1, 7]\n1", "output": "7", "testtype": "functional"},
    {"input": "[2, 2]\n2", "output": "4", "testtype": "functional"},
]
LIVECODEBENCH = [
    {
        "question_title": "Add",
        "question_content": "Read a and b and print a * b.",
        "platform": "atcoder",
        "question_id": "abc001_a",
        "contest_id": "abc001",
        "contest_date": "2023-08-01T00:00:00",
        "starter_code": "",
        "difficulty": "easy",
        "public_test_cases": json.dumps([{"input": "1 2\n", "output": "2\n", "testtype": "stdin"}]),
        "private_test_cases": lcb_compress(
            [
                {"input": "4 4\n", "output": "16\n", "testtype": "stdin"},
                {"input": "-9 2\n", "output": "-18\n", "testtype": "stdin"},
            ]
        ),
        "metadata": "{}",
    },
    {
        "question_title": "Largest sum of k",
        "question_content": "Return the largest sum of k items of nums.",
        "platform": "leetcode",
        "question_id": "3000",
        "contest_id": "weekly-contest-1",
        "contest_date": "2023-08-02T00:00:00",
        "starter_code": "class Solution:\n    def maxSum(self, nums: List[int], k: int) -> int:\n"
        "        ",
        "difficulty": "medium",
        "public_test_cases": json.dumps(LCB_FUNCTIONAL_PUBLIC),
        # Uncompressed JSON: some re-releases store the private cases plainly.
        "private_test_cases": json.dumps(LCB_FUNCTIONAL_PRIVATE),
        "metadata": json.dumps({"func_name": "maxSum"}),
    },
]

MBPP = [
    {
        "task_id": 11,
        "text": "Write a python function to remove first and last occurrence of a given "
        "character from the string.",
        # MBPP's code uses CRLF line ends.
        "code": "def remove_Occ(s,ch): \r\n    for i in range(len(s)): \r\n"
        "        if (s[i] == ch): \r\n            s = s[0 : i] + s[i + 1:] \r\n"
        "            break\r\n"
        "    for i in range(len(s) - 1,-1,-1):  \r\n        if (s[i] == ch): \r\n"
        "            s = s[0 : i] + s[i + 1:] \r\n            break\r\n    return s ",
        "test_list": [
            'assert remove_Occ("hello","l") == "heo"',
            'assert remove_Occ("abcda","a") == "bcd"',
            'assert remove_Occ("PHP","P") == "H"',
        ],
        "test_setup_code": "",
        "challenge_test_list": ['assert remove_Occ("hellolloll","l") == "helollol"'],
    },
    {
        "task_id": 17,
        "text": "Write a function to find the perimeter of a square.",
        "code": "def square_perimeter(a):\r\n  perimeter=4*a\r\n  return perimeter",
        "test_list": [
            "assert square_perimeter(10)==40",
            "assert square_perimeter(5)==20",
            "assert square_perimeter(SIDE)==16",
        ],
        "test_setup_code": "SIDE = 4",
        "challenge_test_list": [],
    },
]

#: MBPP's sanitized set (Hugging Face's "sanitized" config): "prompt", not "text".
MBPP_SANITIZED = [
    {
        "source_file": "Benchmark Questions Verification V2.ipynb",
        "task_id": 2,
        "prompt": "Write a function to find the shared elements from the given two lists.",
        "code": "def similar_elements(test_tup1, test_tup2):\n"
        "  res = tuple(set(test_tup1) & set(test_tup2))\n  return (res) ",
        "test_imports": ["import math"],
        "test_list": [
            "assert set(similar_elements((3, 4, 5, 6),(5, 7, 4, 10))) == set((4, 5))",
            "assert math.isclose(len(similar_elements((1, 2, 3, 4),(5, 4, 3, 7))), 2)",
        ],
    },
]

HUMANEVAL = [
    {
        "task_id": "HumanEval/53",
        "prompt": '\n\ndef add(x: int, y: int):\n    """Add two numbers x and y\n'
        '    >>> add(2, 3)\n    5\n    """\n',
        "canonical_solution": "    return x + y\n",
        "test": "\n\nMETADATA = {}\n\n\ndef check(candidate):\n"
        "    import random\n\n    assert candidate(0, 1) == 1\n    assert candidate(1, 0) == 1\n"
        "    assert candidate(2, 3) == 5\n\n    for i in range(20):\n"
        "        x, y = random.randint(0, 1000), random.randint(0, 1000)\n"
        "        assert candidate(x, y) == x + y\n\n",
        "entry_point": "add",
    },
    {
        "task_id": "HumanEval/34",
        "prompt": '\n\ndef unique(l: list):\n    """Return sorted unique elements in a list\n'
        '    >>> unique([5, 3, 5, 2])\n    [2, 3, 5]\n    """\n',
        "canonical_solution": "    return sorted(list(set(l)))\n",
        "test": "\n\nMETADATA = {}\n\n\ndef check(candidate):\n"
        "    assert candidate([5, 3, 5, 2, 3, 3, 9, 0, 123]) == [0, 2, 3, 5, 9, 123]\n"
        "    assert candidate([1]) == [1]\n\n",
        "entry_point": "unique",
    },
]

MBPPPLUS = [
    {
        "task_id": "Mbpp/2",
        "prompt": '"""\nWrite a function to find the shared elements from the given two lists.\n'
        'assert set(similar_elements((3, 4, 5, 6),(5, 7, 4, 10))) == set((4, 5))\n"""\n',
        "entry_point": "similar_elements",
        "canonical_solution": "\ndef similar_elements(test_tup1, test_tup2):\n"
        "  return tuple(set(test_tup1) & set(test_tup2))\n",
        "base_input": [[[3, 4, 5, 6], [5, 7, 4, 10]], [[1, 2, 3, 4], [5, 4, 3, 7]]],
        "plus_input": [[[], [1]], [[1, 1, 2], [2, 2]]],
        "atol": 0,
        "test_imports": [],
        "test_list": ["assert set(similar_elements((3, 4, 5, 6),(5, 7, 4, 10))) == set((4, 5))"],
    },
    {
        "task_id": "Mbpp/139",
        "prompt": '"""\nWrite a function to find the circumference of a circle.\n'
        "assert math.isclose(circle_circumference(10), 62.830000000000005, rel_tol=0.001)\n"
        '"""\n',
        "entry_point": "circle_circumference",
        "canonical_solution": "\nimport math\ndef circle_circumference(r):\n"
        "  return 2 * math.pi * r\n",
        "base_input": [[10], [5]],
        "plus_input": [[0.5], [1e-3]],
        "atol": 1e-6,
        "test_imports": ["import math"],
        "test_list": [],
    },
]

HUMANEVALPLUS = [
    {
        "task_id": "HumanEval/0",
        "prompt": "from typing import List\n\n\ndef has_close_elements(numbers: List[float], "
        'threshold: float) -> bool:\n    """ Check if any two numbers are closer than '
        "threshold.\n    >>> has_close_elements([1.0, 2.0, 3.0], 0.5)\n    False\n"
        '    """\n',
        "canonical_solution": "\n    sorted_numbers = sorted(numbers)\n"
        "    for i in range(len(sorted_numbers) - 1):\n"
        "        if sorted_numbers[i + 1] - sorted_numbers[i] < threshold:\n"
        "            return True\n\n    return False\n\n",
        "entry_point": "has_close_elements",
        "test": "\ndef check(candidate):\n    assert True\n",
        "contract": "",
        "base_input": [[[1.0, 2.0, 3.0], 0.5], [[1.0, 2.8, 3.0, 4.0, 5.0, 2.0], 0.3]],
        "plus_input": [[[], 1.0], [[1.0, 1.0], 0.0], [[-1.5, 9.0, -1.4], 0.2]],
        "atol": 0,
    },
    {
        "task_id": "HumanEval/2",
        "prompt": 'def truncate_number(number: float) -> float:\n    """ The decimal part.\n'
        '    >>> truncate_number(3.5)\n    0.5\n    """\n',
        "canonical_solution": "    return number % 1.0\n",
        "entry_point": "truncate_number",
        "test": "",
        "contract": "",
        "base_input": [[3.5], [1.33]],
        "plus_input": [[123.456], [1e-9]],
        "atol": 1e-6,
    },
]

#: file name -> records, one file per format (TACO too).
FILES: dict[str, list[dict]] = {
    "apps.jsonl": APPS,
    "taco.json": TACO,
    "codecontests.parquet": CODECONTESTS,
    "livecodebench.jsonl": LIVECODEBENCH,
    "mbpp.jsonl": MBPP,
    "mbpp-sanitized.parquet": MBPP_SANITIZED,
    "humaneval.jsonl": HUMANEVAL,
    "mbppplus.jsonl.gz": MBPPPLUS,
    "humanevalplus.jsonl": HUMANEVALPLUS,
}

LCB_MAXSUM = "from typing import List\n\ndef maxSum(nums, k):\n    return sum(sorted(nums)[-k:])\n"
#: A right submission (where the file has no reference) and a wrong one, per task id.
RIGHT = {"livecodebench/abc001_a": PRODUCT_PROGRAM, "livecodebench/3000": LCB_MAXSUM}
WRONG = {
    "apps/0": PRODUCT_WRONG,
    "apps/1": "input()\nprint(max(map(int, input().split())))\n",
    "apps/2": "def min_max(xs):\n    return [max(xs), min(xs)]\n",
    "taco/taco-0": "def countEven(nums):\n    return len(nums)\n",
    "taco/taco-1": "print(input())\n",
    "codecontests/1000_A": PRODUCT_WRONG,
    "codecontests/1001_B": "print(min(map(int, input().split())))\n",
    "livecodebench/abc001_a": PRODUCT_WRONG,
    "livecodebench/3000": "def maxSum(nums, k):\n    return sum(nums[:k])\n",
    "mbpp/11": "def remove_Occ(s, ch):\n    return s.replace(ch, '')\n",
    "mbpp/17": "def square_perimeter(a):\n    return a * a\n",
    "mbpp/2": "def similar_elements(a, b):\n    return tuple(a)\n",
    "HumanEval/53": "def add(x, y):\n    return x - y if x < 100 else x + y\n",
    "HumanEval/34": "def unique(l):\n    return sorted(l)\n",
    "mbppplus/2": "def similar_elements(a, b):\n    return tuple(a)\n",
    "mbppplus/139": "def circle_circumference(r):\n    return 3.14 * 2 * r\n",
    "humanevalplus/0": "def has_close_elements(numbers, threshold):\n    return False\n",
    "humanevalplus/2": "def truncate_number(number):\n    return round(number % 1.0, 1)\n",
}


def write_format(name: str, path: Path, records: list[dict] | None = None) -> Path:
    """Write ``records`` (default: FILES[name]) to ``path`` in the layout its suffix names."""
    records = FILES[name] if records is None else records
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.name.endswith(".parquet"):
        import pyarrow as pa
        import pyarrow.parquet as pq

        pq.write_table(pa.Table.from_pylist(records), path)
    elif path.name.endswith(".json"):
        path.write_text(json.dumps(records, indent=1), encoding="utf-8")
    else:
        text = "".join(json.dumps(r) + "\n" for r in records)
        if path.name.endswith(".gz"):
            path.write_bytes(gzip.compress(text.encode("utf-8"), mtime=0))
        else:
            path.write_text(text, encoding="utf-8")
    return path


if __name__ == "__main__":
    for file_name in FILES:
        print(write_format(file_name, DATA / file_name))
