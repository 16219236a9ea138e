"""``goldwatch serve`` on an address it cannot listen on fails fast: one line naming the
address, exit 2 (bad usage or configuration), before the banner and before the runtime
starts (no state file is created); ``goldwatch demo`` gives the same message (one shared
check, :func:`service.api.listen.bind`)."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from service.api import listen
from tests.cli.test_eval_cli import run


@pytest.fixture()
def taken_port() -> Iterator[int]:
    """A port some other process is listening on, for the test's duration."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        yield int(sock.getsockname()[1])


def test_serve_on_a_taken_port_exits_2_with_one_line_before_starting(
    tmp_path: Path, taken_port: int
) -> None:
    state = tmp_path / "state.sqlite"
    config = tmp_path / "goldwatch.yaml"
    config.write_text(f"state:\n  path: {state}\napi:\n  host: 127.0.0.1\n", encoding="utf-8")
    result = run(["serve", "--config", str(config), "--port", str(taken_port)], tmp_path)
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("goldwatch: error: cannot listen on ")
    assert f"127.0.0.1:{taken_port}" in lines[0] and "already in use" in lines[0]
    assert f"--port {taken_port + 1}" in lines[0]
    assert "Errno" not in result.stderr and "API, docs and metrics" not in result.stderr
    assert not state.exists()  # the runtime never started


def test_serve_rejects_a_port_out_of_range_naming_the_flag(tmp_path: Path) -> None:
    result = run(["serve", "--port", "70000"], tmp_path)
    assert result.returncode == 2
    assert "'--port'" in result.stderr and "Traceback" not in result.stderr


def test_serve_and_demo_share_the_check(taken_port: int) -> None:
    from service.jobs import demo as demo_job

    with pytest.raises(listen.ListenError) as served:
        listen.bind("127.0.0.1", taken_port)
    with pytest.raises(demo_job.DemoError) as demo:
        demo_job.bind("127.0.0.1", taken_port)
    assert str(served.value).startswith(f"cannot listen on 127.0.0.1:{taken_port}: port ")
    assert str(demo.value) == str(served.value).replace("another goldwatch?",
                                                        "another goldwatch demo?")  # fmt: skip


def test_an_address_that_cannot_be_bound_is_named() -> None:
    with pytest.raises(listen.ListenError, match=r"^cannot listen on 192\.0\.2\.1:8000: "):
        listen.bind("192.0.2.1", 8000)  # TEST-NET-1: not an address of this machine


def test_a_free_port_is_bound_and_inheritable() -> None:
    with listen.bind("127.0.0.1", 0) as sock:
        assert sock.getsockname()[0] == "127.0.0.1" and sock.getsockname()[1] > 0
        assert sock.get_inheritable()
