"""Correct a configuration file against a written spec: two wrong values in
an INI file (easy); wrong values, a missing key and a deprecated key (medium);
a nested JSON file with wrong types, a list to extend and deprecated keys
(hard). Settings the spec does not name must stay as they are."""

from __future__ import annotations

import configparser
import copy
import io
import json

from envgym.envs.terminal.families._common import WORDS, check, make, rng_for, write_cmd
from envgym.envs.terminal.task import TerminalTask

FAMILY = "config"
VOCABULARY = (
    "cat app.ini",
    "cat config.json",
    "sed -i 's/=.*/= 1/' app.ini",
    "grep -n port",
    "python3 -m json.tool config.json",
    "ls",
)

INI_CHECK = """
import configparser
cp = configparser.ConfigParser(interpolation=None)
try:
    cp.read_string(read(PATH))
except configparser.Error as e:
    fail(f"{PATH} does not parse as INI: {str(e).splitlines()[0]}")
"""


def _ini(sections: dict[str, dict[str, str]]) -> str:
    cp = configparser.ConfigParser(interpolation=None)
    cp.read_dict(sections)
    out = io.StringIO()
    cp.write(out)
    return out.getvalue()


def _value(rng) -> str:
    return rng.choice((str(rng.randint(1, 500)), rng.choice(WORDS), rng.choice(("on", "off"))))


def make_task(seed: int, difficulty: str) -> TerminalTask:
    rng = rng_for(FAMILY, seed, difficulty)
    if difficulty == "hard":
        return _json_task(rng, seed)
    sections = {
        s: {k: _value(rng) for k in rng.sample(WORDS, rng.randint(3, 5))}
        for s in rng.sample(("server", "database", "cache", "logging", "auth"), 3)
    }
    keys = [(s, k) for s in sections for k in sections[s]]
    wrong = rng.sample(keys, 2 if difficulty == "easy" else 3)
    fixed = copy.deepcopy(sections)
    spec = []
    for s, k in wrong:
        want = f"{rng.choice(WORDS)}-{rng.randint(10, 99)}"
        fixed[s][k] = want
        spec.append(f"in [{s}], {k} must be {want}")
    removed, added = None, None
    if difficulty == "medium":
        s = rng.choice(list(sections))
        removed = (s, "legacy_" + rng.choice(WORDS))
        sections[s][removed[1]] = "yes"
        s2 = rng.choice(list(sections))
        added = (s2, "max_" + rng.choice(WORDS), str(rng.randint(2, 64)))
        while added[1] in sections[s2]:
            added = (s2, added[1] + "s", added[2])
        fixed[s2][added[1]] = added[2]
        spec.append(f"the key {removed[1]} in [{removed[0]}] is deprecated: remove it")
        spec.append(f"in [{added[0]}], add {added[1]} = {added[2]}")
    instruction = (
        "app.ini does not follow this spec. Edit it so that: "
        + "; ".join(spec)
        + ". Every other section, key and value must stay exactly as it is, and app.ini "
        "must still parse as an INI file."
    )
    checks = [
        check(
            f"spec_{i + 1}",
            INI_CHECK
            + """
if not cp.has_option(SECTION, KEY) or cp.get(SECTION, KEY) != WANT:
    fail(f"[{SECTION}] {KEY} is not {WANT}")
""",
            PATH="app.ini",
            SECTION=s,
            KEY=k,
            WANT=fixed[s][k],
        )
        for i, (s, k) in enumerate(wrong)
    ]
    if added:
        checks.append(
            check(
                "spec_added",
                INI_CHECK
                + """
if not cp.has_option(SECTION, KEY) or cp.get(SECTION, KEY) != WANT:
    fail(f"[{SECTION}] {KEY} = {WANT} is missing")
""",
                PATH="app.ini",
                SECTION=added[0],
                KEY=added[1],
                WANT=added[2],
            )
        )
    if removed:
        checks.append(
            check(
                "spec_removed",
                INI_CHECK
                + """
if cp.has_option(SECTION, KEY):
    fail(f"[{SECTION}] {KEY} is still there")
""",
                PATH="app.ini",
                SECTION=removed[0],
                KEY=removed[1],
            )
        )
    fixed_no_legacy = {
        s: {k: v for k, v in kv.items() if (s, k) != removed} for s, kv in fixed.items()
    }
    checks.append(
        check(
            "rest_unchanged",
            INI_CHECK
            + """
got = {s: dict(cp.items(s)) for s in cp.sections()}
for s, kv in WANT.items():
    for k, v in kv.items():
        if [s, k] not in SPEC and got.get(s, {}).get(k) != v:
            fail(f"[{s}] {k} changed or went missing; it should be {v}")
extra = sorted(set(got) - set(WANT))
if extra:
    fail(f"section [{extra[0]}] was added")
if all(got.get(s, {}).get(k) != WANT[s][k] for s, k in SPEC):
    fail("none of the settings the spec names was made")
""",
            PATH="app.ini",
            WANT=fixed_no_legacy,
            SPEC=[list(x) for x in wrong] + ([list(added[:2])] if added else []),
        )
    )
    return make(
        FAMILY,
        seed,
        difficulty,
        instruction=instruction,
        files={"app.ini": _ini(sections)},
        checks=tuple(checks),
        solution=write_cmd("app.ini", _ini(fixed_no_legacy)),
        vocabulary=VOCABULARY,
    )


def _json_task(rng, seed: int) -> TerminalTask:
    port, pool, timeout = rng.randint(1024, 9999), rng.randint(4, 32), rng.randint(5, 60)
    hosts = [f"{w}.internal" for w in rng.sample(WORDS, 3)]
    new_host = f"{rng.choice(WORDS)}-{rng.randint(1, 9)}.internal"
    while new_host in hosts:
        new_host = "x" + new_host
    config = {
        "name": rng.choice(WORDS),
        "server": {"port": str(port), "hosts": hosts, "legacy_tls": True},
        "database": {
            "pool": pool + rng.randint(1, 10),
            "timeout_s": str(timeout),
            "name": rng.choice(WORDS),
        },
        "features": {w: rng.random() < 0.5 for w in rng.sample(WORDS, 3)},
        "legacy_mode": "compat",
    }
    fixed = copy.deepcopy(config)
    fixed["server"]["port"] = port
    fixed["server"]["hosts"] = hosts + [new_host]
    del fixed["server"]["legacy_tls"]
    fixed["database"]["pool"] = pool
    fixed["database"]["timeout_s"] = timeout
    del fixed["legacy_mode"]
    instruction = (
        "config.json does not follow this spec. Edit it so that: server.port is the JSON "
        f"number {port} (not a string); database.timeout_s is the JSON number {timeout}; "
        f"database.pool is {pool}; server.hosts keeps its hosts in order and ends with "
        f'"{new_host}" added; the deprecated keys server.legacy_tls and legacy_mode (at the '
        "top level) are removed. Everything else must stay as it is, and the file must stay "
        "valid JSON."
    )
    load = """
try:
    data = json.loads(read("config.json"))
except ValueError as e:
    fail(f"config.json is not valid JSON: {e}")
def at(*keys):
    node = data
    for key in keys:
        if not isinstance(node, dict) or key not in node:
            fail(f"{'.'.join(keys)} is missing")
        node = node[key]
    return node
"""
    rules = {
        "port_number": f"v = at('server', 'port')\nif type(v) is not int or v != {port}:\n"
        f"    fail(f'server.port is {{v!r}}, not the number {port}')",
        "timeout_number": f"v = at('database', 'timeout_s')\nif type(v) is not int or v != "
        f"{timeout}:\n    fail(f'database.timeout_s is {{v!r}}')",
        "pool_size": f"if at('database', 'pool') != {pool}:\n    fail('database.pool is wrong')",
        "hosts_extended": f"if at('server', 'hosts') != {fixed['server']['hosts']!r}:\n"
        "    fail('server.hosts is not the old hosts plus the new one')",
        "deprecated_removed": "if 'legacy_mode' in data or 'legacy_tls' in at('server'):\n"
        "    fail('a deprecated key is still there')",
        "rest_unchanged": f"want = {fixed!r}\nfor key in want:\n    if key not in ('server', "
        "'database') and data.get(key) != want[key]:\n"
        "        fail(f'{key} changed')\nif at('database', 'name') != "
        "want['database']['name'] or at('name') != want['name']:\n"
        "    fail('a setting outside the spec changed')\n"
        "if data == " + repr(config) + ":\n    fail('nothing was changed')",
    }
    checks = tuple(check(name, load + body) for name, body in rules.items())
    return make(
        FAMILY,
        seed,
        "hard",
        instruction=instruction,
        files={"config.json": json.dumps(config, indent=2) + "\n"},
        checks=checks,
        solution=write_cmd("config.json", json.dumps(fixed, indent=2) + "\n"),
        vocabulary=VOCABULARY,
    )
