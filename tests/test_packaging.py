"""The wheel installs envgym, and only envgym, into a fresh virtual environment."""

from __future__ import annotations

import json
import subprocess
import sys
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

CHECK = """
import importlib.util, json
import gymnasium as gym
import envgym
from envgym.envs.sokoban import SokobanEnv
env = gym.make("envgym/Sokoban-v0")
obs, info = env.reset(seed=0)
assert isinstance(env.unwrapped, SokobanEnv) and "Sokoban" in obs
top_level = {name: importlib.util.find_spec(name) is not None
             for name in ("envs", "trainers", "leaderboard", "containers")}
import envgym.trainers, envgym.leaderboard, envgym.evaluation
from envgym.sandbox.bwrap import bwrap_binary
from envgym.sandbox.images import containers_dir
from envgym.evaluation import evaluate
from envgym.registry import list_envs
played = {}
needs_extra = {}
for spec in list_envs():
    agent = "oracle" if spec.oracle else "random"
    try:
        episode = evaluate(spec.id, agent, episodes=1, seed=0)["episodes"][0]
    except Exception as exc:  # an id whose package lives in an extra says which
        if "pip install 'envgym[" not in str(exc):
            raise
        needs_extra[spec.id] = str(exc)
        continue
    played[spec.id] = {"agent": agent, "turns": episode["turns"], "success": episode["success"]}
# The static leaderboard of the baselines (the main job's last step) needs no extra.
import tempfile
from envgym.leaderboard.baselines import load_baseline_entries, load_baseline_results
from envgym.leaderboard.export import export_site
pages = export_site(load_baseline_entries()[:2], tempfile.mkdtemp(), load_baseline_results(),
                    replay=False)
# The shop site's templates ship too.
from envgym.templating import render_template
shop_page = render_template("envgym.envs.shop", "start.html", title="start",
                            difficulties=("easy",), default="easy")
assert 'id="start"' in shop_page
print(json.dumps({"envgym": envgym.__file__, "top_level": top_level, "played": played,
                  "needs_extra": needs_extra,
                  "pages": len(pages),
                  "schema": envgym.evaluation.load_schema()["title"],
                  "containers": sorted(p.name for p in containers_dir().iterdir()),
                  "bwrap": bwrap_binary()}))
"""


@pytest.mark.slow
def test_wheel_installs_in_a_fresh_venv(tmp_path):
    dist = tmp_path / "dist"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(dist), str(ROOT)],
        check=True,
    )
    wheels = list(dist.glob("envgym-*.whl"))
    assert len(wheels) == 1
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=True)
    python = env_dir / "bin" / "python"
    subprocess.run(
        [str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check", str(wheels[0])],
        check=True,
    )
    # Run from an empty folder so the checkout itself is not importable.
    work = tmp_path / "elsewhere"
    work.mkdir()
    out = subprocess.run([str(python), "-c", CHECK], cwd=work, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-3000:]
    report = json.loads(out.stdout)
    assert report["envgym"].startswith(str(env_dir))
    # With no extras, every listed id plays (its oracle wins where it has one) but
    # ReasoningGym-v0, a bridge to a package of its extra, which says how to get it.
    listed = subprocess.run(
        [str(env_dir / "bin" / "envgym"), "list"], cwd=work, capture_output=True, text=True
    ).stdout
    ids = {line.split()[0] for line in listed.splitlines()[2:]}
    assert set(report["needs_extra"]) == {"envgym/ReasoningGym-v0"}
    assert "pip install 'envgym[reasoning]'" in report["needs_extra"]["envgym/ReasoningGym-v0"]
    assert set(report["played"]) == ids - set(report["needs_extra"])
    assert "envgym/Search-v0" in report["played"]
    for env_id, episode in report["played"].items():
        assert episode["turns"] >= 1, (env_id, episode)
        if episode["agent"] == "oracle":
            assert episode["success"], (env_id, episode)
    assert not any(report["top_level"].values()), report["top_level"]
    assert report["schema"]
    assert report["pages"] > 2  # the index, env pages and trajectories
    # The sandbox's build files and bubblewrap come with the wheel.
    assert {"build-rootfs.sh", "Dockerfile.sandbox", "Dockerfile.runtime"} <= set(
        report["containers"]
    )
    assert report["bwrap"] and report["bwrap"].startswith(str(env_dir))
    cli = subprocess.run(
        [str(env_dir / "bin" / "envgym"), "list"], cwd=work, capture_output=True, text=True
    )
    assert cli.returncode == 0 and "envgym/Sokoban-v0" in cli.stdout
