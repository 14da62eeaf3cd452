"""Transform CSV data: filter rows (easy), totals per group (medium), a join
of two files with quoted fields (hard)."""

from __future__ import annotations

import csv
import io
from collections import defaultdict

from envgym.envs.terminal.families._common import WORDS, make, rng_for, text_check
from envgym.envs.terminal.task import TerminalTask

FAMILY = "csv"
REGIONS = ("north", "south", "east", "west")
VOCABULARY = (
    "ls",
    "head data/sales.csv",
    "cut -d, -f2 data/sales.csv",
    "sort",
    "mkdir -p out",
    "awk -F, '{print $1}' data/sales.csv",
    "wc -l data/sales.csv",
)


def _csv(rows) -> str:
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerows(rows)
    return out.getvalue()


def make_task(seed: int, difficulty: str) -> TerminalTask:
    rng = rng_for(FAMILY, seed, difficulty)
    header = ["id", "region", "product", "qty", "price"]
    sales = [
        [
            str(100 + i),
            rng.choice(REGIONS),
            rng.choice(WORDS),
            str(rng.randint(1, 20)),
            f"{rng.randint(1, 9999) / 100:.2f}",
        ]
        for i in range(rng.randint(15, 30))
    ]
    files = {"data/sales.csv": _csv([header, *sales])}
    if difficulty == "easy":
        region = sales[0][1]
        kept = [r for r in sales if r[1] == region]
        instruction = (
            "data/sales.csv has a header line and columns id,region,product,qty,price. Write "
            f"out/{region}.csv: the header line, then every row whose region is {region}, in "
            f"their original order, unchanged. Write out/count.txt: the number of {region} rows."
        )
        checks = (
            text_check("filtered_rows", f"out/{region}.csv", _csv([header, *kept])),
            text_check("row_count", "out/count.txt", str(len(kept))),
        )
        solution = (
            f"mkdir -p out && awk -F, 'NR == 1 || $2 == \"{region}\"' data/sales.csv "
            f"> out/{region}.csv && awk -F, '$2 == \"{region}\"' data/sales.csv | "
            "wc -l > out/count.txt"
        )
    elif difficulty == "medium":
        cents = defaultdict(int)
        qty = defaultdict(int)
        for r in sales:
            cents[r[1]] += int(r[3]) * round(float(r[4]) * 100)
            qty[r[1]] += int(r[3])
        rows = [["region", "total", "qty"]] + [
            [g, f"{cents[g] // 100}.{cents[g] % 100:02d}", str(qty[g])] for g in sorted(cents)
        ]
        instruction = (
            "data/sales.csv has a header line and columns id,region,product,qty,price. Write "
            "out/totals.csv with the header 'region,total,qty' and one line per region that "
            "appears: total is the sum of qty*price over its rows, written with exactly two "
            "decimals (like 1234.50), qty the sum of its qty; lines sorted by region name."
        )
        checks = (text_check("totals", "out/totals.csv", _csv(rows)),)
        checks += (text_check("regions_listed", "out/regions.txt", "\n".join(sorted(cents))),)
        instruction += " Also write out/regions.txt: those region names, one a line, sorted."
        solution = (
            "export LC_ALL=C; mkdir -p out && { echo region,total,qty; awk -F, 'NR > 1 "
            "{c[$2] += $4 * int($5 * 100 + 0.5); q[$2] += $4} END {for (g in c) "
            'printf "%s,%d.%02d,%d\\n", g, int(c[g] / 100), c[g] % 100, q[g]}\' data/sales.csv '
            "| sort; } > out/totals.csv && tail -n +2 out/totals.csv | cut -d, -f1 "
            "> out/regions.txt"
        )
    else:
        countries = rng.sample(["Chile", "Kenya", "Norway", "Peru", "Japan", "Ghana"], 4)
        customers = []
        for i in range(rng.randint(6, 10)):
            name = f"{rng.choice(WORDS).capitalize()}, {rng.choice(WORDS).capitalize()} Ltd"
            customers.append([str(i + 1), name, rng.choice(countries)])
        orders = []
        for j in range(rng.randint(20, 35)):
            orders.append(
                [
                    f"A{j:03d}",
                    rng.choice(customers)[0],
                    f"{rng.randint(100, 99999) / 100:.2f}",
                    rng.choice(("paid", "paid", "refunded", "pending")),
                ]
            )
        orders[0][3] = "paid"
        country_of = {c[0]: c[2] for c in customers}
        total = defaultdict(int)
        count = defaultdict(int)
        for o in orders:
            if o[3] == "paid":
                total[country_of[o[1]]] += round(float(o[2]) * 100)
                count[country_of[o[1]]] += 1
        ranked = sorted(total, key=lambda c: (-total[c], c))
        rows = [["country", "total", "orders"]] + [
            [c, f"{total[c] // 100}.{total[c] % 100:02d}", str(count[c])] for c in ranked
        ]
        files["data/customers.csv"] = _csv([["id", "name", "country"], *customers])
        files["data/orders.csv"] = _csv([["order_id", "customer_id", "amount", "status"], *orders])
        del files["data/sales.csv"]
        instruction = (
            "data/customers.csv (id,name,country) and data/orders.csv "
            "(order_id,customer_id,amount,status) are CSV files with a header line; names are "
            "quoted and contain commas. Write out/paid_by_country.csv with the header "
            "'country,total,orders' and one line per country that has at least one order "
            "whose status is paid: total is the sum of the amounts of its customers' paid "
            "orders with exactly two decimals, orders their number; largest total first, "
            "ties by country name. Write out/refunded.txt: the number of orders whose status "
            "is refunded."
        )
        script = (
            "import csv\nfrom collections import defaultdict\n"
            "cc = {r['id']: r['country'] for r in csv.DictReader(open('data/customers.csv'))}\n"
            "t, n = defaultdict(int), defaultdict(int)\n"
            "for r in csv.DictReader(open('data/orders.csv')):\n"
            "    if r['status'] == 'paid':\n"
            "        t[cc[r['customer_id']]] += round(float(r['amount']) * 100)\n"
            "        n[cc[r['customer_id']]] += 1\n"
            "with open('out/paid_by_country.csv', 'w') as f:\n"
            "    f.write('country,total,orders\\n')\n"
            "    for c in sorted(t, key=lambda c: (-t[c], c)):\n"
            "        f.write(f'{c},{t[c] // 100}.{t[c] % 100:02d},{n[c]}\\n')\n"
        )
        checks = (
            text_check("paid_by_country", "out/paid_by_country.csv", _csv(rows)),
            text_check(
                "refunded_count", "out/refunded.txt", str(sum(o[3] == "refunded" for o in orders))
            ),
        )
        solution = (
            f"mkdir -p out && python3 - <<'PY'\n{script}PY\n"
            "awk -F, '$NF == \"refunded\"' data/orders.csv | wc -l > out/refunded.txt"
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
