"""Extract and transform JSON (the image has no jq; python3 and awk are there):
a field of matching records (easy), counts over JSON lines (medium), a nested
inventory flattened, filtered and totalled (hard)."""

from __future__ import annotations

import json
from collections import Counter

from envgym.envs.terminal.families._common import (
    WORDS,
    json_check,
    lines,
    make,
    rng_for,
    text_check,
)
from envgym.envs.terminal.task import TerminalTask

FAMILY = "json"
TYPES = ("click", "view", "purchase", "signup", "logout")
VOCABULARY = (
    "ls",
    "cat users.json",
    "head events.jsonl",
    "grep error events.jsonl",
    "python3 -c 'import json'",
    "wc -l events.jsonl",
    "sort",
)


def make_task(seed: int, difficulty: str) -> TerminalTask:
    rng = rng_for(FAMILY, seed, difficulty)
    if difficulty == "easy":
        names = rng.sample(WORDS, rng.randint(7, 12))
        users = [
            {"name": n, "age": rng.randint(18, 80), "active": rng.random() < 0.5} for n in names
        ]
        users[0]["active"], users[1]["active"] = True, False
        files = {"users.json": json.dumps(users, indent=2) + "\n"}
        active = [u["name"] for u in users if u["active"]]
        instruction = (
            "users.json is a JSON list of users with fields name, age and active (true or "
            "false). Write active.txt: the names of the active users, one a line, in the "
            "order of the list. Write oldest.txt: the name of the oldest active user (if "
            "several share that age, the first of them in the list)."
        )
        oldest = max((u for u in users if u["active"]), key=lambda u: u["age"])["name"]
        checks = (
            text_check("active_names", "active.txt", lines(active)),
            text_check("oldest_active", "oldest.txt", oldest),
        )
        solution = (
            "python3 -c \"import json; u = [x for x in json.load(open('users.json')) "
            "if x['active']]; "
            "open('active.txt', 'w').write(''.join(x['name'] + '\\n' for x in u)); "
            "open('oldest.txt', 'w').write(max(u, key=lambda x: x['age'])['name'] + '\\n')\""
        )
    elif difficulty == "medium":
        events = []
        for i in range(rng.randint(30, 60)):
            level = "error" if rng.random() < 0.15 else "info"
            events.append(
                {
                    "id": f"ev{1000 + i}",
                    "type": rng.choice(TYPES),
                    "level": level,
                    "user": rng.choice(WORDS),
                }
            )
        k = rng.randrange(3, 15)
        events[k]["level"] = "error"
        files = {"events.jsonl": "".join(json.dumps(e) + "\n" for e in events)}
        counts = dict(Counter(e["type"] for e in events))
        first = next(e["id"] for e in events if e["level"] == "error")
        instruction = (
            "events.jsonl holds one JSON object a line with fields id, type, level, user. "
            "Write counts.json: a JSON object mapping each event type that occurs to its "
            "number of events. Write first_error.txt: the id of the first event (in file "
            "order) whose level is error."
        )
        checks = (
            json_check("type_counts", "counts.json", counts),
            text_check("first_error", "first_error.txt", first),
        )
        solution = (
            "python3 - <<'PY'\nimport json, collections\n"
            "ev = [json.loads(l) for l in open('events.jsonl') if l.strip()]\n"
            "json.dump(collections.Counter(e['type'] for e in ev), open('counts.json', 'w'))\n"
            "open('first_error.txt', 'w').write(next(e['id'] for e in ev "
            "if e['level'] == 'error') + '\\n')\nPY"
        )
    else:
        tags = rng.sample(WORDS, 5)
        threshold = rng.randint(5, 15)
        stock = {"warehouses": []}
        low, tag_totals = [], Counter()
        for w in rng.sample(["oslo", "lima", "pune", "kobe", "reno"], 3):
            items = []
            for j in range(rng.randint(4, 8)):
                item = {
                    "sku": f"{w[:2].upper()}-{rng.randint(100, 999)}-{j}",
                    "qty": rng.randint(0, 40),
                    "tags": rng.sample(tags, rng.randint(0, 2)),
                }
                items.append(item)
                if item["qty"] < threshold:
                    low.append({"warehouse": w, "sku": item["sku"], "qty": item["qty"]})
                for t in item["tags"]:
                    tag_totals[t] += item["qty"]
            stock["warehouses"].append({"name": w, "items": items})
        if not low:
            it = stock["warehouses"][0]["items"][0]
            for t in it["tags"]:
                tag_totals[t] -= it["qty"]
            it["qty"] = 0
            for t in it["tags"]:
                tag_totals[t] += 0
            low.append({"warehouse": stock["warehouses"][0]["name"], "sku": it["sku"], "qty": 0})
        low.sort(key=lambda r: (r["qty"], r["sku"]))
        files = {"inventory.json": json.dumps(stock, indent=1) + "\n"}
        instruction = (
            'inventory.json is {"warehouses": [{"name", "items": [{"sku", "qty", '
            '"tags"}]}]}. Write low_stock.json: a JSON list of objects {"warehouse": name, '
            f'"sku": sku, "qty": qty}} for every item with qty below {threshold}, sorted by '
            "qty then by sku. Write tag_totals.json: a JSON object mapping every tag that some "
            "item carries to the total qty of the items that carry it."
        )
        checks = (
            json_check("low_stock", "low_stock.json", low),
            json_check("tag_totals", "tag_totals.json", dict(tag_totals)),
        )
        solution = (
            "python3 - <<'PY'\nimport json, collections\n"
            "inv = json.load(open('inventory.json'))\nlow, tags = [], collections.Counter()\n"
            "for w in inv['warehouses']:\n    for i in w['items']:\n"
            f"        if i['qty'] < {threshold}:\n"
            "            low.append({'warehouse': w['name'], 'sku': i['sku'], 'qty': i['qty']})\n"
            "        for t in i['tags']:\n            tags[t] += i['qty']\n"
            "low.sort(key=lambda r: (r['qty'], r['sku']))\n"
            "json.dump(low, open('low_stock.json', 'w'))\n"
            "json.dump(tags, open('tag_totals.json', 'w'))\nPY"
        )
    return make(
        FAMILY,
        seed,
        difficulty,
        instruction=instruction,
        files=files,
        checks=checks,
        solution=solution,
        vocabulary=VOCABULARY,
    )
