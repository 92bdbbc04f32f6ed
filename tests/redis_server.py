"""A real ``redis-server`` for tests: a free loopback port, no persistence, stoppable.

``RedisServer.start()`` returns once the server has logged that it accepts connections (read
from its stdout, not polled); ``stop()`` and ``start()`` again reuse the same port, so a test
can take Redis away from a running store and bring it back. ``args`` and ``config`` make the
same process a TLS server, a Sentinel or a cluster node (see ``redis_topologies``).
"""

from __future__ import annotations

import contextlib
import itertools
import os
import random
import shutil
import socket
import subprocess
import threading
from collections import deque
from collections.abc import Sequence
from pathlib import Path

import pytest

__all__ = ["RedisServer", "free_port", "redis_binary"]

_READY = "Ready to accept connections"
_START_TIMEOUT = 10.0
_STOP_TIMEOUT = 5.0


def redis_binary() -> str:
    """The path of ``redis-server``; fails the test (never skips) when it is missing."""
    binary = shutil.which("redis-server")
    if binary is None:
        pytest.fail(
            "redis-server is not on PATH, and the Redis store tests need a real one: install it"
            " (apt-get install redis-server, brew install redis) and run the tests again",
            pytrace=False,
        )
    return binary


def _port_range() -> range:
    """This test process's ports: its slice (one per xdist worker) of those below the
    system's ephemeral range, where the kernel never picks one by itself."""
    end = 32768
    with contextlib.suppress(OSError, ValueError):
        end = min(end, int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0]))
    first = 10000
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw")
    index = int(worker) if worker.isdigit() else 0
    size = (end - first) // max(workers, 1)
    return range(first + index * size, first + (index + 1) * size)


_PORTS = _port_range()
# In turn from a random start: a port is not handed out twice in a run, and two runs at once
# (two developers' suites) rarely meet.
_NEXT = itertools.count(random.randrange(len(_PORTS)))


def free_port() -> int:
    """A loopback TCP port nobody listens on right now, for a process the test starts.

    Not one the kernel picks (``bind`` to port 0): between the pick and the child's own
    ``bind``, the kernel may give that port to another worker's pick or connection. Ports
    below the ephemeral range, from a slice of this worker's own, have no such race."""
    for _ in range(len(_PORTS)):
        port = _PORTS[next(_NEXT) % len(_PORTS)]
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue  # in use (or lingering) here: the next one
            return port
    raise AssertionError(f"no free loopback port in {_PORTS}")


class RedisServer:
    """One ``redis-server`` process on ``127.0.0.1:port``, its files under ``directory``."""

    def __init__(
        self,
        *,
        directory: Path,
        binary: str | None = None,
        port: int | None = None,
        args: Sequence[str] = (),
        config: str | None = None,
        ready: str = _READY,
        tls: bool = False,
    ):
        self.binary = binary or redis_binary()
        self.directory = directory
        self._pick_port = port is None
        self.port = port or free_port()
        self._process: subprocess.Popen[str] | None = None
        self._log: deque[str] = deque(maxlen=50)
        self._args = tuple(args)
        self.config = config  # a config file's text (a Sentinel must have one it can rewrite)
        self._ready = ready
        self._tls = tls  # listen with TLS on ``port`` (``args`` name the certificate files)

    @property
    def url(self) -> str:
        """The ``redis://`` URL of database 0."""
        return f"redis://127.0.0.1:{self.port}/0"

    @property
    def running(self) -> bool:
        """Whether the process is alive."""
        return self._process is not None and self._process.poll() is None

    def start(self) -> None:
        """Start the server (again, on the same port) and return once it accepts connections."""
        if self.running:
            return
        self.directory.mkdir(parents=True, exist_ok=True)
        for _ in range(3):
            if self._launch():
                self._pick_port = False  # restarts must come back where the clients look
                return
            if not (self._pick_port and any("already in use" in line for line in self._log)):
                break
            self.port = free_port()  # another process took the free port first
        pytest.fail(
            f"redis-server on port {self.port} did not become ready within"
            f" {_START_TIMEOUT:.0f} s; its output:\n" + "\n".join(self._log),
            pytrace=False,
        )

    def _launch(self) -> bool:
        self._log.clear()
        config: list[str] = []
        if self.config is not None:
            path = self.directory / "redis.conf"
            path.write_text(self.config)
            config = [str(path)]
        ports = (
            ["--port", "0", "--tls-port", str(self.port)]
            if self._tls
            else ["--port", str(self.port)]
        )
        process = subprocess.Popen(  # noqa: S603 - a fixed binary and arguments we build
            [
                self.binary,
                *config,
                *ports,
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
                "--dir",
                str(self.directory),
                *self._args,
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            encoding="utf-8",
            errors="replace",
        )
        self._process = process
        ready = threading.Event()
        threading.Thread(
            target=self._drain, args=(process, ready), name=f"redis-{self.port}", daemon=True
        ).start()
        # The drain thread sets ``ready`` on the ready line, or at end of output if it dies.
        if ready.wait(_START_TIMEOUT) and process.poll() is None:
            return True
        self._kill()
        self._process = None
        return False

    def stop(self, *, save: bool = False) -> None:
        """Stop the server: SIGTERM (SIGKILL if it lingers), or ``SHUTDOWN SAVE`` to keep data.

        With ``save`` the dataset is written to ``directory`` and the next ``start()`` loads it,
        as a Redis with persistence would after a restart.
        """
        process = self._process
        if process is None or process.poll() is not None:
            self._process = None
            return
        if save:
            with socket.create_connection(("127.0.0.1", self.port), timeout=_STOP_TIMEOUT) as s:
                s.sendall(b"SHUTDOWN SAVE\r\n")
                # The server closes the connection as it exits; nothing else comes back.
                with contextlib.suppress(OSError):
                    s.recv(1024)
        else:
            process.terminate()
        try:
            process.wait(_STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            self._kill()
        self._process = None

    def kill(self) -> None:
        """Stop the server with SIGKILL: no shutdown, no save (a crash, or the OOM killer)."""
        self._kill()
        self._process = None

    def _kill(self) -> None:
        if self._process is not None and self._process.poll() is None:
            self._process.kill()
            self._process.wait(_STOP_TIMEOUT)

    def _drain(self, process: subprocess.Popen[str], ready: threading.Event) -> None:
        assert process.stdout is not None
        # Keep reading to the end so that the server never blocks on a full pipe.
        for line in process.stdout:
            self._log.append(line.rstrip("\n"))
            if self._ready in line:
                ready.set()
        process.stdout.close()
        ready.set()
