"""Secrets in the configuration: reading a secret file (a mounted Secret), what makes an API
token or a pseudonym key unusable, and masking secrets for display. Messages name the setting
and the file, never the secret.
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from service.files.regular import read_regular


def read_secret_file(path: Path, field: str) -> str:
    """The text of the secret file ``path`` with one final newline (``\\n``, ``\\r\\n``)
    stripped, as a mounted Secret or ``echo secret > file`` writes it; nothing else is
    stripped, so the caller's checks refuse further surrounding whitespace.

    Args:
        path: the file.
        field: the setting naming the file (e.g. ``analytics.pii_key_file``), for messages.

    Raises:
        ValueError: the file cannot be read or is not UTF-8 (the message names ``field`` and
            the file, never its content).
    """
    try:
        text = read_regular(path).decode("utf-8")  # a FIFO: a plain error, not a hang
    except (OSError, UnicodeDecodeError) as exc:
        reason = getattr(exc, "strerror", None) or type(exc).__name__
        raise ValueError(f"{field}: cannot read {path}: {reason}") from None
    return text.removesuffix("\n").removesuffix("\r")


def token_problem(token: str) -> str | None:
    """What makes ``token`` unusable as the API's bearer token, or ``None`` when it is usable.

    Every mutating request would be refused with such a token, so it is refused at start
    instead: empty or blank; leading or trailing whitespace (HTTP strips it from header
    values, RFC 9110 section 5.5, so no request can carry it: typically the newline at the end
    of a secret file); a character outside printable ASCII (controls cannot be sent in a
    header; clients and servers disagree on how non-ASCII header bytes are encoded). The
    message never includes the token.

    >>> token_problem("s3cret"), token_problem(" "), token_problem("s3cret\\n")
    (None, 'must not be empty or blank', 'must not begin or end with whitespace')
    """
    if not token.strip():
        return "must not be empty or blank"
    if token != token.strip():
        return "must not begin or end with whitespace"
    if not all(" " <= char <= "~" for char in token):
        return "must be printable ASCII (no control or non-ASCII character)"
    return None


#: Fewest characters of ``analytics.pii_key`` (32 hex digits are 128 bits).
PII_KEY_MIN_CHARS = 32


def pii_key_problem(key: str) -> str | None:
    """What makes ``key`` unfit as the pseudonym key, or ``None``.

    The key must be one a person can tell apart from every other, so that the same secret
    gives the same pseudonyms however it is supplied (variable, YAML, key file): the rules of
    :func:`token_problem` (not blank; no leading or trailing whitespace, such as a newline
    from ``echo`` into a variable, which the key file's one stripped newline would otherwise
    turn into a different key; printable ASCII only, no control character, and no non-ASCII
    character, whose composed and decomposed forms look the same but are other bytes), then
    at least :data:`PII_KEY_MIN_CHARS` characters. The message never includes the key.

    >>> pii_key_problem("0" * 32), pii_key_problem("short")
    (None, 'must have at least 32 characters (e.g. openssl rand -hex 32)')
    >>> pii_key_problem("0" * 32 + "\\n")
    'must not begin or end with whitespace'
    """
    problem = token_problem(key)
    if problem is not None:
        return problem
    if len(key) < PII_KEY_MIN_CHARS:
        return f"must have at least {PII_KEY_MIN_CHARS} characters (e.g. openssl rand -hex 32)"
    return None


SECRET_WORDS = ("token", "key", "secret", "password", "passwd", "pwd", "sig", "auth", "session",
                "credential")  # fmt: skip


def is_secret_name(name: str) -> bool:
    """True when the setting, header or query key ``name`` looks like it holds a secret (it
    contains one of :data:`SECRET_WORDS`, case-insensitively).

    >>> is_secret_name("X-Api-Key"), is_secret_name("timeout")
    (True, False)
    """
    return any(word in name.lower() for word in SECRET_WORDS)


def mask_url(url: str) -> str:
    """Mask the password of a URL's userinfo and the values of secret-looking query keys.

    >>> mask_url("http://u:pw@h:8/s?api_key=abc&q=1")
    'http://u:***@h:8/s?api_key=***&q=1'
    """
    parts = urlsplit(url)
    netloc = parts.netloc
    if "@" in netloc:
        userinfo, _, host = netloc.rpartition("@")
        user = userinfo.split(":", 1)[0]
        netloc = f"{user}:***@{host}" if ":" in userinfo else f"***@{host}"
    query = "&".join(
        f"{k}=***" if is_secret_name(k) else f"{k}={v}" if v or "=" in pair else k
        for pair in parts.query.split("&") if pair
        for k, _, v in [pair.partition("=")]
    )  # fmt: skip
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))
