"""Child processes: the cluster runner's (spawned, log-prefixed, supervised, stopped, below)
and the ones sync code starts with `spawn` (test fixtures' servers, a benchmark's cluster).

Children run in their own session so a terminal's Ctrl-C reaches only the runner, which then
stops them in order (services, then infrastructure). Each child is started through
`infra.cluster.orphan_guard`, which sets PR_SET_PDEATHSIG before it execs the real command, so
even a runner killed with SIGKILL leaves no process behind.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import json
import os
import signal
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO


def spawn(
    argv: list[str], log: Path, env: dict[str, str] | None = None, append: bool = True
) -> subprocess.Popen[bytes]:
    """A child in its own session (a terminal's Ctrl-C is not its), its output to `log`."""
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("ab" if append else "wb") as out:
        return subprocess.Popen(
            argv,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            env=env,
        )


@dataclass
class ProcSpec:
    name: str
    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)
    cwd: str | None = None
    user: str | None = None  # run as this system user, with its own group (PostgreSQL)
    netns: str = ""  # run in this network namespace (a test host: infra/cluster/hosts.py)
    # A drill's settings for the next start (`bgcluster fault skew`): a JSON object of
    # environment variables, read at every start; absent, nothing changes.
    overrides: Path | None = None


class ManagedProcess:
    """One child: its output goes to `out`, each line prefixed with the child's name."""

    def __init__(self, spec: ProcSpec, out: TextIO, width: int = 12) -> None:
        self.spec = spec
        self.out = out
        self.width = width
        self.proc: asyncio.subprocess.Process | None = None
        self.tail: collections.deque[str] = collections.deque(maxlen=20)
        self._pump: asyncio.Task[None] | None = None

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc else None

    @property
    def returncode(self) -> int | None:
        return self.proc.returncode if self.proc else None

    async def start(self) -> None:
        env = {
            **os.environ,
            **self.spec.env,
            **self._overrides(),
            "PYTHONUNBUFFERED": "1",
            "BG_ORPHAN_GUARD_PARENT": str(os.getpid()),
        }
        if self.spec.user:
            env["BG_ORPHAN_GUARD_USER"] = self.spec.user  # the launcher drops to it
        if self.spec.netns:
            env["BG_ORPHAN_GUARD_NETNS"] = self.spec.netns  # and enters it first
        self.proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "infra.cluster.orphan_guard",
            *self.spec.argv,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
            env=env,
            cwd=self.spec.cwd,
            start_new_session=True,
        )
        self._pump = asyncio.create_task(self._pump_lines(), name=f"log-{self.name}")

    def _overrides(self) -> dict[str, str]:
        path = self.spec.overrides
        if path is None or not path.exists():
            return {}
        try:
            found = json.loads(path.read_text())
        except (OSError, ValueError) as exc:
            self.out.write(f"{self.name:>{self.width}} | drill settings {path} ignored: {exc}\n")
            return {}
        return {str(k): str(v) for k, v in found.items()}

    async def _pump_lines(self) -> None:
        assert self.proc is not None and self.proc.stdout is not None
        prefix = f"{self.name:>{self.width}} | "
        while True:
            line = await self.proc.stdout.readline()
            if not line:
                return
            text = line.decode(errors="replace").rstrip()
            self.tail.append(text)
            self.out.write(prefix + text + "\n")
            self.out.flush()

    async def wait(self) -> int:
        assert self.proc is not None
        code = await self.proc.wait()
        if self._pump is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._pump, 2.0)
        return code

    async def stop(self, timeout: float) -> int | None:
        """SIGTERM, then SIGKILL after `timeout` seconds. Returns the exit code."""
        if self.proc is None:
            return None
        if self.proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                self.proc.send_signal(signal.SIGTERM)
            try:
                await asyncio.wait_for(self.proc.wait(), timeout)
            except TimeoutError:
                self.out.write(f"{self.name:>{self.width}} | did not stop in {timeout}s: killed\n")
                with contextlib.suppress(ProcessLookupError):
                    self.proc.kill()
                await self.proc.wait()
        return await self.wait()
