"""Checks of a git repository the agent left behind, safe against that repository.

The agent's ``.git`` can run commands through git (``core.fsmonitor``, hooks,
``core.pager``, ``diff.external``, filters and textconv, aliases, includes),
point git at other objects (``objects/info/alternates``, ``commondir``, a
``.git`` file naming another folder, replace refs, grafts, ``shallow``, a
commit-graph whose parents lie) or hold objects whose bytes do not match
their ids. Before any git runs, `GIT_PRELUDE` requires ``.git`` to be a real
folder, deletes what could redirect or run anything (hooks, info, worktrees,
commondir, shallow, objects/info, refs/replace) and writes a known minimal
config; then it runs ``/usr/bin/git`` with no system or global config, an
empty ``HOME``, ``GIT_DIR`` set (no discovery), fsmonitor, hooks, commit-graph
and replace objects off, no pager, and never writing the index. It reads
objects with ``cat-file --batch`` and checks each one's sha1 itself, then
walks parents and trees in Python: content and ancestry are judged from
verified objects, never from commit messages or git's porcelain.
"""

from __future__ import annotations

from envgym.envs.terminal.families._common import check
from envgym.envs.terminal.task import Check

GIT_PRELUDE = r'''
import shutil, tempfile
def _sanitise():
    git = Path(".git")
    if git.is_symlink() or not git.is_dir():
        fail(".git is missing or not a folder: the repository is gone")
    for name in ("hooks", "info", "worktrees", "modules", "commondir", "gitdir", "shallow",
                 "config", "config.worktree", "objects/info", "refs/replace", "index"):
        p = git / name
        if p.is_symlink() or p.is_file():
            p.unlink()
        elif p.is_dir():
            shutil.rmtree(p)
    for name in ("objects", "refs"):
        if (git / name).is_symlink() or not (git / name).is_dir():
            fail(f".git/{name} is missing or not a folder")
    (git / "config").write_text("[core]\n\trepositoryformatversion = 0\n\tbare = false\n")
_sanitise()
GIT_ENV = {"PATH": "/usr/bin:/bin", "HOME": tempfile.mkdtemp(), "LANG": "C",
           "GIT_DIR": os.path.abspath(".git"), "GIT_CONFIG_NOSYSTEM": "1",
           "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_NO_REPLACE_OBJECTS": "1",
           "GIT_PAGER": "cat", "PAGER": "cat", "GIT_OPTIONAL_LOCKS": "0",
           "GIT_TERMINAL_PROMPT": "0", "GIT_ATTR_NOSYSTEM": "1", "GIT_NO_LAZY_FETCH": "1"}
GIT_CMD = ["/usr/bin/git", "--no-pager", "--no-replace-objects", "-c", "core.fsmonitor=false",
           "-c", "core.hooksPath=/dev/null", "-c", "core.commitGraph=false",
           "-c", "core.multiPackIndex=false", "-c", "core.untrackedCache=false"]
def git(*args, stdin=None):
    """(exit status, stdout bytes) of a git command run the safe way."""
    try:
        done = subprocess.run(GIT_CMD + list(args), env=GIT_ENV, input=stdin,
                              capture_output=True, timeout=30,
                              stdin=None if stdin is not None else subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        fail(f"git {args[0]} ran for more than 30 s")
    return done.returncode, done.stdout
_OBJECTS = {}
HEX = "0123456789abcdef"
def obj(oid, want):
    """The body of object ``oid``, which must be a ``want``; its sha1 checked here."""
    if oid not in _OBJECTS:
        if not (isinstance(oid, str) and len(oid) == 40 and set(oid) <= set(HEX)):
            fail(f"{oid!r} is not a full object id")
        code, out = git("cat-file", "--batch", stdin=(oid + "\n").encode())
        head, _, rest = out.partition(b"\n")
        parts = head.decode(errors="replace").split()
        if code != 0 or len(parts) != 3 or parts[1] == "missing" or not parts[2].isdigit():
            fail(f"object {oid} is missing from the repository")
        kind, size = parts[1], int(parts[2])
        body = rest[:size]
        if hashlib.sha1(f"{kind} {size}\0".encode() + body).hexdigest() != oid:
            fail(f"object {oid} is corrupt: its content does not match its id")
        _OBJECTS[oid] = (kind, body)
    kind, body = _OBJECTS[oid]
    if kind != want:
        fail(f"object {oid} is a {kind}, not a {want}")
    return body
def commit(oid):
    """(tree id, [parent ids]) of commit ``oid``."""
    head = obj(oid, "commit").split(b"\n\n", 1)[0].decode(errors="replace").splitlines()
    trees = [line[5:] for line in head if line.startswith("tree ")]
    parents = [line[7:] for line in head if line.startswith("parent ")]
    if len(trees) != 1:
        fail(f"commit {oid} is malformed")
    return trees[0], parents
def tree_files(oid, prefix=""):
    """{path: bytes} of every file under tree ``oid``."""
    body, out = obj(oid, "tree"), {}
    while body:
        head, _, body = body.partition(b"\0")
        sha, body = body[:20].hex(), body[20:]
        mode, _, name = head.decode(errors="replace").partition(" ")
        path = prefix + name
        if mode == "40000":
            out.update(tree_files(sha, path + "/"))
        elif mode in ("100644", "100755", "120000"):
            out[path] = obj(sha, "blob")
        else:
            fail(f"{path} in tree {oid} has mode {mode}, which no task uses")
    return out
def ancestors(oid):
    """Every commit reachable from ``oid``, itself included."""
    seen, todo = set(), [oid]
    while todo:
        c = todo.pop()
        if c not in seen:
            seen.add(c)
            todo.extend(commit(c)[1])
    return seen
def ref(name):
    """The commit id ``name`` (a full ref name) points at; fails if there is none."""
    code, out = git("rev-parse", "--verify", "--quiet", "--end-of-options", name + "^{commit}")
    oid = out.decode(errors="replace").strip()
    if code != 0 or not oid:
        fail(f"{name} does not exist or does not point at a commit")
    obj(oid, "commit")
    return oid
def same_files(got, want, where):
    """``got`` ({path: bytes}) holds exactly the texts of ``want`` ({path: str})."""
    extra, missing = sorted(set(got) - set(want)), sorted(set(want) - set(got))
    if missing:
        fail(f"{where} lacks {missing[0]}")
    if extra:
        fail(f"{where} has {extra[0]}, which should not be there")
    for path in sorted(want):
        if norm(got[path].decode(errors="replace")) != norm(want[path]):
            fail(f"{where}: {path} does not hold the expected content")
def work_files():
    """{path: bytes} of the work tree's files, .git aside."""
    out = {}
    for folder, dirs, files in os.walk("."):
        dirs[:] = [d for d in dirs if not (folder == "." and d == ".git")]
        for name in files:
            path = os.path.relpath(os.path.join(folder, name), ".")
            out[path] = Path(path).read_bytes() if not os.path.islink(path) else b""
    return out
'''


def git_check(name: str, body: str, **values) -> Check:
    """A check that reads the work directory's repository through `GIT_PRELUDE`."""
    return check(name, GIT_PRELUDE + body, **values)
