"""Bind the HTTP listening socket before anything heavy starts, so a taken port or an address
that cannot be bound fails at once with one line naming it (``goldwatch serve`` and
``goldwatch demo`` share this check)."""

from __future__ import annotations

import errno
import socket

from service.errors import GoldwatchError


class ListenError(GoldwatchError, RuntimeError):
    """The address cannot be listened on; the message names ``host:port`` and why."""


def bind(host: str, port: int, *, suspect: str = "another goldwatch?") -> socket.socket:
    """Bind (not yet listen on) ``host:port`` and return the socket, inheritable, with
    ``SO_REUSEADDR`` (a restart does not wait out ``TIME_WAIT``). Hand it to uvicorn with
    ``Server.run(sockets=[sock])``; the caller closes it.

    Args:
        host: IPv4 or IPv6 address (a ``:`` means IPv6) or a name.
        port: 0-65535 (0: any free port).
        suspect: what probably holds a taken port, shown in the message.

    Raises:
        ListenError: the port is in use (``EADDRINUSE``), or the address cannot be bound
            (the message gives the OS reason).
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OverflowError:  # a port outside 0-65535
        sock.close()
        raise ListenError(f"cannot listen on {host}:{port}: port must be 0-65535") from None
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise ListenError(
                f"cannot listen on {host}:{port}: port {port} is already in use ({suspect}); "
                f"pick a free one with --port, e.g. --port {port + 1}"
            ) from None
        raise ListenError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    sock.set_inheritable(True)
    return sock
