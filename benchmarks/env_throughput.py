"""Steps per second and reset latency for every envgym id.

Each env is measured unwrapped and through `gym.make` (the wrappers a user
gets). Each reply names a move drawn at random from the step's own
``info["admissible_actions"]`` (uniform draws made before timing), so every
reply is legal and the env does its full work; envs with open-text actions
(Search, GuessNumber) get replies drawn from a fixed list of searches and
answers instead; shell envs (Terminal, RepoFix: ids tagged ``terminal``) get
``<bash>`` commands drawn from the current task's ``vocabulary`` (what the
random agent types), each run in the episode's sandboxed shell on the
``--sandbox`` backend. Game rows take a twentieth of the steps (each game step also
plays the opponents), Search rows a hundredth (each search step retrieves
from 100,000 documents), shell rows a thousandth (each step is a command in
a sandbox; the first of each pass also takes the shell from the pool and runs
the task's set-up) and a tenth of the resets (a shell env's reset generates
the task; its shell is taken at the first command). Steps/s is
the best of three passes; reset latency percentiles use every reset.
Gymnasium's own FrozenLake-v1, an integer-action toy env, is measured in the
same run as the baseline, so the ratios hold on a noisy machine.

A Shop section follows: on the default 50,000-product catalogue, reset
latency and the latency of a search step (``search[...]`` with the
instruction's words, BM25 over the catalogue, the first results page
rendered), and for 50,000 and 500,000 products the time to generate the
catalogue, build its search index and load the index from the disk cache in
a fresh process. Ids whose data is not on this machine (WebShop-v0) are left
out.

An SQL-v0 section follows: the time to generate each domain's database, and
per engine (SQLite; PostgreSQL too with ``--postgres URL``) and level the
reset latency and the latency of an ``execute_sql`` step running the task's
gold query; on PostgreSQL also each database's first session, which loads it
into its schema.

A tool-world section follows (Retail-v0, Airline-v0: every id tagged
``customer-service``): per difficulty, over whole oracle episodes (the gold
dialogue: questions, lookups, confirmations, writes, the closing message,
graded at the end), reset and step latency percentiles, the store's size, and
the latency of ``snapshot()`` and ``restore()`` taken mid-episode (each a copy
of the SQLite store by value).

    python benchmarks/env_throughput.py            # every id, every difficulty
    python benchmarks/env_throughput.py --quick    # fewer samples
    python benchmarks/env_throughput.py --ids envgym/Shop-v0 --shop-sizes 50000 500000
    python benchmarks/env_throughput.py --ids envgym/Terminal-v0 --sandbox bwrap
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import subprocess
import sys
import tempfile
import time

import gymnasium as gym
import numpy as np

import envgym
from envgym.core import MAX_EPISODE_LENGTH
from envgym.registry import missing_data

#: Replies for envs that list no admissible actions: searches and answers.
OPEN_TEXT_REPLIES = (
    "<search>founded city</search>",
    "<search>born year river</search>",
    "<answer>nobody</answer>",
    "<answer>50</answer>",
)


def random_reply(env: gym.Env, info: dict, u: float) -> str:
    """A reply drawn with ``u`` in [0, 1): an admissible move, else a command of
    the task's vocabulary (shell envs), else a search or an answer."""
    moves = info.get("admissible_actions")
    if moves:
        return f"<answer>{moves[int(u * len(moves))]}</answer>"
    vocabulary = getattr(getattr(env.unwrapped, "task", None), "vocabulary", None)
    if vocabulary:
        return f"<bash>{vocabulary[int(u * len(vocabulary))]}</bash>"
    return OPEN_TEXT_REPLIES[int(u * len(OPEN_TEXT_REPLIES))]


def measure_steps(env: gym.Env, draws: list[float], seed: int = 0, repeats: int = 3) -> float:
    """Steps per second, counting only time spent inside step(); each reply names
    a move drawn (with `draws`) from the current ``info["admissible_actions"]``.
    The best of `repeats` passes, since a shared machine only makes a pass slower."""
    clock = time.perf_counter
    best = 0.0
    for attempt in range(repeats):
        _, info = env.reset(seed=seed + attempt)
        busy = 0.0
        for u in draws:
            reply = random_reply(env, info, u)
            start = clock()
            _, _, terminated, truncated, info = env.step(reply)
            busy += clock() - start
            if terminated or truncated:
                _, info = env.reset()
        best = max(best, len(draws) / busy)
    return best


def measure_int_steps(env: gym.Env, actions: list[int], repeats: int = 3) -> float:
    """The baseline's steps per second, timed the same way, with integer actions."""
    clock = time.perf_counter
    best = 0.0
    for attempt in range(repeats):
        env.reset(seed=attempt)
        busy = 0.0
        for action in actions:
            start = clock()
            _, _, terminated, truncated, _ = env.step(action)
            busy += clock() - start
            if terminated or truncated:
                env.reset()
        best = max(best, len(actions) / busy)
    return best


def measure_resets(env: gym.Env, count: int) -> list[float]:
    """Reset latencies in milliseconds, each with a new seed."""
    times = []
    clock = time.perf_counter
    for seed in range(count):
        start = clock()
        env.reset(seed=seed)
        times.append((clock() - start) * 1000)
    return times


def percentile(values: list[float], q: float) -> float:
    return float(np.percentile(values, q))


def measure_shop_steps(env: gym.Env, count: int) -> tuple[list[float], list[float]]:
    """Shop reset and search-step latencies (ms): each episode resets, then searches
    with the admissible search (the instruction's words) and shows page 1."""
    resets, searches = [], []
    clock = time.perf_counter
    for seed in range(count):
        start = clock()
        _, info = env.reset(seed=seed)
        resets.append((clock() - start) * 1000)
        search = info["admissible_actions"][0]
        start = clock()
        env.step(search)
        searches.append((clock() - start) * 1000)
    return resets, searches


_INDEX_TIMING = """
import json, sys, time
t0 = time.perf_counter()
from envgym.envs.shop.catalogue import GeneratedCatalogue
from envgym.envs.shop.index import shop_index
t1 = time.perf_counter()
catalogue = GeneratedCatalogue(int(sys.argv[1]), 0)
t2 = time.perf_counter()
index = shop_index(catalogue, sys.argv[2])
t3 = time.perf_counter()
index.search("long lasting bottle", k=50)
print(json.dumps({"generate_s": t2 - t1, "index_s": t3 - t2, "from_cache": index.from_cache}))
"""


def measure_shop_index(num_products: int) -> dict[str, float]:
    """Catalogue generation, index build (empty cache) and index load (a second fresh
    process, same cache), in seconds."""
    with tempfile.TemporaryDirectory() as cache:
        runs = []
        for _ in range(2):
            out = subprocess.run(
                [sys.executable, "-c", _INDEX_TIMING, str(num_products), cache],
                capture_output=True,
                text=True,
                check=True,
            )
            runs.append(json.loads(out.stdout))
    build, load = runs
    assert not build["from_cache"] and load["from_cache"]
    return {
        "products": num_products,
        "generate_s": build["generate_s"],
        "build_s": build["index_s"],
        "load_s": load["index_s"],
        "load_generate_s": load["generate_s"],
    }


def shop_section(resets: int, sizes: list[int]) -> dict[str, object]:
    """The Shop measurements: latencies on the default catalogue, index timings."""
    env = gym.make("envgym/Shop-v0")
    env.reset(seed=0)  # the catalogue and index are loaded once per process
    reset_ms, search_ms = measure_shop_steps(env, resets)
    print("\nShop (envgym/Shop-v0, 50,000 products, easy)")
    print(
        f"reset p50 {percentile(reset_ms, 50):.3f} ms (p99 {percentile(reset_ms, 99):.3f}); "
        f"search step p50 {percentile(search_ms, 50):.3f} ms "
        f"(p99 {percentile(search_ms, 99):.3f})"
    )
    index_rows = []
    for size in sizes:
        row = measure_shop_index(size)
        index_rows.append(row)
        print(
            f"{size:>9,} products: generate {row['generate_s']:.2f} s, build index "
            f"{row['build_s']:.2f} s, load index {row['load_s']:.2f} s "
            f"(build/load {row['build_s'] / row['load_s']:.1f}x)"
        )
    return {
        "reset_p50_ms": percentile(reset_ms, 50),
        "reset_p99_ms": percentile(reset_ms, 99),
        "search_step_p50_ms": percentile(search_ms, 50),
        "search_step_p99_ms": percentile(search_ms, 99),
        "index": index_rows,
    }


def measure_tool_world(env_id: str, level: str, episodes: int) -> dict[str, object]:
    """Latencies (ms) of one tool world at one level over `episodes` oracle episodes:
    resets, steps (every reply of the gold dialogue), and snapshot/restore mid-episode."""
    from envgym.envs.toolworld.oracle import ToolWorldOracle

    env = gym.make(env_id, difficulty=level)
    world = env.unwrapped
    world.reset(seed=0)  # the world is built once per process
    clock = time.perf_counter
    resets, steps, snapshots, restores, rows = [], [], [], [], []
    for seed in range(episodes):
        start = clock()
        obs, info = env.reset(seed=seed)
        resets.append((clock() - start) * 1000)
        rows.append(world.store.count() if seed < 5 else rows[-1])
        oracle = ToolWorldOracle(world)
        done, turn = False, 0
        while not done:
            reply = oracle.act(obs, info)
            start = clock()
            obs, _, terminated, truncated, info = env.step(reply)
            steps.append((clock() - start) * 1000)
            done = terminated or truncated
            turn += 1
            if turn == 2 and not done:
                start = clock()
                state = world.snapshot()
                snapshots.append((clock() - start) * 1000)
                start = clock()
                world.restore(state)
                restores.append((clock() - start) * 1000)
        if not info["success"]:
            raise RuntimeError(f"{env_id} {level} seed {seed}: the oracle failed, {info['grade']}")
    return {
        "env": env_id,
        "difficulty": level,
        "store_rows": int(statistics.median(rows)),
        "reset_p50_ms": percentile(resets, 50),
        "reset_p99_ms": percentile(resets, 99),
        "step_p50_ms": percentile(steps, 50),
        "step_p99_ms": percentile(steps, 99),
        "snapshot_p50_ms": percentile(snapshots, 50),
        "restore_p50_ms": percentile(restores, 50),
    }


def tool_world_section(specs: list, episodes: int) -> list[dict[str, object]]:
    """The tool-world rows: every id tagged "customer-service", every level."""
    records = []
    for spec in specs:
        if "customer-service" not in spec.tags:
            continue
        if not records:
            print(f"\nTool worlds: {episodes} oracle episodes per row, latencies in ms")
            print(
                f"{'env':22} {'level':7} {'rows':>6} {'reset p50':>9} {'p99':>7} "
                f"{'step p50':>9} {'p99':>7} {'snapshot':>9} {'restore':>8}"
            )
        for level in spec.difficulties:
            r = measure_tool_world(spec.id, level, episodes)
            records.append(r)
            print(
                f"{spec.id:22} {level:7} {r['store_rows']:>6,} {r['reset_p50_ms']:>9.3f} "
                f"{r['reset_p99_ms']:>7.3f} {r['step_p50_ms']:>9.3f} {r['step_p99_ms']:>7.3f} "
                f"{r['snapshot_p50_ms']:>9.3f} {r['restore_p50_ms']:>8.3f}"
            )
    return records


def sql_section(episodes: int, postgres: str | None) -> dict[str, object]:
    """SQL-v0: database generation per domain, then per engine and level the reset
    latency and the latency of an ``execute_sql`` step (the task's gold query run as
    an exploration query), and on PostgreSQL the first session's load of each
    database into its schema."""
    from envgym.envs.sql.domains import DOMAINS, build_database
    from envgym.envs.sql.engine import gold_sql_for, make_engine

    clock = time.perf_counter
    builds = {}
    for domain in DOMAINS:
        start = clock()
        database = build_database(domain, 0)
        builds[domain] = {
            "build_ms": (clock() - start) * 1000,
            "rows": sum(database.row_counts.values()),
        }
    print("\nSQL-v0: generating each domain's database (world_seed 0)")
    for domain, row in builds.items():
        print(f"{domain:10} {row['rows']:>7,} rows  {row['build_ms']:>7.1f} ms")
    engines = {"sqlite": "sqlite"} | ({"postgresql": postgres} if postgres else {})
    loads = {}
    if postgres:
        engine = make_engine(postgres)
        for domain in DOMAINS:
            start = clock()
            engine.session(build_database(domain, 0)).close()
            loads[domain] = (clock() - start) * 1000
        engine.close()
        print(
            "PostgreSQL, first session of each database (its schema loaded, ms): "
            + ", ".join(f"{d} {ms:.0f}" for d, ms in loads.items())
        )
    rows = []
    header = f"{'engine':11} {'level':7} {'reset p50':>9} {'p99':>8} {'execute_sql p50':>15}"
    print(header + f" {'p99':>8}")
    for name, spec in engines.items():
        for level in ("easy", "medium", "hard"):
            env = gym.make("envgym/SQL-v0", difficulty=level, engine=spec)
            for domain_seed in range(len(DOMAINS) * 2):  # every database built and loaded
                env.reset(seed=domain_seed)
            resets, queries = [], []
            for seed in range(episodes):
                start = clock()
                env.reset(seed=10_000 + seed)
                resets.append((clock() - start) * 1000)
                gold = gold_sql_for(env.unwrapped.engine_name, env.unwrapped.question.gold_sql)
                start = clock()
                env.step(f"<sql>{gold}</sql>")
                queries.append((clock() - start) * 1000)
            env.close()
            row = {
                "engine": name,
                "difficulty": level,
                "reset_p50_ms": percentile(resets, 50),
                "reset_p99_ms": percentile(resets, 99),
                "execute_sql_p50_ms": percentile(queries, 50),
                "execute_sql_p99_ms": percentile(queries, 99),
            }
            rows.append(row)
            print(
                f"{name:11} {level:7} {row['reset_p50_ms']:>9.2f} {row['reset_p99_ms']:>8.1f} "
                f"{row['execute_sql_p50_ms']:>15.2f} {row['execute_sql_p99_ms']:>8.1f}"
            )
    return {"builds": builds, "postgres_load_ms": loads, "latency": rows}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=100_000, help="steps per measurement")
    parser.add_argument("--resets", type=int, default=1000, help="resets per difficulty")
    parser.add_argument("--quick", action="store_true", help="20k steps, 200 resets")
    parser.add_argument(
        "--passes", type=int, default=3, help="passes per env's steps/s, the best kept (3)"
    )
    parser.add_argument("--json", help="also write the numbers to this file")
    parser.add_argument("--ids", nargs="+", help="only these env ids (default: all)")
    parser.add_argument(
        "--postgres",
        metavar="URL",
        help="also measure SQL-v0 on this PostgreSQL server (e.g. from scripts/postgres.sh)",
    )
    parser.add_argument(
        "--shop-sizes",
        nargs="*",
        type=int,
        default=[50_000, 500_000],
        help="catalogue sizes for the Shop index timings (default: 50000 500000)",
    )
    parser.add_argument(
        "--sandbox",
        default="auto",
        choices=("auto", "docker", "bwrap"),
        help="the sandbox backend of the shell envs (Terminal-v0, RepoFix-v0; default: auto)",
    )
    args = parser.parse_args(argv)
    if args.passes < 1:
        parser.error("--passes must be at least 1")
    if args.quick:
        args.steps, args.resets = 20_000, 200

    rng = np.random.default_rng(0)
    rows = []

    baseline = gym.make("FrozenLake-v1", is_slippery=False)
    base_steps = measure_int_steps(baseline, rng.integers(0, 4, size=args.steps).tolist())
    base_reset = statistics.median(measure_resets(baseline, args.resets))
    rows.append(("gymnasium FrozenLake-v1 (baseline)", "-", base_steps, None, base_reset, None))

    specs = [s for s in envgym.list_envs() if not args.ids or s.id in args.ids]
    specs = [s for s in specs if missing_data(s) is None]
    for spec in specs:
        # A game step also plays the opponents (a search, on hard): fewer steps.
        steps = args.steps // 20 if "game" in spec.tags else args.steps
        if "search" in spec.tags or "shopping" in spec.tags:
            steps = args.steps // 100
        resets, kwargs, name = args.resets, {}, spec.id
        if "terminal" in spec.tags:  # every step a command in a sandboxed shell
            steps, resets = max(10, args.steps // 1000), max(20, args.resets // 10)
            kwargs = {"sandbox": args.sandbox}
            name = f"{spec.id} ({args.sandbox})"
        for level in spec.difficulties:
            # The longest episodes allowed: truncation resets stay out of the step timing.
            env = gym.make(spec.id, difficulty=level, max_turns=MAX_EPISODE_LENGTH, **kwargs)
            draws = rng.random(steps).tolist()
            unwrapped = measure_steps(env.unwrapped, draws, repeats=args.passes)
            wrapped = measure_steps(env, draws, repeats=args.passes)
            reset_ms = measure_resets(env, resets)
            env.close()
            rows.append(
                (
                    name,
                    level,
                    unwrapped,
                    wrapped,
                    percentile(reset_ms, 50),
                    percentile(reset_ms, 99),
                )
            )

    print(f"envgym {envgym.__version__}, Python {platform.python_version()}, {platform.machine()}")
    print(
        f"best of {args.passes} x {args.steps} steps and {args.resets} resets per row; "
        "ratios against FrozenLake-v1\n"
    )
    header = (
        f"{'env':36} {'level':7} {'steps/s':>10} {'via make':>10} {'x base':>7} "
        f"{'reset p50':>10} {'reset p99':>10}"
    )
    print(header)
    print("-" * len(header))
    records = []
    for env_id, level, steps, wrapped, p50, p99 in rows:
        ratio = steps / base_steps
        shown = f"{ratio:.2f}" if ratio >= 0.01 else f"{ratio:.0e}"  # sandbox rows: tiny
        print(
            f"{env_id:36} {level:7} {steps:>10,.0f} "
            f"{'-' if wrapped is None else f'{wrapped:,.0f}':>10} {shown:>6}x "
            f"{p50:>8.3f}ms {'-' if p99 is None else f'{p99:.3f}ms':>10}"
        )
        records.append(
            {
                "env": env_id,
                "difficulty": level,
                "steps_per_s": steps,
                "steps_per_s_via_make": wrapped,
                "ratio_vs_frozenlake_v1": ratio,
                "reset_p50_ms": p50,
                "reset_p99_ms": p99,
            }
        )
    shop = None
    if any(spec.id == "envgym/Shop-v0" for spec in specs):
        shop = shop_section(args.resets, args.shop_sizes)
    tool_worlds = tool_world_section(specs, max(20, args.resets // 5))
    sql = None
    if any(spec.id == "envgym/SQL-v0" for spec in specs):
        sql = sql_section(max(50, args.resets // 2), args.postgres)
    if args.json:
        with open(args.json, "w") as fh:
            report = {"envs": records, "shop": shop, "tool_worlds": tool_worlds, "sql": sql}
            json.dump(report, fh, indent=2)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
