"""Durable state of the live path: one SQLite file of namespaced JSON blobs.

What is kept (keys are ``<namespace>/<name>``; values are any JSON-able data):

* ``stage/<stage name>`` — a pipeline stage's snapshot (e.g. ``stage/dedup``: the last W
  event ids, oldest first, joined by newlines; ``stage/count``: running totals).
* ``source/<source key>`` — a source's resume position (e.g. ``source/file:/abs/path.jsonl``:
  ``{"offset": bytes, "line": n, "head": sha256-hex}``).
* ``traces/open/<trace id>/<request>`` — spans ``POST /v1/traces`` acknowledged whose trace is
  still being assembled (``service/api/trace_ingest.py``; kept across a clean stop and a
  crash, restored at start), deleted with the checkpoint that records the trace's event.
* ``harvest/candidate/<id>``, ``harvest/decision/<id>`` — harvested suggestions' records and
  labelling decisions (:mod:`service.harvest.store`); the records of suggestions no longer
  held are swept by the checkpoint that stops holding them (a :class:`Sweep`);
  ``harvest/decided`` — the decisions the harvest stage remembers (written when they change).

Schema (version 1)::

    meta(key TEXT PRIMARY KEY, value TEXT NOT NULL)         -- schema_version = "1"
    state(key TEXT PRIMARY KEY, value TEXT NOT NULL,        -- value is JSON text
          updated_at REAL NOT NULL)                         -- Unix time, seconds

The file is opened in WAL mode with ``synchronous=FULL``: once :meth:`StateStore.checkpoint`
returns, the update survives a crash or power loss. A checkpoint is one transaction: all of
its keys change, or none do — and so do the deletions of its sweeps (:class:`Sweep`): a key
namespace kept to what the snapshot being written names (e.g. harvested suggestions' records
to the suggestions held), swept in that snapshot's transaction, so a checkpoint that fails
deletes nothing and one that commits sweeps whatever was left over by earlier ones.

Opening never repairs or recreates: a corrupt, foreign or unreadable file raises
:class:`StateError`, whose message names the file and tells the user to move it aside.

The file holds users' questions (scrubbed), pseudonymised ids and, for seconds, the raw spans
of open traces (``traces/open/``), so it is created readable by
its owner only (mode 0600; SQLite gives its ``-wal`` and ``-shm`` files the database's mode).
Deleted content does not linger on disk: the file is opened with ``PRAGMA secure_delete=ON``
(SQLite overwrites deleted cells and freed pages with zeros) and a checkpoint that deletes a
key then checkpoints the write-ahead log into the file and truncates it (``PRAGMA
wal_checkpoint(TRUNCATE)``), so the older page images in the ``-wal`` file go too. Without
them, a trial found the raw e-mails and names of assembled traces in freed pages and WAL
frames minutes later, and after a ``kill -9`` and restart.
A writer (``serve``, ``replay --state``) opens it with ``exclusive=True``: an advisory
``flock`` on ``<file>.lock`` held until :meth:`StateStore.close` (or the process's death), so
a second process on the same file — also through a symlink or another spelling of the path:
``<file>`` is the real path, symlinks resolved — fails at start instead of both checkpointing
over each other — each would restore the same state, and the last to checkpoint would erase
the other's counts and dedup window. A hard link is another name of the same file (no path
leads from one name to the other), so the writer also holds an ``flock`` on the database file
itself, which belongs to the file's identity (device and inode), whatever the name: the
second process is refused naming the holder's pid (read from ``/proc/locks``). SQLite's own
locks are POSIX record locks, independent of ``flock`` on Linux. Readers (``candidates
export``) do not take the lock.

>>> store = StateStore.in_memory()
>>> store.checkpoint({"stage/count": {"processed": 3}})  # if_absent values written: none
0
>>> store.get("stage/count")
{'processed': 3}
>>> store.get("stage/missing", default={})
{}
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import sqlite3
import sys
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any, NamedTuple

import msgspec

from service.errors import GoldwatchError

log = logging.getLogger(__name__)

SCHEMA_VERSION = "1"
_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS state ("
    "key TEXT PRIMARY KEY, value TEXT NOT NULL, updated_at REAL NOT NULL)",
)


class StateError(GoldwatchError, RuntimeError):
    """The state file cannot be opened, read or written.

    The message names the file and says what to do (move a corrupt file aside, free disk
    space, make the directory writable). goldwatch never overwrites or recreates it silently.
    It never holds event text (:attr:`~service.errors.GoldwatchError.safe_text`).
    """

    safe_text = True


def _move_aside_hint(path: str) -> str:
    return (
        f"move it aside (e.g. `mv {path} {path}.broken`) to start with empty state, "
        "or restore it from a backup"
    )


def _write_error(path: str, exc: sqlite3.Error) -> StateError:
    text = str(exc).lower()
    if "full" in text:
        why = "the disk is full (free some space, then restart)"
    elif "readonly" in text or "read-only" in text or "unable to open" in text:
        why = "the file or its directory is not writable (check permissions and mounts)"
    else:
        why = f"{type(exc).__name__}: {exc}"
    return StateError(f"cannot write state file {path}: {why}")


class JsonText(str):
    """A value already encoded as JSON text: :meth:`StateStore.checkpoint` writes it as it
    is instead of encoding it (the caller vouches for its being valid JSON; e.g. the harvest
    records of :func:`service.harvest.store.record_json`, encoded faster than ``json.dumps``
    with the same text)."""

    __slots__ = ()


class EncodedObject(dict[str, Any]):
    """A JSON object (a ``dict``) that carries its own JSON text (``text``):
    :meth:`StateStore.checkpoint` writes ``text`` instead of encoding the dictionary again.
    Build it with :func:`encoded_object`, which vouches that ``json.loads(text)`` reads back
    what :func:`_dumps` of the dictionary would (e.g. the harvest stage's snapshot, whose
    suggestions are encoded without :func:`_dumps`'s decode-and-compare check: 1.8 MB a
    checkpoint in a production-shaped replay). Setting or deleting a key drops the text
    (``None``: the dictionary is then encoded as any other); its values' own contents are
    not to be changed (the snapshots built so are fresh containers nobody changes)."""

    __slots__ = ("text",)

    def __init__(self, members: Mapping[str, Any], text: str) -> None:
        super().__init__(members)
        self.text: str | None = text

    def __setitem__(self, key: str, value: Any) -> None:
        self.text = None
        super().__setitem__(key, value)

    def __delitem__(self, key: str) -> None:
        self.text = None
        super().__delitem__(key)

    def _changing(name: str) -> Any:  # type: ignore[misc]  # noqa: N805 - a class-body helper
        method = getattr(dict, name)

        def change(self: EncodedObject, *args: Any, **kwargs: Any) -> Any:
            self.text = None
            return method(self, *args, **kwargs)

        change.__name__ = name
        return change

    clear = _changing("clear")
    pop = _changing("pop")
    popitem = _changing("popitem")
    setdefault = _changing("setdefault")
    update = _changing("update")
    __ior__ = _changing("__ior__")
    del _changing


def encoded_object(members: Mapping[str, Any], texts: Mapping[str, str]) -> EncodedObject:
    """``members`` (string keys, in their order) with their JSON object text: each member's
    value written as ``texts[key]`` when given there — the caller vouches that
    ``json.loads`` of it equals ``json.loads(json.dumps(members[key]))`` (e.g. the text
    :func:`json.dumps` itself writes, as :func:`service.harvest.store.record_json` does) —
    else as :func:`_dumps` writes it (checked). ``json.loads(result.text)`` is then the
    dictionary ``members`` reads back as, member by member.

    The text is joined once from its pieces: the harvest snapshot's is ~2.3 MB a
    checkpoint of a production-shaped replay, and each member's ``key:text`` string, their
    join and the braces around it had copied it three more times.

    Raises:
        TypeError: a member without a text is not JSON-serialisable; a key is not a string.
    """
    pieces = ["{"]
    for key, value in members.items():
        if type(key) is not str:
            raise TypeError(f"an encoded object's keys are strings, not {type(key).__name__}")
        text = texts.get(key)
        if len(pieces) > 1:
            pieces.append(",")
        pieces += (_dumps(key), ":", _dumps(value) if text is None else text)
    pieces.append("}")
    return EncodedObject(members, "".join(pieces))


def json_text(value: Any) -> str:
    """``value``'s JSON text as :meth:`StateStore.checkpoint` writes a plain value (compact;
    ``json.loads`` reads it back equal to what ``json.dumps`` would give): for a caller that
    keeps the texts of parts that do not change, to join them into an
    :func:`encoded_object`'s member text (e.g. the closed hours of
    :class:`service.shadow.trend.AgreementTrend`).

    Raises:
        TypeError: ``value`` is not JSON-serialisable.
    """
    return _dumps(value)


def _text(value: Any) -> str:
    """The JSON text :meth:`StateStore.checkpoint` writes for ``value`` (not ``None``)."""
    kind = type(value)
    if kind is JsonText:
        return str(value)
    if kind is EncodedObject and value.text is not None:
        return str(value.text)
    return _dumps(value)


class Sweep(NamedTuple):
    """Keep the keys under ``prefix`` to those a snapshot names, in that snapshot's own
    checkpoint (:meth:`StateStore.add_sweep`).

    Every checkpoint that writes ``trigger`` (a value other than ``None``) deletes, in the
    same transaction, each key ``prefix + name`` whose ``name`` is not in ``keep(value)``
    (``value``: the one written under ``trigger``; names as strings) and for which no key
    ``protect + name`` exists (in the store, after this checkpoint's writes); when
    ``keep(value)`` is ``None`` that checkpoint does not sweep (nothing can have left).
    E.g. the harvest stage's snapshot (``stage/harvest``) names the suggestions held; their records
    (``harvest/candidate/<id>``) stay, and so do those with a decision
    (``harvest/decision/<id>``); the others are swept.

    Attributes:
        trigger: the key whose write runs the sweep.
        prefix: the namespace swept (non-empty; its keys' names follow it).
        keep: the names kept, from the value written under ``trigger``, or ``None`` for
            no sweep; it may raise (nothing is written then).
        protect: a name is also kept while ``protect + name`` is a key.
    """

    trigger: str
    prefix: str
    keep: Callable[[Any], Iterable[str] | None]
    protect: str


def _after_prefix(prefix: str) -> str:
    """The least string greater than every string that starts with ``prefix`` (non-empty;
    its last character is not U+10FFFF): keys ``k`` with ``prefix <= k < _after_prefix``
    are exactly those starting with it, a range SQLite reads on the primary key."""
    return prefix[:-1] + chr(ord(prefix[-1]) + 1)


class Guard(NamedTuple):
    """The condition under which :meth:`StateStore.write_unless` leaves a key unwritten:
    while ``key`` holds a value whose top-level ``field`` is anything but ``allowed`` (a value
    that is no JSON object, or lacks ``field``, counts as holding another). E.g. a harvested
    suggestion's record is not written over while its decision key holds a decision
    (``Guard("harvest/decision/<id>", "status", "pending")``: a hold does not block)."""

    key: str
    field: str
    allowed: str


_GUARD_SQL = (
    "SELECT 1 FROM state WHERE key = ? "
    "AND (json_type(value) IS NOT 'object' OR json_extract(value, ?) IS NOT ?)"
)

#: :data:`_GUARD_SQL` for many guard keys of one field and allowed value (``{}``: the
#: keys' placeholders): the keys among them whose guard holds.
_GUARDS_SQL = (
    "SELECT key FROM state WHERE key IN ({}) "
    "AND (json_type(value) IS NOT 'object' OR json_extract(value, ?) IS NOT ?)"
)
#: Whether some key lies in ``[?1, ?2)`` (a prefix's range: :func:`_after_prefix`).
_RANGE_SQL = "SELECT 1 FROM state WHERE key >= ? AND key < ? LIMIT 1"
_LAST_CHAR = chr(0x10FFFF)
#: Most guard keys per :data:`_GUARDS_SQL` query (SQLite's variable limit is 999 before 3.32).
_GUARD_CHUNK = 500

#: The keys in ``[?1, ?2)`` (a prefix's range: :func:`_after_prefix`), read by a sweep.
_KEYS_SQL = "SELECT key FROM state WHERE key >= ? AND key < ?"
#: A sweep's deletion: ``?1`` the keys to delete (a JSON array of keys under the swept
#: prefix whose names the snapshot does not keep), ``?2`` the protecting prefix, ``?3`` the
#: swept prefix's length + 1; a key stays while ``?2 || its name`` is a key. One statement,
#: so every protecting key is looked at before any key is deleted, as in the single
#: ``DELETE ... NOT IN (the kept names)`` over the whole range it replaces.
_SWEEP_SQL = (
    "DELETE FROM state WHERE key IN (SELECT value FROM json_each(?1)) "
    "AND NOT EXISTS (SELECT 1 FROM state AS kept WHERE kept.key = ?2 || substr(state.key, ?3))"
)


class StateStore:
    """Namespaced JSON blobs in one SQLite file, updated atomically.

    Build with :meth:`open` (a file) or :meth:`in_memory` (tests). Thread-safe: one lock
    guards the connection, so the API thread may read while the consumer thread checkpoints.

    Raises:
        StateError: from every method, when SQLite reports an error; nothing else leaks.
    """

    def __init__(
        self,
        connection: sqlite3.Connection,
        label: str,
        lock_fd: Sequence[int] = (),
        file: Path | None = None,
    ) -> None:
        self._conn = connection
        self._label = label
        self._lock = threading.Lock()
        self._lock_fd = lock_fd
        self._sweeps: list[Sweep] = []
        #: Keys deleted by sweeps since the store was opened (≥ 0).
        self.swept = 0
        #: The file's real path, whose identity every write checks (``None``: in memory).
        self._file = file
        #: ``(st_dev, st_ino)`` of the file this connection writes (``None``: in memory).
        self._identity = _identity(file) if file is not None else None
        self._exclusive = bool(lock_fd)
        #: Times the file was found deleted or replaced at its path and written there again
        #: whole (:meth:`check_place`), since the store was opened (≥ 0).
        self.recreated = 0
        #: What the last recreation said (path, why, when), ``None`` before any.
        self.last_recreated: str | None = None
        #: Why the file at the path is not the one written and could not be written there
        #: again (directory gone, read-only...): the state lives only in a file no path
        #: leads to; ``None`` while the file at the path is this store's.
        self.lost: str | None = None
        self._lost_logged = 0.0  # monotonic time the loss was last logged
        self._copies = 0  # recreations tried: each copy gets its own temporary name

    @property
    def label(self) -> str:
        """The file path (or ``:memory:``) this store writes to."""
        return self._label

    @classmethod
    def open(cls, path: Path | str, *, exclusive: bool = False) -> StateStore:
        """Open or create the state file at ``path`` (created with mode 0600) and check its
        integrity. With ``exclusive``, first take the writer's lock on ``<path>.lock`` (see
        the module docstring), released by :meth:`close`.

        Raises:
            StateError: the directory is missing or not writable, the file is empty (0 bytes)
                or not a SQLite database, fails ``PRAGMA integrity_check``, or has another
                schema version; with ``exclusive``, another process holds the file (its pid is
                named).
        """
        label = str(path)
        # the real path: a symlink to another replica's file must meet that file's lock
        file = Path(os.path.realpath(path))
        if not file.parent.is_dir():
            raise StateError(f"cannot open state file {label}: directory {file.parent} missing")
        if file.exists() and not file.is_file():
            raise StateError(f"cannot open state file {label}: it is not a regular file")
        if file.exists() and file.stat().st_size == 0:  # SQLite would start afresh on it
            raise StateError(f"state file {label} is empty (0 bytes: truncated or damaged); "
                             + _move_aside_hint(label))  # fmt: skip
        if not os.access(file.parent, os.W_OK) or (file.exists() and not os.access(file, os.W_OK)):
            # SQLite's WAL needs to create side files beside the database: a read-only folder
            # would otherwise surface as a "corrupt" file, and that advice loses the state.
            raise StateError(
                f"cannot write state file {label}: the file or its directory is not writable "
                "(check permissions and mounts)"
            )
        lock_fd: tuple[int, ...] = ()
        if exclusive:
            taken = _take_writer_lock(file)
            lock_fd = (taken,) if taken is not None else ()
        try:
            _create_private(file)
            if exclusive:  # before SQLite opens it: its POSIX locks must not meet our close
                lock_fd += _lock_database_file(file, label)
            conn = sqlite3.connect(str(file), isolation_level=None, check_same_thread=False)
        except (sqlite3.Error, OSError, StateError) as exc:
            _release_writer_lock(lock_fd)
            if isinstance(exc, StateError):
                raise
            if isinstance(exc, OSError):
                raise StateError(f"cannot create state file {label}: {exc.strerror}") from exc
            raise _write_error(label, exc) from exc
        try:
            _check_integrity(conn, label)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=FULL")
            conn.execute("PRAGMA secure_delete=ON")  # deleted raw spans leave no trace
            _init_schema(conn, label)
        except BaseException:
            conn.close()
            _release_writer_lock(lock_fd)
            raise
        return cls(conn, label, lock_fd, file)

    @classmethod
    def in_memory(cls) -> StateStore:
        """Return a store that lives in memory only (tests, ``goldwatch replay``)."""
        conn = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
        _init_schema(conn, ":memory:")
        return cls(conn, ":memory:")

    def get(self, key: str, default: Any = None) -> Any:
        """Return the JSON value stored at ``key``, or ``default`` when absent."""
        values = self.get_many([key])
        return values.get(key, default)

    def get_many(self, keys: Iterable[str]) -> dict[str, Any]:
        """Return ``{key: value}`` for the ``keys`` that are present.

        Raises:
            StateError: a stored value is not valid JSON (naming the file and key).
        """
        wanted = list(keys)
        if not wanted:
            return {}
        marks = ",".join("?" * len(wanted))
        rows = self._read(f"SELECT key, value FROM state WHERE key IN ({marks})", wanted)
        values = {}
        for key, value in rows:
            try:
                values[key] = json.loads(value)
            except (ValueError, TypeError):
                raise StateError(
                    f"state file {self.label} has a damaged value under {key!r}; "
                    + _move_aside_hint(self.label)
                ) from None
        return values

    def any_key(self, prefix: str) -> bool:
        """Whether some stored key starts with ``prefix`` (non-empty): one look-up of the
        primary key's range, however many keys there are.

        Raises:
            ValueError: ``prefix`` is empty.
            StateError: SQLite failed.
        """
        if not prefix:
            raise ValueError("any_key needs a non-empty prefix")
        if prefix[-1] == _LAST_CHAR:  # no string follows its range: read the keys
            return any(key.startswith(prefix) for key in self.keys(prefix[:-1]))
        return bool(self._read(_RANGE_SQL, [prefix, _after_prefix(prefix)]))

    def keys(self, prefix: str = "") -> list[str]:
        """Return the stored keys that start with ``prefix`` (e.g. ``"stage/"``), sorted."""
        rows = self._read("SELECT key FROM state ORDER BY key", [])
        return [key for (key,) in rows if key.startswith(prefix)]

    def add_sweep(self, sweep: Sweep) -> None:
        """Run ``sweep`` in every later checkpoint that writes ``sweep.trigger`` (once, however
        often it is added: a second pipeline built on the same store adds the same one).

        Raises:
            ValueError: ``sweep.prefix`` is empty.
        """
        if not sweep.prefix:
            raise ValueError("a sweep needs a non-empty prefix")
        with self._lock:
            if sweep not in self._sweeps:
                self._sweeps.append(sweep)

    def checkpoint(
        self,
        updates: Mapping[str, Any],
        if_absent: Mapping[str, Any] | None = None,
        delete_if: Mapping[str, JsonText] | None = None,
    ) -> int:
        """Write all ``updates`` in one durable transaction; a ``None`` value deletes its key.

        A :class:`JsonText` value is written as it is (already JSON text), an
        :class:`EncodedObject` as its ``text``. ``if_absent``
        values are written in the same transaction only under keys that hold none (after
        ``updates``; e.g. a labelling decision brings back the record it was taken on, had a
        checkpoint swept it meanwhile, without overwriting a newer one). ``delete_if``
        deletes each key only while it holds exactly that JSON text (e.g. a record brought
        back by ``if_absent`` and not rewritten since). The sweeps whose ``trigger`` this
        writes run last, in the same transaction (:class:`Sweep`).

        Returns:
            How many ``if_absent`` values were written (0 to ``len(if_absent)``).

        Raises:
            TypeError: a value is not JSON-serialisable (nothing is written).
            Exception: what a sweep's ``keep`` raised (nothing is written).
            StateError: SQLite failed (disk full, read-only); the transaction is rolled back,
                so the previous checkpoint stays intact, its sweeps undone with it.
        """
        now = time.time()
        rows = [(k, _text(v), now) for k, v in updates.items() if v is not None]
        deleted = [(k,) for k, v in updates.items() if v is None]
        unchanged = [(k, str(v)) for k, v in (delete_if or {}).items()]
        absent = [(k, _text(v), now) for k, v in (if_absent or {}).items()]
        with self._lock:
            sweeps = [
                (s.prefix, {str(n) for n in names}, s.protect)
                for s in self._sweeps
                if (value := updates.get(s.trigger)) is not None
                and (names := s.keep(value)) is not None
            ]
            try:
                self._conn.execute("BEGIN IMMEDIATE")
                self._conn.executemany(
                    "INSERT INTO state(key, value, updated_at) VALUES (?, ?, ?) "
                    "ON CONFLICT(key) DO UPDATE SET value=excluded.value, "
                    "updated_at=excluded.updated_at",
                    rows,
                )
                self._conn.executemany("DELETE FROM state WHERE key = ?", deleted)
                self._conn.executemany("DELETE FROM state WHERE key = ? AND value = ?", unchanged)
                written = self._conn.executemany(
                    "INSERT INTO state(key, value, updated_at) VALUES (?, ?, ?) "
                    "ON CONFLICT(key) DO NOTHING",
                    absent,
                ).rowcount
                swept = sum(self._sweep(*sweep) for sweep in sweeps)
                self._conn.execute("COMMIT")
            except sqlite3.Error as exc:
                _rollback(self._conn)
                raise _write_error(self._label, exc) from exc
            self.swept += swept
            if deleted or unchanged or swept:
                self._truncate_log()
            self._check_place()
        return max(written, 0)

    @property
    def durable(self) -> bool:
        """Whether what was written is in the file at the configured path, so a restart
        reads it (always for an in-memory store): ``False`` while :attr:`lost` says why
        not. A consumer commits no offsets and acknowledges nothing meanwhile."""
        return self.lost is None

    def check_place(self) -> None:
        """Check that the file at the store's path is the one this connection writes (same
        device and inode, and a link left), as every write does after it commits and the
        consumer loop at every status sample (an idle replica); when it is not (deleted,
        moved away, replaced), write it there again whole (:meth:`_recreate`).

        A file no path leads to is still written (the connection holds it open), but a
        restart would not read it: without this, a replica whose state file was deleted
        kept checkpointing into the unlinked file and committing offsets, and restarted
        with none of its totals (trial 47, F4). Recreated, the file holds everything
        committed so far (a copy of the open file, not the last snapshot's changes), and
        :attr:`recreated` counts it; when that fails, :attr:`lost` says why, the error is
        logged (again at most once a minute) and the next write tries again.
        """
        with self._lock:
            self._check_place()

    def _check_place(self) -> None:
        """:meth:`check_place`, the lock held."""
        if self._file is None:
            return
        here = _identity(self._file)
        if here is not None and here == self._identity:
            if self.lost is not None:
                log.error("state file %s is back at its path: committing resumes", self._label)
                self.lost = None
            return
        why = "missing" if here is None else "replaced by another file"
        try:
            self._recreate(here is not None)
        except (OSError, sqlite3.Error, StateError) as exc:
            detail = getattr(exc, "strerror", None) or str(exc)
            self.lost = (
                f"state file {self._label} is {why} and cannot be written there again "
                f"({detail}): the state lives only in memory and a deleted file, so offsets are "
                "not committed until it can (events after the last commit are read again "
                "after a restart); fix the directory (exists, writable) and the next "
                "checkpoint recreates it"
            )
            now = time.monotonic()
            if now - self._lost_logged >= _LOST_LOG_INTERVAL_S:
                self._lost_logged = now
                log.error("%s", self.lost)
            return
        self.recreated += 1
        self.lost = None
        self.last_recreated = (
            f"state file {self._label} was {why} while goldwatch ran; recreated there with the "
            f"whole current state at {time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())} "
            f"({self.recreated} time{'s' if self.recreated != 1 else ''} since start)"
        )
        log.error("%s", self.last_recreated)

    def _recreate(self, occupied: bool) -> None:
        """Write the open file's committed content whole to the store's path and go on
        writing there; the lock held.

        Never a partial file at the path: ``VACUUM INTO`` copies a consistent snapshot into
        a temporary file beside it (mode 0600), which is synced and then renamed over the
        path (atomic); a file found there (``occupied``: another file put in its place) is
        first moved aside to ``<path>.replaced-<Unix time>``.

        The old connection stays open, and in use on any failure, until the new one is in
        place (a directory deleted between the copy and the rename leaves it writing, and the
        next check tries again). Before the rename its WAL is checkpointed into the file it
        has open (a file moved away with ``mv`` is then whole: its latest pages were in the
        ``-wal`` left at the path) and it leaves WAL mode for an in-memory journal: that
        deletes the ``-wal`` and ``-shm`` at the path (the new connection would take them for
        its own and replay the old frames) and lets it write on without files beside it.
        The writer's locks are taken again on the new file (and on ``<path>.lock`` when that
        was deleted too).

        Raises:
            OSError, sqlite3.Error: the copy cannot be written or put in place (directory
                gone, read-only, disk full); the open file stays in use.
            StateError: another process took the lock file meanwhile.
        """
        assert self._file is not None
        file, old = self._file, self._conn
        self._copies += 1
        tmp = file.with_name(f"{file.name}.recreate-{os.getpid()}-{self._copies}")
        old_fds = self._lock_fd
        writer = old_fds[0] if self._exclusive and old_fds else None
        lock_file = file.with_name(file.name + ".lock")
        try:
            _create_private(tmp)
            old.execute("VACUUM INTO ?", (str(tmp),))
            _fsync_path(tmp)
            busy = old.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
            if busy and busy[0]:  # a reader of the old file (`goldwatch status`) held it
                log.warning("state file %s: the file left its path with pages in its -wal "
                            "(a reader held it); a copy moved away may lack them",
                            self._label)  # fmt: skip
            mode = old.execute("PRAGMA journal_mode=MEMORY").fetchone()
            if not mode or str(mode[0]).lower() != "memory":  # a reader holds it: later
                raise sqlite3.OperationalError(f"journal mode stays {mode and mode[0]}")
            for suffix in ("-wal", "-shm"):  # gone with WAL mode, unless SQLite kept them
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(file.with_name(file.name + suffix))
            if writer is not None and _identity(lock_file) != _fd_identity(writer):
                writer = _take_writer_lock(file)  # deleted with the file: a new one, held
                _release_writer_lock([old_fds[0]])
                self._lock_fd = ((writer,) if writer is not None else ()) + tuple(old_fds[1:])
            if occupied:
                aside = file.with_name(f"{file.name}.replaced-{int(time.time())}")
                os.rename(file, aside)
                log.error("state file %s: the other file found at its path moved to %s",
                          self._label, aside)  # fmt: skip
            os.rename(tmp, file)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
        # the copy is at the path, whole: a failure from here leaves it there and the old
        # connection in use (the next check finds a file that is not the open one and copies
        # again)
        _fsync_path(file.parent)
        new_fds = _lock_database_file(file, self._label) if self._exclusive else ()
        try:
            conn = _connect_wal(file)
        except BaseException:
            _release_writer_lock(new_fds)
            raise
        old.close()
        for fd in self._lock_fd[1:]:
            os.close(fd)  # the old database file's flock, after its connection
        self._lock_fd = ((writer,) if writer is not None else ()) + new_fds
        self._conn = conn
        self._identity = _identity(file)

    def _sweep(self, prefix: str, kept: set[str], protect: str) -> int:
        """Delete each key ``prefix + name`` with ``name`` not in ``kept`` and no key
        ``protect + name`` (:class:`Sweep`); return how many were deleted (≥ 0). The caller
        holds the lock, in the checkpoint's transaction, after its writes.

        The range's keys are read and compared with ``kept`` here, and only those left over
        (usually the few evicted since the last sweep) go to SQL: the same deletions as
        one ``DELETE`` over the range with ``substr(key, n) NOT IN (SELECT value FROM
        json_each(<kept names>))``, which encoded, parsed and indexed every kept name at
        every sweep (11.7 against 4.0 ms a checkpoint without a sweep, 5,500 records held
        in a file: ``benchmarks.bench_store_sweep``). Names compare as SQLite's ``substr``
        and ``NOT IN`` did: by code points, exactly.

        Raises:
            sqlite3.Error: SQLite failed (the caller rolls back).
        """
        start = len(prefix)
        rows = self._conn.execute(_KEYS_SQL, (prefix, _after_prefix(prefix)))
        gone = [key for (key,) in rows if key[start:] not in kept]
        if not gone:
            return 0
        return int(self._conn.execute(_SWEEP_SQL, (_dumps(gone), protect, start + 1)).rowcount)

    def _truncate_log(self) -> None:
        """Checkpoint the write-ahead log into the file and truncate it to 0 bytes, so page
        images holding deleted values (the raw spans of an assembled trace) leave the disk
        (module docstring). Best effort, under the lock: a reader in the way (another
        process's ``candidates`` command) leaves the log for the next checkpoint that
        deletes; an in-memory store has no log."""
        if self._label == ":memory:":
            return
        # no wait for a reader (the default busy handler waited up to 5 s, the lock held, the
        # API's reads behind it): a busy log is left for the next deleting checkpoint
        conn = self._conn
        try:
            timeout = conn.execute("PRAGMA busy_timeout").fetchone()[0]
            conn.execute("PRAGMA busy_timeout=0")
            try:
                busy = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0]
            finally:
                conn.execute(f"PRAGMA busy_timeout={int(timeout)}")
        except sqlite3.Error as exc:  # the commit stands; the next deleting checkpoint retries
            log.warning("state file %s: write-ahead log not truncated: %s", self._label,
                        type(exc).__name__)  # fmt: skip
            return
        if busy:
            log.debug("state file %s: a reader kept the write-ahead log; truncated later",
                      self._label)  # fmt: skip

    def write_unless(self, updates: Mapping[str, Any], guards: Mapping[str, Guard]) -> list[str]:
        """Write ``updates`` in one durable transaction, except each key whose guard
        (``guards[key]``, when it has one) holds at that moment (:class:`Guard`): the check
        and the write are one transaction, so no writer in between can change the guard's
        key (e.g. a labelling decision kept just before a harvest record is published over
        the record it was taken on). ``None`` values delete, :class:`JsonText` (and
        :class:`EncodedObject`) values are
        written as they are, as in :meth:`checkpoint`; no sweep runs.

        Returns:
            The keys left unwritten (their guard held), in the order of ``updates``.

        Raises:
            TypeError: a value is not JSON-serialisable (nothing is written).
            StateError: SQLite failed; the transaction is rolled back (nothing is written).
        """
        now = time.time()
        encoded = [(k, None if v is None else _text(v)) for k, v in updates.items()]
        skipped: list[str] = []
        # a guard reads its own key only: unless that key is written here too, or a key is
        # deleted (a write after a delete may take the deleted row's rowid), the guards give
        # the same answers before the writes as between them: one query per 500 guards and
        # one executemany instead of two statements a key (2,000 guarded records: 7.0
        # against 9.7 ms in memory, 7.5 against 11.4 in a file; same rows, rowids, skips)
        batched = all(value is not None for _, value in encoded) and not any(
            guard.key in updates for key in updates if (guard := guards.get(key)) is not None
        )
        with self._lock:
            try:
                self._conn.execute("BEGIN IMMEDIATE")
                if batched:
                    held = self._guards_held(
                        [g for k in updates if (g := guards.get(k)) is not None]
                    )
                    rows: list[tuple[str, str | None, float]] = []
                    for key, value in encoded:
                        guard = guards.get(key)
                        if guard is not None and guard in held:
                            skipped.append(key)
                        else:
                            rows.append((key, value, now))
                    self._conn.executemany(
                        "INSERT INTO state(key, value, updated_at) VALUES (?, ?, ?) "
                        "ON CONFLICT(key) DO UPDATE SET value=excluded.value, "
                        "updated_at=excluded.updated_at",
                        rows,
                    )
                    encoded = []
                for key, value in encoded:
                    guard = guards.get(key)
                    if (
                        guard is not None
                        and self._conn.execute(
                            _GUARD_SQL, (guard.key, "$." + guard.field, guard.allowed)
                        ).fetchone()
                    ):
                        skipped.append(key)
                    elif value is None:
                        self._conn.execute("DELETE FROM state WHERE key = ?", (key,))
                    else:
                        self._conn.execute(
                            "INSERT INTO state(key, value, updated_at) VALUES (?, ?, ?) "
                            "ON CONFLICT(key) DO UPDATE SET value=excluded.value, "
                            "updated_at=excluded.updated_at",
                            (key, value, now),
                        )
                self._conn.execute("COMMIT")
            except sqlite3.Error as exc:
                _rollback(self._conn)
                raise _write_error(self._label, exc) from exc
            self._check_place()
        return skipped

    def _guards_held(self, guards: Iterable[Guard]) -> set[Guard]:
        """The ``guards`` that hold now (:data:`_GUARD_SQL` of each, in a few queries); the
        caller holds the lock, in a transaction."""
        keys_of: dict[tuple[str, str], list[str]] = {}
        for guard in dict.fromkeys(guards):
            keys_of.setdefault((guard.field, guard.allowed), []).append(guard.key)
        held: set[Guard] = set()
        # a guard holds only while its key holds a value: when no key shares the guards'
        # common prefix (no labelling decision stored, for harvest's records), none does
        prefix = os.path.commonprefix([key for keys in keys_of.values() for key in keys])
        if (
            prefix
            and prefix[-1] != _LAST_CHAR
            and self._conn.execute(_RANGE_SQL, (prefix, _after_prefix(prefix))).fetchone() is None
        ):
            return held
        for (field, allowed), keys in keys_of.items():
            for start in range(0, len(keys), _GUARD_CHUNK):
                chunk = keys[start : start + _GUARD_CHUNK]
                query = _GUARDS_SQL.format(",".join("?" * len(chunk)))
                for (key,) in self._conn.execute(query, (*chunk, "$." + field, allowed)):
                    held.add(Guard(key, field, allowed))
        return held

    def close(self) -> None:
        """Close the connection and release the writer's lock, if held (idempotent). Closed
        while :attr:`lost`, the state written since the file left its path is gone with it:
        said once more in the log."""
        with self._lock:
            if self.lost is not None:
                log.error("closing while %s: this state is lost; the next start begins empty at "
                          "the last committed offsets", self.lost)  # fmt: skip
                self.lost = None
            self._conn.close()
            _release_writer_lock(self._lock_fd)
            self._lock_fd = ()

    def __enter__(self) -> StateStore:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def _read(self, sql: str, params: list[str]) -> list[tuple[str, ...]]:
        with self._lock:
            try:
                return list(self._conn.execute(sql, params))
            except sqlite3.Error as exc:
                raise StateError(
                    f"cannot read state file {self._label}: {exc}; {_move_aside_hint(self._label)}"
                ) from exc


def _connect_wal(file: Path) -> sqlite3.Connection:
    """A connection to the state file ``file`` set up as :meth:`StateStore.open` sets it up
    (WAL, ``synchronous=FULL``, ``secure_delete``), without its checks.

    Raises:
        sqlite3.Error: SQLite cannot open it.
    """
    conn = sqlite3.connect(str(file), isolation_level=None, check_same_thread=False)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=FULL")
    conn.execute("PRAGMA secure_delete=ON")
    # a write now opens the -wal and -shm files: SQLite opens them at the first transaction,
    # and a directory deleted before it would leave a connection that cannot write at all
    # ("disk I/O error"), where an open one goes on writing into the deleted files
    conn.execute("UPDATE meta SET value = value WHERE key = 'schema_version'")
    return conn


#: Seconds between two log lines saying the state file cannot be written at its path.
_LOST_LOG_INTERVAL_S = 60.0


def _identity(file: Path) -> tuple[int, int] | None:
    """``(st_dev, st_ino)`` of the file at ``file`` (symlinks followed), ``None`` when no
    file is there (or its directory is gone or unreadable), or the one there has no link
    left (``st_nlink`` 0: deleted on the host under a bind mount of the file alone)."""
    try:
        st = os.stat(file)
    except OSError:
        return None
    if st.st_nlink == 0:  # unlinked, yet at the path: a single-file bind mount's host deleted it
        return None
    return (st.st_dev, st.st_ino)


def _fd_identity(fd: int) -> tuple[int, int]:
    st = os.fstat(fd)
    return (st.st_dev, st.st_ino)


def _fsync_path(path: Path) -> None:
    """``fsync`` the file or directory at ``path`` (a renamed file's directory entry, a
    copy SQLite's ``VACUUM INTO`` does not sync itself).

    Raises:
        OSError: it cannot be opened or synced.
    """
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _create_private(file: Path) -> None:
    """Create ``file`` empty with mode 0600 unless it exists (SQLite would create it 0644
    under the usual umask); an existing file keeps its mode (the operator's choice).

    Raises:
        OSError: the file cannot be created.
    """
    try:
        fd = os.open(file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return
    os.close(fd)


def _take_writer_lock(file: Path) -> int | None:
    """Take an exclusive, non-blocking ``flock`` on ``<file>.lock`` (created 0600) and write
    this process's pid into it; return its descriptor (``None`` where ``fcntl`` is missing).

    Raises:
        StateError: another process holds the lock (named by the pid it wrote), or the lock
            file cannot be created.
    """
    if sys.platform == "win32":  # pragma: no cover - goldwatch runs on Linux
        return None
    import fcntl

    lock_path = file.with_name(file.name + ".lock")
    try:
        fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o600)
    except OSError as exc:
        raise StateError(f"cannot create lock file {lock_path}: {exc.strerror}") from exc
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        holder = os.read(fd, 32).decode("ascii", "replace").strip() or "unknown"
        os.close(fd)
        raise StateError(
            f"state file {file} is in use by another goldwatch process (pid {holder}): "
            "stop it first; each replica needs its own state.path"
        ) from None
    os.ftruncate(fd, 0)
    os.write(fd, f"{os.getpid()}\n".encode("ascii"))
    return fd


def _lock_database_file(file: Path, label: str) -> tuple[int, ...]:
    """Take an exclusive, non-blocking ``flock`` on the database file itself (its identity:
    device and inode, so a hard link meets it too); return its descriptor (``()`` where
    ``fcntl`` is missing). Close it only after SQLite's connection: closing any descriptor of
    a file drops the process's POSIX locks on it.

    Raises:
        StateError: another process holds it; the message names the holder's pid (from
            ``/proc/locks``; ``unknown`` where that cannot tell).
        OSError: the file cannot be opened.
    """
    if sys.platform == "win32":  # pragma: no cover - goldwatch runs on Linux
        return ()
    import fcntl

    fd = os.open(file, os.O_RDONLY | os.O_NONBLOCK)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        holder = _flock_holder(os.fstat(fd))
        os.close(fd)
        raise StateError(
            f"state file {label} is in use by another goldwatch process (pid {holder}), "
            "under another name (a hard link to the same file): stop it first; each replica "
            "needs its own state.path"
        ) from None
    return (fd,)


def _flock_holder(st: os.stat_result) -> str:
    """The pid holding an ``flock`` on the file of ``st``, from ``/proc/locks`` (lines like
    ``1: FLOCK  ADVISORY  WRITE 4242 00:2a:1234 0 EOF``), or ``"unknown"``."""
    wanted = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"
    try:
        with open("/proc/locks", encoding="ascii", errors="replace") as handle:
            for line in handle:
                fields = line.split()
                if "->" in fields:  # a waiter, not a holder
                    continue
                if len(fields) >= 6 and fields[1] == "FLOCK" and fields[5] == wanted:
                    return fields[4]
    except OSError:
        pass
    return "unknown"


def _release_writer_lock(fds: int | Sequence[int] | None) -> None:
    """Release and close the writer's locks (closing a descriptor releases its ``flock``;
    the lock file stays: removing it would race with the next writer)."""
    for fd in (fds,) if isinstance(fds, int) else (fds or ()):
        os.close(fd)


def _dumps(value: Any) -> str:
    """``value`` as compact JSON text that :meth:`StateStore.get_many` (``json.loads``)
    reads back equal to what ``json.dumps`` would give it.

    msgspec writes it when its own text reads back equal to ``value`` (plain dicts with
    string keys, lists, strings, numbers, booleans, ``None``): about half the time of
    ``json.dumps`` for the thousands of small values a checkpoint may hold (harvest
    suggestions: 52 against 109 ms for 7,042 values, this machine). Anything else goes to
    ``json.dumps`` as before: ``NaN`` and infinities (msgspec writes ``null``), tuples and
    non-string keys (they would read back as lists and strings: the same text as
    ``json.dumps`` gives, but not equal to ``value``), lone surrogates, integers over 64
    bits, and types ``json.dumps`` refuses (sets, datetimes: ``TypeError`` as before). A
    value holding a lone surrogate is written ASCII-escaped (``\\ud800``), so a checkpoint
    never fails on one (SQLite takes only UTF-8 text); it reads back equal, except a high
    surrogate directly followed by a low one (two code points): JSON cannot tell their
    escapes from the one character they encode, which is what reads back (``"\\ud83d\\ude00"``
    → ``"😀"``; a decoder never makes such a pair, it reads both escapes as that character).

    A list of strings (exactly ``str``: e.g. the harvest snapshot's ids), or a dict of
    strings to strings (the dedup window's ``{"ids": "<id>\\n<id>..."}``, ~0.6 MB at 50,000
    ids), skips the decode-and-compare: msgspec writes each string so that it reads back
    equal, or raises (a lone surrogate: then ``json.dumps`` as above). For the dedup window
    that compare was a second pass over its text and a third over the string, each
    checkpoint.

    Raises:
        TypeError: ``json.dumps`` cannot serialise ``value``.
        ValueError: a circular reference.
    """
    try:
        text = _encode(value)
        kind = type(value)
        if (kind is list and all(type(item) is str for item in value)) or (
            kind is dict
            and all(type(key) is str and type(item) is str for key, item in value.items())
        ):
            return text.decode("utf-8")
        if _decode(text) == value:
            return text.decode("utf-8")
    except (TypeError, ValueError, OverflowError, RecursionError, msgspec.MsgspecError):
        pass
    dumped = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    if not dumped.isascii() and _SURROGATE.search(dumped) is not None:
        # a lone surrogate (a JSON "\\ud800" escape read by a path that does not replace it)
        # is not UTF-8: SQLite's binding would raise UnicodeEncodeError and lose the whole
        # checkpoint. Escaped, it is plain ASCII JSON that json.loads reads back equal (but
        # for a high+low pair of code points: read back as the one character, see above).
        return json.dumps(value, separators=(",", ":"), ensure_ascii=True)
    return dumped


_SURROGATE = re.compile("[\ud800-\udfff]")
_encode = msgspec.json.encode
_decode = msgspec.json.decode


def _rollback(conn: sqlite3.Connection) -> None:
    try:
        conn.execute("ROLLBACK")
    except sqlite3.Error:
        pass  # no transaction was open


def _check_integrity(conn: sqlite3.Connection, label: str) -> None:
    try:
        result = conn.execute("PRAGMA integrity_check").fetchall()
    except sqlite3.Error as exc:
        raise StateError(
            f"state file {label} is corrupt or not a goldwatch state database ({exc}); "
            f"{_move_aside_hint(label)}"
        ) from exc
    if result != [("ok",)]:
        problems = "; ".join(str(row[0]) for row in result[:3])
        raise StateError(
            f"state file {label} failed its integrity check ({problems}); {_move_aside_hint(label)}"
        )


def _init_schema(conn: sqlite3.Connection, label: str) -> None:
    try:
        tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master")}
        if tables and not {"meta", "state"} <= tables:
            raise StateError(
                f"{label} is a SQLite database but not a goldwatch state file "
                f"(tables: {', '.join(sorted(tables))}); {_move_aside_hint(label)}"
            )
        for statement in _SCHEMA:
            conn.execute(statement)
        conn.execute(
            "INSERT OR IGNORE INTO meta(key, value) VALUES ('schema_version', ?)",
            (SCHEMA_VERSION,),
        )
        (version,) = conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
    except sqlite3.Error as exc:
        raise _write_error(label, exc) from exc
    if version != SCHEMA_VERSION:
        raise StateError(
            f"state file {label} has schema version {version}, this goldwatch reads "
            f"{SCHEMA_VERSION}; {_move_aside_hint(label)}"
        )
