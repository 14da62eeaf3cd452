"""The documentation (README.md and docs/) stays true: every Python and shell
block runs, each env page is its manual as `docs/gen_env_pages.py` writes it,
the site's nav lists every page, and nothing points outside the repository.

A block that cannot run here (it needs a server, a GPU, a download, or runs
for minutes) carries ``<!-- no-run: why -->`` on the line before it.
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
import types
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
PAGES = sorted([ROOT / "README.md", *DOCS.rglob("*.md")])
#: Pages whose blocks another test checks, and how.
CHECKED_ELSEWHERE = {
    DOCS / "writing-an-env.md": "tests/test_writing_an_env.py: each block is the repo's code",
    DOCS / "guides" / "plugin-env.md": "tests/test_plugin_env.py installs its files and runs them",
}
#: Few blocks may skip; a new one needs a reason, and this bound keeps them few.
MAX_NO_RUN = 16

FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.DOTALL | re.MULTILINE)
NO_RUN = re.compile(r"<!-- no-run: (.+?) -->\s*$")


def _load_generator() -> types.ModuleType:
    spec = importlib.util.spec_from_file_location("gen_env_pages", DOCS / "gen_env_pages.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


gen_env_pages = _load_generator()


def blocks(page: Path) -> list[tuple[str, str, str | None, int]]:
    """(language, code, no-run reason or None, line) for each fenced block."""
    text = page.read_text(encoding="utf-8")
    found = []
    for match in FENCE.finditer(text):
        before = text[: match.start()].rstrip("\n").rpartition("\n")[2]
        marker = NO_RUN.search(before)
        line = text.count("\n", 0, match.start()) + 1
        found.append((match[1], match[2], marker[1] if marker else None, line))
    return found


def runnable(language: str) -> list[tuple[Path, list[tuple[str, str, str | None, int]]]]:
    out = []
    for page in PAGES:
        if page in CHECKED_ELSEWHERE:
            continue
        chosen = [b for b in blocks(page) if b[0] == language]
        if chosen:
            out.append((page, chosen))
    return out


def _id(item: tuple[Path, list]) -> str:
    return str(item[0].relative_to(ROOT))


@pytest.mark.parametrize("page_blocks", runnable("python"), ids=_id)
def test_python_blocks_run_in_order(page_blocks, tmp_path, monkeypatch):
    page, found = page_blocks
    monkeypatch.chdir(tmp_path)  # a block that writes files writes them here
    # One module per page, registered so that dataclasses and pickling find it.
    module = types.ModuleType(f"docs_{page.stem.replace('-', '_')}")
    monkeypatch.setitem(sys.modules, module.__name__, module)
    if page.parent == DOCS / "envs":  # a manual's blocks take `gym` as imported
        exec("import gymnasium as gym\nimport envgym", module.__dict__)
    for _, code, reason, line in found:
        if reason is None:
            exec(compile("\n" * line + code, str(page), "exec"), module.__dict__)


@pytest.mark.parametrize("page_blocks", runnable("bash"), ids=_id)
def test_shell_blocks_run(page_blocks, tmp_path):
    page, found = page_blocks
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    for _, code, reason, line in found:
        if reason is not None:
            continue
        done = subprocess.run(
            ["bash", "-euo", "pipefail", "-c", code],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
        )
        assert done.returncode == 0, f"{page.name}:{line} failed:\n{code}\n{done.stderr[-2000:]}"


def test_every_block_is_python_bash_or_text_and_skips_say_why():
    languages = {"python", "bash", "text", "json", "toml", ""}
    skipped = []
    for page in PAGES:
        for language, _, reason, line in blocks(page):
            where = f"{page.relative_to(ROOT)}:{line}"
            assert language in languages, f"{where}: a ```{language} block; use one of {languages}"
            if reason is not None:
                assert language in ("python", "bash"), f"{where}: no-run on a block that never runs"
                skipped.append(where)
    assert len(skipped) <= MAX_NO_RUN, f"{len(skipped)} blocks skip: {skipped}"


def test_env_pages_are_the_manuals_as_generated():
    pages = gen_env_pages.expected_pages()
    committed = set((DOCS / "envs").glob("*.md"))
    assert committed == set(pages), "run python docs/gen_env_pages.py"
    for path, text in pages.items():
        assert path.read_text(encoding="utf-8") == text, f"{path.name} is stale: run the script"


def test_the_site_nav_lists_every_page():
    nav = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    for page in DOCS.rglob("*.md"):
        assert page.relative_to(DOCS).as_posix() in nav, f"mkdocs.yml's nav lacks {page.name}"


def test_design_page_names_every_shared_info_key():
    from envgym.core import INFO_KEYS

    design = (DOCS / "design.md").read_text(encoding="utf-8")
    for key in INFO_KEYS:
        assert f"| `{key}` |" in design, f"docs/design.md's info table lacks {key}"


def test_relative_links_point_at_files_that_exist():
    link = re.compile(r"\]\(([^)#:]+?)(#[^)]*)?\)")
    for page in PAGES:
        text = FENCE.sub("", page.read_text(encoding="utf-8"))
        for target, _ in link.findall(text):
            assert (page.parent / target).exists(), f"{page.relative_to(ROOT)} links to {target}"


def test_nothing_points_outside_the_repository():
    # Spelled in pieces so that this file does not match itself.
    outside = ("../" + "shared", "DESIGN" + ".md", "STYLE" + ".md")
    tracked = subprocess.run(
        ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split("\0")
    for name in filter(None, tracked):
        path = ROOT / name
        if not path.is_file() or path.suffix not in {".py", ".md", ".toml", ".sh", ".yml", ""}:
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        for word in outside:
            assert word not in text, f"{name} refers to {word}, which a clone does not have"
