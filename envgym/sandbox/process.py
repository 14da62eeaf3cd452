"""The ``process`` backend: jobs run on the host under rlimits only.

It isolates nothing: a job can read and write your files, open network
connections and signal your processes. It exists for development on machines
with neither Docker nor bubblewrap, and says so loudly when it starts.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
import warnings

from envgym.sandbox.base import RUNNER_PATH, Limits, PipeChannel, RunnerSandbox

WARNING = (
    "envgym's `process` sandbox backend does NOT isolate model-written code: jobs run on "
    "this machine as your user, with your files and network. Use it only for development; "
    "set ENVGYM_SANDBOX=docker or bwrap (see `envgym sandbox doctor`)."
)


class ProcessSandbox(RunnerSandbox):
    backend = "process"
    isolated = False

    def __init__(self, limits: Limits | None = None, warn: bool = True) -> None:
        super().__init__(limits)
        if warn:
            warnings.warn(WARNING, RuntimeWarning, stacklevel=2)
        self._work: str | None = None

    def _start_channel(self) -> PipeChannel:
        self._work = tempfile.mkdtemp(prefix="envgym-process-sandbox-")
        proc = subprocess.Popen(
            [sys.executable, "-I", str(RUNNER_PATH), "--work", self._work],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            start_new_session=True,
        )
        return PipeChannel(proc)

    def _stop(self) -> None:
        if self._work:
            shutil.rmtree(self._work, ignore_errors=True)
            self._work = None

    def _max_processes(self) -> int | None:
        # RLIMIT_NPROC counts every process of the user on the host: a limit
        # here would make the job fail on a busy machine for no fault of its own.
        return None
