"""``envgym sandbox build|doctor|gc``: build the code sandboxes' images, say
which sandbox backends work here, and remove leftover containers."""

from __future__ import annotations

import argparse
import subprocess
from typing import Any

from envgym.cli.arguments import EXIT_FAILED, EXIT_OK, UserError, command_group
from envgym.cli.output import print_table


def add_commands(sub: Any) -> None:
    """Add ``sandbox`` and its subcommands to the ``envgym`` subparsers `sub`."""
    sandbox_sub = command_group(sub, "sandbox", help="build, check and clean up code sandboxes")
    p = sandbox_sub.add_parser(
        "build",
        help="build the sandbox images from Debian packages (root, Docker daemon)",
        description="debootstrap a minimal Debian with python3 and numpy, import it as the base "
        "image, then build the sandbox and runtime images from it with --network none.",
    )
    p.add_argument("--rebuild", action="store_true", help="debootstrap the root filesystem again")
    p.add_argument("--no-runtime", action="store_true", help="skip the runtime (env server) image")
    p.set_defaults(handler=run_build)
    p = sandbox_sub.add_parser("doctor", help="say which sandbox backends work here, and why not")
    p.set_defaults(handler=run_doctor)
    p = sandbox_sub.add_parser("gc", help="remove every envgym sandbox container")
    p.add_argument(
        "--dead-owners",
        action="store_true",
        help="only containers whose owning process on this host has exited",
    )
    p.set_defaults(handler=run_gc)


def run_build(args: argparse.Namespace) -> int:
    from envgym.remote.image import build_runtime_image
    from envgym.sandbox import SandboxError
    from envgym.sandbox.images import build_images

    try:
        # Each step says what it does on stderr (the images modules' own progress lines).
        build_images(rebuild_rootfs=args.rebuild)
        if not args.no_runtime:
            build_runtime_image()
    except (SandboxError, subprocess.CalledProcessError) as exc:
        raise UserError(str(exc)) from None
    return EXIT_OK


def run_doctor(args: argparse.Namespace) -> int:
    from envgym.remote.image import RUNTIME_IMAGE, runtime_image_problem
    from envgym.sandbox import doctor

    rows = doctor(extra_images={RUNTIME_IMAGE: runtime_image_problem})
    print_table(["check", "ok", "detail"], [[n, "yes" if ok else "NO", d] for n, ok, d in rows])
    return EXIT_OK if any(n == "auto picks" and ok for n, ok, _ in rows) else EXIT_FAILED


def run_gc(args: argparse.Namespace) -> int:
    from envgym.sandbox import SandboxError, gc

    try:
        removed = gc(only_dead_owners=args.dead_owners)
    except SandboxError as exc:
        raise UserError(str(exc)) from None
    print(
        f"removed {len(removed)} sandbox container(s)"
        + (": " + ", ".join(removed) if removed else "")
    )
    return EXIT_OK
