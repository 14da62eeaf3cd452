"""Write a git repository's files without running git: loose objects (zlib of
``"<type> <len>\\0<body>"`` under their sha1), refs, ``HEAD``, a minimal
``config`` and an index, so a task's starting tree holds a real repository
that builds in milliseconds at reset. Author and committer names and dates
are fixed by the caller, so the same history gives the same bytes and ids.

    repo = GitRepo()
    base = repo.commit({"a.txt": "one\\n"}, [], "First", when=0)
    repo.branch("main", base)
    files = repo.files("main", {"a.txt": "one\\n"})  # .git/... and the work tree
"""

from __future__ import annotations

import hashlib
import struct
import zlib

#: Who wrote the generated history, and the first commit's time (seconds, UTC).
AUTHOR = "Dana Reyes <dana@example.com>"
EPOCH = 1_700_000_000
CONFIG = (
    "[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = false\n"
    "\tlogallrefupdates = true\n[user]\n\tname = Agent\n\temail = agent@example.com\n"
)


def _data(content: str | bytes) -> bytes:
    return content.encode() if isinstance(content, str) else content


class GitRepo:
    """An in-memory object store and refs, written out by `files`."""

    def __init__(self) -> None:
        self.objects: dict[str, bytes] = {}  # sha1 hex -> zlib-compressed object
        self.refs: dict[str, str] = {}  # "refs/heads/main" -> sha1 hex

    def put(self, kind: str, body: bytes) -> str:
        """Store an object of ``kind`` (blob, tree, commit, tag); its id."""
        raw = f"{kind} {len(body)}\0".encode() + body
        oid = hashlib.sha1(raw).hexdigest()
        if oid not in self.objects:
            self.objects[oid] = zlib.compress(raw, 6)
        return oid

    def blob(self, content: str | bytes) -> str:
        return self.put("blob", _data(content))

    def tree(self, files: dict[str, str | bytes], modes: dict[str, int] | None = None) -> str:
        """The tree of ``files`` (relative path -> content), sub-trees included."""
        modes = modes or {}
        entries: dict[str, tuple[str, str]] = {}  # name -> (mode, id)
        folders: dict[str, dict[str, str | bytes]] = {}
        sub_modes: dict[str, dict[str, int]] = {}
        for path, content in files.items():
            head, _, rest = path.partition("/")
            if rest:
                folders.setdefault(head, {})[rest] = content
                if path in modes:
                    sub_modes.setdefault(head, {})[rest] = modes[path]
            else:
                mode = "100755" if modes.get(path, 0o644) & 0o111 else "100644"
                entries[head] = (mode, self.blob(content))
        for name, sub in folders.items():
            entries[name] = ("40000", self.tree(sub, sub_modes.get(name)))
        # git orders a tree's entries by name, a folder's name as if it ended in "/".
        order = sorted(entries, key=lambda n: n + "/" if entries[n][0] == "40000" else n)
        body = b"".join(
            f"{entries[n][0]} {n}\0".encode() + bytes.fromhex(entries[n][1]) for n in order
        )
        return self.put("tree", body)

    def commit(
        self,
        files: dict[str, str | bytes],
        parents: list[str],
        message: str,
        when: int,
        modes: dict[str, int] | None = None,
    ) -> str:
        """A commit of ``files`` with ``parents``, dated ``when`` hours after `EPOCH`."""
        stamp = f"{AUTHOR} {EPOCH + 3600 * when} +0000"
        head = f"tree {self.tree(files, modes)}\n"
        head += "".join(f"parent {p}\n" for p in parents)
        body = f"{head}author {stamp}\ncommitter {stamp}\n\n{message.strip()}\n"
        return self.put("commit", body.encode())

    def branch(self, name: str, oid: str) -> None:
        self.refs[f"refs/heads/{name}"] = oid

    def tag(self, name: str, oid: str) -> None:
        self.refs[f"refs/tags/{name}"] = oid

    def files(
        self, head: str, checkout: dict[str, str | bytes], modes: dict[str, int] | None = None
    ) -> dict[str, bytes]:
        """The ``.git`` folder's files, ``HEAD`` on branch ``head``, with an
        index of ``checkout`` (the files of that branch's tip, which are
        returned too, as the work tree)."""
        if f"refs/heads/{head}" not in self.refs:
            raise ValueError(f"no branch {head!r}; branches: {sorted(self.refs)}")
        out: dict[str, bytes] = {
            ".git/HEAD": f"ref: refs/heads/{head}\n".encode(),
            ".git/config": CONFIG.encode(),
            ".git/description": b"Unnamed repository.\n",
            ".git/index": self.index(checkout, modes),
        }
        for oid, data in self.objects.items():
            out[f".git/objects/{oid[:2]}/{oid[2:]}"] = data
        for ref, oid in self.refs.items():
            out[f".git/{ref}"] = f"{oid}\n".encode()
        out.update({path: _data(content) for path, content in checkout.items()})
        return out

    def index(self, files: dict[str, str | bytes], modes: dict[str, int] | None = None) -> bytes:
        """A version-2 index of ``files``. Its stat fields are zero, so git
        re-reads each file once to see that it is unchanged."""
        modes = modes or {}
        body = b""
        for path in sorted(files, key=lambda p: p.encode()):
            mode = 0o100755 if modes.get(path, 0o644) & 0o111 else 0o100644
            name = path.encode()
            entry = struct.pack(
                ">10I20sH",
                0,
                0,
                0,
                0,
                0,
                0,
                mode,
                0,
                0,
                len(_data(files[path])),
                bytes.fromhex(self.blob(files[path])),
                min(len(name), 0xFFF),
            )
            entry += name
            entry += b"\0" * (8 - len(entry) % 8)  # one to eight NULs, to a multiple of 8
            body += entry
        data = b"DIRC" + struct.pack(">II", 2, len(files)) + body
        return data + hashlib.sha1(data).digest()


def blob_id(content: str | bytes) -> str:
    """The id git gives a blob of ``content``."""
    data = _data(content)
    return hashlib.sha1(f"blob {len(data)}\0".encode() + data).hexdigest()
