"""Free TCP ports for the servers the tests start (uvicorn in a thread, ``goldwatch serve`` and
``goldwatch demo`` subprocesses, Tansu, Prometheus).

A port from ``bind(("127.0.0.1", 0))`` lies in the kernel's ephemeral range
(``/proc/sys/net/ipv4/ip_local_port_range``, 32768-60999 by default), the range every
outgoing connection also takes its local port from. Between the moment the port is picked and
the moment the server binds it (seconds later when a runtime or a subprocess starts first),
any ``connect()`` on the machine (a Kafka client, an HTTP poll, another test process) can take
it, and the server fails with ``EADDRINUSE``; a client that keeps retrying a port nothing
listens on yet can even connect to itself (TCP simultaneous open), and then holds the port the
broker is about to bind. A port below the ephemeral range is only ever taken by an explicit
``bind``, which :func:`free_port` checks for.
"""

from __future__ import annotations

import random
import socket
from pathlib import Path

#: Lowest port :func:`free_port` picks (well above the registered ports most daemons use).
LOWEST = 20_000
_RANGE_FILE = Path("/proc/sys/net/ipv4/ip_local_port_range")
_pick = random.SystemRandom()  # independent of tests that seed the ``random`` module


def _ephemeral_low() -> int | None:
    """First port of the kernel's ephemeral range, or ``None`` when it cannot be read."""
    try:
        return int(_RANGE_FILE.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def _bindable(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def free_port() -> int:
    """Return a TCP port on 127.0.0.1 that nothing had bound a moment ago.

    Picked at random in ``[LOWEST, start of the ephemeral range)`` so that no outgoing
    connection can take it before the caller's server binds it (module docstring); falls back
    to a kernel-assigned (ephemeral) port when that range is empty or fully taken.
    """
    low = _ephemeral_low()
    if low is not None and low - LOWEST >= 1_000:
        for _ in range(200):
            port = _pick.randrange(LOWEST, low)
            if _bindable(port):
                return port
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])
