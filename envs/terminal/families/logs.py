"""Extract numbers from generated logs with grep/awk/sort: error counts (easy),
top clients of an access log (medium), bytes per path over rotated and
gzipped logs within a time window (hard)."""

from __future__ import annotations

import gzip
from collections import Counter

from envgym.envs.terminal.families._common import WORDS, lines, make, rng_for, text_check
from envgym.envs.terminal.task import TerminalTask

FAMILY = "logs"
LEVELS_ = ("INFO", "WARN", "ERROR", "DEBUG")
PATHS = ("/", "/login", "/api/items", "/api/cart", "/static/app.js", "/search", "/health")
VOCABULARY = (
    "ls",
    "cat app.log",
    "head app.log",
    "grep ERROR app.log",
    "wc -l app.log",
    "sort",
    "uniq -c",
    "awk '{print $1}' access.log",
    "mkdir -p report",
)


def _access_line(rng, ips, minute: int) -> tuple[str, tuple]:
    ip, path = rng.choice(ips), rng.choice(PATHS)
    status = rng.choice((200, 200, 200, 200, 301, 404, 500, 503))
    size = rng.randint(100, 9000)
    h, m = divmod(minute, 60)
    stamp = f"12/Mar/2024:{h:02d}:{m:02d}:{rng.randint(0, 59):02d} +0000"
    line = f'{ip} - - [{stamp}] "GET {path} HTTP/1.1" {status} {size}'
    return line, (ip, path, status, size, minute)


def make_task(seed: int, difficulty: str) -> TerminalTask:
    rng = rng_for(FAMILY, seed, difficulty)
    if difficulty == "easy":
        services = rng.sample(WORDS, 5)
        rows = []
        for i in range(rng.randint(40, 70)):
            level = rng.choices(LEVELS_, (5, 2, 2, 1))[0] if i else "ERROR"
            svc = rng.choice(services)
            rows.append(
                (
                    level,
                    svc,
                    f"2024-03-{1 + i // 20:02d}T10:{i % 60:02d}:00Z {level} "
                    f"{svc} {rng.choice(WORDS)} {rng.choice(WORDS)} id={i}",
                )
            )
        errors = [r for r in rows if r[0] == "ERROR"]
        files = {"app.log": lines(r[2] for r in rows)}
        count = str(len(errors))
        services_out = lines(sorted({r[1] for r in errors}))
        instruction = (
            "app.log has one event a line: timestamp, level (INFO, WARN, ERROR or DEBUG), "
            "service, message. Write the number of ERROR events to answer/error_count.txt "
            "(just the number) and the names of the services that logged at least one ERROR "
            "to answer/error_services.txt, one a line, sorted alphabetically, no duplicates."
        )
        checks = (
            text_check("error_count", "answer/error_count.txt", count),
            text_check("error_services", "answer/error_services.txt", services_out),
        )
        solution = (
            "export LC_ALL=C; mkdir -p answer && "
            "grep -c ' ERROR ' app.log > answer/error_count.txt && "
            "awk '$2 == \"ERROR\" {print $3}' app.log | "
            "sort -u > answer/error_services.txt"
        )
    elif difficulty == "medium":
        ips = [f"10.0.{rng.randint(0, 9)}.{rng.randint(1, 254)}" for _ in range(8)]
        weights = [rng.randint(1, 30) for _ in ips]
        rows = []
        for i in range(rng.randint(80, 140)):
            ip = rng.choices(ips, weights)[0]
            rows.append(_access_line(rng, [ip], i))
        counts = Counter(r[1][0] for r in rows)
        top = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:3]
        n5xx = sum(1 for r in rows if r[1][2] >= 500)
        files = {"access.log": lines(r[0] for r in rows)}
        instruction = (
            "access.log is a web server log in the common log format (client IP first, the "
            "status code second to last). Write to report/top_ips.txt the three client IPs "
            "with the most requests, one a line as '<count> <ip>' (a single space), most "
            "requests first, ties broken by the IP in ascending text order. Write to "
            "report/5xx.txt the number of requests whose status is 500 or above."
        )
        checks = (
            text_check("top_ips", "report/top_ips.txt", lines(f"{c} {ip}" for ip, c in top)),
            text_check("count_5xx", "report/5xx.txt", str(n5xx)),
        )
        solution = (
            "export LC_ALL=C; mkdir -p report && awk '{print $1}' access.log | sort | uniq -c | "
            "awk '{print $1, $2}' | sort -k1,1nr -k2,2 | head -3 > report/top_ips.txt && "
            "awk '$(NF-1) >= 500' access.log | wc -l > report/5xx.txt"
        )
    else:
        ips = [f"192.168.{rng.randint(0, 3)}.{rng.randint(1, 254)}" for _ in range(12)]
        start, end = sorted(rng.sample(range(2, 20), 2))
        parts = []
        minute = 0
        for _ in range(3):
            chunk = []
            for _ in range(rng.randint(40, 70)):
                chunk.append(_access_line(rng, ips, minute // 6))
                minute += 1
            parts.append(chunk)
        # app.log.2.gz is the oldest, app.log the newest.
        old, mid, new = parts
        files = {
            "logs/app.log.2.gz": gzip.compress(lines(r[0] for r in old).encode(), mtime=0),
            "logs/app.log.1": lines(r[0] for r in mid),
            "logs/app.log": lines(r[0] for r in new),
        }
        rows = [r[1] for r in old + mid + new]
        window = [r for r in rows if r[2] == 200 and start <= r[4] < end]
        totals = Counter()
        for r in window:
            totals[r[1]] += r[3]
        ranked = sorted(totals.items(), key=lambda kv: (-kv[1], kv[0]))
        distinct = len({r[0] for r in rows if start <= r[4] < end})
        instruction = (
            "logs/ holds a web server's log in the common log format, rotated: app.log (newest), "
            "app.log.1, and app.log.2.gz (gzip-compressed, oldest). All requests are on "
            f"12/Mar/2024 between 00:00 and 00:59. Consider every request whose time is at or "
            f"after 00:{start:02d}:00 and before 00:{end:02d}:00, across all three files. "
            "Write to report/bytes_by_path.csv one line '<path>,<bytes>' per request path: "
            "the total of the response size (the last field) over those requests with status "
            "200, largest total first, ties by path in ascending text order, no header, paths "
            "with no such request left out. Write to report/clients.txt the number of distinct "
            "client IPs that made any request in that window (any status)."
        )
        checks = (
            text_check(
                "bytes_by_path", "report/bytes_by_path.csv", lines(f"{p},{b}" for p, b in ranked)
            ),
            text_check("distinct_clients", "report/clients.txt", str(distinct)),
        )
        solution = (
            "export LC_ALL=C; mkdir -p report && "
            "{ zcat logs/app.log.2.gz; cat logs/app.log.1 logs/app.log; } | "
            f"awk '{{split($4, t, \":\"); m = t[3] + 0; if (m >= {start} && m < {end}) print}}' "
            "> /tmp/window.log && "
            "awk '$(NF-1) == 200 {b[$7] += $NF} END {for (p in b) print p \",\" b[p]}' "
            "/tmp/window.log | sort -t, -k2,2nr -k1,1 > report/bytes_by_path.csv && "
            "awk '{print $1}' /tmp/window.log | sort -u | wc -l > report/clients.txt"
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
