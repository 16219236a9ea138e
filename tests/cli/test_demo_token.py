"""The live demo's API token and stop message (fresh-user trial).

* A token the user supplied (``GOLDWATCH_API__TOKEN``) is never printed (docs/configuration.md:
  "Never printed"); the banner says where it comes from instead. The token the demo makes up
  is printed: the curl lines need it.
* ``GOLDWATCH_API__TOKEN=""`` is refused as by ``serve`` and ``config check`` (exit 2 naming
  ``api.token``) instead of being silently replaced by a random token.
* The stop message says what is true: state and dead letters stay in the working folder until
  the next demo run, which starts fresh (README).
"""

from __future__ import annotations

import re
import signal
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from tests.cli.goldwatch_cli import clean_env
from tests.cli.test_eval_cli import GOLDWATCH
from tests.ports import free_port

USER_TOKEN = "Zq7-users-own-token"
#: Answers of POST /v1/shadow/evaluate past the token check: started, or a run (the demo's
#: run at start) already in progress; the token is checked first (401/403).
AUTHORISED = (202, 409)
#: Upper bound of every wait on the live demo (a bound, not a timing assertion).
WAIT_S = 120.0


_env = clean_env


def _post_evaluate(base: str, token: str) -> int:
    request = urllib.request.Request(
        f"{base}/v1/shadow/evaluate", data=b"", method="POST",
        headers={"Authorization": f"Bearer {token}"},
    )  # fmt: skip
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return int(response.status)
    except urllib.error.HTTPError as exc:
        return exc.code


def _live_demo(tmp_path: Path, env: dict[str, str]) -> tuple[str, str, Path]:
    """Start the live demo, wait for /healthz, stop it with SIGINT; return its stderr, its
    base URL and working folder (the demo must have exited 0)."""
    port = free_port()
    workdir = tmp_path / "wd"
    args = ["demo", "--port", str(port), "--rate", "200", "--workdir", str(workdir)]
    proc = subprocess.Popen(
        [*GOLDWATCH, *args], cwd=tmp_path, env=env, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + WAIT_S
        while True:
            if proc.poll() is not None:
                pytest.fail(f"demo exited ({proc.returncode}): {proc.communicate()[1]}")
            try:
                with urllib.request.urlopen(f"{base}/healthz", timeout=2) as answer:
                    if answer.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                pytest.fail("the demo did not answer /healthz")
            time.sleep(0.2)
        if "GOLDWATCH_API__TOKEN" in env:  # the user's own token is the one that works
            assert _post_evaluate(base, USER_TOKEN) in AUTHORISED
        proc.send_signal(signal.SIGINT)
        _, stderr = proc.communicate(timeout=WAIT_S)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate(timeout=WAIT_S)
    assert proc.returncode == 0, stderr
    return stderr, base, workdir


@pytest.mark.slow
def test_a_users_token_is_not_printed_and_its_source_is(tmp_path: Path) -> None:
    stderr, _, workdir = _live_demo(tmp_path, _env(GOLDWATCH_API__TOKEN=USER_TOKEN))
    assert "Zq7" not in stderr
    assert "from GOLDWATCH_API__TOKEN" in stderr
    assert 'Authorization: Bearer $GOLDWATCH_API__TOKEN"' in stderr  # curl lines read it
    # the stop message is true: the state stays until the next run, which starts fresh
    assert "state checkpointed in the working folder" not in stderr
    assert f"state and dead letters are kept in {workdir} until the next demo run" in stderr
    assert "which starts fresh" in stderr
    assert (workdir / "state.sqlite").is_file()


@pytest.mark.slow
def test_a_generated_token_is_printed_and_works(tmp_path: Path) -> None:
    port_env = _env()
    port = free_port()
    workdir = tmp_path / "wd"
    args = ["demo", "--port", str(port), "--rate", "200", "--workdir", str(workdir)]
    proc = subprocess.Popen(
        [*GOLDWATCH, *args], cwd=tmp_path, env=port_env, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert proc.stderr is not None
        token = None
        deadline = time.monotonic() + WAIT_S
        while token is None and time.monotonic() < deadline:
            line = proc.stderr.readline()
            if not line:
                pytest.fail(f"demo ended ({proc.wait()}) before printing its token")
            found = re.match(r"^  API token +(\S+)$", line.rstrip("\n"))
            token = found.group(1) if found else None
        assert token is not None
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + WAIT_S
        while True:  # the banner comes before the server listens
            code = _post_evaluate(base, token) if _up(base) else None
            if code is not None:
                break
            if time.monotonic() > deadline:
                pytest.fail("the demo did not answer /healthz")
            time.sleep(0.2)
        assert code in AUTHORISED
        assert _post_evaluate(base, token + "x") == 403
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=WAIT_S)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate(timeout=WAIT_S)
    assert proc.returncode == 0


def _up(base: str) -> bool:
    try:
        with urllib.request.urlopen(f"{base}/healthz", timeout=2) as answer:
            return bool(answer.status == 200)
    except OSError:
        return False


@pytest.mark.parametrize("value", ["", f"{USER_TOKEN}\n"], ids=["empty", "newline"])
def test_an_unusable_env_token_exits_2_naming_api_token(tmp_path: Path, value: str) -> None:
    result = subprocess.run(
        [*GOLDWATCH, "demo", "--port", str(free_port()), "--workdir", "wd"], cwd=tmp_path,
        env=_env(GOLDWATCH_API__TOKEN=value), capture_output=True, text=True, timeout=WAIT_S,
        check=False,
    )  # fmt: skip
    assert result.returncode == 2, result.stderr
    assert re.search(r"api\.token: must not (be empty or blank|begin or end with whitespace)",
                     result.stderr), result.stderr  # fmt: skip
    assert "status page" not in result.stderr  # it never started
    assert "Zq7" not in result.stderr + result.stdout


def test_a_token_file_is_named_not_printed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from service.jobs.demo import banner, live_settings

    token_file = tmp_path / "my token"
    token_file.write_text(USER_TOKEN + "\n", encoding="utf-8")
    monkeypatch.setenv("GOLDWATCH_API__TOKEN_FILE", str(token_file))
    settings, token = live_settings(tmp_path / "wd", rate=20.0, host="127.0.0.1", port=8000)
    assert settings.api.token is not None
    assert settings.api.token.get_secret_value() == USER_TOKEN
    text = banner(settings, token, tmp_path / "wd")
    assert "Zq7" not in text and "Zq7" not in repr(token)
    assert f"yours, from api.token_file {token_file} (not printed)" in text
    assert f"Bearer $(cat '{token_file}')\"" in text  # quoted for the shell: the name has a space
